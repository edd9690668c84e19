// Engine-side I/O: storage images in and out (a 9-channel network reading color, albedo and
// normal from three images), external memory mode, an extent change without recompiling.
#include <catch2/catch.hpp>

#include "api_test_util.hpp"

using namespace denox::test;
using denox::HostTensor;
using Size = denox::modelgen::OidnUnetOptions::Size;

TEST_CASE("9 channels from three RGBA images into an RGBA output image", "[api][io]") {
  auto& dev = engine_device();
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 9, true);
  const int h = 29, w = 41;
  const auto input = random_image(9, h, w, 3);
  const auto want = reference_output(model_path, input);
  denox_context ctx = make_context({});
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load");
  require_ok(denox_model_set_extent(model, w, h), "set_extent");

  // color, albedo, normal: RGBA16F, RGBA32F, RGBA16F (mixed on purpose); alpha holds junk.
  const VkFormat formats[3] = {VK_FORMAT_R16G16B16A16_SFLOAT, VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SFLOAT};
  std::vector<std::unique_ptr<denox::vkhost::Image>> images;
  std::vector<denox_binding> bindings;
  HostTensor quantized = input;  // what the network really sees after the fp16 images
  for (int i = 0; i < 3; ++i) {
    images.push_back(std::make_unique<denox::vkhost::Image>(dev, w, h, formats[i]));
    std::vector<float> rgba(size_t{w} * h * 4, 7.0f);
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < w * h; ++p) {
        float& v = quantized.f32[size_t(3 * i + c) * w * h + p];
        if (formats[i] == VK_FORMAT_R16G16B16A16_SFLOAT) v = denox::vkhost::from_half(denox::vkhost::to_half(v));
        rgba[size_t(p) * 4 + c] = v;
      }
    images.back()->upload(rgba);
    bindings.push_back({});
    bindings.back().first_channel = 3 * i;
    bindings.back().channel_count = 3;
    bindings.back().image_view = images.back()->view();
    bindings.back().image_format = formats[i];
  }
  denox::vkhost::Image out_image(dev, w, h, VK_FORMAT_R32G32B32A32_SFLOAT);
  denox_binding out{};
  out.channel_count = 3;
  out.image_view = out_image.view();
  out.image_format = VK_FORMAT_R32G32B32A32_SFLOAT;
  require_ok(denox_model_bind_input(model, 0, bindings.data(), 3), "bind_input");
  require_ok(denox_model_bind_output(model, 0, &out, 1), "bind_output");
  const auto run_frame = [&] {
    dev.submit([&](VkCommandBuffer cmd) {
      denox_cmd_input_barrier(ctx, cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT);
      require_ok(denox_model_record(model, cmd), "record");
      denox_cmd_output_barrier(ctx, cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_READ_BIT);
    });
  };
  run_frame();
  const auto rgba = out_image.download();
  const auto want_q = reference_output(model_path, quantized);
  std::vector<float> got(size_t{3} * w * h);
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < w * h; ++p) got[size_t(c) * w * h + p] = rgba[size_t(p) * 4 + c];
  CHECK(relative_l2(got, want_q.f32) <= 1e-4);
  for (int p = 0; p < w * h; ++p) REQUIRE(rgba[size_t(p) * 4 + 3] == 1.0f);
  (void)want;

  // One binding per output image view: two (channels 0-1 and 2) would overwrite each other's
  // texels, the adapter writing whole ones. Refused, and the binding stays.
  denox_binding split[2] = {out, out};
  split[0].channel_count = 2;
  split[1].first_channel = 2;
  split[1].channel_count = 1;
  CHECK(denox_model_bind_output(model, 0, split, 2) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("two of its bindings use one image view"));
  // An output image smaller than the output keeps what fits, with no store past its edge.
  const int sw = w - 3, sh = h - 2;
  denox::vkhost::Image small_image(dev, sw, sh, VK_FORMAT_R32G32B32A32_SFLOAT);
  out.image_view = small_image.view();
  require_ok(denox_model_bind_output(model, 0, &out, 1), "bind_output (smaller image)");
  run_frame();
  const auto small = small_image.download();
  REQUIRE(small.size() == size_t{4} * sw * sh);
  int same = 0;
  for (int y = 0; y < sh; ++y)
    for (int x = 0; x < sw; ++x)
      for (int c = 0; c < 4; ++c) same += small[(size_t(y) * sw + x) * 4 + c] == rgba[(size_t(y) * w + x) * 4 + c];
  CHECK(same == 4 * sw * sh);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(dev.validation_errors() == 0);
}

namespace {

// An fp32 model whose scratch and weights the caller binds (external memory mode).
denox_model load_external_fp32(denox_context ctx, const fs::path& model_path) {
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  options.external_memory = 1;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load");
  return model;
}

}  // namespace

TEST_CASE("external memory: the engine binds scratch and weight buffers", "[api][io]") {
  auto& dev = engine_device();
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  const auto input = random_image(3, 23, 31, 8);
  const auto want = reference_output(model_path, input);
  denox_context ctx = make_context({});
  denox_model model = load_external_fp32(ctx, model_path);
  denox_memory_requirements req{};
  require_ok(denox_model_memory_requirements(model, 31, 23, &req), "memory_requirements");
  CHECK(req.scratch_size > 0);
  CHECK(req.weights_size > 0);
  // Record before memory is bound: not ready, and the message says what is missing.
  require_ok(denox_model_set_extent(model, 31, 23), "set_extent");
  // Scratch at a non-zero offset in a shared buffer, as an engine's allocator would place it.
  const VkDeviceSize offset = req.scratch_alignment * 3;
  denox::vkhost::Buffer scratch(dev, offset + req.scratch_size, true, req.usage);
  denox::vkhost::Buffer weights(dev, req.weights_size, true, req.usage);
  require_ok(denox_model_bind_memory(model, scratch.handle(), offset, req.scratch_size, weights.handle(), 0), "bind_memory");
  const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F32);
  CHECK(relative_l2(got, want.f32) <= 1e-4);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(dev.validation_errors() == 0);
}

TEST_CASE("external memory: bind_scratch moves the scratch arena and leaves the weights alone", "[api][io]") {
  // A larger extent needs more scratch; bind_memory would upload the weights again and wait for
  // the queue. bind_scratch keeps the weights bound and submits nothing.
  auto& dev = engine_device();
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = make_context({});
  denox_model model = load_external_fp32(ctx, model_path);
  denox_memory_requirements small{}, large{};
  require_ok(denox_model_memory_requirements(model, 31, 23, &small), "memory_requirements (small)");
  require_ok(denox_model_memory_requirements(model, 61, 45, &large), "memory_requirements (large)");
  REQUIRE(large.scratch_size > small.scratch_size);
  denox::vkhost::Buffer scratch_small(dev, small.scratch_size, true, small.usage);
  denox::vkhost::Buffer scratch_large(dev, large.scratch_alignment + large.scratch_size, true, large.usage);
  denox::vkhost::Buffer weights(dev, small.weights_size, false, small.usage);  // host-visible: read back below

  // Before any bind_memory there are no weights to keep.
  CHECK(denox_model_bind_scratch(model, scratch_small.handle(), 0, small.scratch_size) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("bind_memory first"));
  require_ok(denox_model_bind_memory(model, scratch_small.handle(), 0, small.scratch_size, weights.handle(), 0), "bind_memory");
  const auto input_small = random_image(3, 23, 31, 8);
  CHECK(relative_l2(run_on_buffers(ctx, model, input_small, DENOX_DTYPE_F32), reference_output(model_path, input_small).f32) <= 1e-4);

  // A sentinel in the weights buffer survives bind_scratch: nothing was uploaded.
  std::vector<uint8_t> uploaded(small.weights_size), seen(small.weights_size);
  weights.read(uploaded.data(), uploaded.size());
  const std::vector<uint8_t> sentinel(small.weights_size, 0xA5);
  weights.write(sentinel.data(), sentinel.size());
  require_ok(denox_model_bind_scratch(model, scratch_large.handle(), large.scratch_alignment, large.scratch_size), "bind_scratch");
  weights.read(seen.data(), seen.size());
  CHECK(seen == sentinel);
  weights.write(uploaded.data(), uploaded.size());  // the engine's weights, as they were

  const auto input_large = random_image(3, 45, 61, 9);
  CHECK(relative_l2(run_on_buffers(ctx, model, input_large, DENOX_DTYPE_F32), reference_output(model_path, input_large).f32) <= 1e-4);
  // Misuse is refused and changes nothing.
  CHECK(denox_model_bind_scratch(model, VK_NULL_HANDLE, 0, large.scratch_size) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(denox_model_bind_scratch(model, scratch_large.handle(), 1, large.scratch_size) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(relative_l2(run_on_buffers(ctx, model, input_large, DENOX_DTYPE_F32), reference_output(model_path, input_large).f32) <= 1e-4);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(dev.validation_errors() == 0);
}

TEST_CASE("set_extent to new sizes reuses the compiled pipelines", "[api][io]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = make_context({});
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load");
  uint64_t compiled_after_first = 0;
  const int sizes[][2] = {{37, 53}, {64, 64}, {17, 90}, {37, 53}};
  for (const auto& s : sizes) {
    const auto input = random_image(3, s[0], s[1], static_cast<uint32_t>(s[0] * 100 + s[1]));
    const auto want = reference_output(model_path, input);
    const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F32);
    INFO(s[1] << "x" << s[0]);
    CHECK(relative_l2(got, want.f32) <= 1e-4);
    denox_stats stats{};
    require_ok(denox_context_get_stats(ctx, &stats), "stats");
    if (compiled_after_first == 0) compiled_after_first = stats.shaders_compiled;
    CHECK(stats.shaders_compiled == compiled_after_first);
    CHECK(stats.plans_compiled == 1);
  }
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}
