// Result codes, the per-thread last error, version strings.
#include "api/api_internal.hpp"

namespace denox::api {

namespace {
thread_local std::string last_error;
thread_local VkResult last_vk_result = VK_SUCCESS;
}

denox_result set_error(denox_result result, const char* function, const char* what, int vk_result) noexcept {
  last_vk_result = static_cast<VkResult>(vk_result);
  try {
    last_error.assign(function).append(": ").append(printable_message(what));
  } catch (...) {
    last_error.clear();  // (no allocation)
  }
  return result;
}

void clear_error() {
  last_error.clear();
  last_vk_result = VK_SUCCESS;
}

denox_result result_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidModel: return DENOX_ERROR_INVALID_MODEL;
    case ErrorCode::Unsupported: return DENOX_ERROR_UNSUPPORTED;
    case ErrorCode::ShapeMismatch: return DENOX_ERROR_SHAPE_MISMATCH;
    case ErrorCode::InvalidArgument: return DENOX_ERROR_INVALID_ARGUMENT;
    case ErrorCode::Io: return DENOX_ERROR_IO;
    case ErrorCode::MissingFeature: return DENOX_ERROR_MISSING_FEATURE;
    case ErrorCode::Vulkan: return DENOX_ERROR_VULKAN;
    case ErrorCode::Internal: return DENOX_ERROR_INTERNAL;
    case ErrorCode::OutOfHostMemory: return DENOX_ERROR_OUT_OF_HOST_MEMORY;
  }
  return DENOX_ERROR_INTERNAL;
}

}  // namespace denox::api

extern "C" {

const char* denox_last_error(void) { return denox::api::last_error.c_str(); }

VkResult denox_last_vk_result(void) { return denox::api::last_vk_result; }

const char* denox_result_name(denox_result result) {
  switch (result) {
    case DENOX_SUCCESS: return "DENOX_SUCCESS";
    case DENOX_ERROR_INVALID_ARGUMENT: return "DENOX_ERROR_INVALID_ARGUMENT";
    case DENOX_ERROR_INVALID_MODEL: return "DENOX_ERROR_INVALID_MODEL";
    case DENOX_ERROR_UNSUPPORTED: return "DENOX_ERROR_UNSUPPORTED";
    case DENOX_ERROR_SHAPE_MISMATCH: return "DENOX_ERROR_SHAPE_MISMATCH";
    case DENOX_ERROR_IO: return "DENOX_ERROR_IO";
    case DENOX_ERROR_MISSING_FEATURE: return "DENOX_ERROR_MISSING_FEATURE";
    case DENOX_ERROR_VULKAN: return "DENOX_ERROR_VULKAN";
    case DENOX_ERROR_NOT_READY: return "DENOX_ERROR_NOT_READY";
    case DENOX_ERROR_INTERNAL: return "DENOX_ERROR_INTERNAL";
    case DENOX_ERROR_OUT_OF_HOST_MEMORY: return "DENOX_ERROR_OUT_OF_HOST_MEMORY";
  }
  return "DENOX_ERROR_UNKNOWN";
}

const char* denox_version_string(void) { return DENOX_VERSION_STRING; }

}  // extern "C"
