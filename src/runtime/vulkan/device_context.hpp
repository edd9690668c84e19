// The Vulkan device denox runs on: either the engine's (instance, physical device, device, queue
// family, optional queue, vkGetInstanceProcAddr, and what it enabled at device creation) or one
// denox creates itself for tools and tests. Entry points come from volk: instance-level ones
// globally (loader trampolines, valid for any instance), device-level ones in a per-context
// VolkDeviceTable so two contexts on two devices never clobber each other.
#pragma once

#include <volk.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace denox::runtime {

struct CoopMatrixShape {
  uint32_t m = 0, n = 0, k = 0;
  VkComponentTypeKHR a_type{}, b_type{}, c_type{}, result_type{};
};

// What the physical device is and what the device was created with (for the caller's device:
// what the caller said it enabled).
struct DeviceCapabilities {
  std::string device_name, driver_name, driver_info;
  uint32_t api_version = 0, driver_version = 0, vendor_id = 0, device_id = 0;
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};
  VkPhysicalDeviceType device_type{};

  // Enabled on the device.
  bool push_descriptor = false;
  bool storage_buffer_16bit = false;
  bool shader_float16 = false;
  bool shader_int8 = false;  // shaderInt8 enabled (int8 cooperative matrices: the int8 precision)
  bool cooperative_matrix = false;
  // vulkanMemoryModel and vulkanMemoryModelDeviceScope enabled: the cooperative-matrix shaders
  // declare the VulkanMemoryModel capability (glslang's GL_KHR_memory_scope_semantics), which
  // needs the first; with the first on, the io adapters' device-scope atomics need the second.
  bool vulkan_memory_model = false;
  bool vulkan_memory_model_device_scope = false;
  bool fp16_usable() const { return storage_buffer_16bit && shader_float16; }

  // Limits and properties.
  bool timestamps = false;  // timestampComputeAndGraphics and the queue family has valid bits
  float timestamp_period_ns = 1.0f;
  uint32_t timestamp_valid_bits = 0;
  VkDeviceSize min_storage_buffer_offset_alignment = 256;
  VkDeviceSize max_storage_buffer_range = 0;
  // The largest buffer the device may create (maxBufferSize: Vulkan 1.3 or VK_KHR_maintenance4;
  // unlimited where neither says; lavapipe: 4 GiB - 1), and the largest allocation it promises
  // (maxMemoryAllocationSize: past it vkAllocateMemory may fail, though many drivers allocate
  // more; lavapipe: 2 GiB).
  VkDeviceSize max_buffer_size = 0;
  VkDeviceSize max_memory_allocation_size = 0;
  uint32_t max_push_constants_size = 0;
  uint32_t max_push_descriptors = 0;
  uint32_t max_compute_shared_memory = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  std::array<uint32_t, 3> max_workgroup_size{};
  uint32_t max_workgroup_invocations = 0;
  uint32_t subgroup_size = 0;
  std::vector<CoopMatrixShape> coop_matrix_shapes;
};

// One thing denox needs or can use; `missing` lists the required ones a device lacks.
struct DeviceRequirement {
  std::string name;  // extension name or "VkPhysicalDeviceVulkan12Features::shaderFloat16"
  bool required = false;  // false: optional, enables a faster path (fp16, cooperative matrices)
  std::string why;
};
const std::vector<DeviceRequirement>& device_requirements();

// The engine's lock around a VkQueue it also submits to (VkQueue is externally synchronized):
// denox calls lock(queue, user) before and unlock(queue, user) after each submit of its
// background work. Both or neither.
struct QueueLockHooks {
  void (*lock)(VkQueue queue, void* user) = nullptr;
  void (*unlock)(VkQueue queue, void* user) = nullptr;
  void* user = nullptr;
  explicit operator bool() const { return lock != nullptr && unlock != nullptr; }
};

// Held while denox submits to a queue: the engine's lock (if any) first, then denox's own mutex
// (always in that order, so a caller holding its lock while calling into denox cannot deadlock
// against a worker).
class QueueGuard {
 public:
  QueueGuard(std::mutex& mutex, const QueueLockHooks& hooks, VkQueue queue);
  ~QueueGuard();
  QueueGuard(const QueueGuard&) = delete;
  QueueGuard& operator=(const QueueGuard&) = delete;

 private:
  const QueueLockHooks& hooks_;
  VkQueue queue_;
  std::unique_lock<std::mutex> lock_;
};

struct ExternalDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family_index = 0;
  VkQueue queue = VK_NULL_HANDLE;  // optional: for weight uploads (one-time, at load/bind)
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  std::vector<std::string> enabled_extensions;
  std::vector<std::string> enabled_instance_extensions;  // VK_EXT_debug_utils: labels
  const void* enabled_features_chain = nullptr;  // the VkDeviceCreateInfo::pNext chain, or null
  // Background work (a worker thread measuring or uploading while the engine submits frames):
  // a queue of queue_family_index only denox uses, and/or the engine's lock around a queue.
  VkQueue background_queue = VK_NULL_HANDLE;
  QueueLockHooks queue_lock;
};

// VK_EXT_debug_utils' command-buffer labels, where the instance enabled the extension (an
// engine that lists it in enabled_instance_extensions; a headless context with validation):
// record() names its work with them, so that RenderDoc, Nsight or RGP show "denox" and each
// dispatch's name. Only the list tells: loaders return the entry points of extensions an
// instance did not enable (Vulkan-Loader issue 1443), which must not be called then.
struct DebugLabels {
  PFN_vkCmdBeginDebugUtilsLabelEXT begin = nullptr;
  PFN_vkCmdEndDebugUtilsLabelEXT end = nullptr;
  bool enabled() const { return begin != nullptr; }
  // Both entry points of `instance`, or none.
  static DebugLabels load(PFN_vkGetInstanceProcAddr gipa, VkInstance instance);
};

struct OwnDeviceOptions {
  int device_index = -1;     // -1: the first discrete GPU, else the first device
  bool validation = false;   // enable VK_LAYER_KHRONOS_validation and count its errors
};

class DeviceContext {
 public:
  static std::unique_ptr<DeviceContext> from_external(const ExternalDevice& ext);
  static std::unique_ptr<DeviceContext> create_own(const OwnDeviceOptions& options);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  const VolkDeviceTable& vk() const { return table_; }
  const DebugLabels& labels() const { return labels_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkInstance instance() const { return instance_; }
  uint32_t queue_family() const { return queue_family_; }
  VkQueue queue() const { return queue_; }  // may be VK_NULL_HANDLE for an external device
  // vkQueueSubmit on queue() under this lock: a context is used from several threads (loads,
  // measurements) and a VkQueue is externally synchronized.
  std::mutex& queue_mutex() const { return *queue_mutex_; }
  // What every denox submit holds: queue_mutex(), plus the engine's lock hooks on a background
  // view (see background_view()).
  QueueGuard lock_queue() const { return QueueGuard(*queue_mutex_, hooks_, queue_); }

  // A second DeviceContext over the same device whose queue() a worker thread may submit to
  // while the caller records and submits frames: denox's own device (its queue under
  // queue_mutex(), which callers of the headless context's queue take through the C API), the
  // engine's background_queue, or the engine's queue under its lock hooks. Null when the
  // engine provided neither. Not an owner: it must not outlive this context.
  std::unique_ptr<DeviceContext> background_view() const;
  const DeviceCapabilities& caps() const { return caps_; }
  bool owns_device() const { return owns_device_; }

  // Memory type index with all of `required` (and, if possible, `preferred`) properties.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

  // Validation-layer messages of severity error seen so far (own instance with validation only).
  uint64_t validation_errors() const { return validation_errors_->load(); }
  // The answer of the A_DIRECT element-order check (coop_layout_check.hpp), kept by
  // runtime::checked_coop_a_rows (background views share it): -1 none yet, 0 failed or not
  // applicable, 1 passed.
  int coop_a_rows_state() const { return coop_a_rows_->load(); }
  void set_coop_a_rows(bool passed) const { coop_a_rows_->store(passed ? 1 : 0); }

  // Lists the physical devices of a fresh instance (for `denox info` and --device).
  static std::vector<DeviceCapabilities> enumerate(bool validation);

 private:
  DeviceContext() = default;
  void load(bool owns_instance, bool owns_device);
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  bool owns_instance_ = false, owns_device_ = false;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  // Shared with background views that submit to the same queue.
  std::shared_ptr<std::mutex> queue_mutex_ = std::make_shared<std::mutex>();
  VkQueue background_queue_ = VK_NULL_HANDLE;
  QueueLockHooks engine_hooks_;  // as the engine passed them
  QueueLockHooks hooks_;         // what lock_queue() calls: engine_hooks_ on a background view only
  std::shared_ptr<std::atomic<uint64_t>> validation_errors_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<int>> coop_a_rows_ = std::make_shared<std::atomic<int>>(-1);
  VolkDeviceTable table_{};
  DebugLabels labels_;
  DeviceCapabilities caps_;
  VkPhysicalDeviceMemoryProperties memory_{};
};

}  // namespace denox::runtime
