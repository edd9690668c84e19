// ExecutableModel on lavapipe: set_extent to other sizes without recompiling, caller-provided
// memory, what record() refuses, and the barriers it derives.
#include <catch2/catch.hpp>
#include <functional>
#include <sstream>
#include <spdlog/spdlog.h>
#include <spdlog/sinks/ostream_sink.h>

#include "../kernels/graph_builder.hpp"
#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "gpu_test_support.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/reference/reference_executor.hpp"

using namespace denox;
using namespace denox::testing;
using Catch::Matchers::Contains;

namespace {

compiler::Graph small_unet() {
  modelgen::OidnUnetOptions options;
  options.size = modelgen::OidnUnetOptions::Size::Small;
  options.pad_to_16_and_crop = true;
  std::string bytes;
  modelgen::build_oidn_unet(options).SerializeToString(&bytes);
  return compiler::import_onnx_bytes(bytes.data(), bytes.size());
}

double error_at(runtime::ExecutableModel& model, const compiler::Graph& g, int64_t h, int64_t w) {
  const std::vector<HostTensor> inputs = {random_tensor({1, 3, h, w}, static_cast<uint64_t>(h * 1000 + w))};
  return relative_l2(run_model(model, inputs).at(0), reference::run_reference(g, inputs).at(0));
}

compiler::ActivationAttrs relu() { return {}; }

struct Refusal {
  ErrorCode code{};
  std::string message;
};

// The denox::Error that `f` throws; a test failure saying "`taken` was taken" where it throws none.
Refusal refusal(const std::function<void()>& f, const std::string& taken) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  FAIL(taken << " was taken");
  return {};
}

}  // namespace

TEST_CASE("set_extent moves to other sizes, larger and smaller, without compiling anything", "[runtime][model]") {
  const compiler::Graph g = small_unet();
  runtime::ExecutableModel model(device(), compiled_plan(g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
  CHECK(error_at(model, g, 21, 17) <= 1e-4);
  const uint64_t compiled = shader_compiler().stats().compiled;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{40, 33}, {13, 9}, {21, 17}}) {
    INFO(h << "x" << w);
    CHECK(error_at(model, g, h, w) <= 1e-4);
  }
  CHECK(shader_compiler().stats().compiled == compiled);
  CHECK(model.width() == 17);
  CHECK(model.height() == 21);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("a check run between pipeline creations can stop the construction, which frees what it made", "[runtime][model]") {
  // The background worker's cancel check: a model's destroy waits for at most one driver
  // pipeline instead of all of them.
  const compiler::Graph g = small_unet();
  plan::Plan p = compiled_plan(g, plan::Precision::F32);
  REQUIRE(p.pipelines.size() >= 3);
  struct Stop {};
  size_t checks = 0;
  CHECK_THROWS_AS(runtime::ExecutableModel(device(), p, VK_NULL_HANDLE, adapter_compiler(), false, nullptr,
                                           [&] {
                                             if (++checks == 3) throw Stop{};
                                           }),
                  Stop);
  CHECK(checks == 3);  // stopped before the third pipeline, not after all of them
  checks = 0;
  runtime::ExecutableModel model(device(), p, VK_NULL_HANDLE, adapter_compiler(), false, nullptr, [&] { ++checks; });
  CHECK(checks == p.pipelines.size());
  CHECK(error_at(model, g, 19, 23) <= 1e-4);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("caller-provided memory: the caller binds scratch and weights at offsets", "[runtime][model]") {
  const compiler::Graph g = small_unet();
  runtime::ExecutableModel model(device(), compiled_plan(g, plan::Precision::F16), VK_NULL_HANDLE, adapter_compiler(), true);
  const int64_t h = 23, w = 30;
  model.set_extent(static_cast<uint32_t>(w), static_cast<uint32_t>(h));
  CHECK_THROWS_WITH(runtime::submit_and_wait(device(), "unbound", [&](VkCommandBuffer cmd) { model.record(cmd); }),
                    Contains("bind_memory"));

  const runtime::MemoryRequirements req = model.memory_requirements(static_cast<uint32_t>(w), static_cast<uint32_t>(h));
  REQUIRE(req.scratch_size > 0);
  REQUIRE(req.weights_size >= model.plan().weight_data.size());
  const VkDeviceSize scratch_offset = req.scratch_alignment, weights_offset = 2 * req.weights_alignment;
  runtime::Buffer scratch = device_buffer(scratch_offset + req.scratch_size);
  runtime::Buffer weights = device_buffer(weights_offset + req.weights_size);
  model.bind_memory(scratch.handle(), scratch_offset, req.scratch_size, weights.handle(), weights_offset);

  const std::vector<HostTensor> inputs = {random_tensor({1, 3, h, w}, 9)};
  const HostTensor expected = reference::run_reference(g, inputs).at(0);
  CHECK(relative_l2(run_model(model, inputs).at(0), expected) <= tolerance(plan::Precision::F16));

  // A bind_memory that fails naming another weights buffer leaves the binding as it was; one that
  // names the weights buffer bound before drops it (the handle may name a new buffer by now),
  // and record() says so until a bind_memory succeeds.
  runtime::Buffer other_weights = device_buffer(weights_offset + req.weights_size);
  model.fail_next_build_for_testing();
  CHECK_THROWS_WITH(model.bind_memory(scratch.handle(), scratch_offset, req.scratch_size, other_weights.handle(), weights_offset),
                    Contains("injected"));
  CHECK(model.recordable());
  model.fail_next_build_for_testing();
  CHECK_THROWS_WITH(model.bind_memory(scratch.handle(), scratch_offset, req.scratch_size, weights.handle(), weights_offset),
                    Contains("injected"));
  CHECK_FALSE(model.recordable());
  CHECK_THAT(model.missing(), Contains("whose binding it dropped"));
  CHECK_THROWS_WITH(model.bind_scratch(scratch.handle(), scratch_offset, req.scratch_size), Contains("whose binding it dropped"));
  model.bind_memory(scratch.handle(), scratch_offset, req.scratch_size, weights.handle(), weights_offset);
  CHECK(relative_l2(run_model(model, inputs).at(0), expected) <= tolerance(plan::Precision::F16));

  // A larger extent needs more scratch than is bound: record() says so instead of overrunning.
  model.set_extent(static_cast<uint32_t>(2 * w), static_cast<uint32_t>(2 * h));
  CHECK_THROWS_WITH(runtime::submit_and_wait(device(), "too small", [&](VkCommandBuffer cmd) { model.record(cmd); }),
                    Contains("memory_requirements"));
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("a change whose commands fail to build is undone: record() records what it recorded before", "[runtime][model]") {
  const compiler::Graph g = small_unet();
  runtime::ExecutableModel model(device(), compiled_plan(g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
  const std::vector<HostTensor> inputs = {random_tensor({1, 3, 19, 26}, 31)};
  const HostTensor expected = reference::run_reference(g, inputs).at(0);
  runtime::Buffer other_output = device_buffer(3 * 19 * 26 * 4);
  runtime::IoSource other;
  other.buffer = other_output.handle();
  other.channel_count = other.pixel_channels = 3;
  const auto got = run_model(model, inputs).at(0);
  REQUIRE(relative_l2(got, expected) <= 1e-4);
  // Each change fails part-way through building its commands (after the input adapters): the
  // extent, the output binding and the memory stay as they were, and the frame is the old one.
  const auto after_failures = run_model_on(device(), model, inputs, [&](runtime::ExecutableModel& m) {
    m.fail_next_build_for_testing();
    CHECK_THROWS_WITH(m.set_extent(40, 33), Contains("injected"));
    CHECK(m.width() == 26);
    CHECK(m.height() == 19);
    m.fail_next_build_for_testing();
    CHECK_THROWS_WITH(m.bind_output(0, {other}), Contains("injected"));
    CHECK(m.recordable());
  });
  CHECK(relative_l2(after_failures.at(0), expected) <= 1e-4);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("sizes a device cannot address, batches above 1 and wrapping channel ranges are refused by name", "[runtime][model]") {
  // lavapipe's maxStorageBufferRange is 128 MiB: a 32-channel fp32 tensor of 2048x2048 (512 MiB)
  // is one descriptor range past it. Refused before anything is allocated.
  const compiler::Graph g = small_unet();
  runtime::ExecutableModel model(device(), compiled_plan(g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
  const VkDeviceSize range = device().caps().max_storage_buffer_range;
  INFO("maxStorageBufferRange " << range);
  if (range < (VkDeviceSize{512} << 20)) {
    const Refusal r = refusal([&] { model.set_extent(2048, 2048); }, "set_extent(2048, 2048)");
    CHECK(r.code == ErrorCode::Unsupported);
    CHECK_THAT(r.message, Contains("at 2048x2048 tensor '") && Contains("maxStorageBufferRange"));
    CHECK_FALSE(model.recordable());
  }
  CHECK(error_at(model, g, 21, 17) <= 1e-4);

  // A channel range that wraps around 2^32 covers nothing; it used to pass the check.
  runtime::Buffer buffer = device_buffer(3 * 21 * 17 * 4);
  runtime::IoSource wrapping;
  wrapping.buffer = buffer.handle();
  wrapping.first_channel = UINT32_MAX;
  wrapping.channel_count = 2;
  wrapping.pixel_channels = 3;
  CHECK_THROWS_WITH(model.bind_input(0, {wrapping}), Contains("covers channels 4294967295..4294967297"));
  wrapping.first_channel = 0;
  wrapping.source_first_channel = UINT32_MAX - 1;
  CHECK_THROWS_WITH(model.bind_input(0, {wrapping}), Contains("do not fit its 3 channels per pixel"));

  // A plan whose output shape disagrees with its scratch tensor (forged past the cache's
  // checksum): the adapters would have copied past the tensor, and the CLI sized its output
  // from a height of 4294967291.
  for (const int64_t height : {int64_t{-5}, int64_t{1} << 40}) {
    plan::Plan forged = compiled_plan(g, plan::Precision::F32);
    forged.outputs[0].shape[2] = forged.program.constant(height);
    runtime::ExecutableModel bad(device(), std::move(forged), VK_NULL_HANDLE, adapter_compiler(), false);
    const Refusal r = refusal([&] { bad.set_extent(21, 17); }, "a plan whose output has height " + std::to_string(height));
    CHECK(r.code == ErrorCode::InvalidModel);
    CHECK_THAT(r.message, Contains("plan: output '"));
  }

  // An input kept packed (an int8 edge measured alone keeps it NHWC_Q8, a byte an element) is
  // smaller than the NCHW copy its adapter writes: the tensor takes the adapter's footprint.
  // Here the input's tensor claims 16 bytes; its adapter wrote the whole image past them.
  {
    plan::Plan packed = compiled_plan(g, plan::Precision::F32);
    packed.scratch[packed.inputs[0].scratch].size_bytes = packed.program.constant(16);
    runtime::ExecutableModel grown(device(), std::move(packed), VK_NULL_HANDLE, adapter_compiler(), false);
    CHECK(error_at(grown, g, 21, 17) <= 1e-4);
  }

  // A fixed batch of 2: the adapters would move batch 0 only.
  GraphBuilder b;
  const auto x = b.input_shaped("x", {b.c(2), b.c(3), b.H, b.W});
  b.output(b.activation("r", x, relu()));
  const Refusal batched = refusal(
      [&] { runtime::ExecutableModel m(device(), compiled_plan(b.g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false); },
      "a batch of 2");
  CHECK(batched.code == ErrorCode::Unsupported);
  CHECK_THAT(batched.message, Contains("tensor 'x' has a batch of 2"));
  CHECK(device().validation_errors() == 0);
}

// What the checks above cannot meet with a plan denox compiles: a batch that the program computes
// as 0, an adapter grid past maxComputeWorkGroupCount, an arena past one buffer. Each refused by
// name before anything runs (before, an adapter read past its tensor, the grid reached the
// driver as given, and the arena's creation broke VUID-VkBufferCreateInfo-size-06409).
TEST_CASE("forged plans: a batch of 0, an adapter grid and an arena past the device are refused by name", "[runtime][model]") {
  const compiler::Graph g = small_unet();
  const std::string output_name = compiled_plan(g, plan::Precision::F32).outputs.at(0).name;
  {
    plan::Plan forged = compiled_plan(g, plan::Precision::F32);
    auto& p = forged.program;
    forged.outputs[0].shape[0] = p.binary(compiler::IntOp::DivFloor, p.constant(1), forged.outputs[0].shape[2]);  // 1 / H
    runtime::ExecutableModel bad(device(), std::move(forged), VK_NULL_HANDLE, adapter_compiler(), false);
    const Refusal r = refusal([&] { bad.set_extent(21, 17); }, "a batch of 0");
    CHECK(r.code == ErrorCode::InvalidModel);
    CHECK_THAT(r.message, Contains("plan: output '" + output_name + "' has extent 0 in dimension 0 at 21x17 (denox runs a batch of 1)"));
  }
  {
    // An output 2^20 rows tall and one column wide: 12 MiB, but 131072 adapter workgroups in y.
    plan::Plan forged = compiled_plan(g, plan::Precision::F32);
    forged.outputs[0].shape[2] = forged.program.constant(int64_t{1} << 20);
    forged.outputs[0].shape[3] = forged.program.constant(1);
    runtime::ExecutableModel tall(device(), std::move(forged), VK_NULL_HANDLE, adapter_compiler(), false);
    tall.set_extent(21, 17);
    runtime::Buffer input = device_buffer(3 * 21 * 17 * 4);  // (commands are built once every input is bound)
    runtime::IoSource chw;
    chw.buffer = input.handle();
    chw.channel_count = chw.pixel_channels = 3;
    tall.bind_input(0, {chw});
    runtime::Buffer buffer = device_buffer(3 * (VkDeviceSize{1} << 20) * 4);
    runtime::IoSource hwc;  // (HWC: an adapter copies it; CHW fp32 would be bound in place)
    hwc.buffer = buffer.handle();
    hwc.channel_count = hwc.pixel_channels = 3;
    hwc.layout = runtime::TensorLayout::HWC;
    const uint32_t limit = device().caps().max_workgroup_count[1];
    INFO("maxComputeWorkGroupCount[1] " << limit);
    if (limit < 131072) {
      const Refusal r = refusal([&] { tall.bind_output(0, {hwc}); }, "an adapter of 131072 workgroups");
      CHECK(r.code == ErrorCode::Unsupported);
      CHECK_THAT(r.message, Contains("output '" + output_name + "': its adapter needs 131072 workgroups along axis 1 at 1x1048576; the device allows " +
                                     std::to_string(limit)));
    }
  }
  {
    // Outputs added, each a tensor of 120 MiB (under lavapipe's 128 MiB per tensor), all live at
    // the end: together past what one buffer may take.
    const VkDeviceSize each = VkDeviceSize{120} << 20, limit = device().caps().max_buffer_size;
    const VkDeviceSize count = limit / each + 2;
    INFO("one buffer at most " << limit);
    if (count > 200 || each > device().caps().max_storage_buffer_range) {
      WARN("one buffer may take " << limit << " bytes here: too many tensors to add for this check");
    } else {
      plan::Plan forged = compiled_plan(g, plan::Precision::F32);
      for (VkDeviceSize k = 0; k < count; ++k) {
        forged.scratch.push_back({"extra" + std::to_string(k), forged.program.constant(static_cast<int64_t>(each))});
        plan::IoTensor extra = forged.outputs[0];
        extra.name = "extra" + std::to_string(k);
        extra.scratch = static_cast<uint32_t>(forged.scratch.size() - 1);
        forged.outputs.push_back(extra);
      }
      runtime::ExecutableModel wide(device(), std::move(forged), VK_NULL_HANDLE, adapter_compiler(), false);
      const Refusal r = refusal([&] { wide.set_extent(21, 17); }, "an arena past one buffer");
      CHECK(r.code == ErrorCode::Unsupported);
      CHECK_THAT(r.message, Contains("at 21x17 the scratch arena takes ") && Contains("may take at most " + std::to_string(limit) + " (maxBufferSize)"));
    }
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("barriers: one between dependent dispatches of a chain, none between the copies of a concat where each binds only its part",
          "[runtime][model]") {
  SECTION("a chain of three activations") {
    // Each result is a graph output too, so the three stay three dispatches (an elementwise
    // chain read only inside itself would be one eltwise dispatch).
    GraphBuilder b;
    const auto x = b.input("x", 3);
    const auto r1 = b.activation("r1", x, relu()), r2 = b.activation("r2", r1, relu());
    b.output(r1);
    b.output(r2);
    b.output(b.activation("r3", r2, relu()));
    runtime::ExecutableModel model(device(), compiled_plan(b.g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
    const std::vector<HostTensor> inputs = {random_tensor({1, 3, 19, 27}, 4)};
    const auto got = run_model(model, inputs), want = reference::run_reference(b.g, inputs);
    for (size_t i = 0; i < 3; ++i) CHECK(relative_l2(got.at(i), want.at(i)) == 0.0);
    // r1, r2, r3, each reading what the one before wrote (run_model binds fp32 CHW buffers, the
    // plan's own layout: bound in the tensors' place, no adapters).
    CHECK(model.command_count() == 3);
    CHECK(model.barrier_count() == 2);
  }
  SECTION("a concat of two inputs") {
    GraphBuilder b;
    const auto x = b.input("x", 3), y = b.input("y", 5);
    b.output(b.op("cat", "Concat", compiler::ConcatAttrs{1}, {x, y}, {b.c(1), b.c(8), b.H, b.W}));
    runtime::ExecutableModel model(device(), compiled_plan(b.g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
    // Both copies, straight from the caller's buffers into the caller's output buffer. y's part
    // starts 3 planes in: at 19x28 (2128-byte planes) a multiple of 16 bytes, so each copy binds
    // only its part and they run unordered; at 19x27 (2052) not, so the second binds the whole
    // output, after a barrier (record.cpp).
    for (int64_t w : {28, 27}) {
      INFO("width " << w);
      const std::vector<HostTensor> inputs = {random_tensor({1, 3, 19, w}, 5), random_tensor({1, 5, 19, w}, 6)};
      CHECK(relative_l2(run_model(model, inputs).at(0), reference::run_reference(b.g, inputs).at(0)) == 0.0);
      CHECK(model.command_count() == 2);
      CHECK(model.barrier_count() == (binds_only_its_part(device(), static_cast<uint64_t>(3 * 19 * w * 4)) ? 0 : 1));
    }
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("a context over the caller's device (from_external) runs a model and a missing extension is named",
          "[runtime][model]") {
  const runtime::DeviceContext& own = device();
  // Without VK_KHR_push_descriptor among the enabled extensions, the context refuses and says
  // what is missing.
  runtime::ExternalDevice ext = external_over_own(nullptr);
  ext.enabled_extensions.clear();
  CHECK_THROWS_WITH(runtime::DeviceContext::from_external(ext), Contains(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME));

  const auto engine = engine_context(true);
  CHECK(engine->caps().fp16_usable() == own.caps().fp16_usable());
  GraphBuilder b;
  b.output(b.conv("conv", b.input("x", 3), 4, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 8));
  plan::Plan plan = compiled_plan(b.g, plan::Precision::F16);
  runtime::ExecutableModel model(*engine, std::move(plan), VK_NULL_HANDLE, adapter_compiler(), false);
  const std::vector<HostTensor> inputs = {random_tensor({1, 3, 17, 22}, 12)};
  CHECK(relative_l2(run_model(model, inputs).at(0), reference::run_reference(b.g, inputs).at(0)) <= tolerance(plan::Precision::F16));
  CHECK(own.validation_errors() == 0);
}

TEST_CASE("a caller's device without the features the GPU has is named in a warning", "[runtime][model]") {
  // Left out of enabled_features_chain, fp16 silently gave the portable fp32 shaders.
  auto stream = std::make_shared<std::ostringstream>();
  auto capture = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(*stream));
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(capture);
  const auto without = engine_context(false);
  const std::string warned_without = stream->str();
  stream->str("");
  const auto with = engine_context(true);
  const std::string warned_with = stream->str();
  spdlog::set_default_logger(previous);
  if (device().caps().shader_float16) {
    CHECK_THAT(warned_without, Contains("the device supports VkPhysicalDeviceVulkan11Features::storageBuffer16BitAccess, "
                                        "VkPhysicalDeviceVulkan12Features::shaderFloat16"));
    CHECK_THAT(warned_without, Contains("enabled_features_chain"));
    CHECK_THAT(warned_with, !Contains("shaderFloat16"));
  } else {
    WARN("the test device has no fp16: nothing to warn about");
  }
}

TEST_CASE("a caller's device with the Vulkan memory model but not its device scope is refused by name", "[runtime][model]") {
  // denox's io adapters use device-scope atomics, invalid where vulkanMemoryModel is on without
  // vulkanMemoryModelDeviceScope (VUID-RuntimeSpirv-vulkanMemoryModel-06265).
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  v12.vulkanMemoryModel = VK_TRUE;
  const runtime::ExternalDevice ext = external_over_own(&v12);
  const Refusal r = refusal([&] { (void)runtime::DeviceContext::from_external(ext); }, "vulkanMemoryModel without its device scope");
  CHECK(r.code == ErrorCode::MissingFeature);
  CHECK_THAT(r.message, Contains("enabled vulkanMemoryModel without vulkanMemoryModelDeviceScope"));
  // Both (as denox's own device enables them where supported): the memory model is usable.
  v12.vulkanMemoryModelDeviceScope = VK_TRUE;
  const auto both = runtime::DeviceContext::from_external(ext);
  CHECK(both->caps().vulkan_memory_model);
}

TEST_CASE("the validation layer's synchronization checks see a barrier left out of a model", "[runtime][model][sync]") {
  // The tests count validation errors as failures; this checks that a missing barrier between
  // two of denox's dispatches (compute, push descriptors) is among them, i.e. that
  // synchronization validation is on. Its own context, so the shared device's count stays clean.
  runtime::OwnDeviceOptions options;
  options.validation = true;
  const auto ctx = runtime::DeviceContext::create_own(options);
  const compiler::Graph g = small_unet();
  runtime::ExecutableModel model(*ctx, compiled_plan(g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
  const std::vector<HostTensor> inputs = {random_tensor({1, 3, 19, 26}, 77)};
  const HostTensor expected = reference::run_reference(g, inputs).at(0);
  CHECK(relative_l2(run_model_on(*ctx, model, inputs).at(0), expected) <= 1e-4);
  REQUIRE(ctx->validation_errors() == 0);

  // Leave out the first derived barrier after the first command (the recording's own leading
  // barrier stays): the dispatch after it reads or overwrites what the one before wrote.
  size_t dropped = 0;
  run_model_on(*ctx, model, inputs, [&](runtime::ExecutableModel& m) {
    for (size_t i = 1; i < m.command_count() && dropped == 0; ++i)
      if (m.drop_barrier_for_testing(i)) dropped = i;
  });
  INFO("barrier dropped before command " << dropped << " of " << model.command_count());
  REQUIRE(dropped > 0);
  CHECK(ctx->validation_errors() > 0);
}
