// The on-disk cache through the C API: a second context (as a second process would) compiles
// nothing; a corrupt cache file is set aside and the model still loads; plans round-trip.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

#include "api_test_util.hpp"
#include "compiler/plan/plan_serialize.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;

TEST_CASE("a second context with the same cache compiles no plan and no shader", "[api][cache]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  const auto cache_path = dir / "cache.sqlite3";
  const auto input = random_image(3, 21, 34, 5);
  const auto want = reference_output(model_path, input);

  for (int round = 0; round < 2; ++round) {
    denox_context ctx = make_context(cache_path);
    denox_model model = nullptr;
    require_ok(denox_model_load_file(ctx, model_path.string().c_str(), nullptr, &model), "load");
    const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F32);
    CHECK(relative_l2(got, want.f32) <= (denox_model_precision(model) == DENOX_PRECISION_FP16 ? 2e-2 : 1e-4));
    denox_stats stats{};
    require_ok(denox_context_get_stats(ctx, &stats), "stats");
    INFO("round " << round << ": plans " << stats.plans_compiled << ", shaders " << stats.shaders_compiled);
    if (round == 0) {
      CHECK(stats.plans_compiled == 1);
      CHECK(stats.shaders_compiled > 0);
    } else {
      CHECK(stats.plans_compiled == 0);
      CHECK(stats.plan_cache_hits == 1);
      CHECK(stats.shaders_compiled == 0);  // the io adapters' SPIR-V comes from the cache too
      CHECK(stats.pipeline_cache_hits == 1);
    }
    denox_model_destroy(model);
    denox_context_destroy(ctx);
  }
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a corrupt cache file is set aside and the model still loads", "[api][cache]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  const auto cache_path = dir / "cache.sqlite3";
  {
    std::ofstream garbage(cache_path, std::ios::binary);
    for (int i = 0; i < 5000; ++i) garbage << "not a database " << i;
  }
  denox_context ctx = make_context(cache_path);
  denox_context_info info{};
  require_ok(denox_context_get_info(ctx, &info), "info");
  CHECK(info.cache_enabled == 1);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), nullptr, &model), "load");
  bool set_aside = false;
  for (const auto& e : fs::directory_iterator(dir.path())) set_aside |= e.path().filename().string().find(".corrupt-") != std::string::npos;
  CHECK(set_aside);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
}

namespace {

// Whether a pipeline's workgroups are other than 1x1x1 (so that 1x1x1 is a mismatch).
bool plan_local_size_differs(const std::array<uint32_t, 3>& s) { return s[0] * s[1] * s[2] != 1; }

// A SPIR-V module that only declares `words` 32-bit words of shared memory (uint[words]), as a
// shader made for a device with more shared memory would: what the load's check reads. Never
// handed to a driver (the load refuses it first).
std::vector<uint32_t> shared_memory_module(uint32_t words) {
  constexpr uint32_t kTypeInt = 21, kConstant = 43, kTypeArray = 28, kTypePointer = 32, kVariable = 59, kWorkgroup = 4;
  auto op = [](uint32_t count, uint32_t code) { return count << 16 | code; };
  return {0x07230203, 0x00010600, 0, 6, 0,                 // header: magic, SPIR-V 1.6, generator, id bound, schema
          op(4, kTypeInt), 1, 32, 0,                        // %1 = uint
          op(4, kConstant), 1, 2, words,                    // %2 = words
          op(4, kTypeArray), 3, 1, 2,                       // %3 = uint[%2]
          op(4, kTypePointer), 4, kWorkgroup, 3,            // %4 = Workgroup pointer to %3
          op(4, kVariable), 4, 5, kWorkgroup};              // %5 = the shared array
}

}  // namespace

TEST_CASE("an exported plan loads without ONNX and computes the same", "[api][cache]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  const auto input = random_image(3, 33, 17, 9);
  denox_context ctx = make_context({});
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  denox_model a = nullptr, b = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &a), "load");
  size_t size = 0;
  require_ok(denox_model_export_plan(a, nullptr, &size), "export size");
  std::vector<uint8_t> plan(size);
  require_ok(denox_model_export_plan(a, plan.data(), &size), "export");
  require_ok(denox_model_load_plan(ctx, plan.data(), plan.size(), nullptr, &b), "load_plan");
  const auto got_a = run_on_buffers(ctx, a, input, DENOX_DTYPE_F32);
  const auto got_b = run_on_buffers(ctx, b, input, DENOX_DTYPE_F32);
  CHECK(got_a == got_b);
  // A plan made for subgroups of another width (another vendor's GPU) is refused by name: its
  // cooperative-matrix shaders would compute garbage.
  {
    denox::plan::Plan other = denox::plan::deserialize_plan(plan);
    REQUIRE(!other.pipelines.empty());
    other.pipelines[0].defines.emplace_back("SUBGROUP_SIZE", "7");
    const std::vector<uint8_t> bytes = denox::plan::serialize_plan(other);
    denox_model d = nullptr;
    CHECK(denox_model_load_plan(ctx, bytes.data(), bytes.size(), nullptr, &d) == DENOX_ERROR_MISSING_FEATURE);
    CHECK(std::string(denox_last_error()).find("made for subgroups of 7 invocations") != std::string::npos);
    CHECK(d == nullptr);
    // And workgroups larger than the device takes.
    denox::plan::Plan wide = denox::plan::deserialize_plan(plan);
    wide.pipelines[0].local_size = {1u << 20, 1, 1};
    const std::vector<uint8_t> wide_bytes = denox::plan::serialize_plan(wide);
    CHECK(denox_model_load_plan(ctx, wide_bytes.data(), wide_bytes.size(), nullptr, &d) == DENOX_ERROR_MISSING_FEATURE);
    CHECK(std::string(denox_last_error()).find("shaders run workgroups of 1048576x1x1 invocations") != std::string::npos);
    CHECK(d == nullptr);
    // The tests' plain-arithmetic stand-in for cooperative matrices (COOP_EMULATE) excuses a
    // pipeline from nothing outside those tests (before 0.4.2 a plan naming it skipped every
    // check below the SPIR-V's).
    REQUIRE(std::getenv("DENOX_TEST_COOP_EMULATE") == nullptr);
    wide.pipelines[0].defines.emplace_back("COOP_EMULATE", "1");
    wide.pipelines[0].defines.emplace_back("SUBGROUP_SIZE", "7");
    const std::vector<uint8_t> excused = denox::plan::serialize_plan(wide);
    CHECK(denox_model_load_plan(ctx, excused.data(), excused.size(), nullptr, &d) == DENOX_ERROR_MISSING_FEATURE);
    CHECK(std::string(denox_last_error()).find("shaders run workgroups of 1048576x1x1 invocations") != std::string::npos);
    wide.pipelines[0].local_size = other.pipelines[0].local_size;
    const std::vector<uint8_t> excused_narrow = denox::plan::serialize_plan(wide);
    CHECK(denox_model_load_plan(ctx, excused_narrow.data(), excused_narrow.size(), nullptr, &d) == DENOX_ERROR_MISSING_FEATURE);
    CHECK(std::string(denox_last_error()).find("made for subgroups of 7 invocations") != std::string::npos);
    CHECK(d == nullptr);
    // A shader declaring more shared memory than a workgroup may have here (a plan made where
    // workgroups get 64 KB, loaded where they get 48 KB), named with its dispatch. The check
    // reads the SPIR-V; a module it cannot read is refused as a bad plan.
    denox::plan::Plan greedy = denox::plan::deserialize_plan(plan);
    std::string dispatch;
    for (const auto& step : greedy.dispatches)
      if (step.pipeline == 0 && dispatch.empty()) dispatch = step.name;
    REQUIRE(!dispatch.empty());
    greedy.pipelines[0].spirv = shared_memory_module(uint32_t{1} << 20);
    const std::vector<uint8_t> greedy_bytes = denox::plan::serialize_plan(greedy);
    CHECK(denox_model_load_plan(ctx, greedy_bytes.data(), greedy_bytes.size(), nullptr, &d) == DENOX_ERROR_MISSING_FEATURE);
    const std::string said = denox_last_error();
    INFO(said);
    CHECK(said.find("shader for '" + dispatch + "' declares 4194304 bytes of shared memory") != std::string::npos);
    CHECK(said.find("maxComputeSharedMemorySize") != std::string::npos);
    CHECK(d == nullptr);
    // A module that is not the one its pipeline describes (another workgroup size): damaged or
    // hand-made, refused before the driver sees it.
    denox::plan::Plan mismatched = denox::plan::deserialize_plan(plan);
    mismatched.pipelines[0].local_size = {1, 1, 1};
    REQUIRE(plan_local_size_differs(denox::plan::deserialize_plan(plan).pipelines[0].local_size));
    const std::vector<uint8_t> mismatched_bytes = denox::plan::serialize_plan(mismatched);
    CHECK(denox_model_load_plan(ctx, mismatched_bytes.data(), mismatched_bytes.size(), nullptr, &d) == DENOX_ERROR_INVALID_MODEL);
    CHECK(std::string(denox_last_error()).find("declares workgroups of") != std::string::npos);
    CHECK(std::string(denox_last_error()).find("its pipeline 1x1x1") != std::string::npos);
    CHECK(d == nullptr);
    // A weight range one descriptor may not span here (a plan made where storage buffers
    // reach 4 GB, loaded on lavapipe's 128 MiB), refused by name before it is bound.
    const VkDeviceSize range_limit = engine_device().properties().limits.maxStorageBufferRange;
    if (range_limit < (VkDeviceSize{1} << 30)) {
      denox::plan::Plan heavy = denox::plan::deserialize_plan(plan);
      REQUIRE(!heavy.weights.empty());
      heavy.weights[0].size = range_limit + 4;
      heavy.weight_data.resize(heavy.weights[0].offset + heavy.weights[0].size, 0x3c);
      const std::string weight_name = heavy.weights[0].name;
      const std::vector<uint8_t> heavy_bytes = denox::plan::serialize_plan(heavy);
      heavy = {};
      CHECK(denox_model_load_plan(ctx, heavy_bytes.data(), heavy_bytes.size(), nullptr, &d) == DENOX_ERROR_MISSING_FEATURE);
      CHECK(std::string(denox_last_error()).find("the plan's weight range '" + weight_name + "' takes " + std::to_string(range_limit + 4) +
                                                 " bytes, more than one storage buffer may span") != std::string::npos);
      CHECK(d == nullptr);
    } else {
      WARN("maxStorageBufferRange " << range_limit << ": too large a weight range to build for this check");
    }
    denox::plan::Plan broken = denox::plan::deserialize_plan(plan);
    broken.pipelines[0].spirv.resize(6);
    broken.pipelines[0].spirv[5] = 2u << 16 | 21;  // the first instruction (two words) runs past the end
    const std::vector<uint8_t> broken_bytes = denox::plan::serialize_plan(broken);
    CHECK(denox_model_load_plan(ctx, broken_bytes.data(), broken_bytes.size(), nullptr, &d) == DENOX_ERROR_INVALID_MODEL);
    CHECK(std::string(denox_last_error()).find("malformed SPIR-V at word 5") != std::string::npos);
    CHECK(d == nullptr);
  }
  // A damaged plan is refused with a message, never a crash.
  plan[plan.size() / 2] ^= 0x5a;
  plan.resize(plan.size() - 7);
  denox_model c = nullptr;
  CHECK(denox_model_load_plan(ctx, plan.data(), plan.size(), nullptr, &c) == DENOX_ERROR_INVALID_MODEL);
  CHECK(std::string(denox_last_error()).find("plan") != std::string::npos);
  CHECK(c == nullptr);
  denox_model_destroy(a);
  denox_model_destroy(b);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a log callback may call into the context while the cache warns", "[api][cache]") {
  // The cache logged under its own lock: a log callback that called denox_context_get_info
  // (which reads the cache) took that lock again on the same thread, and hung; on another thread
  // it waited for the lock while the cache's thread waited for the callback. Lines logged under
  // the lock now reach the callback after it is released.
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  const auto cache_path = dir / "cache.sqlite3";
  denox_context ctx = make_context(cache_path);
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load (stores the plan)");
  denox_model_destroy(model);
  {  // Every stored plan's checksum damaged: the next load warns (under the cache's lock) and compiles.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(cache_path.string().c_str(), &db) == SQLITE_OK);
    const int updated = sqlite3_exec(db, "UPDATE plans SET checksum = 'damaged'", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    REQUIRE(updated == SQLITE_OK);
  }
  struct Seen {
    denox_context ctx = nullptr;
    std::atomic<int> warnings{0}, infos{0};
    static void on(denox_log_level, const char* message, void* user) {
      auto* self = static_cast<Seen*>(user);
      if (std::string(message).find("fails its checksum") != std::string::npos) self->warnings++;
      denox_context_info info{};
      if (denox_context_get_info(self->ctx, &info) == DENOX_SUCCESS) self->infos++;
    }
  } seen;
  seen.ctx = ctx;
  denox_set_log_callback(Seen::on, &seen, DENOX_LOG_WARN);
  const denox_result loaded = denox_model_load_file(ctx, model_path.string().c_str(), &options, &model);
  denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN);
  require_ok(loaded, "load with a damaged plan row");
  CHECK(seen.warnings >= 1);
  CHECK(seen.infos >= seen.warnings);
  const auto input = random_image(3, 21, 19, 4);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), reference_output(model_path, input).f32) <= 1e-4);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}
