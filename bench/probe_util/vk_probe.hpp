// What the bench/ probes (coopmat2_probe, direct_conv_probe, pipeline_stats) share: their own
// small Vulkan setup through volk (they measure things libdenox does not expose), GLSL compiled
// with the glslang library, and one timed compute harness (storage buffers in one descriptor
// set, push constants, timestamp queries around back-to-back dispatches). Not part of libdenox.
#pragma once

#include <volk.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace denox::probe {

// Throws std::runtime_error naming the call and the VkResult.
void check(VkResult r, const char* what);
#define PROBE_VK(call) ::denox::probe::check((call), #call)

bool has_extension(VkPhysicalDevice p, const char* name);

// volkInitialize + a Vulkan 1.3 instance (volk loaded for it) and its physical devices.
VkInstance create_instance(const char* app_name);
std::vector<VkPhysicalDevice> physical_devices(VkInstance instance);

// The first queue family with compute.
uint32_t compute_queue_family(VkPhysicalDevice p);

// A device with one queue of `family`, the given extensions and feature chain (VkPhysicalDeviceFeatures2
// at its head); volk loaded for it.
VkDevice create_device(VkPhysicalDevice p, uint32_t family, const std::vector<const char*>& extensions, const void* features);

// The whole text file at `path` (a probe's shader); throws std::runtime_error naming it.
std::string read_source(const std::string& path);

// A device with VK_KHR_cooperative_matrix, fp16 arithmetic and 16-bit storage, every feature of
// those structures the device has enabled (and pipelineExecutableInfo where `statistics` is
// asked for and present: `stats`), or phys = null where there is none. Prints the device's name.
// Destroys its device and instance.
struct CoopGpu {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice dev = VK_NULL_HANDLE;
  uint32_t family = 0;
  bool stats = false;
  CoopGpu() = default;
  CoopGpu(CoopGpu&& o) noexcept;
  CoopGpu(const CoopGpu&) = delete;
  CoopGpu& operator=(const CoopGpu&) = delete;
  CoopGpu& operator=(CoopGpu&&) = delete;
  ~CoopGpu();
};
CoopGpu open_coop_gpu(const char* app_name, bool statistics);

// "name=value" for each statistic of each executable of `pipeline` (created with
// VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR on a device with pipelineExecutableInfo enabled).
std::vector<std::string> pipeline_statistics(VkDevice dev, VkPipeline pipeline);

// The "Register Count" statistic the driver reports for `pipe` (created with statistics capture
// on a CoopGpu with `stats`), or -1.
int register_count(const CoopGpu& g, VkPipeline pipe);

// GLSL compute source with `preamble` (macro lines) -> SPIR-V 1.6 for Vulkan 1.3; throws with the
// info log, naming `name`. Call glslang::InitializeProcess() first.
std::vector<uint32_t> compile_compute(const std::string& source, const std::string& preamble, const std::string& name);

// The plain 3x3 convolutions of OIDN balanced the conv probes measure (stride 1, padding 1, ReLU),
// with conv2d_coopmat's time for each in the tuned plan on the H100 (bench/RESULTS.md; 0 where
// the plan fuses the layer with others), for the ratio.
struct ConvShape {
  const char* name;
  uint32_t cin, cout, w, h;
  double plan_ms;
};
std::vector<ConvShape> plain_conv_shapes();
// Over `shapes`, the largest fp16 input with its one-pixel zero border and the largest fp16
// output, in bytes: the probes' buffer sizes.
struct ConvIoBytes {
  uint64_t x = 0, y = 0;
};
ConvIoBytes max_conv_io_bytes(const std::vector<ConvShape>& shapes);

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
};

// Storage buffers bound as set 0 bindings 0..n-1, push constants, one command buffer, timestamps.
class ComputeHarness {
 public:
  ComputeHarness(VkPhysicalDevice phys, VkDevice dev, uint32_t family, uint32_t push_bytes, uint32_t max_timed);
  ~ComputeHarness();
  ComputeHarness(const ComputeHarness&) = delete;
  ComputeHarness& operator=(const ComputeHarness&) = delete;

  // A buffer with storage and transfer usage in memory with `props`; freed by the harness.
  Buffer buffer(VkDeviceSize size, VkMemoryPropertyFlags props);
  // Binds these buffers (whole) as bindings 0..n-1 (once, before the first pipeline).
  void bind(const std::vector<Buffer>& buffers);
  // A pipeline on the harness's layout; VK_NULL_HANDLE (and `*result`) where the driver refuses it.
  // capture_statistics: for pipeline_statistics (the device needs pipelineExecutableInfo).
  VkPipeline pipeline(const std::vector<uint32_t>& spirv, VkResult* result, bool capture_statistics = false);
  void destroy(VkPipeline p);
  // Records with `fn` into the command buffer, submits and waits (30 s at most).
  void submit(const std::function<void(VkCommandBuffer)>& fn);
  // `before`, then warmup + runs dispatches of `pipe` (each between timestamps, a full barrier
  // after each), then `after`, in one submit. Returns the median of the timed runs in ms.
  double time_dispatches(VkPipeline pipe, const void* push, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t warmup, uint32_t runs,
                         const std::function<void(VkCommandBuffer)>& before, const std::function<void(VkCommandBuffer)>& after);
  // `bytes` of `data` into `dst` through the host-visible `staging` buffer (at least that big).
  void upload(const Buffer& dst, const Buffer& staging, const void* data, VkDeviceSize bytes);
  // Mapped view of a host-visible buffer's first `bytes`, copied out.
  std::vector<uint8_t> read(const Buffer& b, size_t bytes);
  // A memory barrier covering shader and transfer writes before shader and transfer access.
  static void full_barrier(VkCommandBuffer cmd);

 private:
  VkDevice dev_;
  VkQueue queue_ = VK_NULL_HANDLE;
  float ts_period_ = 1;
  uint32_t push_bytes_, max_timed_;
  VkPhysicalDeviceMemoryProperties mem_{};
  std::vector<Buffer> owned_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

}  // namespace denox::probe
