// A small headless "engine" that integrates denox the way a renderer would, through the public C
// API only (denox.h):
//   - it owns its Vulkan instance, device, queue, buffers and command buffers (the boilerplate
//     lives in src/vkhost; everything denox-specific is spelled out below);
//   - it hands its device to denox, loads an ONNX model, and every frame records denox's
//     dispatches into its own command buffer between its own barriers;
//   - it changes the resolution in the middle of the run (set_extent, no recompiling);
//   - it checks every frame's output against denox's CPU reference executor (verification
//     only: an engine would not link it).
//
//   denox_headless_engine [MODEL.onnx] [--frames N] [--validation]
// Without a model it writes an OIDN "small" U-Net with random weights next to the binary.
#include "vkhost/vk_host.hpp"  // volk first: the engine's own Vulkan entry points

#include <denox/denox.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/import/onnx_import.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace {

#define DENOX_CHECK(call)                                                                                 \
  do {                                                                                                    \
    denox_result r_ = (call);                                                                             \
    if (r_ != DENOX_SUCCESS) {                                                                            \
      std::fprintf(stderr, "%s failed: %s: %s\n", #call, denox_result_name(r_), denox_last_error()); \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)

// The engine's own barrier (what denox_cmd_input_barrier would record): make the host's writes of
// the input (and last frame's reads of the output) available to denox's compute shaders.
void barrier(VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stage,
             VkAccessFlags2 dst_access) {
  VkMemoryBarrier2 b{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  b.srcStageMask = src_stage;
  b.srcAccessMask = src_access;
  b.dstStageMask = dst_stage;
  b.dstAccessMask = dst_access;
  VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.memoryBarrierCount = 1;
  dep.pMemoryBarriers = &b;
  vkCmdPipelineBarrier2(cmd, &dep);
}

double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  int frames = 8;
  bool validation = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--validation")) validation = true;
    else model_path = argv[i];
  }
  if (model_path.empty()) {
    denox::modelgen::OidnUnetOptions o;
    o.size = denox::modelgen::OidnUnetOptions::Size::Small;
    o.pad_to_16_and_crop = true;
    model_path = "headless_engine_model.onnx";
    denox::modelgen::save_model(denox::modelgen::build_oidn_unet(o), model_path, false);
  }

  // 1. The engine's device, created with what denox_device_requirements() lists.
  auto device = denox::vkhost::Device::create(-1, validation);
  const denox_vulkan_device dev = device->as_denox();
  std::printf("device: %s\n", device->properties().deviceName);

  // 2. denox on that device; the model (compiled on first use, then from the cache).
  denox_context ctx = nullptr;
  DENOX_CHECK(denox_context_create(&dev, nullptr, &ctx));
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;  // the check below is against fp32
  denox_model model = nullptr;
  DENOX_CHECK(denox_model_load_file(ctx, model_path.c_str(), &options, &model));
  denox_tensor_info in_info{}, out_info{};
  DENOX_CHECK(denox_model_get_tensor_info(model, DENOX_INPUT, 0, &in_info));
  const uint32_t channels = in_info.channels;

  const denox::compiler::Graph reference_graph = denox::compiler::import_onnx_file(model_path);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(0.05f, 1.0f);
  double worst = 0;
  const uint32_t sizes[2][2] = {{157, 101}, {96, 59}};  // W x H, odd on purpose

  std::unique_ptr<denox::vkhost::Buffer> input, output;
  for (int frame = 0; frame < frames; ++frame) {
    // 3. A resolution change in the middle: set_extent, new buffers, re-bind. No recompile.
    const uint32_t* size = sizes[frame < frames / 2 ? 0 : 1];
    const uint32_t w = size[0], h = size[1];
    if (frame == 0 || frame == frames / 2) {
      DENOX_CHECK(denox_model_set_extent(model, w, h));
      DENOX_CHECK(denox_model_get_tensor_info(model, DENOX_OUTPUT, 0, &out_info));
      input = std::make_unique<denox::vkhost::Buffer>(*device, size_t{channels} * w * h * 4);
      output = std::make_unique<denox::vkhost::Buffer>(*device, size_t{out_info.channels} * out_info.width * out_info.height * 4);
      denox_binding in{};
      in.channel_count = channels;
      in.buffer = input->handle();
      in.range = VK_WHOLE_SIZE;
      in.layout = DENOX_LAYOUT_HWC;  // the engine's buffers are interleaved RGB
      in.dtype = DENOX_DTYPE_F32;
      in.pixel_channels = channels;
      denox_binding out = in;
      out.channel_count = out_info.channels;
      out.buffer = output->handle();
      out.pixel_channels = out_info.channels;
      DENOX_CHECK(denox_model_bind_input(model, 0, &in, 1));
      DENOX_CHECK(denox_model_bind_output(model, 0, &out, 1));
      std::printf("frame %d: %ux%u\n", frame, w, h);
    }

    // 4. The frame: the engine writes its input, records denox between its own barriers.
    std::vector<float> hwc(size_t{channels} * w * h);
    for (auto& v : hwc) v = dist(rng);
    input->write(hwc.data(), hwc.size() * 4);
    device->submit([&](VkCommandBuffer cmd) {
      barrier(cmd, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_WRITE_BIT, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
              VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
      DENOX_CHECK(denox_model_record(model, cmd));
      barrier(cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT,
              VK_ACCESS_2_HOST_READ_BIT);
    });
    std::vector<float> got(size_t{out_info.channels} * out_info.width * out_info.height);
    output->read(got.data(), got.size() * 4);

    // 5. Verification: the same input through the CPU reference (CHW), compared in HWC.
    denox::HostTensor ref_in;
    ref_in.shape = {1, channels, h, w};
    ref_in.f32.resize(hwc.size());
    for (uint32_t c = 0; c < channels; ++c)
      for (uint32_t p = 0; p < w * h; ++p) ref_in.f32[size_t{c} * w * h + p] = hwc[size_t{p} * channels + c];
    const auto ref = denox::reference::run_reference(reference_graph, {ref_in}).at(0);
    std::vector<float> want(got.size());
    const uint32_t oc = out_info.channels, plane = out_info.width * out_info.height;
    for (uint32_t c = 0; c < oc; ++c)
      for (uint32_t p = 0; p < plane; ++p) want[size_t{p} * oc + c] = ref.f32[size_t{c} * plane + p];
    const double err = relative_l2(got, want);
    worst = std::max(worst, err);
    std::printf("frame %d: relative L2 vs CPU reference %.2e\n", frame, err);
  }

  denox_stats stats{};
  DENOX_CHECK(denox_context_get_stats(ctx, &stats));
  std::printf("plans compiled %llu, shaders compiled %llu (cache hits: plans %llu, shaders %llu)\n",
              static_cast<unsigned long long>(stats.plans_compiled), static_cast<unsigned long long>(stats.shaders_compiled),
              static_cast<unsigned long long>(stats.plan_cache_hits), static_cast<unsigned long long>(stats.shader_cache_hits));
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  input.reset();
  output.reset();
  const uint64_t validation_errors = device->validation_errors();
  device.reset();
  const bool ok = worst <= 1e-4 && validation_errors == 0;
  std::printf("%s: worst relative L2 %.2e, validation errors %llu\n", ok ? "OK" : "FAILED", worst,
              static_cast<unsigned long long>(validation_errors));
  return ok ? 0 : 1;
}
