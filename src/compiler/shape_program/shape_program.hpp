// The shape program: every size-dependent integer in a model (tensor extents, pads, slice
// bounds, later buffer sizes, offsets and dispatch sizes) is a ValueId, an index into one
// linear list of integer instructions over the model's symbols (the input's H and W, usually).
// The list is built once at import and run once per resolution (paper, section 3.1).
//
// Building is hash-consed and folds constants, so the same expression always gets the same
// ValueId: two extents are known equal at import time when their ids are equal. Equalities
// that only a concrete resolution can decide become assertions, checked when the program runs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace denox::compiler {

using ValueId = uint32_t;

enum class IntOp : uint8_t {
  Const,     // imm
  Symbol,    // bound by the caller; imm = symbol index
  Add,
  Sub,
  Mul,
  DivTrunc,  // C semantics (ONNX integer Div)
  DivFloor,
  DivCeil,
  ModFloor,  // result has the divisor's sign (ONNX Mod, fmod=0; Python %)
  ModTrunc,  // result has the dividend's sign (ONNX Mod, fmod=1; C %)
  Min,
  Max,
  Eq,        // 1 or 0
  Lt,
  Le,
  Select,    // a ? b : c
  // ONNX Slice index normalization: negative indices count from the end, then clamp.
  // imm: 0 = start or end with a positive step (clamp to [0, dim]),
  //      1 = start with a negative step ([0, dim-1]), 2 = end with a negative step ([-1, dim-1]).
  SliceIndex,
};

const char* int_op_name(IntOp op);

struct Instr {
  IntOp op;
  ValueId a = 0, b = 0, c = 0;
  int64_t imm = 0;
  bool operator<(const Instr& o) const {
    return std::tie(op, a, b, c, imm) < std::tie(o.op, o.a, o.b, o.c, o.imm);
  }
};

struct Assertion {
  ValueId condition;    // must evaluate to non-zero
  std::string message;  // what is wrong when it does not, naming the node
};

class ShapeProgram {
 public:
  ValueId constant(int64_t value);
  // A named symbol; the same name returns the same id.
  ValueId symbol(const std::string& name);
  ValueId add(ValueId a, ValueId b) { return binary(IntOp::Add, a, b); }
  ValueId sub(ValueId a, ValueId b) { return binary(IntOp::Sub, a, b); }
  ValueId mul(ValueId a, ValueId b) { return binary(IntOp::Mul, a, b); }
  ValueId min(ValueId a, ValueId b) { return binary(IntOp::Min, a, b); }
  ValueId max(ValueId a, ValueId b) { return binary(IntOp::Max, a, b); }
  ValueId binary(IntOp op, ValueId a, ValueId b);
  ValueId select(ValueId cond, ValueId if_true, ValueId if_false);
  ValueId slice_index(ValueId index, ValueId dim, int64_t mode);
  // Records a check that runs with the program; `message` names the node and what must hold.
  void require(ValueId condition, const std::string& message);
  // require(a == b) unless that is already known at import time; false if it is known false.
  bool require_equal(ValueId a, ValueId b, const std::string& message);

  // True when v >= 0 for every binding (symbols are extents, which are positive).
  bool known_nonnegative(ValueId v) const;
  bool is_constant(ValueId v) const { return instrs_.at(v).op == IntOp::Const; }
  int64_t constant_value(ValueId v) const { return instrs_.at(v).imm; }
  bool is_constant(ValueId v, int64_t value) const { return is_constant(v) && constant_value(v) == value; }

  const std::vector<Instr>& instructions() const { return instrs_; }
  const std::vector<std::string>& symbol_names() const { return symbol_names_; }
  const std::vector<Assertion>& assertions() const { return assertions_; }
  size_t size() const { return instrs_.size(); }

  // Runs the program: symbol values in symbol_names() order -> one value per instruction.
  // Throws ShapeMismatch for a failed assertion, InvalidArgument for division by zero or
  // overflow (with the expression that overflowed).
  std::vector<int64_t> evaluate(const std::vector<int64_t>& symbol_values) const;

  // Human-readable expression, e.g. "((H + 15) floordiv 16) * 16".
  std::string to_string(ValueId v) const;
  // The program as a numbered listing, one instruction a line.
  std::string listing() const;

  // Keeps only the instructions `roots` (and the assertions) depend on, renumbered in order.
  // Returns old id -> new id (UINT32_MAX for dropped ones). Symbols are always kept.
  std::vector<ValueId> compact(const std::vector<ValueId>& roots);

  // Rebuilds a program from its parts (a deserialized plan). Validates what evaluate() relies
  // on: operands refer to earlier instructions, symbol indices and SliceIndex modes are in
  // range, assertions refer to existing values. Throws InvalidModel naming the bad instruction.
  static ShapeProgram from_parts(std::vector<Instr> instrs, std::vector<std::string> symbol_names,
                                 std::vector<Assertion> assertions);

 private:
  std::string to_string_bounded(ValueId v, int depth) const;
  ValueId emit(const Instr& instr);
  void append(const Instr& instr);  // instrs_ and nonnegative_ together
  bool nonnegative_of(const Instr& instr) const;
  std::optional<ValueId> rewrite_size_idiom(IntOp op, ValueId a, ValueId b);
  std::vector<Instr> instrs_;
  std::vector<char> nonnegative_;  // per instruction: known_nonnegative, set when it is added
  std::map<Instr, ValueId> interned_;
  std::vector<std::string> symbol_names_;
  std::unordered_map<std::string, ValueId> symbols_by_name_;
  std::vector<Assertion> assertions_;
  std::unordered_set<ValueId> asserted_;  // assertions_' conditions: require() stays linear in a long import
};

// Integer helpers with the program's semantics (also used by the constant folder).
int64_t div_floor(int64_t a, int64_t b);
int64_t div_ceil(int64_t a, int64_t b);
int64_t mod_floor(int64_t a, int64_t b);

}  // namespace denox::compiler
