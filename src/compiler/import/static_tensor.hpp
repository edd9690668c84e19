// Values the importer knows without running the network: constants and shape arithmetic.
// A StaticTensor has static dimensions and elements that are either numbers or symbolic
// expressions of the model's symbols (ValueIds in the shape program).
//
// Scalars are exact rationals num/den over ValueIds, so PyTorch's habit of computing sizes in
// floating point (Cast to float, Div, Floor, Cast back) evaluates exactly: floor(H / 16.0)
// becomes floordiv(H, 16). Integers have den == 1. A float constant that is not a small dyadic
// rational (rare in shape code) is kept as an inexact double and only combines with constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/import/tensor_data.hpp"
#include "compiler/shape_program/shape_program.hpp"

namespace denox::compiler {

struct SymScalar {
  bool exact = true;
  ValueId num = 0, den = 0;  // exact: num / den, den != 0
  double inexact = 0.0;      // !exact: the value
};

// Constants stay dense numbers (a conv's weights must not become a million shape-program
// constants); values that depend on the input size are symbolic. Structural ops (Gather,
// Reshape, Slice, ...) work on either through an element index map.
struct StaticTensor {
  int32_t onnx_type = 0;  // element type (onnx::TensorProto::DataType)
  std::vector<int64_t> dims;
  bool dense = true;
  DecodedTensor numbers;          // dense: the values (numbers.dims unused)
  std::vector<SymScalar> elems;   // !dense: row-major
  bool is_float() const { return onnx_type_is_float(onnx_type); }
  size_t rank() const { return dims.size(); }
  size_t size() const { return dense ? numbers.size() : elems.size(); }
};

StaticTensor make_dense(DecodedTensor numbers);
StaticTensor make_symbolic(int32_t onnx_type, std::vector<int64_t> dims, std::vector<SymScalar> elems);
// Output element k = input element index[k]; keeps the representation.
StaticTensor take(const StaticTensor& in, std::vector<int64_t> dims, const std::vector<int64_t>& index);
// Row-major strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// Arithmetic on symbolic scalars, building into one shape program. `where` names the node for
// error messages.
class SymMath {
 public:
  SymMath(ShapeProgram& p, std::string where) : p_(p), where_(std::move(where)) {}

  SymScalar integer(int64_t v);
  SymScalar from_value(ValueId v) { return {true, v, p_.constant(1), 0.0}; }
  SymScalar from_double(double v);
  SymScalar add(const SymScalar& a, const SymScalar& b);
  SymScalar sub(const SymScalar& a, const SymScalar& b);
  SymScalar mul(const SymScalar& a, const SymScalar& b);
  // Integer types truncate (ONNX Div on integers); float types divide exactly.
  SymScalar div(const SymScalar& a, const SymScalar& b, bool integer_type);
  SymScalar mod(const SymScalar& a, const SymScalar& b, bool fmod);
  SymScalar min(const SymScalar& a, const SymScalar& b);
  SymScalar max(const SymScalar& a, const SymScalar& b);
  SymScalar neg(const SymScalar& a) { return sub(integer(0), a); }
  SymScalar abs(const SymScalar& a);
  SymScalar floor(const SymScalar& a);
  SymScalar ceil(const SymScalar& a);
  SymScalar truncate(const SymScalar& a);  // cast float -> int
  // Comparisons return 0/1 integers.
  SymScalar equal(const SymScalar& a, const SymScalar& b);
  SymScalar less(const SymScalar& a, const SymScalar& b);
  SymScalar less_equal(const SymScalar& a, const SymScalar& b);
  SymScalar is_nonzero(const SymScalar& a);
  SymScalar select(const SymScalar& cond, const SymScalar& a, const SymScalar& b);

  // The integer ValueId of an exact integer scalar (checked at run time if it needs a division).
  ValueId to_value(const SymScalar& a);
  bool is_constant(const SymScalar& a) const;
  // Constant value as a double (exact or not); only for is_constant scalars.
  double constant_double(const SymScalar& a) const;
  // Constant integer value, or an Unsupported error naming `what` if it is symbolic or fractional.
  int64_t constant_int(const SymScalar& a, const std::string& what);

  // Element k as a symbolic scalar (dense numbers are converted one at a time).
  SymScalar element(const StaticTensor& t, size_t k);

  ShapeProgram& program() { return p_; }
  const std::string& where() const { return where_; }

 private:
  SymScalar make(ValueId num, ValueId den);
  void require_exact(const SymScalar& a, const SymScalar& b, const char* op);
  ShapeProgram& p_;
  std::string where_;
};

}  // namespace denox::compiler
