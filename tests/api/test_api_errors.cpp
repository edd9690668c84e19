// Bad input through the C API: clear result codes and messages, never a crash.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <utility>

#include "api_test_util.hpp"
#include "denox/denox.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;

namespace {
std::string last() { return denox_last_error(); }

// The C++ header: a model loads from a context that outlives the call, never from a temporary.
template <class C>
concept loads_from = requires(C&& ctx, const std::string& path, const void* bytes) {
  denox::Model::from_file(std::forward<C>(ctx), path);
  denox::Model::from_memory(std::forward<C>(ctx), bytes, size_t{1});
  denox::Model::from_plan(std::forward<C>(ctx), bytes, size_t{1});
};
static_assert(loads_from<denox::Context&> && loads_from<const denox::Context&>);
static_assert(!loads_from<denox::Context> && !loads_from<denox::Context&&>);
}  // namespace

TEST_CASE("load errors name the cause", "[api][errors]") {
  TempDir dir;
  denox_context ctx = make_context({});
  denox_model model = nullptr;

  CHECK(denox_model_load_file(ctx, (dir / "missing.onnx").string().c_str(), nullptr, &model) == DENOX_ERROR_IO);
  CHECK(last().find("missing.onnx") != std::string::npos);
  CHECK(model == nullptr);
  // Not regular files: named, never read (/dev/zero was read until memory ran out).
  CHECK(denox_model_load_file(ctx, dir.path().string().c_str(), nullptr, &model) == DENOX_ERROR_IO);
  CHECK(last().find(dir.path().string() + ": is a directory") != std::string::npos);
  CHECK(denox_model_load_file(ctx, "/dev/zero", nullptr, &model) == DENOX_ERROR_IO);
  CHECK(last().find("/dev/zero: not a regular file") != std::string::npos);
  CHECK(model == nullptr);

  const std::string junk = "this is not a protobuf";
  CHECK(denox_model_load_memory(ctx, junk.data(), junk.size(), nullptr, &model) == DENOX_ERROR_INVALID_MODEL);
  CHECK_FALSE(last().empty());

  // An ONNX model with an op denox does not implement: the node and op are named.
  onnx::ModelProto m = denox::modelgen::build_oidn_unet({});
  m.mutable_graph()->mutable_node(3)->set_op_type("Softmax");
  const std::string node_name = m.graph().node(3).name();
  const std::string bytes = m.SerializeAsString();
  CHECK(denox_model_load_memory(ctx, bytes.data(), bytes.size(), nullptr, &model) == DENOX_ERROR_UNSUPPORTED);
  CHECK(last().find("Softmax") != std::string::npos);
  CHECK(last().find(node_name) != std::string::npos);

  CHECK(denox_model_load_file(ctx, nullptr, nullptr, &model) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(denox_model_load_file(nullptr, "x.onnx", nullptr, &model) == DENOX_ERROR_INVALID_ARGUMENT);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("using a model before it is ready and wrong bindings", "[api][errors]") {
  auto& dev = engine_device();
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = make_context({});
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), nullptr, &model), "load");
  CHECK(denox_model_input_count(model) == 1);
  CHECK(denox_model_output_count(model) == 1);
  dev.submit([&](VkCommandBuffer cmd) {
    CHECK(denox_model_record(model, cmd) == DENOX_ERROR_NOT_READY);
    CHECK(last().find("set_extent") != std::string::npos);
  });
  CHECK(denox_model_set_extent(model, 0, 10) == DENOX_ERROR_INVALID_ARGUMENT);
  require_ok(denox_model_set_extent(model, 40, 30), "set_extent");
  dev.submit([&](VkCommandBuffer cmd) {
    CHECK(denox_model_record(model, cmd) == DENOX_ERROR_NOT_READY);
    CHECK(last().find("not bound") != std::string::npos);
  });
  denox::vkhost::Buffer small(dev, 64);
  denox_binding b{};
  b.channel_count = 2;  // the input has 3 channels
  b.buffer = small.handle();
  b.range = VK_WHOLE_SIZE;
  b.pixel_channels = 3;
  CHECK(denox_model_bind_input(model, 0, &b, 1) != DENOX_SUCCESS);
  CHECK_FALSE(last().empty());
  b.channel_count = 3;  // right channels, but a 64-byte range cannot hold 3x30x40 floats
  b.range = 64;
  CHECK(denox_model_bind_input(model, 0, &b, 1) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("64") != std::string::npos);
  CHECK(denox_model_bind_input(model, 5, &b, 1) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(denox_model_bind_input(model, 0, nullptr, 1) == DENOX_ERROR_INVALID_ARGUMENT);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(dev.validation_errors() == 0);
}

TEST_CASE("a device without what denox needs is refused with the missing names", "[api][errors]") {
  auto bare = denox::vkhost::Device::create(-1, false, true);
  const denox_vulkan_device dev = bare->as_denox();
  denox_context_options options{};
  options.disable_cache = 1;
  denox_context ctx = nullptr;
  CHECK(denox_context_create(&dev, &options, &ctx) == DENOX_ERROR_MISSING_FEATURE);
  CHECK(last().find("VK_KHR_push_descriptor") != std::string::npos);
  CHECK(ctx == nullptr);

  uint32_t count = 0;
  const denox_device_requirement* reqs = denox_device_requirements(&count);
  REQUIRE(count > 0);
  bool lists_push_descriptor = false;
  for (uint32_t i = 0; i < count; ++i) lists_push_descriptor |= std::string(reqs[i].name) == "VK_KHR_push_descriptor" && reqs[i].required;
  CHECK(lists_push_descriptor);
}

// The lines the log callback receives at `level` and above while a context is made on the
// engine device and destroyed.
namespace {
std::vector<std::string> lines_logged_by_a_context(denox_log_level level) {
  std::vector<std::string> lines;
  denox_set_log_callback([](denox_log_level, const char* msg, void* user) { static_cast<std::vector<std::string>*>(user)->emplace_back(msg); },
                         &lines, level);
  denox_context ctx = make_context({});
  denox_context_destroy(ctx);
  denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN);
  return lines;
}
}  // namespace

TEST_CASE("the log callback receives denox's messages", "[api][errors]") {
  CHECK_FALSE(lines_logged_by_a_context(DENOX_LOG_INFO).empty());
}

TEST_CASE("an engine device that enables what denox lists draws no unused-feature warning", "[api][errors]") {
  // vkhost::Device, the tests' and examples' engine, enables every listed feature the device
  // has (shaderInt8 was missing: the path tracer's int8 mode was refused on GPUs, and every run
  // warned that the device "supports" it).
  for (const auto& line : lines_logged_by_a_context(DENOX_LOG_WARN))
    CHECK(line.find("do not say the VkDevice enabled them") == std::string::npos);
}

TEST_CASE("the library's version is its header's, and every result has a name", "[api][errors]") {
  const std::string header = std::to_string(DENOX_VERSION_MAJOR) + "." + std::to_string(DENOX_VERSION_MINOR) + "." +
                             std::to_string(DENOX_VERSION_PATCH);
  CHECK(std::string(denox_version_string()) == header);
  for (int r = DENOX_SUCCESS; r <= DENOX_ERROR_OUT_OF_HOST_MEMORY; ++r)
    CHECK(std::string(denox_result_name(static_cast<denox_result>(r))) != "DENOX_ERROR_UNKNOWN");
  CHECK(std::string(denox_result_name(DENOX_ERROR_OUT_OF_HOST_MEMORY)) == "DENOX_ERROR_OUT_OF_HOST_MEMORY");
}
