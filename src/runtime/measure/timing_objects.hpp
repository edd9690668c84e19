// The Vulkan objects of work that is submitted one submit at a time and timed with timestamp
// queries: the measurer's runs of an edge, the clock keeper's busy work. Created together,
// destroyed in any case (also when a creation in between fails).
#pragma once

#include <volk.h>

#include <cstdint>

#include "runtime/vulkan/device_context.hpp"

namespace denox::measure {

struct TimingObjects {
  // A resettable command pool on the device's queue family with one primary command buffer,
  // `query_count` timestamp queries and an unsignalled fence. `what` names them in errors.
  TimingObjects(const runtime::DeviceContext& ctx, uint32_t query_count, const char* what);
  ~TimingObjects();
  TimingObjects(const TimingObjects&) = delete;
  TimingObjects& operator=(const TimingObjects&) = delete;

  const runtime::DeviceContext& ctx;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;  // freed with the pool
  VkQueryPool queries = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;

 private:
  void release();
};

}  // namespace denox::measure
