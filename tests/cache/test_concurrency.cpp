// Several processes (and connections) using one cache file at once.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "cache_test_util.hpp"
#include "runtime/cache/plan_cache.hpp"

using namespace denox::cache;
using namespace denox::cache::test;

namespace {

constexpr int kProcesses = 4;
constexpr int kPlansEach = 40;

CacheKey key_for(int process, int i) { return sample_key("p" + std::to_string(process) + "-" + std::to_string(i)); }
std::vector<std::uint8_t> plan_for(int process, int i) {
  return sample_bytes(static_cast<std::size_t>(20000 + 997 * i), static_cast<std::uint32_t>(process * 1000 + i));
}

// One worker process: stores its own plans, reads everyone's, and shares SPIR-V and the
// pipeline cache rows with the others (same keys, so their writes collide).
int worker(const fs::path& path, int me) {
  PlanCache cache = PlanCache::open(path);
  if (!cache.enabled()) return 10;
  if (cache.recovery()) return 11;
  const auto shared_words = sample_words(3000, 42);
  for (int i = 0; i < kPlansEach; ++i) {
    if (!cache.store_plan(key_for(me, i), plan_for(me, i))) return 12;
    if (cache.load_plan(key_for(me, i)) != plan_for(me, i)) return 13;
    // Another process's plan is either absent yet or complete, never partial.
    const int other = (me + 1 + i) % kProcesses;
    const int j = i / 2;
    if (const auto theirs = cache.load_plan(key_for(other, j)); theirs && *theirs != plan_for(other, j)) return 14;
    if (!cache.store_spirv("shared-shader", shared_words)) return 15;
    if (const auto words = cache.load_spirv("shared-shader"); !words || *words != shared_words) return 16;
    if (!cache.store_pipeline_cache(sample_device(), sample_bytes(50000, static_cast<std::uint32_t>(me)))) return 17;
  }
  const CacheStats s = cache.stats();
  if (s.write_failures != 0 || s.corrupt_rows != 0) return 18;
  return 0;
}

void check_all_plans(const fs::path& path) {
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.recovery().has_value());
  for (int p = 0; p < kProcesses; ++p)
    for (int i = 0; i < kPlansEach; ++i) CHECK(cache.load_plan(key_for(p, i)) == plan_for(p, i));
  const auto pipeline = cache.load_pipeline_cache(sample_device());
  REQUIRE(pipeline.has_value());
  bool from_some_worker = false;
  for (int p = 0; p < kProcesses; ++p) from_some_worker |= *pipeline == sample_bytes(50000, static_cast<std::uint32_t>(p));
  CHECK(from_some_worker);
  CHECK(cache.stats().plan_misses == 0);
}

}  // namespace

TEST_CASE("processes creating and using one new cache file at once all succeed", "[cache][concurrency]") {
  TempDir dir;
  const fs::path path = dir / "shared/cache.sqlite3";
  const auto statuses = run_children(kProcesses, [&](int me) { return worker(path, me); });
  CHECK(statuses == std::vector<int>(kProcesses, 0));
  check_all_plans(path);
}

TEST_CASE("processes using one existing cache file at once all succeed", "[cache][concurrency]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  { REQUIRE(PlanCache::open(path).enabled()); }
  const auto statuses = run_children(kProcesses, [&](int me) { return worker(path, me); });
  CHECK(statuses == std::vector<int>(kProcesses, 0));
  check_all_plans(path);
}

TEST_CASE("processes opening one damaged file at once set it aside exactly once", "[cache][concurrency]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  write_file(path, sample_bytes(50000, 3));
  // Exit code 0 = opened after recovering it itself, 1 = opened the file another one rebuilt.
  const auto statuses = run_children(kProcesses, [&](int me) {
    PlanCache cache = PlanCache::open(path);
    if (!cache.enabled()) return 10;
    if (!cache.store_plan(key_for(me, 0), plan_for(me, 0))) return 11;
    return cache.recovery() ? 0 : 1;
  });
  int recovered = 0;
  for (int s : statuses) {
    CHECK((s == 0 || s == 1));
    recovered += s == 0;
  }
  CHECK(recovered == 1);
  CHECK(files_containing(dir.path(), ".corrupt-").size() == 1);
  PlanCache cache = PlanCache::open(path);
  for (int p = 0; p < kProcesses; ++p) CHECK(cache.load_plan(key_for(p, 0)) == plan_for(p, 0));
}

TEST_CASE("a store waits for another connection's write transaction (busy timeout)", "[cache][concurrency]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  CacheOpenOptions options;
  SECTION("long enough timeout: the store waits and succeeds") { options.busy_timeout = std::chrono::milliseconds(10000); }
  SECTION("short timeout: the store fails, the cache stays usable") { options.busy_timeout = std::chrono::milliseconds(50); }
  PlanCache cache = PlanCache::open(path, options);
  REQUIRE(cache.enabled());

  // Another writer holds the write lock for 400 ms.
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE; INSERT INTO spirv VALUES ('x', x'00', 'c', 0);", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    CHECK(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr) == SQLITE_OK);
  });
  const auto start = std::chrono::steady_clock::now();
  const bool stored = cache.store_plan(sample_key(), sample_bytes(100, 1));
  const auto waited = std::chrono::steady_clock::now() - start;
  releaser.join();
  REQUIRE(sqlite3_close(other) == SQLITE_OK);

  if (options.busy_timeout.count() > 1000) {
    CHECK(stored);
    CHECK(waited >= std::chrono::milliseconds(300));
  } else {
    CHECK_FALSE(stored);
    CHECK(cache.stats().write_failures == 1);
    CHECK(cache.enabled());
    CHECK(cache.store_plan(sample_key(), sample_bytes(100, 1)));
  }
  CHECK(cache.load_plan(sample_key()) == sample_bytes(100, 1));
  // Reads are not blocked by a writer in WAL mode; nothing else to wait for here.
}
