#include "runtime/vulkan/vk_check.hpp"

#include "common/error.hpp"

namespace denox::runtime {

const char* vk_result_name(VkResult result) {
  switch (result) {
#define DENOX_RESULT(name) \
  case name: return #name;
    DENOX_RESULT(VK_SUCCESS)
    DENOX_RESULT(VK_NOT_READY)
    DENOX_RESULT(VK_TIMEOUT)
    DENOX_RESULT(VK_EVENT_SET)
    DENOX_RESULT(VK_EVENT_RESET)
    DENOX_RESULT(VK_INCOMPLETE)
    DENOX_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    DENOX_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    DENOX_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    DENOX_RESULT(VK_ERROR_DEVICE_LOST)
    DENOX_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    DENOX_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    DENOX_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    DENOX_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    DENOX_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    DENOX_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    DENOX_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    DENOX_RESULT(VK_ERROR_FRAGMENTED_POOL)
    DENOX_RESULT(VK_ERROR_UNKNOWN)
    DENOX_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    DENOX_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    DENOX_RESULT(VK_ERROR_FRAGMENTATION)
    DENOX_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    DENOX_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef DENOX_RESULT
    default: return "VkResult(unknown)";
  }
}

void vk_check(VkResult result, const std::string& what) {
  if (result >= 0) return;
  throw Error(ErrorCode::Vulkan, what + ": " + vk_result_name(result) + " (" + std::to_string(static_cast<int>(result)) + ")",
              static_cast<int>(result));
}

}  // namespace denox::runtime
