// Background work through the C API (issue 5, "Lazy JIT" and "Hot reload"): a load that tunes
// in the background returns with the heuristic plan and frames run it while the worker
// measures; the next record() after the worker is done swaps to the tuned plan; destroying a
// model mid-tune is clean; hot reload swaps to a new model at a frame boundary, and a bad or
// incompatible model leaves the running one in place with the error in the status; with
// external memory the swap waits for the caller's memory. Small models at odd extents: lavapipe.
#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api_test_util.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

// A progress callback that notes which threads report which stages and, when `hold_stage` is
// set, holds the worker thread (never the test's thread) at that stage until open() is called:
// the test then knows the job is in that stage while it runs frames.
class ProgressGate {
 public:
  explicit ProgressGate(std::string hold_stage = "") : hold_stage_(std::move(hold_stage)) {}

  static void callback(const char* stage, uint32_t, uint32_t, const char*, void* user) {
    static_cast<ProgressGate*>(user)->on(stage);
  }
  // Waits until the worker reached the held stage (false after `timeout`).
  bool wait_held(std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return held_; });
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Whether `stage` was reported on a thread other than the test's.
  bool reported_off_main(const std::string& stage) const {
    std::lock_guard lock(mutex_);
    for (const auto& [s, id] : calls_)
      if (s == stage && id != main_) return true;
    return false;
  }

 private:
  void on(const char* stage) {
    std::unique_lock lock(mutex_);
    calls_.emplace_back(stage, std::this_thread::get_id());
    if (open_ || hold_stage_ != stage || std::this_thread::get_id() == main_) return;
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }

  const std::thread::id main_ = std::this_thread::get_id();
  std::string hold_stage_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool held_ = false, open_ = false;
  std::vector<std::pair<std::string, std::thread::id>> calls_;
};

denox_model_status status_of(denox_model model) {
  denox_model_status s{};
  require_ok(denox_model_get_status(model, &s), "get_status");
  return s;
}

// Polls the status until `done` holds (the worker runs on its own; nothing here records).
denox_model_status wait_until(denox_model model, const std::function<bool(const denox_model_status&)>& done,
                              std::chrono::seconds timeout = 300s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto s = status_of(model);
    if (done(s)) return s;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(10ms);
  }
}

bool idle(const denox_model_status& s) { return s.running_job == DENOX_JOB_NONE; }

// fp32 models whose progress (reloads' too) goes to `gate`.
denox_model_options fp32_gated(ProgressGate& gate) {
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  o.progress = ProgressGate::callback;
  o.progress_user_data = &gate;
  return o;
}

// OIDN small (3 channels, weights from `seed`) written into `dir` and loaded in fp32.
denox_model load_small_fp32(denox_context ctx, const std::filesystem::path& dir, uint32_t seed) {
  const auto path = write_oidn(dir, Size::Small, 3, true, seed);
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "load");
  return model;
}

// Restores the default log output when a test ends, also when a REQUIRE ends it early (its
// callback's user data is about to go).
struct DefaultLogAtExit {
  ~DefaultLogAtExit() { denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN); }
};

// A headless context with the validation layer and no cache.
denox_context uncached_headless_context() {
  denox_context_options co{};
  co.disable_cache = 1;
  denox_context ctx = nullptr;
  require_ok(denox_context_create_headless(-1, 1, &co, &ctx), "headless context with validation");
  return ctx;
}

denox_model_options background_tuning(ProgressGate* gate) {
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  o.tuning = DENOX_TUNING_MEASURE;
  o.tune_width = 37;
  o.tune_height = 29;
  o.tune_in_background = 1;
  o.progress = ProgressGate::callback;
  o.progress_user_data = gate;
  return o;
}

}  // namespace

TEST_CASE("background tuning: frames run the heuristic plan, the next record after the tune swaps", "[api][background]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true, 21);
  const auto input = random_image(3, 29, 37, 5);
  const auto want = reference_output(model_path, input);
  denox_context ctx = make_context(dir / "cache.sqlite3");

  // The clock keeper stays off in a background tune (the engine's frames keep the clock up),
  // even where a test forces it on the CPU device.
  LogLines log(DENOX_LOG_DEBUG);
  ::setenv("DENOX_TEST_CLOCK_KEEPER", "1", 1);
  ProgressGate gate("measure");
  const denox_model_options options = background_tuning(&gate);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load (tune in background)");
  // A queued job counts as running: no idle gap between the load and the worker waking.
  CHECK(status_of(model).running_job == DENOX_JOB_TUNE);
  // The load returned while the worker is about to measure (held there by the gate).
  REQUIRE(gate.wait_held(300s));
  CHECK(gate.reported_off_main("measure"));
  auto s = status_of(model);
  CHECK(s.active_plan == DENOX_PLAN_HEURISTIC);
  CHECK(s.running_job == DENOX_JOB_TUNE);
  CHECK(std::string(s.stage) == "measure");
  CHECK(s.progress > 0.0f);
  CHECK(s.progress < 1.0f);
  CHECK(report_of(model)["tuning"] == "heuristic");
  // Frames meanwhile: the heuristic plan, correct.
  for (int frame = 0; frame < 2; ++frame) CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want.f32) <= 1e-4);
  CHECK(status_of(model).swaps == 0);

  gate.open();
  s = wait_until(model, [](const auto& st) { return st.swap_pending != 0; });
  ::unsetenv("DENOX_TEST_CLOCK_KEEPER");
  CHECK(log.any_containing("denox: measure: "));  // the timing step's debug line came through
  CHECK_FALSE(log.any_containing("clock keeper: "));
  CHECK(idle(s));
  CHECK(s.active_plan == DENOX_PLAN_HEURISTIC);  // nothing swaps outside record()
  CHECK(s.last_error_result == DENOX_SUCCESS);

  // The frame boundary: this record() swaps (re-applying the bindings run_on_buffers changed).
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want.f32) <= 1e-4);
  s = status_of(model);
  CHECK(s.active_plan == DENOX_PLAN_TUNED);
  CHECK(s.swap_pending == 0);
  CHECK(s.swaps == 1);
  CHECK(s.retired_plans == 1);
  const auto tuned = report_of(model);
  INFO(tuned.dump());
  CHECK(tuned["tuning"] == "measure@37x29");
  CHECK(tuned["measured_edges"].get<int>() > 0);
  CHECK(denox_model_dispatch_count(model) > 0);
  // The replaced plan is released retire_after_records (3) records after the swap.
  for (int frame = 0; frame < 3; ++frame) CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want.f32) <= 1e-4);
  CHECK(status_of(model).retired_plans == 0);
  denox_model_destroy(model);

  // The tuned plan is now cached: the same load uses it at once, nothing runs in the background.
  ProgressGate no_hold;
  const denox_model_options again = background_tuning(&no_hold);
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &again, &model), "load (tuned plan cached)");
  s = status_of(model);
  CHECK(s.active_plan == DENOX_PLAN_TUNED);
  CHECK(idle(s));
  CHECK(report_of(model)["from_cache"] == true);
  CHECK_FALSE(no_hold.reported_off_main("measure"));
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("destroying a model while it tunes in the background cancels the tune", "[api][background]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true, 22);
  denox_context ctx = make_context(dir / "cache.sqlite3");
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Held at the start of measuring, then released and destroyed at once: the worker is
    // between edges when the cancel flag is set.
    ProgressGate gate("measure");
    const denox_model_options options = background_tuning(&gate);
    denox_model model = nullptr;
    require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load (tune in background)");
    REQUIRE(gate.wait_held(300s));
    // Nothing was tuned before (the first attempt was cancelled too): the heuristic plan runs.
    CHECK(status_of(model).active_plan == DENOX_PLAN_HEURISTIC);
    gate.open();
    const auto t0 = std::chrono::steady_clock::now();
    denox_model_destroy(model);
    const double destroy_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO("destroy took " << destroy_s << " s");
    CHECK(destroy_s < 30.0);  // one edge at most, not the whole tune
  }
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("background work needs a queue it may use: refused by name without one", "[api][background]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_vulkan_device dev = engine_device().as_denox();
  dev.lock_queue = nullptr;
  dev.unlock_queue = nullptr;
  denox_context_options co{};
  co.disable_cache = 1;
  denox_context ctx = nullptr;
  require_ok(denox_context_create(&dev, &co, &ctx), "context without background submission");
  denox_model model = nullptr;
  denox_model_options o = background_tuning(nullptr);
  o.progress = nullptr;
  CHECK(denox_model_load_file(ctx, model_path.string().c_str(), &o, &model) == DENOX_ERROR_INVALID_ARGUMENT);
  const std::string why = denox_last_error();
  CHECK(why.find("tune_in_background") != std::string::npos);
  CHECK(why.find("background_queue") != std::string::npos);
  CHECK(why.find("lock_queue") != std::string::npos);
  CHECK(model == nullptr);
  // A heuristic model loads; reloading it needs the queue for its weight upload.
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), nullptr, &model), "load");
  CHECK(denox_model_reload_file(model, model_path.string().c_str()) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(denox_last_error()).find("background_queue") != std::string::npos);
  CHECK(denox_model_reload_file(model, (dir / "missing.onnx").string().c_str()) == DENOX_ERROR_IO);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  // lock_queue without unlock_queue is refused.
  dev.lock_queue = engine_device().as_denox().lock_queue;
  CHECK(denox_context_create(&dev, &co, &ctx) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(denox_last_error()).find("unlock_queue") != std::string::npos);
  CHECK(ctx == nullptr);
}

TEST_CASE("hot reload: a new model swaps in at a frame boundary, bad and incompatible ones leave it running", "[api][background]") {
  TempDir dir;
  const auto path_a = write_oidn(dir.path(), Size::Small, 3, true, 31);
  const auto path_b = write_oidn(dir.path(), Size::Small, 3, true, 32);  // same architecture, other weights
  const auto path_9ch = write_oidn(dir.path(), Size::Small, 9, true, 33);
  const auto input = random_image(3, 29, 37, 6);
  const auto want_a = reference_output(path_a, input), want_b = reference_output(path_b, input);
  REQUIRE(relative_l2(want_a.f32, want_b.f32) > 1e-2);
  denox_context ctx = make_context(dir / "cache.sqlite3");

  // Reloads compile with the load's options, this progress callback included: hold the reload
  // before lowering (the heuristic schedule measures nothing).
  ProgressGate gate("lower");
  const denox_model_options o = fp32_gated(gate);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model), "load A");
  CHECK(status_of(model).active_plan == DENOX_PLAN_HEURISTIC);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_a.f32) <= 1e-4);

  require_ok(denox_model_reload_file(model, path_b.string().c_str()), "reload B");
  REQUIRE(gate.wait_held(300s));
  CHECK(status_of(model).running_job == DENOX_JOB_RELOAD);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_a.f32) <= 1e-4);  // still A
  gate.open();
  wait_until(model, [](const auto& s) { return s.swap_pending != 0; });
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);  // swapped at this record
  auto s = status_of(model);
  CHECK(s.active_plan == DENOX_PLAN_RELOADED);
  CHECK(s.swaps == 1);
  CHECK(s.failed_jobs == 0);

  // Bad ONNX: the cause is reported, B keeps running.
  const std::string junk = "this is not a protobuf";
  require_ok(denox_model_reload_memory(model, junk.data(), junk.size()), "reload junk");
  s = wait_until(model, [](const auto& st) { return st.failed_jobs == 1 && idle(st); });
  CHECK(s.last_error_result == DENOX_ERROR_INVALID_MODEL);
  CHECK(std::string(s.last_error).find("reload") != std::string::npos);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);
  // A truncated file: the error names it.
  const auto truncated = dir / "truncated.onnx";
  {
    std::ifstream in(path_b, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  require_ok(denox_model_reload_file(model, truncated.string().c_str()), "reload truncated");
  s = wait_until(model, [](const auto& st) { return st.failed_jobs == 2 && idle(st); });
  CHECK(std::string(s.last_error).find("truncated.onnx") != std::string::npos);

  // An incompatible model: the mismatch is named, B keeps running.
  require_ok(denox_model_reload_file(model, path_9ch.string().c_str()), "reload 9 channels");
  s = wait_until(model, [](const auto& st) { return st.failed_jobs == 3 && idle(st); });
  INFO(s.last_error);
  CHECK(s.last_error_result == DENOX_ERROR_SHAPE_MISMATCH);
  CHECK(std::string(s.last_error).find("input 0") != std::string::npos);
  CHECK(std::string(s.last_error).find("9 channels") != std::string::npos);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);
  s = status_of(model);
  CHECK(s.active_plan == DENOX_PLAN_RELOADED);
  CHECK(s.swaps == 1);

  // A watched file reloads when it changes (record() polls it at most every 0.5 s).
  const auto watched = dir / "watched.onnx";
  std::filesystem::copy_file(path_b, watched);
  require_ok(denox_model_watch_file(model, watched.string().c_str()), "watch");
  std::this_thread::sleep_for(600ms);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);
  CHECK(idle(status_of(model)));  // unchanged: no reload
  std::filesystem::copy_file(path_a, watched, std::filesystem::copy_options::overwrite_existing);
  std::this_thread::sleep_for(600ms);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);  // this record queues the reload
  wait_until(model, [](const auto& st) { return st.swap_pending != 0; });
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_a.f32) <= 1e-4);
  s = status_of(model);
  CHECK(s.swaps == 2);
  CHECK(s.last_error_result == DENOX_SUCCESS);  // a later success clears the error
  require_ok(denox_model_watch_file(model, nullptr), "stop watching");
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("hot reload with external memory: the swap waits for the new plan's memory", "[api][background]") {
  auto& dev = engine_device();
  TempDir dir;
  const auto path_a = write_oidn(dir.path(), Size::Small, 3, true, 41);
  const auto path_b = write_oidn(dir.path(), Size::Small, 3, true, 42);
  const auto input = random_image(3, 23, 31, 7);
  const auto want_a = reference_output(path_a, input), want_b = reference_output(path_b, input);
  denox_context ctx = make_context(dir / "cache.sqlite3");
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  o.external_memory = 1;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model), "load A");
  auto bind_new_memory = [&](std::vector<std::unique_ptr<denox::vkhost::Buffer>>& keep) {
    denox_memory_requirements req{};
    require_ok(denox_model_memory_requirements(model, 31, 23, &req), "memory_requirements");
    keep.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req.scratch_size, true, req.usage));
    keep.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req.weights_size, true, req.usage));
    require_ok(denox_model_bind_memory(model, keep[keep.size() - 2]->handle(), 0, req.scratch_size, keep.back()->handle(), 0),
               "bind_memory");
  };
  std::vector<std::unique_ptr<denox::vkhost::Buffer>> memory_a, memory_b;
  bind_new_memory(memory_a);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_a.f32) <= 1e-4);

  require_ok(denox_model_reload_file(model, path_b.string().c_str()), "reload B");
  wait_until(model, [](const auto& s) { return s.swap_pending != 0; });
  // The new plan has no memory yet: this record keeps A and says why.
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_a.f32) <= 1e-4);
  auto s = status_of(model);
  CHECK(s.waiting_for_memory == 1);
  CHECK(s.swaps == 0);
  // Not over A's weights, which A reads until the swap (frames in flight too): refused, and A
  // still runs right.
  {
    denox_memory_requirements req{};
    require_ok(denox_model_memory_requirements(model, 31, 23, &req), "memory_requirements of B");
    CHECK(denox_model_bind_memory(model, memory_a[0]->handle(), 0, req.scratch_size, memory_a[1]->handle(), 0) ==
          DENOX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("overlaps memory the running plan uses"));
    // Nor over A's scratch, which A's frames write until the swap.
    std::vector<std::unique_ptr<denox::vkhost::Buffer>> own_scratch;
    own_scratch.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req.scratch_size, true, req.usage));
    CHECK(denox_model_bind_memory(model, own_scratch[0]->handle(), 0, req.scratch_size, memory_a[0]->handle(), 0) ==
          DENOX_ERROR_INVALID_ARGUMENT);
    // And B's scratch not over A's weights, which command buffers recorded with A read.
    own_scratch.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req.weights_size, true, req.usage));
    CHECK(denox_model_bind_memory(model, memory_a[1]->handle(), 0, req.scratch_size, own_scratch[1]->handle(), 0) ==
          DENOX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("scratch range overlaps the running plan's weights"));
    CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_a.f32) <= 1e-4);
  }
  // Memory calls now go to the new plan; A keeps its buffers until it is retired.
  bind_new_memory(memory_b);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);
  s = status_of(model);
  CHECK(s.swaps == 1);
  CHECK(s.waiting_for_memory == 0);
  CHECK(s.active_plan == DENOX_PLAN_RELOADED);

  // A plan that finishes between memory_requirements and bind_memory does not take buffers sized
  // for the plan whose needs were reported (C, OIDN balanced, has more weights than B).
  const auto path_c = write_oidn(dir.path(), Size::Balanced, 3, true, 43);
  const auto want_c = reference_output(path_c, input);
  denox_memory_requirements req_b{};
  require_ok(denox_model_memory_requirements(model, 31, 23, &req_b), "memory_requirements of B");
  require_ok(denox_model_reload_file(model, path_c.string().c_str()), "reload C");
  wait_until(model, [](const auto& st) { return st.swap_pending != 0; });
  std::vector<std::unique_ptr<denox::vkhost::Buffer>> memory_b2;
  memory_b2.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req_b.scratch_size, true, req_b.usage));
  memory_b2.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req_b.weights_size, true, req_b.usage));
  // Not even the running plan's own new memory over the replaced plan A's, whose frames may
  // still be in flight.
  REQUIRE(status_of(model).retired_plans == 1);
  CHECK(denox_model_bind_memory(model, memory_a[1]->handle(), 0, req_b.scratch_size, memory_b2[1]->handle(), 0) ==
        DENOX_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("overlaps the weights of a replaced plan"));
  require_ok(denox_model_bind_memory(model, memory_b2[0]->handle(), 0, req_b.scratch_size, memory_b2[1]->handle(), 0), "bind B again");
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_b.f32) <= 1e-4);  // C waits for its memory
  CHECK(status_of(model).waiting_for_memory == 1);
  // Nor over the memory of A, replaced by B but not released yet: frames recorded with A may
  // still be in flight.
  {
    REQUIRE(status_of(model).retired_plans == 1);
    denox_memory_requirements req_c{};
    require_ok(denox_model_memory_requirements(model, 31, 23, &req_c), "memory_requirements of C");
    std::vector<std::unique_ptr<denox::vkhost::Buffer>> own;
    own.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req_c.scratch_size, true, req_c.usage));
    own.push_back(std::make_unique<denox::vkhost::Buffer>(dev, req_c.weights_size, true, req_c.usage));
    CHECK(denox_model_bind_memory(model, own[0]->handle(), 0, req_c.scratch_size, memory_a[0]->handle(), 0) ==
          DENOX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("overlaps memory a replaced plan uses"));
    CHECK(denox_model_bind_memory(model, memory_a[1]->handle(), 0, req_c.scratch_size, own[1]->handle(), 0) ==
          DENOX_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("overlaps the weights of a replaced plan"));
    CHECK(status_of(model).waiting_for_memory == 1);
  }
  std::vector<std::unique_ptr<denox::vkhost::Buffer>> memory_c;
  bind_new_memory(memory_c);
  CHECK(memory_c.back()->size() > req_b.weights_size);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want_c.f32) <= 1e-4);
  CHECK(status_of(model).swaps == 2);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(dev.validation_errors() == 0);
}

TEST_CASE("hot reload on a headless context: the worker shares denox's own queue with the caller", "[api][background]") {
  TempDir dir;
  const auto path_a = write_oidn(dir.path(), Size::Small, 3, true, 51);
  const auto path_b = write_oidn(dir.path(), Size::Small, 3, true, 52);
  const auto input = random_image(3, 19, 27, 8);
  const auto want_a = reference_output(path_a, input), want_b = reference_output(path_b, input);
  denox_context ctx = uncached_headless_context();
  denox_context_info info{};
  require_ok(denox_context_get_info(ctx, &info), "info");
  {
    // The caller's submits to the context's queue take denox_context_lock_queue (wrap's ctx).
    auto host = denox::vkhost::Device::wrap(info, ctx);
    denox_model_options o{};
    o.precision = DENOX_PRECISION_FP32;
    denox_model model = nullptr;
    require_ok(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model), "load A");
    CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32, DENOX_LAYOUT_CHW, host.get()), want_a.f32) <= 1e-4);
    require_ok(denox_model_reload_file(model, path_b.string().c_str()), "reload B");
    // Frames while the worker compiles and uploads B's weights on the same queue: A's output
    // until the record() that swaps (B's from that one on). The swap can happen in any frame, so
    // the status is read after each one (reading it before would race the worker).
    const auto deadline = std::chrono::steady_clock::now() + 300s;
    for (;;) {
      const auto out = run_on_buffers(ctx, model, input, DENOX_DTYPE_F32, DENOX_LAYOUT_CHW, host.get());
      if (status_of(model).swaps != 0) {
        CHECK(relative_l2(out, want_b.f32) <= 1e-4);
        break;
      }
      CHECK(relative_l2(out, want_a.f32) <= 1e-4);
      REQUIRE(std::chrono::steady_clock::now() < deadline);
    }
    CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32, DENOX_LAYOUT_CHW, host.get()), want_b.f32) <= 1e-4);
    CHECK(status_of(model).active_plan == DENOX_PLAN_RELOADED);
    denox_model_destroy(model);
  }
  denox_stats stats{};
  require_ok(denox_context_get_stats(ctx, &stats), "stats");
  CHECK(stats.validation_errors == 0);
  denox_context_destroy(ctx);
}

TEST_CASE("a log callback may read the model's status while the worker reports a failed reload", "[api][background]") {
  // spdlog runs the callback on the worker thread; the worker logged its failure while holding
  // the lock get_status takes, so this callback hung the worker (and then the caller).
  struct StatusReader {
    std::atomic<denox_model> model{nullptr};
    std::atomic<int> warnings_with_status{0};
  } reader;
  const DefaultLogAtExit restore_log;
  denox_set_log_callback(
      [](denox_log_level level, const char*, void* user) {
        auto& r = *static_cast<StatusReader*>(user);
        denox_model model = r.model.load();
        denox_model_status s{};
        if (level == DENOX_LOG_WARN && model != nullptr && denox_model_get_status(model, &s) == DENOX_SUCCESS) r.warnings_with_status++;
      },
      &reader, DENOX_LOG_WARN);
  TempDir dir;
  denox_context ctx = uncached_headless_context();
  denox_model model = load_small_fp32(ctx, dir.path(), 61);
  reader.model = model;
  const std::string junk = "this is not a protobuf";
  require_ok(denox_model_reload_memory(model, junk.data(), junk.size()), "reload junk");
  const auto s = wait_until(model, [](const auto& st) { return st.failed_jobs == 1 && idle(st); }, 60s);
  CHECK(s.last_error_result == DENOX_ERROR_INVALID_MODEL);
  // The warning is logged just after the status shows the failure.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (reader.warnings_with_status == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK(reader.warnings_with_status >= 1);
  reader.model = nullptr;
  denox_model_destroy(model);
  denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN);
  denox_context_destroy(ctx);
}

TEST_CASE("destroying a model while a reload compiles its shaders stops within one compile", "[api][background]") {
  // The cancel was checked only between stages, so a reload in its shader stage compiled every
  // shader of the new plan before destroy returned.
  TempDir dir;
  const auto path_a = write_oidn(dir.path(), Size::Small, 3, true, 71);
  const auto path_b = write_oidn(dir.path(), Size::Balanced, 9, true, 72);  // other shaders
  denox_context ctx = uncached_headless_context();
  ProgressGate gate("shaders");
  const denox_model_options o = fp32_gated(gate);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model), "load A");  // (reported on this thread: not held)
  denox_stats before{};
  require_ok(denox_context_get_stats(ctx, &before), "stats");
  // B needs another input count, so it would fail after its shaders; it never gets there.
  require_ok(denox_model_reload_file(model, path_b.string().c_str()), "reload B");
  REQUIRE(gate.wait_held(300s));
  // destroy cancels, then joins the worker, which the gate holds until this thread opens it.
  std::thread opener([&] {
    std::this_thread::sleep_for(1s);
    gate.open();
  });
  denox_model_destroy(model);
  opener.join();
  denox_stats after{};
  require_ok(denox_context_get_stats(ctx, &after), "stats");
  INFO("shaders compiled after the cancel: " << after.shaders_compiled - before.shaders_compiled);
  CHECK(after.shaders_compiled - before.shaders_compiled <= 1);  // B has 4 shaders of its own
  CHECK(after.validation_errors == 0);
  denox_context_destroy(ctx);
}

TEST_CASE("once denox_set_log_callback returns, the previous callback is never called again", "[api][background]") {
  // The worker logs each failed reload while this thread switches callbacks. The switch used to
  // replace spdlog's default logger, which the worker could still be logging through.
  struct Callback {
    std::atomic<bool> active{false};
    std::atomic<int> calls{0}, late_calls{0};
    static void on(denox_log_level, const char*, void* user) {
      auto& c = *static_cast<Callback*>(user);
      c.calls++;
      if (!c.active) c.late_calls++;
    }
  } a, b;
  const DefaultLogAtExit restore_log;
  TempDir dir;
  denox_context ctx = uncached_headless_context();
  denox_model model = load_small_fp32(ctx, dir.path(), 81);
  const std::string junk = "this is not a protobuf";
  for (int i = 0; i < 200; ++i) {
    require_ok(denox_model_reload_memory(model, junk.data(), junk.size()), "reload junk");
    Callback& next = i % 2 == 0 ? a : b;
    Callback& previous = i % 2 == 0 ? b : a;
    next.active = true;
    denox_set_log_callback(Callback::on, &next, DENOX_LOG_WARN);
    previous.active = false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  wait_until(model, [](const auto& st) { return idle(st); }, 60s);
  denox_model_destroy(model);
  denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN);
  a.active = b.active = false;
  INFO("calls: " << a.calls << " + " << b.calls);
  CHECK(a.calls + b.calls > 0);
  CHECK(a.late_calls == 0);
  CHECK(b.late_calls == 0);
  denox_context_destroy(ctx);
}

namespace {
// Loads a small model, fails `count` reloads of it (each logs a warning from the worker), and
// destroys it and its context: the worker's warnings are all logged by then.
void log_failed_reloads(int count, uint64_t seed) {
  TempDir dir;
  denox_context ctx = uncached_headless_context();
  denox_model model = load_small_fp32(ctx, dir.path(), seed);
  const std::string junk = "this is not a protobuf";
  for (int failures = 1; failures <= count; ++failures) {
    require_ok(denox_model_reload_memory(model, junk.data(), junk.size()), "reload junk");
    wait_until(model, [&](const auto& st) { return st.failed_jobs == static_cast<uint32_t>(failures) && idle(st); }, 60s);
  }
  denox_model_destroy(model);
  denox_context_destroy(ctx);
}
}  // namespace

TEST_CASE("a log callback may unregister itself", "[api][background]") {
  // The callback runs under the log sink's lock; switching callbacks takes that lock, so a
  // callback that set another (or none) would wait for itself.
  struct Once {
    std::atomic<int> calls{0};
    static void on(denox_log_level, const char*, void* user) {
      static_cast<Once*>(user)->calls++;
      denox_set_log_callback(nullptr, nullptr, DENOX_LOG_OFF);
    }
  } once;
  const DefaultLogAtExit restore_log;
  denox_set_log_callback(Once::on, &once, DENOX_LOG_WARN);
  log_failed_reloads(2, 91);
  CHECK(once.calls == 1);
}

// Routes spdlog's default logger (the application's, in the process's shared libspdlog) into
// memory while alive.
struct AppLogger {
  std::shared_ptr<std::ostringstream> text = std::make_shared<std::ostringstream>();
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  AppLogger() {
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("app", std::make_shared<spdlog::sinks::ostream_sink_mt>(*text)));
  }
  ~AppLogger() { spdlog::set_default_logger(previous); }
  std::string str() const { return text->str(); }
};

TEST_CASE("a log callback that logs through spdlog's default logger itself does not deadlock", "[api][background]") {
  // libdenox uses the process's shared libspdlog. Before 0.4.0 its logger was the default one,
  // and an engine callback forwarding to spdlog re-entered the sink under its own lock and hung.
  // Now the line goes to the application's default logger.
  struct Forward {
    std::atomic<int> calls{0};
    static void on(denox_log_level, const char* message, void* user) {
      static_cast<Forward*>(user)->calls++;
      spdlog::warn("engine: {}", message);
    }
  } forward;
  const AppLogger app;
  const DefaultLogAtExit restore_log;
  denox_set_log_callback(Forward::on, &forward, DENOX_LOG_WARN);
  log_failed_reloads(1, 93);
  CHECK(forward.calls >= 1);
  CHECK_THAT(app.str(), Contains("engine: denox: reload") && Contains("failed"));
}

TEST_CASE("a line denox logs from inside the log callback, on its thread, is dropped", "[api][background]") {
  // The barrier helpers log an error for a NULL command buffer, synchronously. Logged again from
  // inside the callback, the line would re-enter denox's sink under its own (non-recursive) lock.
  struct Reenter {
    std::atomic<int> calls{0};
    static void on(denox_log_level, const char*, void* user) {
      static_cast<Reenter*>(user)->calls++;
      denox_cmd_input_barrier(nullptr, nullptr, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
    }
  } reenter;
  const DefaultLogAtExit restore_log;
  denox_set_log_callback(Reenter::on, &reenter, DENOX_LOG_WARN);
  denox_cmd_input_barrier(nullptr, nullptr, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
  CHECK(reenter.calls == 1);
  denox_cmd_input_barrier(nullptr, nullptr, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
  CHECK(reenter.calls == 2);  // the sink is usable again after the drop
}

TEST_CASE("denox leaves the application's spdlog default logger and level alone", "[api][background]") {
  // denox logs through a logger of its own: without a callback its lines go to the
  // application's default logger; a callback gets denox's lines only, never the application's;
  // neither call replaces the default logger or changes its level (before 0.4.0 both did).
  const AppLogger app;
  const DefaultLogAtExit restore_log;
  const auto app_logger = spdlog::default_logger();
  const auto app_level = spdlog::default_logger()->level();
  denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN);
  log_failed_reloads(1, 95);
  CHECK_THAT(app.str(), Contains("[denox] [warning] denox: reload") && Contains("failed"));

  LogLines lines(DENOX_LOG_WARN);
  const size_t app_text = app.str().size();
  spdlog::warn("the application's own line");
  log_failed_reloads(1, 97);
  CHECK_FALSE(lines.any_containing("the application's own line"));
  CHECK(lines.any_containing("failed"));
  CHECK(app.str().find("the application's own line", app_text) != std::string::npos);
  CHECK(app.str().find("denox: reload", app_text) == std::string::npos);  // the callback's now
  CHECK(spdlog::default_logger() == app_logger);
  CHECK(spdlog::default_logger()->level() == app_level);
}

TEST_CASE("a context destroyed before its model is freed with the model, after its pipelines", "[api][background]") {
  // The C++ wrapper makes this order easy (a Model member declared before its Context). Freed
  // at once, the context took its VkDevice (headless) with the model's pipelines still on it,
  // and the model's destroy then used freed memory.
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true, 23);
  DefaultLogAtExit restore;
  LogLines log(DENOX_LOG_WARN);
  denox_context ctx = uncached_headless_context();
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load");
  require_ok(denox_model_set_extent(model, 37, 29), "set_extent");
  denox_context_destroy(ctx);
  CHECK(log.any_containing("denox_context_destroy: 1 model(s) of this context still exist; destroy them first"));
  // The model still works on its context's device until it is destroyed.
  require_ok(denox_model_set_extent(model, 41, 33), "set_extent after the context's destroy");
  denox_model_destroy(model);
  std::lock_guard lock(log.mutex);
  for (const auto& line : log.lines) {
    INFO(line);
    CHECK(line.find("still exist") != std::string::npos);  // nothing else: no validation error about live objects
  }
}
