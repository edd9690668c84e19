// The crash journal of measuring through the C API (issue 5; src/runtime/measure/crash_journal.hpp):
// a tune cancelled while an edge is being timed leaves no marker that a later process would take
// for a crash, and a live process's marker does not stop (or fail) a measurement. Crashing
// processes are tested with the CLI (cli_measure_crash_test.py), the markers themselves in
// tests/cache/test_crash_journal.cpp.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "api_test_util.hpp"
#include "runtime/cache/plan_cache.hpp"
#include "runtime/measure/crash_journal.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;
using namespace std::chrono_literals;

namespace {

int count_starting(const std::vector<std::pair<std::string, std::string>>& rows, const std::string& prefix) {
  int n = 0;
  for (const auto& [key, result] : rows) n += result.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// Measured tuning at 37x29 (lavapipe is slow), scheduled again even when a tuned plan is cached.
denox_model_options measured(bool background) {
  return denox_model_options{.precision = DENOX_PRECISION_FP32, .tuning = DENOX_TUNING_MEASURE, .tune_width = 37, .tune_height = 29,
                             .recompile = 1, .tune_in_background = background ? 1 : 0};
}

}  // namespace

TEST_CASE("a tune cancelled while an edge is timed leaves no crash marker behind", "[api][tuning][journal]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true, 23);
  // The model is destroyed (its background tune cancelled) as soon as an edge's timing marker is
  // in the store. The cancel is seen before the next timing run, unless the edge was in its last
  // run: then it finishes first, and the attempt is made again on a fresh cache.
  bool interrupted = false;
  for (int attempt = 0; attempt < 4 && !interrupted; ++attempt) {
    INFO("attempt " << attempt);
    const auto cache_path = dir / ("cache" + std::to_string(attempt) + ".sqlite3");
    denox_context ctx = make_context(cache_path);
    denox_model model = nullptr;
    const denox_model_options background = measured(true);
    require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &background, &model), "load (tune in background)");
    std::string timed;  // the key of the edge being timed
    const auto deadline = std::chrono::steady_clock::now() + 300s;
    while (timed.empty()) {
      for (const auto& [key, result] : measurement_rows(cache_path))
        if (result.rfind("running ", 0) == 0 && result.find(" phase=time ") != std::string::npos) timed = key;
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      if (timed.empty()) std::this_thread::sleep_for(1ms);
    }
    denox_model_destroy(model);
    const auto rows = measurement_rows(cache_path);
    std::string all;
    for (const auto& [key, result] : rows) {
      all += result + "\n";
      if (key == timed) interrupted = result == "unmeasured";  // else "ok ...": it finished first
    }
    INFO(all);
    CHECK(count_starting(rows, "running ") == 0);  // no marker: nothing for a later process to blame
    CHECK(count_starting(rows, "unmeasured") + count_starting(rows, "ok ") == static_cast<int>(rows.size()));

    if (interrupted) {
      // The next measurement concludes nothing about crashes and measures the interrupted edge.
      LogLines log;
      const denox_model_options foreground = measured(false);
      require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &foreground, &model), "load (measure)");
      const auto r = report_of(model);
      INFO(r.dump());
      CHECK(r["failed_edges"] == 0);
      CHECK(r["measured_edges"].get<int>() >= 1);
      CHECK(!log.any_containing("crashed"));
      CHECK(!log.any_containing("died"));
      const auto after = measurement_rows(cache_path);
      CHECK(count_starting(after, "ok ") == static_cast<int>(after.size()));
      denox_model_destroy(model);
    }
    denox_context_destroy(ctx);
  }
  CHECK(interrupted);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("an edge another live process is measuring is measured here too, not blamed", "[api][tuning][journal]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true, 24);
  const auto cache_path = dir / "cache.sqlite3";
  denox_context ctx = make_context(cache_path);
  denox_model model = nullptr;
  const denox_model_options options = measured(false);
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load (measure)");
  const int edges = report_of(model)["edges"].get<int>();
  denox_model_destroy(model);
  denox_context_destroy(ctx);

  // Another process (a child that waits) is in the middle of timing one edge, alone: its
  // marker is forged into the cache.
  const pid_t other = fork();
  REQUIRE(other >= 0);
  if (other == 0) {
    for (;;) pause();
  }
  const auto stamp = denox::measure::ProcessStamp::of(other);
  REQUIRE(stamp);
  const std::string key = measurement_rows(cache_path).at(0).first;
  {
    auto cache = denox::cache::PlanCache::open(cache_path);
    REQUIRE(cache.store_measurement(key, denox::measure::encode_marker({*stamp, "time", false, 1700000000})));
  }

  LogLines log;
  ctx = make_context(cache_path);
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load (measure) beside the other process");
  const auto r = report_of(model);
  INFO(r.dump());
  CHECK(r["failed_edges"] == 0);
  CHECK(r["measured_edges"] == 1);  // the edge of the other process's marker
  CHECK(r["cached_edges"] == edges - 1);
  CHECK(log.any_containing("is being measured by process " + std::to_string(other) + " at the same time"));
  CHECK(!log.any_containing("crashed"));
  CHECK(count_starting(measurement_rows(cache_path), "ok ") == static_cast<int>(measurement_rows(cache_path).size()));
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  ::kill(other, SIGKILL);
  int status = 0;
  waitpid(other, &status, 0);
  CHECK(engine_device().validation_errors() == 0);
}
