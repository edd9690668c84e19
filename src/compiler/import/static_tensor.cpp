#include "compiler/import/static_tensor.hpp"

#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.hpp"

namespace denox::compiler {

StaticTensor make_dense(DecodedTensor numbers) {
  StaticTensor t;
  t.onnx_type = numbers.onnx_type;
  t.dims = numbers.dims;
  t.dense = true;
  t.numbers = std::move(numbers);
  return t;
}

StaticTensor make_symbolic(int32_t onnx_type, std::vector<int64_t> dims, std::vector<SymScalar> elems) {
  StaticTensor t;
  t.onnx_type = onnx_type;
  t.dims = std::move(dims);
  t.dense = false;
  t.elems = std::move(elems);
  return t;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t a = dims.size(); a-- > 1;) strides[a - 1] = strides[a] * dims[a];
  return strides;
}

StaticTensor take(const StaticTensor& in, std::vector<int64_t> dims, const std::vector<int64_t>& index) {
  StaticTensor out;
  out.onnx_type = in.onnx_type;
  out.dims = std::move(dims);
  out.dense = in.dense;
  if (in.dense) {
    out.numbers.onnx_type = in.numbers.onnx_type;
    out.numbers.is_float = in.numbers.is_float;
    for (int64_t k : index) {
      if (in.numbers.is_float) out.numbers.f.push_back(in.numbers.f.at(static_cast<size_t>(k)));
      else out.numbers.i.push_back(in.numbers.i.at(static_cast<size_t>(k)));
    }
    out.numbers.dims = out.dims;
  } else {
    for (int64_t k : index) out.elems.push_back(in.elems.at(static_cast<size_t>(k)));
  }
  return out;
}

SymScalar SymMath::element(const StaticTensor& t, size_t k) {
  // Converters read element 0 of scalars that ONNX allows to be given empty (Clip's min, Pad's
  // value, Range's start); the message names the node instead of std::out_of_range's.
  if (k >= t.size())
    fail(ErrorCode::InvalidModel, where_ + ": reads element " + std::to_string(k) + " of a constant of " + std::to_string(t.size()) + " elements");
  if (!t.dense) return t.elems.at(k);
  if (t.numbers.is_float) return from_double(t.numbers.f.at(k));
  return integer(t.numbers.i.at(k));
}

SymScalar SymMath::integer(int64_t v) { return {true, p_.constant(v), p_.constant(1), 0.0}; }

SymScalar SymMath::from_double(double v) {
  if (!std::isfinite(v)) return {false, 0, 0, v};
  // Every finite double is m / 2^k; shape code uses values like 2.0, 0.5 or 16.0, which stay
  // exact with a small k. Larger k would only make the expressions unreadable.
  for (int k = 0; k <= 30; ++k) {
    double scaled = std::ldexp(v, k);
    if (scaled == std::floor(scaled) && std::fabs(scaled) < 9.0e15) {
      return make(p_.constant(static_cast<int64_t>(scaled)), p_.constant(int64_t{1} << k));
    }
  }
  return {false, 0, 0, v};
}

SymScalar SymMath::make(ValueId num, ValueId den) {
  if (p_.is_constant(den, 0)) fail(ErrorCode::InvalidModel, where_ + ": shape arithmetic divides by zero");
  // INT64_MIN has no negation and no std::gcd (a Cast of -2^63 to float, divided, reached both).
  const auto is_min = [&](ValueId v) { return p_.is_constant(v) && p_.constant_value(v) == std::numeric_limits<int64_t>::min(); };
  if (is_min(num) || is_min(den)) fail(ErrorCode::InvalidModel, where_ + ": shape arithmetic on -2^63 overflows");
  if (p_.is_constant(den) && p_.constant_value(den) < 0) {
    num = p_.sub(p_.constant(0), num);
    den = p_.constant(-p_.constant_value(den));
  }
  if (p_.is_constant(num) && p_.is_constant(den)) {
    int64_t n = p_.constant_value(num), d = p_.constant_value(den);
    int64_t g = std::gcd(n, d);
    if (g > 1) {
      num = p_.constant(n / g);
      den = p_.constant(d / g);
    }
  }
  return {true, num, den, 0.0};
}

bool SymMath::is_constant(const SymScalar& a) const {
  return !a.exact || (p_.is_constant(a.num) && p_.is_constant(a.den));
}

double SymMath::constant_double(const SymScalar& a) const {
  if (!a.exact) return a.inexact;
  // A symbolic value's instruction holds no number (reading one gave 0 or a symbol's index:
  // Clip(min=W) clamped at 1).
  if (!is_constant(a))
    fail(ErrorCode::Unsupported, where_ + ": a value that must be a constant depends on the input size (" + p_.to_string(a.num) + ")");
  return static_cast<double>(p_.constant_value(a.num)) / static_cast<double>(p_.constant_value(a.den));
}

int64_t SymMath::constant_int(const SymScalar& a, const std::string& what) {
  if (!is_constant(a)) {
    fail(ErrorCode::Unsupported, where_ + ": " + what + " must be a constant, but depends on the input size (" +
                                     p_.to_string(a.num) + ")");
  }
  if (a.exact) {
    int64_t n = p_.constant_value(a.num), d = p_.constant_value(a.den);
    if (n % d == 0) return n / d;
  } else if (a.inexact == std::floor(a.inexact) && std::fabs(a.inexact) < 9.2e18) {
    return static_cast<int64_t>(a.inexact);
  }
  fail(ErrorCode::Unsupported, where_ + ": " + what + " must be an integer, got " + std::to_string(constant_double(a)));
}

void SymMath::require_exact(const SymScalar& a, const SymScalar& b, const char* op) {
  if (!a.exact || !b.exact) {
    fail(ErrorCode::Unsupported, where_ + ": " + op + " mixes the input size with the float constant " +
                                     std::to_string(!a.exact ? a.inexact : b.inexact) +
                                     ", which denox cannot evaluate exactly");
  }
}


// Inexact float constants only combine with other constants, in double arithmetic.
#define DENOX_INEXACT_BINARY(expr)                                                     \
  if ((!a.exact || !b.exact) && is_constant(a) && is_constant(b)) {                    \
    double x = constant_double(a), y = constant_double(b);                             \
    return from_double(expr);                                                          \
  }

SymScalar SymMath::add(const SymScalar& a, const SymScalar& b) {
  DENOX_INEXACT_BINARY(x + y);
  require_exact(a, b, "Add");
  if (a.den == b.den) return make(p_.add(a.num, b.num), a.den);
  return make(p_.add(p_.mul(a.num, b.den), p_.mul(b.num, a.den)), p_.mul(a.den, b.den));
}

SymScalar SymMath::sub(const SymScalar& a, const SymScalar& b) {
  DENOX_INEXACT_BINARY(x - y);
  require_exact(a, b, "Sub");
  if (a.den == b.den) return make(p_.sub(a.num, b.num), a.den);
  return make(p_.sub(p_.mul(a.num, b.den), p_.mul(b.num, a.den)), p_.mul(a.den, b.den));
}

SymScalar SymMath::mul(const SymScalar& a, const SymScalar& b) {
  DENOX_INEXACT_BINARY(x * y);
  require_exact(a, b, "Mul");
  return make(p_.mul(a.num, b.num), p_.mul(a.den, b.den));
}

SymScalar SymMath::div(const SymScalar& a, const SymScalar& b, bool integer_type) {
  if (integer_type) {
    if (p_.is_constant(b.num, 0)) fail(ErrorCode::InvalidModel, where_ + ": integer division by zero");
    return from_value(p_.binary(IntOp::DivTrunc, to_value(a), to_value(b)));
  }
  DENOX_INEXACT_BINARY(x / y);
  require_exact(a, b, "Div");
  if (p_.is_constant(b.num, 0)) fail(ErrorCode::InvalidModel, where_ + ": division by zero");
  return make(p_.mul(a.num, b.den), p_.mul(a.den, b.num));
}

SymScalar SymMath::mod(const SymScalar& a, const SymScalar& b, bool fmod) {
  DENOX_INEXACT_BINARY(std::fmod(x, y));
  // Fractional constants (float Mod, fmod=1) in double: exact, and the integer path below would
  // reject them as "not an integer".
  if (is_constant(a) && is_constant(b) && !(p_.is_constant(a.den, 1) && p_.is_constant(b.den, 1))) {
    double x = constant_double(a), y = constant_double(b);
    return from_double(fmod ? std::fmod(x, y) : x - y * std::floor(x / y));
  }
  ValueId x = to_value(a), y = to_value(b);
  if (p_.is_constant(y, 0)) fail(ErrorCode::InvalidModel, where_ + ": modulo by zero");
  return from_value(p_.binary(fmod ? IntOp::ModTrunc : IntOp::ModFloor, x, y));
}

SymScalar SymMath::min(const SymScalar& a, const SymScalar& b) { return select(less(a, b), a, b); }
SymScalar SymMath::max(const SymScalar& a, const SymScalar& b) { return select(less(a, b), b, a); }
SymScalar SymMath::abs(const SymScalar& a) { return select(less(a, integer(0)), neg(a), a); }

SymScalar SymMath::floor(const SymScalar& a) {
  if (!a.exact) return from_double(std::floor(a.inexact));
  return from_value(p_.binary(IntOp::DivFloor, a.num, a.den));
}

SymScalar SymMath::ceil(const SymScalar& a) {
  if (!a.exact) return from_double(std::ceil(a.inexact));
  return from_value(p_.binary(IntOp::DivCeil, a.num, a.den));
}

SymScalar SymMath::truncate(const SymScalar& a) {
  if (!a.exact) return from_double(std::trunc(a.inexact));
  return from_value(p_.binary(IntOp::DivTrunc, a.num, a.den));
}

SymScalar SymMath::equal(const SymScalar& a, const SymScalar& b) {
  DENOX_INEXACT_BINARY(x == y ? 1.0 : 0.0);
  require_exact(a, b, "Equal");
  return from_value(p_.binary(IntOp::Eq, p_.mul(a.num, b.den), p_.mul(b.num, a.den)));
}

SymScalar SymMath::less(const SymScalar& a, const SymScalar& b) {
  DENOX_INEXACT_BINARY(x < y ? 1.0 : 0.0);
  require_exact(a, b, "Less");
  // Cross-multiplying keeps the order only for positive denominators; constant ones are made
  // positive by make(), symbolic ones are checked when the program runs.
  for (ValueId den : {a.den, b.den}) {
    if (!p_.is_constant(den)) p_.require(p_.binary(IntOp::Lt, p_.constant(0), den), where_ + ": comparison of a size divided by a non-positive value");
  }
  return from_value(p_.binary(IntOp::Lt, p_.mul(a.num, b.den), p_.mul(b.num, a.den)));
}

SymScalar SymMath::less_equal(const SymScalar& a, const SymScalar& b) {
  SymScalar gt = less(b, a);
  return from_value(p_.sub(p_.constant(1), to_value(gt)));
}

SymScalar SymMath::is_nonzero(const SymScalar& a) {
  if (!a.exact) return integer(a.inexact != 0.0 ? 1 : 0);
  return from_value(p_.sub(p_.constant(1), p_.binary(IntOp::Eq, a.num, p_.constant(0))));
}

SymScalar SymMath::select(const SymScalar& cond, const SymScalar& a, const SymScalar& b) {
  ValueId c = to_value(is_nonzero(cond));
  if (p_.is_constant(c)) return p_.constant_value(c) ? a : b;
  require_exact(a, b, "Where");
  return make(p_.select(c, a.num, b.num), p_.select(c, a.den, b.den));
}

ValueId SymMath::to_value(const SymScalar& a) {
  if (!a.exact) {
    if (a.inexact != std::floor(a.inexact) || std::fabs(a.inexact) > 9.0e15) {
      fail(ErrorCode::Unsupported, where_ + ": expected an integer, got " + std::to_string(a.inexact));
    }
    return p_.constant(static_cast<int64_t>(a.inexact));
  }
  if (p_.is_constant(a.den, 1)) return a.num;
  p_.require(p_.binary(IntOp::Eq, p_.binary(IntOp::ModTrunc, a.num, a.den), p_.constant(0)),
             where_ + ": a size computed as " + p_.to_string(a.num) + " / " + p_.to_string(a.den) + " is not an integer");
  return p_.binary(IntOp::DivTrunc, a.num, a.den);
}

}  // namespace denox::compiler
