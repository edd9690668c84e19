// A plan made runnable on one device: its pipelines, its weights on the GPU, the caller's input
// and output bindings, and, per resolution, the scratch layout, push constants, dispatch sizes
// and barriers. record() only walks what set_extent() and the bind calls prepared: it
// allocates nothing, submits nothing and waits for nothing.
#pragma once

#include <volk.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/compute_pipeline.hpp"
#include "runtime/vulkan/schedule.hpp"

namespace denox::runtime {

class DeviceContext;

enum class TensorLayout : uint32_t { CHW = 0, HWC = 1 };
enum class ElementType : uint32_t { F32 = 0, F16 = 1 };

// Where some channels of a network input come from, or some channels of an output go to.
struct IoSource {
  uint32_t first_channel = 0;  // the network tensor's channels [first_channel, first_channel + channel_count)
  uint32_t channel_count = 0;
  bool is_image = false;
  // Buffer: element (c, y, x) of the caller's tensor with `pixel_channels` channels is at
  //   CHW: offset + ((source_first_channel + c) * H + y) * W + x elements,
  //   HWC: offset + (y * W + x) * pixel_channels + source_first_channel + c elements.
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // bytes; a multiple of minStorageBufferOffsetAlignment
  VkDeviceSize range = VK_WHOLE_SIZE;
  TensorLayout layout = TensorLayout::CHW;
  ElementType type = ElementType::F32;
  uint32_t pixel_channels = 0;
  uint32_t source_first_channel = 0;
  // Image: a 2D storage image view (VK_IMAGE_LAYOUT_GENERAL), components 0..channel_count-1.
  VkImageView view = VK_NULL_HANDLE;
  VkFormat format = VK_FORMAT_UNDEFINED;  // R16G16B16A16_SFLOAT or R32G32B32A32_SFLOAT
};

// Compiles an adapter shader (shaders/io_*.comp) for the given defines. For fp16 plans the
// defines include STORAGE_F16=1 (the tensors' storage type);
// kernels::ShaderCompiler::compile_with_storage_define takes exactly this form.
using AdapterCompiler =
    std::function<std::vector<uint32_t>(const std::string& family, const std::vector<std::pair<std::string, std::string>>& defines)>;

struct MemoryRequirements {
  VkDeviceSize scratch_size = 0, scratch_alignment = 0;
  VkDeviceSize weights_size = 0, weights_alignment = 0;
  VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
};

struct DispatchTiming {
  std::string name;
  double ms = 0;
};

class ExecutableModel {
 public:
  // `external_memory`: the caller binds scratch and weight buffers (bind_memory) instead of
  // denox allocating them. Weights are uploaded with the context's queue either way, except that
  // the constructor's upload (default memory mode) goes through `upload_device` when given: a
  // background view of the same device (DeviceContext::background_view()) whose queue a worker
  // thread may use while the caller submits frames on ctx's.
  // `between_pipelines`, when set, runs before each driver pipeline is created and may throw to
  // stop the construction (a background job's cancel check: with a cold driver cache one
  // pipeline can take a large part of a second, and a model's destroy waits for the job).
  ExecutableModel(const DeviceContext& ctx, plan::Plan plan, VkPipelineCache cache, AdapterCompiler adapters,
                  bool external_memory, const DeviceContext* upload_device = nullptr,
                  const std::function<void()>& between_pipelines = nullptr);
  ~ExecutableModel();

  const plan::Plan& plan() const { return plan_; }
  // Unique in the process (never reused, unlike an address): which plan a caller was told about.
  uint64_t id() const { return id_; }
  size_t input_count() const { return plan_.inputs.size(); }
  size_t output_count() const { return plan_.outputs.size(); }
  uint32_t input_channels(size_t i) const;
  uint32_t output_channels(size_t i) const;

  // Runs the shape program for width x height and prepares everything record() needs. In the
  // default memory mode it (re)allocates the scratch arena when it must grow: the caller must not
  // have command buffers from an earlier record() pending on the GPU then (see README).
  void set_extent(uint32_t width, uint32_t height);
  uint32_t width() const { return res_.width; }
  uint32_t height() const { return res_.height; }
  // The output extent of output i at the current resolution (N, C, H, W).
  std::array<int64_t, 4> output_shape(size_t i) const;
  std::array<int64_t, 4> input_shape(size_t i) const;

  MemoryRequirements memory_requirements(uint32_t width, uint32_t height) const;
  void bind_memory(VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size, VkBuffer weights,
                   VkDeviceSize weights_offset);
  // A new scratch range with the weights bind_memory bound and uploaded: nothing submitted.
  void bind_scratch(VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size);
  // Whether [offset, offset + size) of `buffer` overlaps the weights bound now, or with
  // `scratch_too` the scratch (external memory; false where none are): another plan's weights
  // must go to neither, its scratch not over the weights.
  bool bound_memory_overlaps(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size, bool scratch_too) const;
  // The bytes bind_memory uploads into the weights buffer (memory_requirements' weights_size).
  VkDeviceSize weights_bytes() const;

  // Replace all sources of input/output `index` (their channel ranges must cover the tensor's
  // channels exactly once).
  void bind_input(size_t index, const std::vector<IoSource>& sources);
  void bind_output(size_t index, const std::vector<IoSource>& sources);

  // Records all dispatches and the barriers between them into `cmd`. Benchmarks only: with a
  // query pool of at least command_count() + 1 timestamp queries, query 0 is written before the
  // first command and query i + 1 after command i; `serialize` puts a barrier before every
  // command so that those differences are per-dispatch times.
  void record(VkCommandBuffer cmd, VkQueryPool timestamps = VK_NULL_HANDLE, bool serialize = false) const;
  size_t command_count() const { return commands_.size(); }
  // The input adapter commands before the plan's first dispatch (none for an input whose caller
  // buffer is bound in its tensor's place).
  size_t input_adapter_count() const { return input_adapters_; }
  // Whether record() would succeed (extent, memory and bindings in place), and if not, why.
  bool recordable() const { return missing_.empty(); }
  const std::string& missing() const { return missing_; }
  bool external_memory() const { return external_memory_; }
  size_t barrier_count() const;
  // Whether command `index` (command_names()' order) has a barrier before it.
  bool barrier_before(size_t index) const { return commands_.at(index).barrier_before; }
  std::vector<std::string> command_names() const;
  // Tests only: drops the derived barrier before command `index`, if it has one (returns
  // whether it had): a missing barrier that the validation layer's synchronization checks must
  // report. Undone by the next set_extent() or bind_*().
  bool drop_barrier_for_testing(size_t index) { return std::exchange(commands_.at(index).barrier_before, false); }
  // Tests only: the next rebuild of the commands fails part-way (after the input adapters), as
  // a pipeline that cannot be created would: the change that caused it must be undone.
  void fail_next_build_for_testing() { fail_next_build_ = true; }

 private:
  // One recorded dispatch with everything vkCmdPushDescriptorSetKHR and vkCmdDispatch need.
  struct Command {
    std::string name;  // printable, valid UTF-8: also the dispatch's debug label
    const ComputePipeline* pipeline = nullptr;
    std::vector<VkDescriptorBufferInfo> buffers;  // per binding (unused for image bindings)
    std::vector<VkDescriptorImageInfo> images;    // per binding (unused for buffer bindings)
    std::vector<VkWriteDescriptorSet> writes;     // point into buffers/images
    std::vector<uint32_t> push;
    std::array<uint32_t, 3> groups{};
    std::vector<MemoryAccess> accesses;
    bool barrier_before = false;
  };
  struct IoBindings {
    std::vector<IoSource> sources;
  };
  // Everything that depends on the resolution alone.
  struct Resolution {
    uint32_t width = 0, height = 0;
    std::vector<int64_t> values;           // shape program values
    std::vector<uint64_t> offsets, sizes;  // per scratch tensor, bytes within the arena
    VkDeviceSize arena_size = 0;
  };
  Resolution resolve(uint32_t width, uint32_t height) const;
  uint32_t constant_channels(const plan::IoTensor& io) const;
  VkDeviceSize scratch_alignment() const;
  // Rebuilds commands_ from the resolution, bindings and memory; leaves missing_ non-empty (and
  // commands_ empty) while something record() needs is not there yet.
  void build_commands();
  // build_commands() after a change (a new extent, bindings or memory), then `then` (bind_memory's
  // weight upload); if either throws, `undo` restores what the change replaced and the commands
  // are built again (record() then records what it recorded before), and the error is rethrown.
  // Were that rebuild to fail as well, record() refuses, naming the first error.
  void rebuild_after_change(const std::function<void()>& undo, const std::function<void()>& then = {});
  const ComputePipeline& adapter_for(const IoSource& source, bool input);
  void validate_sources(const plan::IoTensor& io, const std::vector<IoSource>& sources, const char* what) const;
  // Why a buffer source's explicit range is too small at the current extent ("" if it is not).
  std::string range_shortfall(const plan::IoTensor& io, const IoSource& source) const;

  const DeviceContext& ctx_;
  const uint64_t id_;
  plan::Plan plan_;
  VkPipelineCache cache_;
  AdapterCompiler adapter_compiler_;
  bool external_memory_;
  std::vector<std::unique_ptr<ComputePipeline>> pipelines_;
  std::vector<std::pair<std::string, std::unique_ptr<ComputePipeline>>> adapters_;
  std::vector<IoBindings> input_bindings_, output_bindings_;

  // Memory: owned buffers in the default mode, the caller's otherwise.
  Buffer owned_weights_, owned_scratch_;
  VkBuffer weights_ = VK_NULL_HANDLE, scratch_ = VK_NULL_HANDLE;
  VkDeviceSize weights_offset_ = 0, scratch_offset_ = 0, scratch_capacity_ = 0;
  // A bind_memory that named the weights buffer already bound failed: that binding was dropped
  // (bind_memory says why), and record() and bind_scratch say so until a bind_memory succeeds.
  bool weights_dropped_ = false;
  bool fail_next_build_ = false;

  Resolution res_;
  std::vector<Command> commands_;
  size_t input_adapters_ = 0;  // commands_ that are input adapters (they come first)
  std::string missing_ = "set_extent() has not been called";  // what record() still lacks, for its error message
};

}  // namespace denox::runtime
