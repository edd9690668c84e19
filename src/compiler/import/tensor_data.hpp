// Decoding ONNX TensorProtos (initializers, Constant values, attribute tensors) into numbers,
// from raw_data, the typed fields, or external data files. A model is untrusted data: every
// dimension, element count, offset and length is checked before it is used, and external files
// must stay inside the model's directory.
#pragma once

#include <cfloat>
#include <cstdint>
#include <limits>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class TensorProto;
}
namespace denox {
struct OpenedFile;  // common/read_file.hpp
}

namespace denox::compiler {

// The largest tensor denox will decode from a model (elements). A header that claims more is
// lying or not a denoiser; either way it must not become a huge allocation.
constexpr int64_t kMaxTensorElements = int64_t{1} << 28;

// A double as a float: beyond float's range it is an infinity of its sign, as rounding gives
// (a plain conversion of an out-of-range double is undefined behaviour); NaN stays NaN.
inline float saturate_to_float(double v) {
  // Round to nearest overflows from half a unit in the last place above FLT_MAX (2^128 - 2^103).
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr double overflow = 0x1.ffffffp+127;
  if (v >= overflow) return inf;
  if (v <= -overflow) return -inf;
  if (v > static_cast<double>(FLT_MAX)) return FLT_MAX;
  if (v < -static_cast<double>(FLT_MAX)) return -FLT_MAX;
  return static_cast<float>(v);
}

struct DecodedTensor {
  int32_t onnx_type = 0;  // onnx::TensorProto::DataType
  std::vector<int64_t> dims;
  bool is_float = false;        // FLOAT, DOUBLE, FLOAT16, BFLOAT16: values in `f`
  std::vector<double> f;        // floating-point elements (exact for float/double/half)
  std::vector<int64_t> i;       // integer and bool elements
  size_t size() const { return is_float ? f.size() : i.size(); }
};

struct ExternalDataContext {
  // Directory of the model file; external data is resolved inside it. Empty when the model came
  // from bytes without a base directory: external data is then an error.
  std::optional<std::filesystem::path> base_dir;
};

// "" where the external data file that was opened is the one its name resolved to, inside the
// model's directory: by the kernel's path for the descriptor where /proc gives it, else by its
// identity against `canonical_full` (the name resolved before the open). Else why not: a link
// or file swapped in between the check of the name and the open.
std::string opened_file_outside(const denox::OpenedFile& opened, const std::filesystem::path& canonical_base,
                                const std::filesystem::path& canonical_full);

// `what` names the tensor for error messages ("initializer 'enc_conv0.weight'").
DecodedTensor decode_tensor(const onnx::TensorProto& proto, const ExternalDataContext& ctx, const std::string& what);

// Element count of `dims`, checked for negative extents and overflow against kMaxTensorElements.
int64_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what);

// `v` as printf's %g writes it, for messages about hostile values: 1e+30 rather than 31 digits
// and six decimals, 4 rather than 4.000000.
std::string format_double(double v);

const char* onnx_type_name(int32_t onnx_type);
// The values an integer element type holds, as doubles ([lo, hi]); int64, BOOL and anything else
// give [-2^63, 2^63] (denox's integers are int64 already; BOOL takes any value, nonzero is true).
std::pair<double, double> onnx_integer_range(int32_t onnx_type);
bool onnx_type_is_float(int32_t onnx_type);
bool onnx_type_is_integer(int32_t onnx_type);  // includes BOOL

}  // namespace denox::compiler
