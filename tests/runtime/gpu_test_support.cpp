#include "gpu_test_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include "common/error.hpp"
#include "kernels/lower_portable.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace denox::testing {

namespace {
// Not a function-local static: destroy_device() must be able to end it before exit.
std::unique_ptr<runtime::DeviceContext> shared_device;
std::once_flag shared_device_once;
}  // namespace

runtime::DeviceContext& device() {
  std::call_once(shared_device_once, [] {
    runtime::OwnDeviceOptions options;
    options.validation = true;
    auto ctx = runtime::DeviceContext::create_own(options);
    std::fprintf(stderr, "test device: %s (%s)\n", ctx->caps().device_name.c_str(), ctx->caps().driver_info.c_str());
    shared_device = std::move(ctx);
  });
  return *shared_device;
}

void destroy_device() { shared_device.reset(); }

std::unique_ptr<runtime::DeviceContext> engine_context(bool with_16bit) {
  const runtime::DeviceContext& own = device();
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  v11.pNext = &v12;
  v11.storageBuffer16BitAccess = with_16bit && own.caps().storage_buffer_16bit;
  v12.shaderFloat16 = with_16bit && own.caps().shader_float16;
  return runtime::DeviceContext::from_external(external_over_own(&v11));
}

runtime::ExternalDevice external_over_own(const void* enabled_features_chain) {
  const runtime::DeviceContext& own = device();
  runtime::ExternalDevice ext;
  ext.instance = own.instance();
  ext.physical_device = own.physical_device();
  ext.device = own.device();
  ext.queue_family_index = own.queue_family();
  ext.queue = own.queue();
  ext.get_instance_proc_addr = vkGetInstanceProcAddr;
  ext.enabled_extensions = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  ext.enabled_features_chain = enabled_features_chain;
  return ext;
}

kernels::ShaderCompiler& shader_compiler() {
  // An in-process cache: test cases in one process share SPIR-V (glslang is the slow part).
  static std::mutex mutex;
  static std::map<std::string, std::vector<uint32_t>> cache;
  static kernels::ShaderCompiler compiler;
  static std::once_flag once;
  std::call_once(once, [] {
    compiler.set_cache(
        [](const std::string& hash) -> std::optional<std::vector<uint32_t>> {
          std::lock_guard lock(mutex);
          auto it = cache.find(hash);
          if (it == cache.end()) return std::nullopt;
          return it->second;
        },
        [](const std::string& hash, const std::vector<uint32_t>& spirv) {
          std::lock_guard lock(mutex);
          cache[hash] = spirv;
        });
  });
  return compiler;
}

runtime::AdapterCompiler adapter_compiler() {
  return [](const std::string& family, const kernels::Defines& defines) {
    return shader_compiler().compile_with_storage_define(family, defines);
  };
}

std::vector<float> random_values(size_t count, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> magnitude(0.1f, 1.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = scale * magnitude(rng) * ((rng() & 1) ? 1.0f : -1.0f);
  return v;
}

HostTensor random_tensor(const std::vector<int64_t>& shape, uint64_t seed) {
  HostTensor t;
  t.shape = shape;
  t.f32 = random_values(t.element_count(), seed);
  return t;
}

double relative_l2(const HostTensor& a, const HostTensor& b) {
  if (a.shape != b.shape) fail(ErrorCode::ShapeMismatch, "relative_l2: shapes " + a.shape_string() + " and " + b.shape_string());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.f32.size(); ++i) {
    const double d = double(a.f32[i]) - double(b.f32[i]);
    diff += d * d;
    norm += double(b.f32[i]) * double(b.f32[i]);
  }
  if (std::isnan(diff)) return INFINITY;
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

plan::Plan compiled_plan(const compiler::Graph& graph, plan::Precision precision) {
  plan::Plan plan = kernels::build_portable_plan(graph, precision);
  kernels::compile_pipelines(plan, shader_compiler(), 2);
  return plan;
}

runtime::Buffer device_buffer(VkDeviceSize size) { return device_buffer_on(device(), size); }

runtime::Buffer device_buffer_on(const runtime::DeviceContext& ctx, VkDeviceSize size) {
  return runtime::Buffer(ctx, size,
                         VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                         runtime::MemoryKind::DeviceLocal, "test io");
}

namespace {

runtime::IoSource chw_f32_source(const runtime::Buffer& buffer, uint32_t channels) {
  runtime::IoSource s;
  s.channel_count = channels;
  s.buffer = buffer.handle();
  s.pixel_channels = channels;
  return s;
}

}  // namespace

std::vector<HostTensor> run_model(runtime::ExecutableModel& model, const std::vector<HostTensor>& inputs) {
  return run_model_on(device(), model, inputs);
}

std::vector<HostTensor> run_model_on(const runtime::DeviceContext& ctx, runtime::ExecutableModel& model,
                                     const std::vector<HostTensor>& inputs,
                                     const std::function<void(runtime::ExecutableModel&)>& before_record) {
  auto device_buffer = [&](VkDeviceSize size) { return device_buffer_on(ctx, size); };
  const auto& shape0 = inputs.at(0).shape;
  model.set_extent(static_cast<uint32_t>(shape0.at(3)), static_cast<uint32_t>(shape0.at(2)));
  std::vector<runtime::Buffer> in_buffers, out_buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_buffers.push_back(device_buffer(inputs[i].f32.size() * 4));
    runtime::upload(ctx, in_buffers.back().handle(), 0, inputs[i].f32.data(), inputs[i].f32.size() * 4);
    model.bind_input(i, {chw_f32_source(in_buffers.back(), model.input_channels(i))});
  }
  std::vector<HostTensor> outputs(model.output_count());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto shape = model.output_shape(i);
    outputs[i].shape.assign(shape.begin(), shape.end());
    outputs[i].f32.resize(outputs[i].element_count());
    out_buffers.push_back(device_buffer(std::max<size_t>(outputs[i].f32.size() * 4, 4)));
    model.bind_output(i, {chw_f32_source(out_buffers.back(), model.output_channels(i))});
  }
  if (before_record) before_record(model);
  runtime::submit_and_wait(ctx, "test inference", [&](VkCommandBuffer cmd) { model.record(cmd); });
  for (size_t i = 0; i < outputs.size(); ++i)
    runtime::download(ctx, out_buffers[i].handle(), 0, outputs[i].f32.data(), outputs[i].f32.size() * 4);
  return outputs;
}

std::vector<HostTensor> run_on_gpu(const compiler::Graph& graph, plan::Precision precision, const std::vector<HostTensor>& inputs) {
  runtime::ExecutableModel model(device(), compiled_plan(graph, precision), VK_NULL_HANDLE, adapter_compiler(), false);
  return run_model(model, inputs);
}

double gpu_vs_reference(const compiler::Graph& graph, plan::Precision precision, const std::vector<HostTensor>& inputs) {
  const auto expected = reference::run_reference(graph, inputs);
  const auto actual = run_on_gpu(graph, precision, inputs);
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, relative_l2(actual.at(i), expected[i]));
  return worst;
}

double tolerance(plan::Precision precision) { return precision == plan::Precision::F16 ? 2e-2 : 1e-4; }

bool binds_only_its_part(const runtime::DeviceContext& ctx, uint64_t offset) {
  return offset % std::max<VkDeviceSize>(ctx.caps().min_storage_buffer_offset_alignment, 16) == 0;
}

}  // namespace denox::testing
