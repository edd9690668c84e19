// The engine's side of Vulkan, for denox's own tools, tests and benchmarks: what an engine
// would do around libdenox (create or wrap a device with what denox needs, buffers, storage
// images, one-shot submits, timestamp queries). Not part of libdenox: it uses its own copy of
// volk, which also shows that the library's private volk does not clash with a caller's.
#pragma once

#include <volk.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <denox/denox.h>

namespace denox::vkhost {

// Throws std::runtime_error naming the call and the VkResult.
void check(VkResult r, const char* what);

class Device {
 public:
  // Creates an instance (with the Khronos validation layer and its synchronization validation
  // when `validation`, refused if the layer lacks VK_EXT_validation_features: the tests rely on
  // it; its errors are counted and printed) and a device with every extension and feature denox lists as
  // required or optional that the physical device supports. device_index -1: the first
  // discrete GPU, else the first device. `bare`: enable no extension and no feature (tests of
  // denox's missing-feature errors).
  static std::unique_ptr<Device> create(int device_index, bool validation, bool bare = false);
  // Uses a denox headless context's own objects (no ownership). With `queue_owner` (that
  // context), submit() takes denox_context_lock_queue around its submits, so that it may run
  // while the context's models work in the background.
  static std::unique_ptr<Device> wrap(const denox_context_info& info, denox_context queue_owner = nullptr);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The device for denox_context_create, with lock_queue/unlock_queue taking the lock submit()
  // holds (what an engine that submits from one thread while denox works in the background
  // does).
  denox_vulkan_device as_denox() const;
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceProperties& properties() const { return props_; }
  bool fp16() const { return fp16_; }
  uint64_t validation_errors() const;

  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags required) const;
  // Records with `fn` into a fresh primary command buffer, submits it and waits.
  void submit(const std::function<void(VkCommandBuffer)>& fn) const;

 private:
  Device() = default;
  void finish(bool owns);
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  bool owns_ = false, fp16_ = false;
  // Around every vkQueueSubmit on queue_: this mutex, or a headless context's queue lock.
  mutable std::mutex queue_mutex_;
  denox_context queue_owner_ = nullptr;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props_{};
  std::vector<std::string> extensions_;
  std::vector<const char*> extension_ptrs_;
  std::vector<const char*> instance_extension_ptrs_;  // what the instance was created with
  // The feature chain the device was created with (kept alive for as_denox()).
  struct Features;
  std::shared_ptr<Features> features_;
};

// A storage buffer in host-visible memory (simple and good enough for tools and tests; the
// benchmarks' inputs live in device-local memory, see `device_local`).
class Buffer {
 public:
  Buffer(const Device& dev, VkDeviceSize size, bool device_local = false,
         VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  // Host-visible buffers only.
  void write(const void* data, size_t bytes, size_t offset = 0);
  void read(void* data, size_t bytes, size_t offset = 0) const;

 private:
  const Device& dev_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  void* mapped_ = nullptr;
};

// A 2D RGBA storage image (R16G16B16A16_SFLOAT or R32G32B32A32_SFLOAT) kept in
// VK_IMAGE_LAYOUT_GENERAL, with upload/download of float RGBA texels through a staging buffer.
class Image {
 public:
  Image(const Device& dev, uint32_t width, uint32_t height, VkFormat format);
  ~Image();
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
  VkImageView view() const { return view_; }
  VkFormat format() const { return format_; }
  void upload(const std::vector<float>& rgba);
  std::vector<float> download() const;

 private:
  const Device& dev_;
  uint32_t width_, height_;
  VkFormat format_;
  VkImage image_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkImageView view_ = VK_NULL_HANDLE;
};

// Timestamp queries: records `fn` (which writes queries 0..count-1 itself, e.g. through
// denox_model_record_timed) `runs` times and returns per-query times in ms relative to query 0.
std::vector<std::vector<double>> timed_runs(const Device& dev, uint32_t query_count, int runs,
                                           const std::function<void(VkCommandBuffer, VkQueryPool)>& fn);

// Whole-frame times in ms: records `fn` `runs` times, each between a first and a last
// timestamp of its own, with none in between. That is what an engine's frame pays: on NVIDIA's
// driver commands after a timestamp wait for it, so per-dispatch timestamps
// (denox_model_record_timed) order the dispatches and add 1-2% on an H100.
std::vector<double> timed_frames(const Device& dev, int runs, const std::function<void(VkCommandBuffer)>& fn);

// fp32 <-> IEEE half.
uint16_t to_half(float f);
float from_half(uint16_t h);

}  // namespace denox::vkhost
