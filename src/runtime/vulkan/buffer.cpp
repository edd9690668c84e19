#include "runtime/vulkan/buffer.hpp"

#include <mutex>

#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::runtime {

Buffer::Buffer(const DeviceContext& ctx, VkDeviceSize size, VkBufferUsageFlags usage, MemoryKind kind, const std::string& what)
    : ctx_(&ctx), size_(size) {
  const auto& vk = ctx.vk();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size == 0 ? 4 : size;  // Vulkan forbids empty buffers; a 0-byte request still binds
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  const std::string label = what + " (" + std::to_string(size) + " bytes)";
  vk_check(vk.vkCreateBuffer(ctx.device(), &info, nullptr, &buffer_), "vkCreateBuffer " + label);
  try {
    VkMemoryRequirements req;
    vk.vkGetBufferMemoryRequirements(ctx.device(), buffer_, &req);
    VkMemoryPropertyFlags required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, preferred = 0;
    if (kind == MemoryKind::Upload) {
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    } else if (kind == MemoryKind::Readback) {
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    }
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, required, preferred);
    vk_check(vk.vkAllocateMemory(ctx.device(), &alloc, nullptr, &memory_), "vkAllocateMemory " + label);
    vk_check(vk.vkBindBufferMemory(ctx.device(), buffer_, memory_, 0), "vkBindBufferMemory " + label);
    if (kind != MemoryKind::DeviceLocal)
      vk_check(vk.vkMapMemory(ctx.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory " + label);
  } catch (...) {
    release();
    throw;
  }
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::exchange(other.ctx_, nullptr);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
  }
  return *this;
}

void Buffer::release() {
  if (!ctx_) return;
  const auto& vk = ctx_->vk();
  if (buffer_) vk.vkDestroyBuffer(ctx_->device(), buffer_, nullptr);
  if (memory_) vk.vkFreeMemory(ctx_->device(), memory_, nullptr);  // unmaps implicitly
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

void submit_and_wait_impl(const DeviceContext& ctx, const char* what, void (*record)(VkCommandBuffer, void*), void* user) {
  if (!ctx.queue())
    fail(ErrorCode::InvalidArgument, std::string(what) + " needs a VkQueue: pass one in the Vulkan handles (denox uses it only at load time)");
  const auto& vk = ctx.vk();
  VkDevice dev = ctx.device();
  VkCommandPool pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  auto cleanup = [&] {
    if (fence) vk.vkDestroyFence(dev, fence, nullptr);
    if (pool) vk.vkDestroyCommandPool(dev, pool, nullptr);
  };
  try {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool_info.queueFamilyIndex = ctx.queue_family();
    vk_check(vk.vkCreateCommandPool(dev, &pool_info, nullptr, &pool), std::string("vkCreateCommandPool (") + what + ")");
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk_check(vk.vkAllocateCommandBuffers(dev, &alloc, &cmd), std::string("vkAllocateCommandBuffers (") + what + ")");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk_check(vk.vkBeginCommandBuffer(cmd, &begin), std::string("vkBeginCommandBuffer (") + what + ")");
    record(cmd, user);
    vk_check(vk.vkEndCommandBuffer(cmd), std::string("vkEndCommandBuffer (") + what + ")");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk_check(vk.vkCreateFence(dev, &fence_info, nullptr, &fence), std::string("vkCreateFence (") + what + ")");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    {
      const auto guard = ctx.lock_queue();
      vk_check(vk.vkQueueSubmit(ctx.queue(), 1, &submit, fence), std::string("vkQueueSubmit (") + what + ")");
    }
    vk_check(vk.vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX), std::string("vkWaitForFences (") + what + ")");
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
}

namespace {

// A full memory barrier between a transfer and everything else, for one-time load work.
void transfer_barrier(const DeviceContext& ctx, VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  ctx.vk().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &barrier, 0,
                                nullptr, 0, nullptr);
}

}  // namespace

void upload(const DeviceContext& ctx, VkBuffer dst, VkDeviceSize offset, const void* data, VkDeviceSize size) {
  if (size == 0) return;
  Buffer staging(ctx, size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, MemoryKind::Upload, "upload staging");
  std::memcpy(staging.mapped(), data, size);
  submit_and_wait(ctx, "weight upload", [&](VkCommandBuffer cmd) {
    transfer_barrier(ctx, cmd);
    VkBufferCopy region{0, offset, size};
    ctx.vk().vkCmdCopyBuffer(cmd, staging.handle(), dst, 1, &region);
    transfer_barrier(ctx, cmd);
  });
}

void download(const DeviceContext& ctx, VkBuffer src, VkDeviceSize offset, void* data, VkDeviceSize size) {
  if (size == 0) return;
  Buffer staging(ctx, size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, MemoryKind::Readback, "readback staging");
  submit_and_wait(ctx, "readback", [&](VkCommandBuffer cmd) {
    transfer_barrier(ctx, cmd);
    VkBufferCopy region{offset, 0, size};
    ctx.vk().vkCmdCopyBuffer(cmd, src, staging.handle(), 1, &region);
    transfer_barrier(ctx, cmd);
  });
  std::memcpy(data, staging.mapped(), size);
}

}  // namespace denox::runtime
