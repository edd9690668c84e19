// Every VkResult denox sees goes through vk_check: a failure becomes a denox::Error that names
// the call and the result, so an engine log says "vkAllocateMemory (scratch arena, 96 MiB):
// VK_ERROR_OUT_OF_DEVICE_MEMORY" instead of a crash later.
#pragma once

#include <volk.h>

#include <string>

#include "common/error.hpp"

namespace denox::runtime {

const char* vk_result_name(VkResult result);

// Throws denox::Error (ErrorCode::Vulkan, carrying `result`) when result < 0; `what` names the
// call and its object.
void vk_check(VkResult result, const std::string& what);

// Whether `e` is a lost device: a step that tolerates failures (one configuration that does
// not build or run) must pass this one on, since nothing more can run on the device.
inline bool device_lost(const Error& e) { return e.vk_result() == VK_ERROR_DEVICE_LOST; }

}  // namespace denox::runtime
