// A VkBuffer with its own VkDeviceMemory. denox allocates only a handful of these (the weight
// buffer, the scratch arena, staging for uploads, readback in tools), so one allocation per
// buffer is the simple and right choice; no sub-allocator is needed.
#pragma once

#include <volk.h>

#include <cstdint>
#include <string>

namespace denox::runtime {

class DeviceContext;

enum class MemoryKind { DeviceLocal, Upload, Readback };

class Buffer {
 public:
  Buffer() = default;
  // `what` names the buffer in errors ("scratch arena", "weights").
  Buffer(const DeviceContext& ctx, VkDeviceSize size, VkBufferUsageFlags usage, MemoryKind kind, const std::string& what);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  void* mapped() const { return mapped_; }  // host-visible kinds only
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

 private:
  void release();
  const DeviceContext* ctx_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  void* mapped_ = nullptr;
};

// Runs `record` in a one-time command buffer on the context's queue and waits for it. For
// load-time work only (weight uploads, readbacks in tools and tests), never inside record().
template <typename F> void submit_and_wait(const DeviceContext& ctx, const char* what, F&& record);
void submit_and_wait_impl(const DeviceContext& ctx, const char* what, void (*record)(VkCommandBuffer, void*), void* user);
template <typename F> void submit_and_wait(const DeviceContext& ctx, const char* what, F&& record) {
  submit_and_wait_impl(ctx, what, [](VkCommandBuffer cmd, void* user) { (*static_cast<F*>(user))(cmd); }, &record);
}

// Copies `size` bytes from host memory into `dst` at `offset` through a staging buffer.
void upload(const DeviceContext& ctx, VkBuffer dst, VkDeviceSize offset, const void* data, VkDeviceSize size);
// Copies `size` bytes of `src` at `offset` back to host memory.
void download(const DeviceContext& ctx, VkBuffer src, VkDeviceSize offset, void* data, VkDeviceSize size);

}  // namespace denox::runtime
