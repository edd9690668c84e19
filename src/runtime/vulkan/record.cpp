// The record stage: build_commands() turns the plan, the resolution and the bindings into a flat
// list of commands with their barriers (at set_extent / bind time), and record() walks it.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "common/error.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/executable_model.hpp"
#include "runtime/vulkan/io_adapters.hpp"
#include "runtime/vulkan/schedule.hpp"

namespace denox::runtime {

using plan::Access;
using plan::Resource;

namespace {

constexpr uint32_t kScratchSpace = 0;
constexpr uint32_t kWeightSpace = 1;
constexpr uint64_t kWholeResource = std::numeric_limits<uint64_t>::max();

uint32_t to_word(int64_t v, const std::string& what) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<uint32_t>::max())
    fail(ErrorCode::InvalidArgument, what + " is " + std::to_string(v) + ", which does not fit a 32-bit push constant");
  return static_cast<uint32_t>(v);
}

void compute_barrier(const VolkDeviceTable& vk, VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0,
                          nullptr, 0, nullptr);
}

}  // namespace

void ExecutableModel::build_commands() {
  commands_.clear();
  input_adapters_ = 0;
  missing_.clear();
  if (res_.values.empty()) {
    missing_ = "set_extent() has not been called";
    return;
  }
  if (!weights_ || !scratch_) {
    missing_ = weights_dropped_ ? "the last bind_memory() failed with the weights buffer bound before, whose binding it dropped: bind memory again"
                                : "no memory is bound (bind_memory())";
    return;
  }
  if (scratch_capacity_ < res_.arena_size) {
    missing_ = "the bound scratch buffer holds " + std::to_string(scratch_capacity_) + " bytes; " + std::to_string(res_.width) + "x" +
               std::to_string(res_.height) + " needs " + std::to_string(res_.arena_size) + " (see memory_requirements())";
    return;
  }
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    if (input_bindings_[i].sources.empty()) missing_ += (missing_.empty() ? "" : "; ") + ("input '" + plan_.inputs[i].name + "' is not bound");
  for (size_t i = 0; i < plan_.outputs.size(); ++i)
    if (output_bindings_[i].sources.empty()) missing_ += (missing_.empty() ? "" : "; ") + ("output '" + plan_.outputs[i].name + "' is not bound");
  // A new extent may need more than a bound range holds.
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    for (const auto& s : input_bindings_[i].sources)
      if (auto why = range_shortfall(plan_.inputs[i], s); !why.empty()) missing_ += (missing_.empty() ? "input " : "; input ") + why;
  for (size_t i = 0; i < plan_.outputs.size(); ++i)
    for (const auto& s : output_bindings_[i].sources)
      if (auto why = range_shortfall(plan_.outputs[i], s); !why.empty()) missing_ += (missing_.empty() ? "output " : "; output ") + why;
  if (!missing_.empty()) return;

  const auto& caps = ctx_.caps();
  const uint32_t element_size = plan::element_size(plan_.precision);
  // Where a dispatch binds part of a tensor (below), that part's offset must be a multiple of
  // this: the device's minimum for storage buffers, and 16 for the adapters' vector accesses.
  const VkDeviceSize descriptor_alignment = std::max<VkDeviceSize>(caps.min_storage_buffer_offset_alignment, 16);
  auto scratch_info = [&](uint32_t t) {
    return VkDescriptorBufferInfo{scratch_, scratch_offset_ + res_.offsets.at(t), std::max<VkDeviceSize>(res_.sizes.at(t), 4)};
  };
  auto scratch_access = [&](uint32_t t, bool write) {
    return MemoryAccess{kScratchSpace, res_.offsets.at(t), res_.offsets.at(t) + std::max<uint64_t>(res_.sizes.at(t), 4), write};
  };
  // Narrows a binding of a whole tensor (descriptor and access alike) to bytes [lo, hi) of it,
  // where that part's offset suits a descriptor: synchronization validation checks bound ranges,
  // so a dispatch may count as accessing only what it binds (src/runtime/vulkan/README.md,
  // "Barriers"). False, with nothing changed, where it does not.
  auto bind_part = [&](VkDescriptorBufferInfo& binding, MemoryAccess& access, uint64_t lo, uint64_t hi) {
    if (lo >= hi || hi > access.end - access.begin || (binding.offset + lo) % descriptor_alignment != 0) return false;
    binding.offset += lo;
    binding.range = hi - lo;
    access.end = access.begin + hi;
    access.begin += lo;
    return true;
  };
  // The caller's resources are compared by handle: each distinct buffer or view is one space.
  std::map<uint64_t, uint32_t> spaces;
  auto caller_space = [&](const IoSource& s) {
    const uint64_t key = s.is_image ? reinterpret_cast<uint64_t>(s.view) : reinterpret_cast<uint64_t>(s.buffer);
    return spaces.emplace(key, 2 + static_cast<uint32_t>(spaces.size())).first->second;
  };

  auto add_adapter = [&](const plan::IoTensor& io, const IoSource& s, bool input) {
    Command c;
    const uint32_t channels = constant_channels(io);
    const uint32_t h = static_cast<uint32_t>(res_.values.at(io.shape[2])), w = static_cast<uint32_t>(res_.values.at(io.shape[3]));
    // Printable (valid UTF-8): names from the model label dispatches (VK_EXT_debug_utils).
    c.name = printable_message(std::string(input ? "input '" : "output '") + io.name + "' channels " +
                               std::to_string(s.first_channel) + ".." + std::to_string(s.first_channel + s.channel_count - 1));
    c.pipeline = &adapter_for(s, input);
    c.buffers.resize(2);
    c.images.resize(2);
    VkDeviceSize range = s.range;
    if (s.is_image) {
      c.images[0] = {VK_NULL_HANDLE, s.view, VK_IMAGE_LAYOUT_GENERAL};
    } else {
      // A descriptor's range may not exceed maxStorageBufferRange (128 MiB is all the spec
      // promises): a VK_WHOLE_SIZE or larger range of a big pooled buffer is bound as what the
      // adapter reads or writes, and a binding that needs more is refused by name.
      const uint64_t needed = caller_bytes_needed(s, h, w, ctx_.caps().storage_buffer_16bit);
      const VkDeviceSize limit = ctx_.caps().max_storage_buffer_range;
      if (needed > limit)
        fail(ErrorCode::Unsupported, std::string(input ? "input '" : "output '") + io.name + "': its caller buffer binding needs " +
                                         std::to_string(needed) + " bytes at " + std::to_string(w) + "x" + std::to_string(h) +
                                         ", more than the device's maxStorageBufferRange (" + std::to_string(limit) + ")");
      if ((range == VK_WHOLE_SIZE || range > limit) && needed > 0) range = needed;  // (a range must not be 0)
      c.buffers[0] = {s.buffer, s.offset, range};
    }
    const uint64_t begin = s.is_image ? 0 : s.offset;
    const uint64_t end = s.is_image || range == VK_WHOLE_SIZE ? kWholeResource : s.offset + range;
    c.accesses.push_back({caller_space(s), begin, end, !input});
    // The tensor side (NCHW, N = 1): where the offset of this source's first channel is aligned
    // for a descriptor, only its channels are bound (the adapter then addresses them from
    // channel 0), so adapters for different channel ranges of one tensor need no barrier between
    // them. Otherwise the whole tensor is bound and counted as accessed, which puts a barrier
    // between adapters writing one tensor: synchronization validation checks the bound range,
    // and two unordered writes of one range are a hazard to it even where the bytes differ.
    const uint64_t plane = uint64_t{h} * w * element_size;
    c.buffers[1] = scratch_info(io.scratch);
    c.accesses.push_back(scratch_access(io.scratch, input));
    IoSource addressed = s;
    if (bind_part(c.buffers[1], c.accesses[1], s.first_channel * plane, (s.first_channel + s.channel_count) * plane))
      addressed.first_channel = 0;
    c.push = adapter_push_constants(addressed, channels, h, w);
    c.groups = adapter_groups(s, h, w);
    for (int k = 0; k < 3; ++k)
      if (c.groups[k] > caps.max_workgroup_count[k])
        fail(ErrorCode::Unsupported, std::string(input ? "input '" : "output '") + io.name + "': its adapter needs " +
                                         std::to_string(c.groups[k]) + " workgroups along axis " + std::to_string(k) + " at " +
                                         std::to_string(w) + "x" + std::to_string(h) + "; the device allows " +
                                         std::to_string(caps.max_workgroup_count[k]));
    commands_.push_back(std::move(c));
  };

  // A caller buffer that holds a tensor exactly as the plan stores it is bound in its place: no
  // adapter dispatch, no copy (docs: "Inputs and outputs").
  const ElementType plan_type = plan_.precision == plan::Precision::F16 ? ElementType::F16 : ElementType::F32;
  std::map<uint32_t, std::pair<IoSource, uint64_t>> direct;  // scratch tensor -> (caller buffer, bytes)
  auto in_place_of = [&](const plan::IoTensor& io, const std::vector<IoSource>& sources) -> std::optional<uint64_t> {
    if (sources.size() != 1) return std::nullopt;
    const IoSource& s = sources[0];
    const uint32_t channels = constant_channels(io);
    if (s.is_image || s.layout != TensorLayout::CHW || s.type != plan_type || s.first_channel != 0 || s.source_first_channel != 0 ||
        s.channel_count != channels || res_.values.at(io.shape[0]) != 1)
      return std::nullopt;
    const uint64_t bytes = uint64_t{channels} * static_cast<uint64_t>(res_.values.at(io.shape[2]) * res_.values.at(io.shape[3])) * element_size;
    if (bytes == 0) return std::nullopt;  // (an empty tensor: no zero-range descriptor)
    // The plan's dispatches address the whole tensor through the caller's range: only where the
    // shapes say exactly that much (a forged shape could say less).
    if (bytes != res_.sizes.at(io.scratch)) return std::nullopt;
    return bytes;
  };
  // (A tensor that is several inputs or outputs at once, e.g. through an Identity, keeps its adapters.)
  std::map<uint32_t, int> io_uses;
  for (const auto* list : {&plan_.inputs, &plan_.outputs})
    for (const plan::IoTensor& io : *list) ++io_uses[io.scratch];
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    if (auto bytes = in_place_of(plan_.inputs[i], input_bindings_[i].sources); bytes && io_uses[plan_.inputs[i].scratch] == 1)
      direct[plan_.inputs[i].scratch] = {input_bindings_[i].sources[0], *bytes};
  // An output whose bytes overlap an input's keeps its adapter (after every dispatch): a plan may
  // write an output before its last read of an input, and denoising in place must still work.
  auto overlaps_an_input = [&](const IoSource& out, uint64_t bytes) {
    for (const auto& binding : input_bindings_)
      for (const IoSource& in : binding.sources) {
        if (in.is_image || in.buffer != out.buffer) continue;
        const uint64_t in_end = in.range == VK_WHOLE_SIZE ? kWholeResource : in.offset + in.range;
        if (in.offset < out.offset + bytes && out.offset < in_end) return true;
      }
    return false;
  };
  for (size_t i = 0; i < plan_.outputs.size(); ++i)
    if (auto bytes = in_place_of(plan_.outputs[i], output_bindings_[i].sources); bytes && io_uses[plan_.outputs[i].scratch] == 1)
      if (!overlaps_an_input(output_bindings_[i].sources[0], *bytes))
        direct[plan_.outputs[i].scratch] = {output_bindings_[i].sources[0], *bytes};

  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    if (!direct.count(plan_.inputs[i].scratch))
      for (const auto& s : input_bindings_[i].sources) add_adapter(plan_.inputs[i], s, true);
  input_adapters_ = commands_.size();
  if (std::exchange(fail_next_build_, false)) fail(ErrorCode::Internal, "a failure injected by fail_next_build_for_testing()");

  for (size_t d = 0; d < plan_.dispatches.size(); ++d) {
    const auto& pd = plan_.dispatches[d];
    Command c;
    c.name = printable_message(pd.name);
    c.pipeline = pipelines_.at(pd.pipeline).get();
    bool empty = false;
    for (int k = 0; k < 3; ++k) {
      const int64_t g = res_.values.at(pd.groups[k]);
      if (g < 0 || g > caps.max_workgroup_count[k])
        fail(ErrorCode::Unsupported, "dispatch '" + pd.name + "' needs " + std::to_string(g) + " workgroups along axis " +
                                         std::to_string(k) + " at " + std::to_string(res_.width) + "x" + std::to_string(res_.height) +
                                         "; the device allows " + std::to_string(caps.max_workgroup_count[k]));
      c.groups[k] = static_cast<uint32_t>(g);
      empty = empty || g == 0;
    }
    if (empty) continue;  // a zero-sized tensor: nothing to compute
    for (const auto& b : pd.bindings) {
      const bool write = b.access != Access::Read;
      if (auto it = direct.find(b.index); b.resource == Resource::Scratch && it != direct.end()) {
        const auto& [s, bytes] = it->second;
        c.buffers.push_back({s.buffer, s.offset, bytes});
        c.accesses.push_back({caller_space(s), s.offset, s.offset + bytes, write});
      } else if (b.resource == Resource::Scratch) {
        c.buffers.push_back(scratch_info(b.index));
        c.accesses.push_back(scratch_access(b.index, write));
      } else {
        const auto& range = plan_.weights.at(b.index);
        c.buffers.push_back({weights_, weights_offset_ + range.offset, std::max<VkDeviceSize>(range.size, 4)});
        c.accesses.push_back({kWeightSpace, range.offset, range.offset + range.size, write});
      }
    }
    c.images.resize(c.buffers.size());
    for (size_t k = 0; k < pd.push_constants.size(); ++k)
      c.push.push_back(to_word(res_.values.at(pd.push_constants[k]), "push constant " + std::to_string(k) + " of '" + pd.name + "'"));
    // A copy (Concat's per-input dispatches) writes only part of its destination (binding 1).
    // As for the adapters: only where that part's offset suits a descriptor is it bound (and
    // counted) alone, its destination offset (push constant 8, in elements) then counting from
    // there, so that copies into disjoint parts of one tensor need no barrier between them.
    if (plan_.pipelines.at(pd.pipeline).family == "copy" && pd.bindings.size() == 2 &&
        pd.bindings[1].resource == Resource::Scratch) {
      constexpr size_t kDstOffsetWord = 8;
      const auto range = copy_write_range(c.push, c.groups, element_size);
      if (range && c.push.size() > kDstOffsetWord && bind_part(c.buffers[1], c.accesses[1], (*range)[0], (*range)[1]))
        c.push[kDstOffsetWord] -= static_cast<uint32_t>((*range)[0] / element_size);
    }
    commands_.push_back(std::move(c));
  }

  for (size_t i = 0; i < plan_.outputs.size(); ++i)
    if (!direct.count(plan_.outputs[i].scratch))
      for (const auto& s : output_bindings_[i].sources) add_adapter(plan_.outputs[i], s, false);

  std::vector<std::vector<MemoryAccess>> accesses;
  for (const auto& c : commands_) accesses.push_back(c.accesses);
  const std::vector<bool> barriers = derive_barriers(accesses);
  for (size_t i = 0; i < commands_.size(); ++i) {
    Command& c = commands_[i];
    c.barrier_before = barriers[i];
    const auto& types = c.pipeline->bindings();
    c.writes.clear();
    for (uint32_t b = 0; b < types.size(); ++b) {
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstBinding = b;
      w.descriptorCount = 1;
      w.descriptorType = types[b];
      if (types[b] == VK_DESCRIPTOR_TYPE_STORAGE_IMAGE) {
        w.pImageInfo = &c.images[b];
      } else {
        w.pBufferInfo = &c.buffers[b];
      }
      c.writes.push_back(w);
    }
  }
}

void ExecutableModel::record(VkCommandBuffer cmd, VkQueryPool timestamps, bool serialize) const {
  if (!missing_.empty()) fail(ErrorCode::InvalidArgument, "record: " + missing_);
  if (!cmd) fail(ErrorCode::InvalidArgument, "record: the command buffer is VK_NULL_HANDLE");
  const auto& vk = ctx_.vk();
  const DebugLabels& labels = ctx_.labels();
  const auto begin_label = [&](const char* name) {
    VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    label.pLabelName = name;
    labels.begin(cmd, &label);
  };
  if (labels.enabled()) begin_label("denox");
  // Earlier work on this queue (the previous frame's dispatches) may still read or write the
  // scratch arena that the first commands write: order it. The caller's own resources are the
  // caller's to synchronize (README: "Barriers").
  compute_barrier(vk, cmd);
  if (timestamps) {
    vk.vkCmdResetQueryPool(cmd, timestamps, 0, static_cast<uint32_t>(commands_.size() + 1));
    vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, timestamps, 0);
  }
  VkPipeline bound = VK_NULL_HANDLE;
  for (size_t i = 0; i < commands_.size(); ++i) {
    const Command& c = commands_[i];
    if (c.barrier_before || (serialize && i > 0)) compute_barrier(vk, cmd);
    if (c.pipeline->pipeline() != bound) {
      vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c.pipeline->pipeline());
      bound = c.pipeline->pipeline();
    }
    vk.vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c.pipeline->layout(), 0,
                                 static_cast<uint32_t>(c.writes.size()), c.writes.data());
    if (!c.push.empty())
      vk.vkCmdPushConstants(cmd, c.pipeline->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            static_cast<uint32_t>(c.push.size() * sizeof(uint32_t)), c.push.data());
    if (labels.enabled()) begin_label(c.name.c_str());
    vk.vkCmdDispatch(cmd, c.groups[0], c.groups[1], c.groups[2]);
    if (labels.enabled()) labels.end(cmd);
    if (timestamps) vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, timestamps, static_cast<uint32_t>(i + 1));
  }
  if (labels.enabled()) labels.end(cmd);
}

size_t ExecutableModel::barrier_count() const {
  return static_cast<size_t>(std::count_if(commands_.begin(), commands_.end(), [](const Command& c) { return c.barrier_before; }));
}

std::vector<std::string> ExecutableModel::command_names() const {
  std::vector<std::string> names;
  for (const auto& c : commands_) names.push_back(c.name);
  return names;
}

}  // namespace denox::runtime
