// Damaged, foreign and unusable cache files: detected, set aside, rebuilt, never a crash.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "cache_test_util.hpp"
#include "runtime/cache/plan_cache.hpp"

using namespace denox::cache;
using namespace denox::cache::test;

namespace {

// A real cache with a few plans big enough to span many pages.
void fill_cache(const fs::path& path, int plans = 8) {
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  for (int i = 0; i < plans; ++i)
    REQUIRE(cache.store_plan(sample_key("m" + std::to_string(i)), sample_bytes(40000, static_cast<std::uint32_t>(i))));
  REQUIRE(cache.store_spirv("s", sample_words(1000, 1)));
}

// Opens a damaged file and checks the whole recovery contract: fresh usable cache, old bytes
// kept aside under a .corrupt- name, a warning naming the path and the cause.
void expect_recovery(const fs::path& path, const std::string& cause_part) {
  const auto original = read_file(path);
  LogCapture log;
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  REQUIRE(cache.recovery().has_value());
  const CacheRecovery recovery = *cache.recovery();
  INFO("cause: " << recovery.cause);
  CHECK(recovery.cause.find(cause_part) != std::string::npos);
  CHECK(recovery.set_aside_path.filename().string().rfind(path.filename().string() + ".corrupt-", 0) == 0);
  CHECK(read_file(recovery.set_aside_path) == original);
  const std::string text = log.text();
  INFO("log: " << text);
  CHECK(text.find(path.string()) != std::string::npos);
  CHECK(text.find(recovery.set_aside_path.string()) != std::string::npos);
  CHECK(text.find(cause_part) != std::string::npos);

  // The fresh cache is empty and works.
  CHECK_FALSE(cache.load_plan(sample_key("m0")).has_value());
  CHECK(cache.store_plan(sample_key(), sample_bytes(100, 5)));
  CHECK(cache.load_plan(sample_key()) == sample_bytes(100, 5));
  CHECK(raw_query_int(path, "PRAGMA application_id") == PlanCache::kApplicationId);
}

}  // namespace

TEST_CASE("recovery: garbage bytes", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  SECTION("long") { write_file(path, sample_bytes(20000, 9)); }
  SECTION("shorter than a header") { write_file(path, {'h', 'i'}); }
  SECTION("a stale WAL next to it is moved too") {
    write_file(path, sample_bytes(20000, 9));
    write_file(path.string() + "-wal", sample_bytes(5000, 8));
  }
  expect_recovery(path, "not an SQLite database");
  CHECK(files_containing(dir.path(), ".corrupt-").size() >= 1);
}

TEST_CASE("recovery: truncated cache", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  fill_cache(path);
  const auto size = fs::file_size(path);
  REQUIRE(size > 100000);
  std::string cause;
  SECTION("cut in half") {
    fs::resize_file(path, size / 2);
    cause = "";  // sqlite or quick_check: either reports it, the wording is sqlite's
  }
  SECTION("cut inside the header") {
    fs::resize_file(path, 60);
    cause = "not an SQLite database";
  }
  expect_recovery(path, cause);
}

TEST_CASE("recovery: damaged pages fail quick_check", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  fill_cache(path);
  // Overwrite a few pages after the schema page with garbage, keeping the header valid.
  auto bytes = read_file(path);
  const auto garbage = sample_bytes(3 * 4096, 77);
  std::copy(garbage.begin(), garbage.end(), bytes.begin() + 4096);
  write_file(path, bytes);
  expect_recovery(path, "");
}

TEST_CASE("recovery: a foreign SQLite database", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  raw_exec(path, "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('alice');");
  expect_recovery(path, "foreign SQLite database");
  // The other application's data is intact in the set-aside file.
  const auto aside = files_containing(dir.path(), ".corrupt-");
  REQUIRE(aside.size() == 1);
  CHECK(raw_query_int(aside[0], "SELECT count(*) FROM users") == 1);
}

TEST_CASE("recovery: another application's empty database", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  raw_exec(path, "PRAGMA application_id = 1234");
  expect_recovery(path, "foreign SQLite database");
}

TEST_CASE("an empty SQLite database or empty file becomes a cache", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  SECTION("empty file") { write_file(path, {}); }
  SECTION("database without tables") { raw_exec(path, "PRAGMA user_version = 0"); }
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.recovery().has_value());
  CHECK(cache.store_plan(sample_key(), sample_bytes(10, 1)));
}

TEST_CASE("recovery: other schema versions and shapes", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  fill_cache(path, 1);
  std::string cause;
  SECTION("older schema version (1: before the measurements table)") {
    raw_exec(path, "UPDATE meta SET value = '1' WHERE key = 'schema_version'; PRAGMA user_version = 1;");
    cause = "schema version 1";
  }
  SECTION("meta and user_version disagree") {
    raw_exec(path, "PRAGMA user_version = 7;");
    cause = "user_version 7 in its header";
  }
  SECTION("a table lacks a column") {
    raw_exec(path, "DROP TABLE spirv; CREATE TABLE spirv (source_hash TEXT PRIMARY KEY, words BLOB);");
    cause = "unexpected tables";
  }
  SECTION("meta table missing") {
    raw_exec(path, "DROP TABLE meta;");
    cause = "unexpected tables";
  }
  expect_recovery(path, cause);
}

TEST_CASE("recovery: a newer denox's cache and a cache in use are left in place", "[cache][recovery]") {
  // Two denox versions sharing a path (the default one) used to take turns moving each other's
  // cache aside, and one that was open elsewhere was renamed under its users.
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  fill_cache(path, 1);
  SECTION("a newer schema version") {
    raw_exec(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'; PRAGMA user_version = 99;");
    // with tables of another shape, as a newer schema may have
    raw_exec(path, "DROP TABLE spirv; CREATE TABLE spirv (hash TEXT PRIMARY KEY, code BLOB, size INTEGER);");
    const auto bytes = read_file(path);
    PlanCache cache = PlanCache::open(path);
    CHECK_FALSE(cache.enabled());
    CHECK_FALSE(cache.recovery().has_value());
    CHECK_THAT(cache.disabled_reason(), Catch::Contains("made by a newer denox") && Catch::Contains("schema version 99"));
    CHECK(read_file(path) == bytes);
  }
  SECTION("an older schema version while another cache has the file open") {
    PlanCache user = PlanCache::open(path);  // a user (in this process: the lock is per descriptor)
    REQUIRE(user.enabled());
    raw_exec(path, "UPDATE meta SET value = '1' WHERE key = 'schema_version'; PRAGMA user_version = 1;");
    {
      PlanCache cache = PlanCache::open(path);
      CHECK_FALSE(cache.enabled());
      CHECK_FALSE(cache.recovery().has_value());
      CHECK_THAT(cache.disabled_reason(), Catch::Contains("another process has it open, so it is left in place"));
    }
    CHECK(user.load_plan(sample_key("m0")).has_value());  // the file under its user is the same
    user = PlanCache();
    PlanCache after = PlanCache::open(path);  // nobody has it open now: moved aside and rebuilt
    CHECK(after.enabled());
    CHECK(after.recovery().has_value());
  }
  CHECK(files_containing(dir.path(), ".corrupt-").size() <= 1);
}

TEST_CASE("a row failing its checksum is a miss and is deleted", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  const auto plan = sample_bytes(5000, 1);
  {
    PlanCache cache = PlanCache::open(path);
    REQUIRE(cache.store_plan(sample_key("good"), plan));
    REQUIRE(cache.store_plan(sample_key("bad"), plan));
    REQUIRE(cache.store_spirv("bad", sample_words(10, 1)));
    REQUIRE(cache.store_pipeline_cache(sample_device(), sample_bytes(100, 1)));
  }
  // Same length, different bytes: only the checksum can tell.
  const std::string bad_digest = sample_key("bad").digest();
  raw_exec(path, "UPDATE plans SET plan = zeroblob(5000) WHERE key_digest = '" + bad_digest + "';"
                 "UPDATE spirv SET words = zeroblob(40);"
                 "UPDATE pipeline_caches SET checksum = 'x';");
  LogCapture log;
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.recovery().has_value());  // one bad row is not a bad file
  CHECK_FALSE(cache.load_plan(sample_key("bad")).has_value());
  CHECK(cache.load_plan(sample_key("good")) == plan);
  CHECK_FALSE(cache.load_spirv("bad").has_value());
  CHECK_FALSE(cache.load_pipeline_cache(sample_device()).has_value());
  const CacheStats s = cache.stats();
  CHECK(s.corrupt_rows == 3);
  CHECK(s.plan_misses == 1);
  CHECK(s.plan_hits == 1);
  CHECK(s.spirv_misses == 1);
  CHECK(s.pipeline_cache_misses == 1);
  CHECK(log.text().find("fails its checksum") != std::string::npos);
  CHECK(raw_query_int(path, "SELECT count(*) FROM plans") == 1);
  CHECK(raw_query_int(path, "SELECT count(*) FROM spirv") == 0);
  CHECK(raw_query_int(path, "SELECT count(*) FROM pipeline_caches") == 0);
  // A later store repairs the entry.
  CHECK(cache.store_plan(sample_key("bad"), plan));
  CHECK(cache.load_plan(sample_key("bad")) == plan);
}

TEST_CASE("corruption found after open disables the cache for this process only", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  fill_cache(path);
  // A healthy file at open (the default quick_check passes), damaged while the cache is in
  // use. With nothing written since open the WAL is empty, so at the start of every transaction
  // sqlite compares the page count in the header with the file's size and reports
  // SQLITE_CORRUPT. (Not load_plan before the damage: its last_used_at update would put the
  // page count in the WAL whenever the clock moved on a second since the store, and the pages
  // quick_check left in sqlite's cache would then hide the damage.)
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  REQUIRE_FALSE(cache.recovery().has_value());
  REQUIRE(cache.load_spirv("s").has_value());  // a read only
  fs::resize_file(path, fs::file_size(path) / 2);

  LogCapture log;
  SECTION("a load meets it") {
    CHECK_FALSE(cache.load_plan(sample_key("m7")).has_value());
  }
  SECTION("a store meets it") {
    CHECK_FALSE(cache.store_plan(sample_key("new"), sample_bytes(10, 1)));
  }
  CHECK_FALSE(cache.enabled());
  CHECK(cache.disabled_reason().find("corrupt") != std::string::npos);
  CHECK(log.text().find("caching is off until the next open") != std::string::npos);
  // Disabled from now on: nothing reaches the file, loads miss.
  CHECK_FALSE(cache.store_plan(sample_key(), sample_bytes(10, 1)));
  CHECK_FALSE(cache.load_plan(sample_key("m0")).has_value());
  // Other processes may still have the file open, so this one does not move it.
  CHECK(fs::exists(path));
  CHECK(files_containing(dir.path(), ".corrupt-").empty());

  // The next open repairs it.
  PlanCache next = PlanCache::open(path);
  CHECK(next.enabled());
  REQUIRE(next.recovery().has_value());
  CHECK(fs::exists(next.recovery()->set_aside_path));
  CHECK(next.store_plan(sample_key(), sample_bytes(10, 1)));
  CHECK(next.load_plan(sample_key()) == sample_bytes(10, 1));
}

TEST_CASE("an unusable location runs without a cache", "[cache][recovery]") {
  TempDir dir;
  fs::path path;
  SECTION("parent is a regular file") {
    write_file(dir / "file", {'x'});
    path = dir / "file/cache.sqlite3";
  }
  SECTION("path is a directory") {
    path = dir / "adir";
    fs::create_directories(path);
  }
  SECTION("read-only directory") {
    if (geteuid() == 0) {
      WARN("skipped: root ignores directory permissions");  // Catch2 v2 has no SKIP
      return;
    }
    fs::create_directories(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    path = dir / "ro/cache.sqlite3";
  }
  LogCapture log;
  PlanCache cache = PlanCache::open(path);
  CHECK_FALSE(cache.enabled());
  CHECK_FALSE(cache.disabled_reason().empty());
  CHECK_FALSE(cache.recovery().has_value());
  CHECK_FALSE(cache.load_plan(sample_key()).has_value());
  CHECK_FALSE(cache.store_plan(sample_key(), sample_bytes(10, 1)));
  CHECK(cache.stats().write_failures == 1);
  CHECK(log.text().find("running without a cache") != std::string::npos);
  fs::permissions(dir.path(), fs::perms::owner_all);
  if (fs::exists(dir / "ro")) fs::permissions(dir / "ro", fs::perms::owner_all);
}

TEST_CASE("a full disk fails the store, not the process, and leaves no partial row", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  const auto small = sample_bytes(1000, 1);
  // RLIMIT_FSIZE makes writes past the limit fail with EFBIG, like a full disk; it is set in a
  // child so the test process keeps its limits.
  const auto status = run_children(1, [&](int) {
    PlanCache cache = PlanCache::open(path);
    if (!cache.enabled() || !cache.store_plan(sample_key("small"), small)) return 10;
    signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{256 * 1024, 256 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 11;
    if (cache.store_plan(sample_key("big"), sample_bytes(4 << 20, 2))) return 12;  // must fail
    if (cache.stats().write_failures != 1) return 13;
    if (!cache.enabled()) return 14;  // a full disk is not corruption
    if (cache.load_plan(sample_key("small")) != small) return 15;
    return 0;
  });
  CHECK(status == std::vector<int>{0});
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.recovery().has_value());
  CHECK(cache.load_plan(sample_key("small")) == small);
  CHECK_FALSE(cache.load_plan(sample_key("big")).has_value());
  CHECK(cache.stats().corrupt_rows == 0);
}

TEST_CASE("a process killed while storing leaves a consistent cache", "[cache][recovery]") {
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  // The child reports each committed store through a pipe, so the parent kills it after a
  // known number of commits whatever the load; as the child does nothing but store, most
  // likely in the middle of the next one.
  constexpr int kCommitsBeforeKill = 3;
  const auto payload = sample_bytes(1 << 20, 7);
  int committed[2];
  REQUIRE(pipe(committed) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(committed[0]);
    PlanCache cache = PlanCache::open(path);
    for (std::uint32_t i = 0;; ++i) {
      if (!cache.store_plan(sample_key("k" + std::to_string(i % 50)), payload)) std::_Exit(1);
      if (write(committed[1], "c", 1) != 1) std::_Exit(2);
    }
  }
  close(committed[1]);
  int commits = 0;
  char byte;
  while (commits < kCommitsBeforeKill && read(committed[0], &byte, 1) == 1) ++commits;
  REQUIRE(commits == kCommitsBeforeKill);  // else the child stopped storing by itself
  REQUIRE(kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  // Closed only now: closing earlier would end the child with SIGPIPE after its next commit.
  close(committed[0]);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));

  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  CHECK_FALSE(cache.recovery().has_value());
  int found = 0;
  for (int i = 0; i < 50; ++i)
    if (const auto plan = cache.load_plan(sample_key("k" + std::to_string(i)))) {
      ++found;
      CHECK(*plan == payload);
    }
  CHECK(found >= kCommitsBeforeKill);
  CHECK(cache.stats().corrupt_rows == 0);
}
