// Every VkResult denox sees goes through vk_check: a failure becomes a denox::Error that names
// the call and the result, so an engine log says "vkAllocateMemory (scratch arena, 96 MiB):
// VK_ERROR_OUT_OF_DEVICE_MEMORY" instead of a crash later.
#pragma once

#include <volk.h>

#include <string>

namespace denox::runtime {

const char* vk_result_name(VkResult result);

// Throws denox::Error (ErrorCode::Vulkan) when result < 0; `what` names the call and its object.
void vk_check(VkResult result, const std::string& what);

}  // namespace denox::runtime
