#include "runtime/vulkan/executable_model.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <tuple>

#include "common/error.hpp"
#include "common/log.hpp"
#include "runtime/bind_shapes.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/io_adapters.hpp"
#include "runtime/vulkan/schedule.hpp"

namespace denox::runtime {

using plan::Resource;

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// A weight range is bound with at least 4 bytes (Vulkan forbids empty descriptor ranges, and an
// fp16 scalar is 2 bytes): pad the buffer so that the last range's descriptor still fits.
VkDeviceSize weights_buffer_size(const plan::Plan& plan) { return align_up(plan.weight_data.size(), 4) + 4; }

// The arena is never empty, so that an empty tensor's 4-byte descriptor at offset 0 fits.
constexpr VkDeviceSize kMinArenaSize = 256;

uint64_t next_model_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace

ExecutableModel::ExecutableModel(const DeviceContext& ctx, plan::Plan plan, VkPipelineCache cache, AdapterCompiler adapters,
                                 bool external_memory, const DeviceContext* upload_device,
                                 const std::function<void()>& between_pipelines)
    : ctx_(ctx), id_(next_model_id()), plan_(std::move(plan)), cache_(cache), adapter_compiler_(std::move(adapters)), external_memory_(external_memory) {
  if (plan_.precision == plan::Precision::F16 && !ctx.caps().fp16_usable())
    fail(ErrorCode::MissingFeature, "the plan stores fp16 tensors but device '" + ctx.caps().device_name +
                                        "' has not enabled storageBuffer16BitAccess and shaderFloat16; use precision fp32");
  if (weights_buffer_size(plan_) > ctx.caps().max_buffer_size)
    fail(ErrorCode::Unsupported, "the plan's weights take " + std::to_string(weights_buffer_size(plan_)) + " bytes; one buffer on device '" +
                                     ctx.caps().device_name + "' may take at most " + std::to_string(ctx.caps().max_buffer_size) +
                                     " (maxBufferSize)");
  for (size_t i = 0; i < plan_.pipelines.size(); ++i) {
    const auto& p = plan_.pipelines[i];
    if (between_pipelines) between_pipelines();
    pipelines_.push_back(std::make_unique<ComputePipeline>(
        ctx, p.spirv, std::vector<VkDescriptorType>(p.binding_count, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER),
        p.push_constant_count * 4, cache, plan::pipeline_key(p)));
  }
  for (size_t i = 0; i < plan_.inputs.size(); ++i) (void)input_channels(i);
  for (size_t i = 0; i < plan_.outputs.size(); ++i) (void)output_channels(i);
  // The io adapters and the direct bindings move batch 0 only (a symbolic batch is bound to 1).
  for (const auto* list : {&plan_.inputs, &plan_.outputs})
    for (const plan::IoTensor& io : *list)
      if (plan_.program.is_constant(io.shape[0]) && plan_.program.constant_value(io.shape[0]) != 1)
        fail(ErrorCode::Unsupported, "tensor '" + io.name + "' has a batch of " + std::to_string(plan_.program.constant_value(io.shape[0])) +
                                         "; denox runs a batch of 1 (one image per record)");
  input_bindings_.resize(plan_.inputs.size());
  output_bindings_.resize(plan_.outputs.size());
  if (!external_memory_) {
    owned_weights_ = Buffer(ctx, weights_buffer_size(plan_), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                            MemoryKind::DeviceLocal, "weights");
    upload(upload_device != nullptr ? *upload_device : ctx, owned_weights_.handle(), 0, plan_.weight_data.data(), plan_.weight_data.size());
    weights_ = owned_weights_.handle();
  }
}

ExecutableModel::~ExecutableModel() = default;

uint32_t ExecutableModel::constant_channels(const plan::IoTensor& io) const {
  if (!plan_.program.is_constant(io.shape[1]))
    fail(ErrorCode::Unsupported, "tensor '" + io.name + "' has a symbolic channel count (" + plan_.program.to_string(io.shape[1]) +
                                     "); denox needs a fixed number of channels per input and output");
  const int64_t c = plan_.program.constant_value(io.shape[1]);
  if (c <= 0 || c > 4096) fail(ErrorCode::Unsupported, "tensor '" + io.name + "' has " + std::to_string(c) + " channels");
  return static_cast<uint32_t>(c);
}

uint32_t ExecutableModel::input_channels(size_t i) const { return constant_channels(plan_.inputs.at(i)); }
uint32_t ExecutableModel::output_channels(size_t i) const { return constant_channels(plan_.outputs.at(i)); }

ExecutableModel::Resolution ExecutableModel::resolve(uint32_t width, uint32_t height) const {
  if (width == 0 || height == 0 || width > 65536 || height > 65536)
    fail(ErrorCode::InvalidArgument, "extent " + std::to_string(width) + "x" + std::to_string(height) + " is out of range (1..65536)");
  std::vector<SymbolicInput> inputs;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < plan_.inputs.size(); ++i) {
    const auto& io = plan_.inputs[i];
    inputs.push_back({io.name, {io.shape.begin(), io.shape.end()}});
    // The extent binds the symbolic H and W; an axis the model fixes keeps its size (a
    // per-row or per-column input, say).
    auto extent = [&](size_t axis, int64_t symbolic) {
      return plan_.program.is_constant(io.shape[axis]) ? plan_.program.constant_value(io.shape[axis]) : symbolic;
    };
    shapes.push_back({extent(0, 1), input_channels(i), extent(2, height), extent(3, width)});
  }
  Resolution r;
  r.width = width;
  r.height = height;
  r.values = bind_symbols(plan_.program, inputs, shapes);

  // Scratch sizes and lifetimes in command order: input adapters (0), dispatches (1..D), output
  // adapters (D + 1).
  const int64_t dispatches = static_cast<int64_t>(plan_.dispatches.size());
  std::vector<ScratchLifetime> lifetimes(plan_.scratch.size());
  r.sizes.resize(plan_.scratch.size());
  const uint64_t element_size = plan::element_size(plan_.precision);
  // Each tensor is one descriptor range, and the copies index its elements with signed 32-bit
  // integers (the convolutions with unsigned ones, or in 16-byte units): past either limit a
  // dispatch would read and write wrapped addresses, so the extent is refused. (Elements of the
  // plan's float type: an int8 tensor's bytes count as fewer, and its shaders index vectors.)
  const uint64_t tensor_limit = std::min<uint64_t>(ctx_.caps().max_storage_buffer_range, (uint64_t{1} << 31) * element_size - 1);
  for (size_t t = 0; t < plan_.scratch.size(); ++t) {
    const int64_t bytes = r.values.at(plan_.scratch[t].size_bytes);
    if (bytes < 0) fail(ErrorCode::Internal, "scratch tensor '" + plan_.scratch[t].name + "' has a negative size");
    r.sizes[t] = static_cast<uint64_t>(bytes);
    if (r.sizes[t] > tensor_limit)
      fail(ErrorCode::Unsupported, "at " + std::to_string(width) + "x" + std::to_string(height) + " tensor '" + plan_.scratch[t].name +
                                       "' takes " + std::to_string(r.sizes[t]) + " bytes; one tensor may take at most " +
                                       std::to_string(tensor_limit) + " (the device's maxStorageBufferRange, and 2^31 elements)");
    lifetimes[t].size = align_up(r.sizes[t], 4);
  }
  // The io adapters write and read an input or output as NCHW in the plan's float type, whatever
  // layout the plan keeps it in: an edge graph the tuner measures alone may keep it packed
  // (NHWC_Q8, one byte an element), and a forged plan may say anything. So each io tensor
  // takes at least the adapters' footprint (before, a measured int8 edge's input adapter wrote
  // twice its tensor's bytes); a negative or overflowing extent is refused.
  // The adapters copy one image (N = 1) of C x H x W with 32-bit extents, whatever the batch
  // extent says, so a batch of 0 (a footprint of 0 bytes) must not pass either.
  const auto check_io = [&](const plan::IoTensor& io, const char* kind) {
    uint64_t bytes = element_size;
    for (size_t k = 0; k < io.shape.size(); ++k) {
      const int64_t extent = r.values.at(io.shape[k]);
      if (extent < 0 || extent > INT32_MAX || (k == 0 && extent != 1) || __builtin_mul_overflow(bytes, static_cast<uint64_t>(extent), &bytes))
        fail(ErrorCode::InvalidModel, std::string("plan: ") + kind + " '" + io.name + "' has extent " + std::to_string(extent) + " in dimension " +
                                          std::to_string(k) + " at " + std::to_string(width) + "x" + std::to_string(height) +
                                          (k == 0 ? " (denox runs a batch of 1)" : ""));
    }
    if (bytes <= r.sizes.at(io.scratch)) return;
    if (bytes > tensor_limit)
      fail(ErrorCode::InvalidModel, std::string("plan: ") + kind + " '" + io.name + "' takes " + std::to_string(bytes) + " bytes at " +
                                        std::to_string(width) + "x" + std::to_string(height) + " as its adapters copy it, more than one tensor may take (" +
                                        std::to_string(tensor_limit) + ")");
    r.sizes[io.scratch] = bytes;
    lifetimes[io.scratch].size = align_up(bytes, 4);
  };
  for (const auto& io : plan_.inputs) check_io(io, "input");
  for (const auto& io : plan_.outputs) check_io(io, "output");
  auto touch = [&](uint32_t t, int64_t when) {
    auto& l = lifetimes.at(t);
    l.first = l.first < 0 ? when : std::min(l.first, when);
    l.last = std::max(l.last, when);
  };
  for (const auto& io : plan_.inputs) touch(io.scratch, 0);
  for (const auto& io : plan_.outputs) touch(io.scratch, dispatches + 1);
  for (int64_t d = 0; d < dispatches; ++d)
    for (const auto& b : plan_.dispatches[d].bindings)
      if (b.resource == Resource::Scratch) touch(b.index, d + 1);
  ArenaLayout layout = place_scratch(lifetimes, scratch_alignment());
  r.offsets = std::move(layout.offsets);
  r.arena_size = std::max<VkDeviceSize>(layout.size, kMinArenaSize);
  // The arena is one buffer (an engine's own memory too): past maxBufferSize its creation is
  // invalid usage. (Past maxMemoryAllocationSize only the allocation may fail: set_extent warns.)
  if (r.arena_size > ctx_.caps().max_buffer_size)
    fail(ErrorCode::Unsupported, "at " + std::to_string(width) + "x" + std::to_string(height) + " the scratch arena takes " +
                                     std::to_string(r.arena_size) + " bytes; one buffer on device '" + ctx_.caps().device_name +
                                     "' may take at most " + std::to_string(ctx_.caps().max_buffer_size) + " (maxBufferSize)");
  return r;
}

VkDeviceSize ExecutableModel::scratch_alignment() const {
  return std::max<VkDeviceSize>(ctx_.caps().min_storage_buffer_offset_alignment, 256);
}

void ExecutableModel::set_extent(uint32_t width, uint32_t height) {
  Resolution r = resolve(width, height);
  // A larger arena replaces the old one only once the commands are rebuilt: a failed change
  // keeps the old arena, which commands recorded before still use.
  Buffer grown;
  const auto previous_scratch = std::make_tuple(scratch_, scratch_offset_, scratch_capacity_);
  if (!external_memory_ && r.arena_size > scratch_capacity_) {
    // Grow with headroom so that small resolution changes do not reallocate every time (never
    // past what one buffer may take: resolve() checked the arena itself).
    const VkDeviceSize capacity = std::max(r.arena_size, std::min(align_up(r.arena_size + r.arena_size / 8, 1 << 20),
                                                                  ctx_.caps().max_buffer_size));
    if (capacity > ctx_.caps().max_memory_allocation_size)
      log::warn("denox: at {}x{} the scratch arena takes {} bytes, more than device '{}' promises to allocate at once "
                "(maxMemoryAllocationSize {}); many drivers allocate it anyway, else the change fails with "
                "VK_ERROR_OUT_OF_DEVICE_MEMORY",
                r.width, r.height, capacity, ctx_.caps().device_name, ctx_.caps().max_memory_allocation_size);
    grown = Buffer(ctx_, capacity, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                   MemoryKind::DeviceLocal, "scratch arena");
    scratch_ = grown.handle();
    scratch_offset_ = 0;
    scratch_capacity_ = capacity;
  }
  Resolution previous = std::exchange(res_, std::move(r));
  rebuild_after_change([&] {
    res_ = std::move(previous);
    std::tie(scratch_, scratch_offset_, scratch_capacity_) = previous_scratch;
  });
  if (grown.handle() != VK_NULL_HANDLE) owned_scratch_ = std::move(grown);  // the old arena goes now
}

void ExecutableModel::rebuild_after_change(const std::function<void()>& undo, const std::function<void()>& then) {
  try {
    build_commands();
    if (then) then();
  } catch (const std::exception& first) {
    undo();
    try {
      build_commands();
    } catch (...) {
      commands_.clear();
      input_adapters_ = 0;
      missing_ = std::string("the commands could not be rebuilt: ") + first.what();
    }
    throw;
  }
}

std::array<int64_t, 4> ExecutableModel::output_shape(size_t i) const {
  if (res_.values.empty()) fail(ErrorCode::InvalidArgument, "call set_extent first");
  const auto& s = plan_.outputs.at(i).shape;
  return {res_.values[s[0]], res_.values[s[1]], res_.values[s[2]], res_.values[s[3]]};
}

std::array<int64_t, 4> ExecutableModel::input_shape(size_t i) const {
  if (res_.values.empty()) fail(ErrorCode::InvalidArgument, "call set_extent first");
  const auto& s = plan_.inputs.at(i).shape;
  return {res_.values[s[0]], res_.values[s[1]], res_.values[s[2]], res_.values[s[3]]};
}

MemoryRequirements ExecutableModel::memory_requirements(uint32_t width, uint32_t height) const {
  MemoryRequirements req;
  req.scratch_size = resolve(width, height).arena_size;
  req.scratch_alignment = scratch_alignment();
  req.weights_size = weights_buffer_size(plan_);
  req.weights_alignment = scratch_alignment();
  return req;
}

void ExecutableModel::bind_memory(VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size, VkBuffer weights,
                                  VkDeviceSize weights_offset) {
  if (!external_memory_) fail(ErrorCode::InvalidArgument, "bind_memory needs a model created with caller-provided memory");
  const VkDeviceSize alignment = scratch_alignment();
  if (!scratch || !weights) fail(ErrorCode::InvalidArgument, "bind_memory: scratch and weights buffers are required");
  if (scratch_offset % alignment || weights_offset % alignment)
    fail(ErrorCode::InvalidArgument, "bind_memory: offsets must be multiples of " + std::to_string(alignment));
  const auto previous = std::make_tuple(weights_, weights_offset_, scratch_, scratch_offset_, scratch_capacity_, weights_dropped_);
  const auto undo = [&] {
    std::tie(weights_, weights_offset_, scratch_, scratch_offset_, scratch_capacity_, weights_dropped_) = previous;
    // A failed call that named the weights buffer handle bound before leaves that binding unknown:
    // the handle may name a new buffer now (a destroyed buffer's handle value handed out again),
    // and a failed upload may have written part of it. It is dropped, so that nothing records,
    // or keeps (bind_scratch), weights that may not be this plan's.
    if (weights == std::get<0>(previous)) {
      weights_ = VK_NULL_HANDLE;
      weights_dropped_ = true;
    }
  };
  weights_ = weights;
  weights_offset_ = weights_offset;
  scratch_ = scratch;
  scratch_offset_ = scratch_offset;
  scratch_capacity_ = scratch_size;
  // The weights are uploaded on every call, once the binding is known to work: the same handle
  // may name a new buffer, whose contents denox cannot know.
  rebuild_after_change(undo, [&] {
    upload(ctx_, weights, weights_offset, plan_.weight_data.data(), plan_.weight_data.size());
    weights_dropped_ = false;
  });
}

bool ExecutableModel::bound_memory_overlaps(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size, bool scratch_too) const {
  if (!external_memory_ || size == 0) return false;
  // (Without begin + bytes: a range bound as VK_WHOLE_SIZE would wrap around.)
  const auto overlaps = [&](VkBuffer bound, VkDeviceSize begin, VkDeviceSize bytes) {
    if (bound == VK_NULL_HANDLE || bound != buffer || bytes == 0) return false;
    return begin <= offset ? offset - begin < bytes : begin - offset < size;
  };
  return overlaps(weights_, weights_offset_, weights_bytes()) || (scratch_too && overlaps(scratch_, scratch_offset_, scratch_capacity_));
}

VkDeviceSize ExecutableModel::weights_bytes() const { return weights_buffer_size(plan_); }

void ExecutableModel::bind_scratch(VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size) {
  if (!external_memory_) fail(ErrorCode::InvalidArgument, "bind_scratch needs a model created with caller-provided memory");
  // weights_ is set only by a bind_memory that succeeded (a failed one is undone, or drops the
  // binding), so the weights it names were uploaded for this plan.
  if (!weights_)
    fail(ErrorCode::InvalidArgument, weights_dropped_ ? "bind_scratch: the last denox_model_bind_memory failed with the weights buffer "
                                                        "bound before, whose binding it dropped; call denox_model_bind_memory again"
                                                      : "bind_scratch: this plan has no weights bound yet; call denox_model_bind_memory "
                                                        "first (it uploads them once)");
  if (!scratch) fail(ErrorCode::InvalidArgument, "bind_scratch: the scratch buffer is VK_NULL_HANDLE");
  if (scratch_offset % scratch_alignment())
    fail(ErrorCode::InvalidArgument, "bind_scratch: the offset must be a multiple of " + std::to_string(scratch_alignment()));
  const auto previous = std::make_tuple(scratch_, scratch_offset_, scratch_capacity_);
  const auto undo = [&] { std::tie(scratch_, scratch_offset_, scratch_capacity_) = previous; };
  scratch_ = scratch;
  scratch_offset_ = scratch_offset;
  scratch_capacity_ = scratch_size;
  rebuild_after_change(undo);
}

void ExecutableModel::validate_sources(const plan::IoTensor& io, const std::vector<IoSource>& sources, const char* what) const {
  const uint32_t channels = constant_channels(io);
  std::vector<int> covered(channels, 0);
  for (const auto& s : sources) {
    if (s.channel_count == 0 || uint64_t{s.first_channel} + s.channel_count > channels)
      fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "' has " + std::to_string(channels) +
                                           " channels; a binding covers channels " + std::to_string(s.first_channel) + ".." +
                                           std::to_string(uint64_t{s.first_channel} + s.channel_count));
    for (uint32_t c = s.first_channel; c < s.first_channel + s.channel_count; ++c) covered[c]++;
    if (s.is_image) {
      if (!s.view) fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': image binding without a VkImageView");
      if (s.format != VK_FORMAT_R16G16B16A16_SFLOAT && s.format != VK_FORMAT_R32G32B32A32_SFLOAT)
        fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': image format " + std::to_string(s.format) +
                                             " is not supported (use VK_FORMAT_R16G16B16A16_SFLOAT or R32G32B32A32_SFLOAT)");
      if (s.channel_count > 4) fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': an image holds at most 4 channels");
    } else {
      if (!s.buffer) fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': buffer binding without a VkBuffer");
      if (s.offset % ctx_.caps().min_storage_buffer_offset_alignment)
        fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': buffer offset must be a multiple of " +
                                             std::to_string(ctx_.caps().min_storage_buffer_offset_alignment));
      if (s.pixel_channels == 0 || uint64_t{s.source_first_channel} + s.channel_count > s.pixel_channels)
        fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': buffer channels " +
                                             std::to_string(s.source_first_channel) + ".." +
                                             std::to_string(uint64_t{s.source_first_channel} + s.channel_count) + " do not fit its " +
                                             std::to_string(s.pixel_channels) + " channels per pixel");
    }
  }
  for (const auto& s : sources)
    if (std::string shortfall = range_shortfall(io, s); !shortfall.empty()) fail(ErrorCode::InvalidArgument, std::string(what) + " " + shortfall);
  for (uint32_t c = 0; c < channels; ++c)
    if (covered[c] != 1)
      fail(ErrorCode::InvalidArgument, std::string(what) + " '" + io.name + "': channel " + std::to_string(c) + " is bound " +
                                           std::to_string(covered[c]) + " times; every channel must be bound exactly once");
}

std::string ExecutableModel::range_shortfall(const plan::IoTensor& io, const IoSource& s) const {
  if (s.is_image || s.range == VK_WHOLE_SIZE || res_.values.empty()) return {};
  const auto h = static_cast<uint32_t>(res_.values.at(io.shape[2])), w = static_cast<uint32_t>(res_.values.at(io.shape[3]));
  const uint64_t needed = caller_bytes_needed(s, h, w, ctx_.caps().storage_buffer_16bit);
  if (s.range >= needed) return {};
  return "'" + io.name + "': a buffer range of " + std::to_string(s.range) + " bytes cannot hold channels " +
         std::to_string(s.source_first_channel) + ".." + std::to_string(s.source_first_channel + s.channel_count - 1) + " of " +
         std::to_string(w) + "x" + std::to_string(h) + " pixels (" + std::to_string(needed) + " bytes)";
}

void ExecutableModel::bind_input(size_t index, const std::vector<IoSource>& sources) {
  if (index >= plan_.inputs.size()) fail(ErrorCode::InvalidArgument, "input index " + std::to_string(index) + " out of range");
  validate_sources(plan_.inputs[index], sources, "input");
  for (const auto& s : sources) adapter_for(s, true);  // compile/create now, not in record()
  std::vector<IoSource> copy = sources;  // (copied first: out of memory here changes nothing)
  std::vector<IoSource> previous = std::exchange(input_bindings_[index].sources, std::move(copy));
  rebuild_after_change([&] { input_bindings_[index].sources = std::move(previous); });
}

void ExecutableModel::bind_output(size_t index, const std::vector<IoSource>& sources) {
  if (index >= plan_.outputs.size()) fail(ErrorCode::InvalidArgument, "output index " + std::to_string(index) + " out of range");
  validate_sources(plan_.outputs[index], sources, "output");
  // The image adapter writes whole texels (components past its channels 0, alpha 1): two of
  // this output's bindings on one view would overwrite each other's channels. (Across outputs
  // it is not checked here: a plan swapped in by background work replays the outputs' bindings
  // one output at a time, so an engine that swapped two outputs' images would be refused there.)
  for (size_t i = 0; i < sources.size(); ++i)
    for (size_t j = i + 1; j < sources.size(); ++j)
      if (sources[i].is_image && sources[j].is_image && sources[i].view == sources[j].view)
        fail(ErrorCode::InvalidArgument, "output '" + plan_.outputs[index].name + "': two of its bindings use one image view; an output "
                                             "image takes one binding, whose adapter writes whole texels");
  for (const auto& s : sources) adapter_for(s, false);
  std::vector<IoSource> copy = sources;  // (copied first: out of memory here changes nothing)
  std::vector<IoSource> previous = std::exchange(output_bindings_[index].sources, std::move(copy));
  rebuild_after_change([&] { output_bindings_[index].sources = std::move(previous); });
}

const ComputePipeline& ExecutableModel::adapter_for(const IoSource& source, bool input) {
  const AdapterShader shader =
      adapter_shader(source, input, plan_.precision == plan::Precision::F16, ctx_.caps().storage_buffer_16bit);
  std::string key = shader.family;
  for (const auto& [k, v] : shader.defines) key += " " + k + "=" + v;
  for (const auto& [name, pipeline] : adapters_)
    if (name == key) return *pipeline;
  const auto spirv = adapter_compiler_(shader.family, shader.defines);
  adapters_.emplace_back(key, std::make_unique<ComputePipeline>(ctx_, spirv, shader.bindings, shader.push_constant_count * 4,
                                                                cache_, key));
  return *adapters_.back().second;
}

}  // namespace denox::runtime
