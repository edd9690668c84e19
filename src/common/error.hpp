// denox's one exception type. Every failure a caller can cause (bad model, bad shapes, missing
// files, unsupported features) becomes a denox::Error with a code and a message that names the
// cause: node name, op type, opset, tensor, path.
#pragma once

#include <stdexcept>
#include <string>

namespace denox {

enum class ErrorCode {
  InvalidModel,    // malformed protobuf, dangling tensor names, inconsistent graph
  Unsupported,     // valid ONNX that denox does not implement
  ShapeMismatch,   // shapes that do not fit together (at import or for a given resolution)
  InvalidArgument, // a caller passed something wrong (sizes, options, files)
  Io,              // a file could not be read or written
  MissingFeature,  // the Vulkan device lacks a feature or extension denox needs
  Vulkan,          // a Vulkan call failed (device lost, out of device memory, ...)
  Internal,        // a broken invariant inside denox
  OutOfHostMemory, // an allocation failed (std::bad_alloc caught where it can be named)
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

inline const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidModel: return "invalid model";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::ShapeMismatch: return "shape mismatch";
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::Io: return "i/o error";
    case ErrorCode::MissingFeature: return "missing device feature";
    case ErrorCode::Vulkan: return "vulkan error";
    case ErrorCode::Internal: return "internal error";
    case ErrorCode::OutOfHostMemory: return "out of host memory";
  }
  return "error";
}

}  // namespace denox
