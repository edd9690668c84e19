// PlanCache basics: round trips, persistence, stats, default_path().
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "cache_test_util.hpp"
#include "runtime/cache/cache_open.hpp"
#include "runtime/cache/plan_cache.hpp"

using namespace denox::cache;
using namespace denox::cache::test;

namespace {

// Whether /proc/self/mountinfo has an entry whose mount point is "/".
bool mountinfo_lists_root() {
  std::ifstream info("/proc/self/mountinfo");
  std::string line;
  while (std::getline(info, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point;
    if (fields >> id >> parent >> device >> root >> mount_point && mount_point == "/") return true;
  }
  return false;
}

}  // namespace

TEST_CASE("plan, SPIR-V and pipeline cache round trip", "[cache]") {
  TempDir dir;
  // Parent directories are created.
  const fs::path path = dir / "nested/deeper/cache.sqlite3";
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  CHECK(cache.path() == path);
  CHECK(cache.disabled_reason().empty());
  CHECK_FALSE(cache.recovery().has_value());
  CHECK(fs::exists(path));

  const CacheKey key = sample_key();
  CHECK_FALSE(cache.load_plan(key).has_value());
  const auto plan = sample_bytes(300000, 1);  // spans many pages (overflow chains)
  CHECK(cache.store_plan(key, plan));
  CHECK(cache.load_plan(key) == plan);
  // Every key field matters: a different option or device is a miss.
  CHECK_FALSE(cache.load_plan(sample_key("model-a", "precision=fp32")).has_value());
  CacheKey other_device = key;
  other_device.device.driver_version += 1;
  CHECK_FALSE(cache.load_plan(other_device).has_value());
  // Storing again replaces.
  const auto plan2 = sample_bytes(1000, 2);
  CHECK(cache.store_plan(key, plan2));
  CHECK(cache.load_plan(key) == plan2);

  const auto words = sample_words(5000, 3);
  CHECK_FALSE(cache.load_spirv("conv3x3-fp16").has_value());
  CHECK(cache.store_spirv("conv3x3-fp16", words));
  CHECK(cache.load_spirv("conv3x3-fp16") == words);

  const auto pipeline = sample_bytes(20 << 20, 4);  // pipeline caches reach tens of MB
  CHECK_FALSE(cache.load_pipeline_cache(key.device).has_value());
  CHECK(cache.store_pipeline_cache(key.device, pipeline));
  CHECK(cache.load_pipeline_cache(key.device) == pipeline);
  CHECK_FALSE(cache.load_pipeline_cache(sample_device(99)).has_value());

  const CacheStats s = cache.stats();
  CHECK(s.plan_hits == 2);
  CHECK(s.plan_misses == 3);
  CHECK(s.plan_stores == 2);
  CHECK(s.spirv_hits == 1);
  CHECK(s.spirv_misses == 1);
  CHECK(s.spirv_stores == 1);
  CHECK(s.pipeline_cache_hits == 1);
  CHECK(s.pipeline_cache_misses == 2);
  CHECK(s.pipeline_cache_stores == 1);
  CHECK(s.corrupt_rows == 0);
  CHECK(s.write_failures == 0);
}

TEST_CASE("empty payloads are stored as empty, not as missing", "[cache]") {
  TempDir dir;
  PlanCache cache = PlanCache::open(dir / "cache.sqlite3");
  REQUIRE(cache.enabled());
  CHECK(cache.store_plan(sample_key(), {}));
  const auto plan = cache.load_plan(sample_key());
  REQUIRE(plan.has_value());
  CHECK(plan->empty());
  CHECK(cache.store_spirv("empty", {}));
  const auto words = cache.load_spirv("empty");
  REQUIRE(words.has_value());
  CHECK(words->empty());
}

TEST_CASE("entries persist across reopen and a second opener compiles nothing", "[cache]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  const auto plan = sample_bytes(5000, 10);
  const auto words = sample_words(100, 11);
  const auto pipeline = sample_bytes(7000, 12);
  {
    PlanCache cache = PlanCache::open(path);
    REQUIRE(cache.enabled());
    REQUIRE(cache.store_plan(sample_key(), plan));
    REQUIRE(cache.store_spirv("s", words));
    REQUIRE(cache.store_pipeline_cache(sample_device(), pipeline));
  }
  PlanCache again = PlanCache::open(path);
  REQUIRE(again.enabled());
  CHECK_FALSE(again.recovery().has_value());
  CHECK(again.load_plan(sample_key()) == plan);
  CHECK(again.load_spirv("s") == words);
  CHECK(again.load_pipeline_cache(sample_device()) == pipeline);
  const CacheStats s = again.stats();
  CHECK(s.plan_misses == 0);
  CHECK(s.spirv_misses == 0);
  CHECK(s.plan_hits == 1);
  CHECK(s.plan_stores == 0);
  // The file is a marked, versioned denox cache in WAL mode.
  CHECK(raw_query_int(path, "PRAGMA application_id") == PlanCache::kApplicationId);
  CHECK(raw_query_int(path, "PRAGMA user_version") == PlanCache::kSchemaVersion);
  CHECK(raw_query_int(path, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'") ==
        PlanCache::kSchemaVersion);
  CHECK(raw_query_int(path, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") == 1);
  CHECK(raw_query_int(path, "SELECT last_used_at >= created_at FROM plans") == 1);
}

TEST_CASE("a disabled cache misses and refuses stores without failing", "[cache]") {
  PlanCache off;
  CHECK_FALSE(off.enabled());
  CHECK_FALSE(off.disabled_reason().empty());
  CHECK(off.path().empty());
  CHECK_FALSE(off.load_plan(sample_key()).has_value());
  CHECK_FALSE(off.store_plan(sample_key(), sample_bytes(10, 1)));
  CHECK_FALSE(off.load_spirv("x").has_value());
  CHECK_FALSE(off.store_pipeline_cache(sample_device(), sample_bytes(10, 1)));
  CHECK(off.stats().plan_misses == 1);
  CHECK(off.stats().write_failures == 2);

  CHECK(PlanCache::disabled("--no-cache").disabled_reason() == "--no-cache");
  CHECK_FALSE(PlanCache::open("").enabled());
}

TEST_CASE("one cache is usable from several threads", "[cache]") {
  TempDir dir;
  PlanCache cache = PlanCache::open(dir / "cache.sqlite3");
  REQUIRE(cache.enabled());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const CacheKey key = sample_key("t" + std::to_string(t) + "-" + std::to_string(i));
        const auto plan = sample_bytes(2000, static_cast<std::uint32_t>(t * 100 + i));
        if (!cache.store_plan(key, plan) || cache.load_plan(key) != plan) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(cache.stats().plan_stores == 100);
  CHECK(cache.stats().plan_hits == 100);
}

TEST_CASE("default_path follows DENOX_CACHE_DIR, XDG_CACHE_HOME, HOME", "[cache]") {
  {
    EnvOverride a("DENOX_CACHE_DIR", "/opt/game/cache");
    EnvOverride b("XDG_CACHE_HOME", "/xdg");
    CHECK(PlanCache::default_path() == fs::path("/opt/game/cache/cache.sqlite3"));
  }
  {
    EnvOverride a("DENOX_CACHE_DIR", "");  // empty counts as unset
    EnvOverride b("XDG_CACHE_HOME", "/xdg");
    CHECK(PlanCache::default_path() == fs::path("/xdg/denox/cache.sqlite3"));
  }
  {
    EnvOverride a("DENOX_CACHE_DIR", std::nullopt);
    EnvOverride b("XDG_CACHE_HOME", "relative/dir");  // invalid per the XDG spec: ignored
    EnvOverride c("HOME", "/home/artist");
    CHECK(PlanCache::default_path() == fs::path("/home/artist/.cache/denox/cache.sqlite3"));
  }
  {
    EnvOverride a("DENOX_CACHE_DIR", std::nullopt);
    EnvOverride b("XDG_CACHE_HOME", std::nullopt);
    EnvOverride c("HOME", std::nullopt);
    // Falls back to the passwd entry's home directory.
    const fs::path p = PlanCache::default_path();
    CHECK(p.is_absolute());
    CHECK(p.filename() == "cache.sqlite3");
    CHECK(p.parent_path().filename() == "denox");
  }
}

TEST_CASE("a relative cache path starting with 'file:' is a file name, not a URI", "[cache]") {
  // Debian's SQLite interprets URIs in plain names (SQLITE_USE_URI): "file:x?mode=memory" was an
  // in-memory database, so the cache silently kept nothing.
  TempDir dir;
  struct WorkingDirectory {  // restored also when a REQUIRE ends the test
    const fs::path previous = fs::current_path();
    explicit WorkingDirectory(const fs::path& dir) { fs::current_path(dir); }
    ~WorkingDirectory() { fs::current_path(previous); }
  } in_dir(dir.path());
  {
    PlanCache cache = PlanCache::open("file:x?mode=memory");
    REQUIRE(cache.enabled());
    CHECK(cache.store_plan(sample_key("a"), sample_bytes(100, 1)));
  }
  CHECK(fs::exists(dir / "file:x?mode=memory"));
}

TEST_CASE("a cache on a network file system uses the rollback journal, every commit synced", "[cache]") {
  // (What statfs says here: CI's temporary directory is local.)
  CHECK(denox::cache::detail::network_file_system(fs::temp_directory_path()).empty());
  // The mountinfo reader FUSE mounts go through, on mounts every Linux has.
  CHECK(denox::cache::detail::mount_type("/proc/self") == "proc");
  CHECK(denox::cache::detail::mount_type("/proc") == "proc");
  CHECK(denox::cache::detail::mount_type("/sys/kernel") != denox::cache::detail::mount_type("/proc"));
  // The kernel lists only the mounts reachable from the process's root: in a chroot, not the
  // one holding it, and paths on it then have no entry (statfs, which decides, still works).
  if (mountinfo_lists_root()) CHECK(!denox::cache::detail::mount_type(fs::temp_directory_path()).empty());
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  CacheOpenOptions network;
  network.assume_network_file_system_for_testing = "nfs";
  // (Through SQLite: a descriptor of our own would drop this process's locks on the file.)
  const auto in_wal_mode = [&] { return raw_query_int(path, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") == 1; };
  SECTION("a new file") {
    LogCapture log;
    {
      PlanCache cache = PlanCache::open(path, network);
      REQUIRE(cache.enabled());
      CHECK(cache.store_plan(sample_key("a"), sample_bytes(300, 1)));
      CHECK(cache.store_measurement("m", "ok 1", PlanCache::Durability::Synced));
      CHECK(cache.load_plan(sample_key("a")) == sample_bytes(300, 1));
      CHECK(cache.load_measurement("m") == std::optional<std::string>("ok 1"));
      CHECK(!fs::exists(path.string() + "-wal"));
      CHECK(!fs::exists(path.string() + "-shm"));
    }
    CHECK(log.text().find("lies on a network file system (nfs)") != std::string::npos);
    CHECK(read_file(path).at(18) == 1);  // the header says: rollback journal
  }
  SECTION("another process switching the file back to WAL: this one stops writing to it") {
    PlanCache cache = PlanCache::open(path, network);
    REQUIRE(cache.store_plan(sample_key("a"), sample_bytes(300, 1)));
    raw_exec(path, "PRAGMA journal_mode=WAL");  // (an older denox's open)
    REQUIRE(in_wal_mode());
    CHECK_FALSE(cache.store_plan(sample_key("b"), sample_bytes(30, 2)));
    CHECK(!cache.enabled());
    CHECK(cache.disabled_reason().find("back to its write-ahead log") != std::string::npos);
    CHECK(cache.stats().write_failures == 1);
  }
  SECTION("a file left in WAL mode leaves it, its log folded in") {
    {
      PlanCache local = PlanCache::open(path);
      REQUIRE(local.store_plan(sample_key("a"), sample_bytes(300, 1)));
    }
    REQUIRE(in_wal_mode());
    PlanCache cache = PlanCache::open(path, network);
    REQUIRE(cache.enabled());
    CHECK(cache.load_plan(sample_key("a")) == sample_bytes(300, 1));
    CHECK(!in_wal_mode());
  }
  SECTION("a file in WAL mode that another connection has open: no cache, and no waiting for it") {
    PlanCache local = PlanCache::open(path);
    REQUIRE(local.store_plan(sample_key("a"), sample_bytes(300, 1)));
    const auto start = std::chrono::steady_clock::now();
    PlanCache cache = PlanCache::open(path, network);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));  // (the busy timeout is 10 s)
    CHECK(!cache.enabled());
    INFO(cache.disabled_reason());
    CHECK(cache.disabled_reason().find("network file system (nfs)") != std::string::npos);
    CHECK(cache.disabled_reason().find("WAL mode while another process has it open") != std::string::npos);
    // The file and its user are untouched.
    CHECK(local.load_plan(sample_key("a")) == sample_bytes(300, 1));
    CHECK(local.store_plan(sample_key("b"), sample_bytes(30, 2)));
    CHECK(in_wal_mode());
  }
}
