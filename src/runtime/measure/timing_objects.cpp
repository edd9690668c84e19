#include "runtime/measure/timing_objects.hpp"

#include <string>

#include "runtime/vulkan/vk_check.hpp"

namespace denox::measure {

using runtime::vk_check;

TimingObjects::TimingObjects(const runtime::DeviceContext& c, uint32_t query_count, const char* what) : ctx(c) {
  const auto& vk = ctx.vk();
  VkDevice dev = ctx.device();
  const std::string of = std::string(" (") + what + ")";
  try {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = ctx.queue_family();
    vk_check(vk.vkCreateCommandPool(dev, &pool_info, nullptr, &pool), "vkCreateCommandPool" + of);
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    vk_check(vk.vkAllocateCommandBuffers(dev, &alloc, &cmd), "vkAllocateCommandBuffers" + of);
    VkQueryPoolCreateInfo query_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query_info.queryCount = query_count;
    vk_check(vk.vkCreateQueryPool(dev, &query_info, nullptr, &queries), "vkCreateQueryPool" + of);
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk_check(vk.vkCreateFence(dev, &fence_info, nullptr, &fence), "vkCreateFence" + of);
  } catch (...) {
    release();
    throw;
  }
}

TimingObjects::~TimingObjects() { release(); }

void TimingObjects::release() {
  const auto& vk = ctx.vk();
  if (fence) vk.vkDestroyFence(ctx.device(), fence, nullptr);
  if (queries) vk.vkDestroyQueryPool(ctx.device(), queries, nullptr);
  if (pool) vk.vkDestroyCommandPool(ctx.device(), pool, nullptr);
  fence = VK_NULL_HANDLE;
  queries = VK_NULL_HANDLE;
  pool = VK_NULL_HANDLE;
  cmd = VK_NULL_HANDLE;
}

}  // namespace denox::measure
