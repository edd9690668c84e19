#include "compiler/shape_program/shape_program.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>

#include "common/error.hpp"

namespace denox::compiler {

const char* int_op_name(IntOp op) {
  switch (op) {
    case IntOp::Const: return "const";
    case IntOp::Symbol: return "symbol";
    case IntOp::Add: return "add";
    case IntOp::Sub: return "sub";
    case IntOp::Mul: return "mul";
    case IntOp::DivTrunc: return "div";
    case IntOp::DivFloor: return "floordiv";
    case IntOp::DivCeil: return "ceildiv";
    case IntOp::ModFloor: return "mod";
    case IntOp::ModTrunc: return "fmod";
    case IntOp::Min: return "min";
    case IntOp::Max: return "max";
    case IntOp::Eq: return "eq";
    case IntOp::Lt: return "lt";
    case IntOp::Le: return "le";
    case IntOp::Select: return "select";
    case IntOp::SliceIndex: return "slice_index";
  }
  return "?";
}

int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t div_ceil(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) ++q;
  return q;
}

int64_t mod_floor(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

namespace {

// One instruction on concrete values; nullopt on overflow or division by zero.
std::optional<int64_t> apply(IntOp op, int64_t a, int64_t b, int64_t c, int64_t imm) {
  int64_t r = 0;
  switch (op) {
    case IntOp::Add: if (__builtin_add_overflow(a, b, &r)) return std::nullopt; return r;
    case IntOp::Sub: if (__builtin_sub_overflow(a, b, &r)) return std::nullopt; return r;
    case IntOp::Mul: if (__builtin_mul_overflow(a, b, &r)) return std::nullopt; return r;
    case IntOp::DivTrunc:
    case IntOp::DivFloor:
    case IntOp::DivCeil:
    case IntOp::ModFloor:
    case IntOp::ModTrunc:
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      if (op == IntOp::DivTrunc) return a / b;
      if (op == IntOp::DivFloor) return div_floor(a, b);
      if (op == IntOp::DivCeil) return div_ceil(a, b);
      if (op == IntOp::ModFloor) return mod_floor(a, b);
      return a % b;
    case IntOp::Min: return std::min(a, b);
    case IntOp::Max: return std::max(a, b);
    case IntOp::Eq: return a == b ? 1 : 0;
    case IntOp::Lt: return a < b ? 1 : 0;
    case IntOp::Le: return a <= b ? 1 : 0;
    case IntOp::Select: return a != 0 ? b : c;
    case IntOp::SliceIndex: {
      int64_t index = a, dim = b;
      if (dim < 0) return std::nullopt;  // no valid index (a forged plan): clamp bounds would cross
      if (index < 0 && __builtin_add_overflow(index, dim, &index)) return std::nullopt;
      // An empty axis: std::clamp's bounds would cross. (Backwards, start 0 and end -1 span one
      // element; the importer bounds such a slice's extent by its axis.)
      if (dim == 0) return imm == 2 ? -1 : 0;
      if (imm == 0) return std::clamp<int64_t>(index, 0, dim);
      if (imm == 1) return std::clamp<int64_t>(index, 0, dim - 1);
      return std::clamp<int64_t>(index, -1, dim - 1);
    }
    case IntOp::Const:
    case IntOp::Symbol: break;
  }
  return std::nullopt;
}

bool commutative(IntOp op) {
  return op == IntOp::Add || op == IntOp::Mul || op == IntOp::Min || op == IntOp::Max || op == IntOp::Eq;
}

}  // namespace

ValueId ShapeProgram::emit(const Instr& instr) {
  auto it = interned_.find(instr);
  if (it != interned_.end()) return it->second;
  auto id = static_cast<ValueId>(instrs_.size());
  append(instr);
  interned_.emplace(instr, id);
  return id;
}

void ShapeProgram::append(const Instr& instr) {
  const bool nonnegative = nonnegative_of(instr);
  instrs_.push_back(instr);
  nonnegative_.push_back(nonnegative);
}

ShapeProgram ShapeProgram::from_parts(std::vector<Instr> instrs, std::vector<std::string> symbol_names,
                                      std::vector<Assertion> assertions) {
  ShapeProgram p;
  auto bad = [](size_t i, const std::string& why) {
    fail(ErrorCode::InvalidModel, "shape program instruction %" + std::to_string(i) + ": " + why);
  };
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instr& in = instrs[i];
    if (static_cast<unsigned>(in.op) > static_cast<unsigned>(IntOp::SliceIndex)) bad(i, "unknown opcode");
    const int arity = in.op == IntOp::Const || in.op == IntOp::Symbol ? 0 : in.op == IntOp::Select ? 3 : 2;
    const ValueId operands[3] = {in.a, in.b, in.c};
    for (int k = 0; k < arity; ++k)
      if (operands[k] >= i) bad(i, "operand refers to a later instruction");
    // evaluate() reads all three operand slots: unused ones must be 0 (as emit() writes them).
    for (int k = arity; k < 3; ++k)
      if (operands[k] != 0)
        bad(i, std::string("unused operand ") + "abc"[k] + " is " + std::to_string(operands[k]) + ", must be 0");
    const bool takes_imm = in.op == IntOp::Const || in.op == IntOp::Symbol || in.op == IntOp::SliceIndex;
    if (!takes_imm && in.imm != 0) bad(i, "immediate " + std::to_string(in.imm) + " of an opcode without one");
    if (in.op == IntOp::Symbol && (in.imm < 0 || static_cast<size_t>(in.imm) >= symbol_names.size()))
      bad(i, "symbol index out of range");
    if (in.op == IntOp::SliceIndex && (in.imm < 0 || in.imm > 2)) bad(i, "slice index mode out of range");
    auto id = static_cast<ValueId>(p.instrs_.size());
    p.append(in);
    p.interned_.emplace(in, id);
    if (in.op == IntOp::Symbol) p.symbols_by_name_.emplace(symbol_names[static_cast<size_t>(in.imm)], id);
  }
  for (const Assertion& a : assertions)
    if (a.condition >= instrs.size()) fail(ErrorCode::InvalidModel, "shape program assertion refers to a missing value");
  p.symbol_names_ = std::move(symbol_names);
  p.assertions_ = std::move(assertions);
  for (const auto& a : p.assertions_) p.asserted_.insert(a.condition);
  return p;
}

ValueId ShapeProgram::constant(int64_t value) { return emit({IntOp::Const, 0, 0, 0, value}); }

ValueId ShapeProgram::symbol(const std::string& name) {
  auto it = symbols_by_name_.find(name);
  if (it != symbols_by_name_.end()) return it->second;
  auto index = static_cast<int64_t>(symbol_names_.size());
  symbol_names_.push_back(name);
  ValueId id = emit({IntOp::Symbol, 0, 0, 0, index});
  symbols_by_name_.emplace(name, id);
  return id;
}

// Rewrites that make the size arithmetic of U-Nets structural, so that equal extents get equal
// ids at import time instead of run-time checks:
//   x + ((c - x mod c) mod c)  ->  ceildiv(x, c) * c      ("pad to a multiple of c")
//   (y * c1) div c2            ->  y * (c1 / c2)          when c2 divides c1
//   (x + k*d) div d            ->  (x div d) + k          (floor and ceil division)
//   (y * c1) * c2              ->  y * (c1 * c2)
std::optional<ValueId> ShapeProgram::rewrite_size_idiom(IntOp op, ValueId a, ValueId b) {
  auto positive = [&](ValueId v) { return is_constant(v) && constant_value(v) > 0; };
  auto mul_by_constant = [&](ValueId v) { return instrs_[v].op == IntOp::Mul && is_constant(instrs_[v].b); };
  if (op == IntOp::ModFloor && positive(b)) {
    const int64_t c = constant_value(b);
    const Instr& in = instrs_[a];
    // (m - y) mod c: only m mod c matters, and y mod c may be replaced by y.
    if (in.op == IntOp::Sub && is_constant(in.a)) {
      ValueId y = in.b;
      if (instrs_[y].op == IntOp::ModFloor && instrs_[y].b == b) y = instrs_[y].a;
      int64_t m = mod_floor(constant_value(in.a), c);
      if (m != constant_value(in.a) || y != in.b) return binary(IntOp::ModFloor, sub(constant(m), y), b);
    }
  }
  if (op == IntOp::Add) {
    for (auto [x, r] : {std::pair{a, b}, std::pair{b, a}}) {
      const Instr& mod = instrs_[r];
      if (mod.op != IntOp::ModFloor || !positive(mod.b)) continue;
      const Instr& neg = instrs_[mod.a];
      if (neg.op == IntOp::Sub && is_constant(neg.a, 0) && neg.b == x && known_nonnegative(x)) {
        return mul(binary(IntOp::DivCeil, x, mod.b), mod.b);
      }
    }
  }
  // Truncating and floor division agree on non-negative operands: one form, so that ONNX's
  // integer Div and PyTorch's floordiv of the same extent get the same id.
  if (op == IntOp::DivTrunc && positive(b) && known_nonnegative(a)) return binary(IntOp::DivFloor, a, b);
  // (x + (c-1)) floordiv c == x ceildiv c for every integer x: "(n + 15) // 16" and
  // "ceil(n / 16)" are the same extent.
  if (op == IntOp::DivFloor && positive(b) && instrs_[a].op == IntOp::Add && is_constant(instrs_[a].b, constant_value(b) - 1)) {
    return binary(IntOp::DivCeil, instrs_[a].a, b);
  }
  if ((op == IntOp::DivFloor || op == IntOp::DivCeil || op == IntOp::DivTrunc) && positive(b)) {
    const int64_t d = constant_value(b);
    if (mul_by_constant(a) && constant_value(instrs_[a].b) % d == 0) {
      return mul(instrs_[a].a, constant(constant_value(instrs_[a].b) / d));
    }
    if (op != IntOp::DivTrunc && instrs_[a].op == IntOp::Add && is_constant(instrs_[a].b) && constant_value(instrs_[a].b) % d == 0) {
      return add(binary(op, instrs_[a].a, b), constant(constant_value(instrs_[a].b) / d));
    }
  }
  if (op == IntOp::Mul && is_constant(b) && !is_constant(a) && mul_by_constant(a)) {
    int64_t product = 0;
    if (!__builtin_mul_overflow(constant_value(instrs_[a].b), constant_value(b), &product)) {
      return mul(instrs_[a].a, constant(product));
    }
  }
  return std::nullopt;
}

ValueId ShapeProgram::binary(IntOp op, ValueId a, ValueId b) {
  if (is_constant(a) && is_constant(b)) {
    auto r = apply(op, constant_value(a), constant_value(b), 0, 0);
    if (!r) {
      fail(ErrorCode::InvalidModel, "shape arithmetic overflows or divides by zero: " +
                                        std::to_string(constant_value(a)) + " " + int_op_name(op) + " " +
                                        std::to_string(constant_value(b)));
    }
    return constant(*r);
  }
  if (auto rewritten = rewrite_size_idiom(op, a, b)) return *rewritten;
  // Identities that keep expressions small and make equal extents get equal ids.
  switch (op) {
    case IntOp::Add:
      if (is_constant(a, 0)) return b;
      if (is_constant(b, 0)) return a;
      // x + (y - x) = y: "n + pad(n)" where the pad is written as "padded - n".
      if (instrs_[b].op == IntOp::Sub && instrs_[b].b == a) return instrs_[b].a;
      if (instrs_[a].op == IntOp::Sub && instrs_[a].b == b) return instrs_[a].a;
      break;
    case IntOp::Sub:
      if (is_constant(b, 0)) return a;
      if (a == b) return constant(0);
      // (x + y) - y = x and (x + y) - x = y: PyTorch's pad/crop arithmetic produces these.
      if (instrs_[a].op == IntOp::Add) {
        if (instrs_[a].b == b) return instrs_[a].a;
        if (instrs_[a].a == b) return instrs_[a].b;
      }
      break;
    case IntOp::Mul:
      if (is_constant(a, 1)) return b;
      if (is_constant(b, 1)) return a;
      if (is_constant(a, 0) || is_constant(b, 0)) return constant(0);
      break;
    case IntOp::DivTrunc:
    case IntOp::DivFloor:
    case IntOp::DivCeil:
      if (is_constant(b, 1)) return a;
      if (a == b) return constant(1);  // a division by zero would have failed the model anyway
      // (x * c) / c = x
      if (instrs_[a].op == IntOp::Mul && (instrs_[a].b == b || instrs_[a].a == b) && is_constant(b) &&
          constant_value(b) != 0) {
        return instrs_[a].b == b ? instrs_[a].a : instrs_[a].b;
      }
      break;
    case IntOp::ModFloor:
    case IntOp::ModTrunc:
      if (is_constant(b, 1) || is_constant(b, -1)) return constant(0);
      if (instrs_[a].op == IntOp::Mul && (instrs_[a].b == b || instrs_[a].a == b)) return constant(0);
      break;
    case IntOp::Min:
    case IntOp::Max:
      if (a == b) return a;
      if (op == IntOp::Max && is_constant(a) && constant_value(a) <= 0 && known_nonnegative(b)) return b;
      if (op == IntOp::Max && is_constant(b) && constant_value(b) <= 0 && known_nonnegative(a)) return a;
      break;
    case IntOp::Eq:
      if (a == b) return constant(1);
      break;
    case IntOp::Le:
      if (a == b) return constant(1);
      if (is_constant(a) && constant_value(a) <= 0 && known_nonnegative(b)) return constant(1);
      if (is_constant(b) && constant_value(b) < 0 && known_nonnegative(a)) return constant(0);
      break;
    case IntOp::Lt:
      // Sign tests of extents ("n < 0" in floor division built from truncating Div) fold,
      // so the Where around them folds too.
      if (a == b) return constant(0);
      if (is_constant(b) && constant_value(b) <= 0 && known_nonnegative(a)) return constant(0);
      if (is_constant(a) && constant_value(a) < 0 && known_nonnegative(b)) return constant(1);
      break;
    default: break;
  }
  if (commutative(op) && a > b) std::swap(a, b);
  // Keep constants on the right of commutative ops: "H + 15" reads better than "15 + H".
  if (commutative(op) && is_constant(a) && !is_constant(b)) std::swap(a, b);
  // Reassociate constants so that conv chains like ((H + 2) - 3) + 1 collapse back to H.
  int64_t folded = 0;
  if (op == IntOp::Sub && is_constant(b) && !__builtin_sub_overflow(int64_t{0}, constant_value(b), &folded)) {
    return add(a, constant(folded));
  }
  if (op == IntOp::Add && is_constant(b) && instrs_[a].op == IntOp::Add && is_constant(instrs_[a].b) &&
      !__builtin_add_overflow(constant_value(b), constant_value(instrs_[a].b), &folded)) {
    return add(instrs_[a].a, constant(folded));
  }
  return emit({op, a, b, 0, 0});
}

bool ShapeProgram::known_nonnegative(ValueId v) const { return nonnegative_.at(v) != 0; }

// From the operands' flags, which precede it: one step per instruction. (Walking the operands
// instead was exponential in the depth of a DAG that reuses values, as x + x nested 30 deep:
// 9 s to import; found by fuzzing.)
bool ShapeProgram::nonnegative_of(const Instr& in) const {
  auto known_nonnegative = [&](ValueId x) { return nonnegative_[x] != 0; };
  auto positive_constant = [&](ValueId x) { return is_constant(x) && constant_value(x) > 0; };
  switch (in.op) {
    case IntOp::Const: return in.imm >= 0;
    case IntOp::Symbol: return true;
    case IntOp::Add:
    case IntOp::Mul:
    case IntOp::Min:
    case IntOp::Max: return known_nonnegative(in.a) && known_nonnegative(in.b);
    case IntOp::DivTrunc:
    case IntOp::DivFloor:
    case IntOp::DivCeil: return known_nonnegative(in.a) && positive_constant(in.b);
    case IntOp::ModFloor: return positive_constant(in.b);
    case IntOp::Sub: {
      // ceildiv(x, c) * c - x: the pad up to a multiple of c (user code may clamp it with max(., 0)).
      const Instr& up = instrs_[in.a];
      return up.op == IntOp::Mul && positive_constant(up.b) && instrs_[up.a].op == IntOp::DivCeil &&
             instrs_[up.a].a == in.b && instrs_[up.a].b == up.b;
    }
    case IntOp::Eq:
    case IntOp::Lt:
    case IntOp::Le: return true;
    case IntOp::Select: return known_nonnegative(in.b) && known_nonnegative(in.c);
    case IntOp::SliceIndex: return in.imm != 2;
    default: return false;
  }
}

ValueId ShapeProgram::select(ValueId cond, ValueId if_true, ValueId if_false) {
  if (if_true == if_false) return if_true;
  if (is_constant(cond)) return constant_value(cond) != 0 ? if_true : if_false;
  return emit({IntOp::Select, cond, if_true, if_false, 0});
}

ValueId ShapeProgram::slice_index(ValueId index, ValueId dim, int64_t mode) {
  if (is_constant(index) && is_constant(dim)) {
    auto r = apply(IntOp::SliceIndex, constant_value(index), constant_value(dim), 0, mode);
    if (!r) fail(ErrorCode::InvalidModel, "slice index arithmetic overflows");
    return constant(*r);
  }
  // A non-negative constant start below a dimension known to be larger needs no clamping; the
  // common case "0" stays a constant.
  if (mode == 0 && is_constant(index, 0)) return constant(0);
  // Cropping a padded extent back to its original size: x <= ceildiv(x, c) * c.
  if (mode == 0 && known_nonnegative(index)) {
    if (index == dim) return index;
    const Instr& d = instrs_[dim];
    if (d.op == IntOp::Mul && instrs_[d.a].op == IntOp::DivCeil && instrs_[d.a].a == index && instrs_[d.a].b == d.b) return index;
  }
  return emit({IntOp::SliceIndex, index, dim, 0, mode});
}

void ShapeProgram::require(ValueId condition, const std::string& message) {
  if (is_constant(condition)) {
    if (constant_value(condition) == 0) fail(ErrorCode::ShapeMismatch, message);
    return;
  }
  if (!asserted_.insert(condition).second) return;
  assertions_.push_back({condition, message});
}

bool ShapeProgram::require_equal(ValueId a, ValueId b, const std::string& message) {
  if (a == b) return true;
  if (is_constant(a) && is_constant(b)) return false;
  require(binary(IntOp::Eq, a, b), message);
  return true;
}

std::vector<int64_t> ShapeProgram::evaluate(const std::vector<int64_t>& symbol_values) const {
  if (symbol_values.size() != symbol_names_.size()) {
    fail(ErrorCode::InvalidArgument, "shape program needs " + std::to_string(symbol_names_.size()) +
                                         " symbol values, got " + std::to_string(symbol_values.size()));
  }
  std::vector<int64_t> values(instrs_.size());
  for (size_t i = 0; i < instrs_.size(); ++i) {
    const Instr& in = instrs_[i];
    if (in.op == IntOp::Const) {
      values[i] = in.imm;
    } else if (in.op == IntOp::Symbol) {
      values[i] = symbol_values[static_cast<size_t>(in.imm)];
    } else {
      auto r = apply(in.op, values[in.a], values[in.b], values[in.c], in.imm);
      if (!r) {
        fail(ErrorCode::InvalidArgument, "shape program: " + to_string(static_cast<ValueId>(i)) +
                                             " overflows or divides by zero at this resolution");
      }
      values[i] = *r;
    }
  }
  for (const auto& a : assertions_) {
    if (values[a.condition] == 0) fail(ErrorCode::ShapeMismatch, a.message);
  }
  return values;
}

std::string ShapeProgram::to_string(ValueId v) const { return to_string_bounded(v, 0); }

// Shared subexpressions are spelled out, so a program like x1 = x0 + x0, x2 = x1 + x1, ...
// would print exponentially long text: deep operands are named by their instruction instead.
std::string ShapeProgram::to_string_bounded(ValueId v, int depth) const {
  const Instr& in = instrs_.at(v);
  constexpr int kMaxDepth = 8;
  if (depth > kMaxDepth && in.op != IntOp::Const && in.op != IntOp::Symbol) return "%" + std::to_string(v);
  auto to_string = [&](ValueId operand) { return to_string_bounded(operand, depth + 1); };
  auto infix = [&](const char* sym) { return "(" + to_string(in.a) + " " + sym + " " + to_string(in.b) + ")"; };
  switch (in.op) {
    case IntOp::Const: return std::to_string(in.imm);
    case IntOp::Symbol: return symbol_names_[static_cast<size_t>(in.imm)];
    case IntOp::Add: return infix("+");
    case IntOp::Sub: return infix("-");
    case IntOp::Mul: return infix("*");
    case IntOp::DivTrunc: return infix("/");
    case IntOp::DivFloor: return infix("floordiv");
    case IntOp::DivCeil: return infix("ceildiv");
    case IntOp::ModFloor: return infix("mod");
    case IntOp::ModTrunc: return infix("fmod");
    case IntOp::Eq: return infix("==");
    case IntOp::Lt: return infix("<");
    case IntOp::Le: return infix("<=");
    case IntOp::Min:
    case IntOp::Max: return std::string(int_op_name(in.op)) + "(" + to_string(in.a) + ", " + to_string(in.b) + ")";
    case IntOp::Select: return "(" + to_string(in.a) + " ? " + to_string(in.b) + " : " + to_string(in.c) + ")";
    case IntOp::SliceIndex:
      return "slice_index(" + to_string(in.a) + ", " + to_string(in.b) + ", " + std::to_string(in.imm) + ")";
  }
  return "?";
}

std::string ShapeProgram::listing() const {
  std::ostringstream out;
  for (size_t i = 0; i < instrs_.size(); ++i) {
    const Instr& in = instrs_[i];
    out << "  %" << i << " = " << int_op_name(in.op);
    if (in.op == IntOp::Const) {
      out << " " << in.imm;
    } else if (in.op == IntOp::Symbol) {
      out << " " << symbol_names_[static_cast<size_t>(in.imm)];
    } else {
      out << " %" << in.a << ", %" << in.b;
      if (in.op == IntOp::Select) out << ", %" << in.c;
      if (in.op == IntOp::SliceIndex) out << ", mode " << in.imm;
    }
    out << "\n";
  }
  for (const auto& a : assertions_) out << "  assert %" << a.condition << ": " << a.message << "\n";
  return out.str();
}

std::vector<ValueId> ShapeProgram::compact(const std::vector<ValueId>& roots) {
  std::vector<char> live(instrs_.size(), 0);
  for (ValueId r : roots) live.at(r) = 1;
  for (const auto& a : assertions_) live[a.condition] = 1;
  // Operands always precede their users, so one backward sweep marks everything needed.
  for (size_t i = instrs_.size(); i-- > 0;) {
    const Instr& in = instrs_[i];
    if (in.op == IntOp::Symbol) live[i] = 1;
    if (!live[i] || in.op == IntOp::Const || in.op == IntOp::Symbol) continue;
    live[in.a] = live[in.b] = 1;
    if (in.op == IntOp::Select) live[in.c] = 1;
  }
  std::vector<ValueId> remap(instrs_.size(), UINT32_MAX);
  std::vector<Instr> kept;
  std::vector<char> kept_nonnegative;  // renumbering changes no value
  for (size_t i = 0; i < instrs_.size(); ++i) {
    if (!live[i]) continue;
    Instr in = instrs_[i];
    if (in.op != IntOp::Const && in.op != IntOp::Symbol) {
      in.a = remap[in.a];
      in.b = remap[in.b];
      if (in.op == IntOp::Select) in.c = remap[in.c];
    }
    remap[i] = static_cast<ValueId>(kept.size());
    kept.push_back(in);
    kept_nonnegative.push_back(nonnegative_[i]);
  }
  instrs_ = std::move(kept);
  nonnegative_ = std::move(kept_nonnegative);
  interned_.clear();
  for (size_t i = 0; i < instrs_.size(); ++i) interned_.emplace(instrs_[i], static_cast<ValueId>(i));
  for (auto& [name, id] : symbols_by_name_) id = remap[id];
  for (auto& a : assertions_) a.condition = remap[a.condition];
  asserted_.clear();
  for (const auto& a : assertions_) asserted_.insert(a.condition);
  return remap;
}

}  // namespace denox::compiler
