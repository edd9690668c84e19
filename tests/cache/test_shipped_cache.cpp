// The read-only shipped cache (PlanCache::open_read_only, LayeredCache, exporting one, listing
// one): nothing is ever written to it or created beside it, lookups fall through from the
// writable cache to it, stores never reach it, and a file that is not a usable denox cache is
// an error naming the path rather than something to set aside.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "cache_test_util.hpp"
#include "common/error.hpp"
#include "runtime/cache/cache_admin.hpp"
#include "runtime/cache/layered_cache.hpp"
#include "runtime/cache/plan_cache.hpp"

using namespace denox::cache;
using namespace denox::cache::test;

namespace {

// Names in a directory, to show that nothing appeared beside a shipped file.
std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Makes a file and its directory read-only (as a game's install is) until scope end. Root
// ignores these modes, so the tests also compare bytes and directory listings.
class ReadOnlyScope {
 public:
  explicit ReadOnlyScope(const fs::path& file) : file_(file) {
    fs::permissions(file_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(file_.parent_path(), fs::perms::owner_read | fs::perms::owner_exec);
  }
  ~ReadOnlyScope() {
    std::error_code ec;
    fs::permissions(file_.parent_path(), fs::perms::owner_all, ec);
    fs::permissions(file_, fs::perms::owner_read | fs::perms::owner_write, ec);
  }
  ReadOnlyScope(const ReadOnlyScope&) = delete;
  ReadOnlyScope& operator=(const ReadOnlyScope&) = delete;

 private:
  fs::path file_;
};

// A cache at `path` with one plan (sample_key(model)), one SPIR-V module, the pipeline cache
// of sample_device() and one measurement; PlanCache leaves it in WAL mode.
void fill(const fs::path& path, const std::string& model, std::uint32_t seed) {
  PlanCache cache = PlanCache::open(path);
  REQUIRE(cache.enabled());
  REQUIRE(cache.store_plan(sample_key(model), sample_bytes(20000, seed)));
  REQUIRE(cache.store_spirv("spirv-" + model, sample_words(300, seed)));
  REQUIRE(cache.store_pipeline_cache(sample_device(), sample_bytes(5000, seed)));
  REQUIRE(cache.store_measurement("measure|" + model, "ok 0.25"));
}

std::string open_error(const fs::path& path) {
  try {
    PlanCache::open_read_only(path);
  } catch (const denox::Error& e) {
    CHECK(e.code() == denox::ErrorCode::Io);
    return e.what();
  }
  FAIL("open_read_only accepted " << path);
  return {};
}

}  // namespace

TEST_CASE("CacheKey::parse inverts canonical()", "[cache][shipped]") {
  CacheKey key = sample_key("m", "precision=fp16;tuning=heuristic");
  key.device.driver_name = "odd\nname=with:1:separators";
  key.denox_version = "";
  const auto parsed = CacheKey::parse(key.canonical());
  REQUIRE(parsed.has_value());
  CHECK(*parsed == key);
  CHECK(parsed->digest() == key.digest());
  const std::string text = key.canonical();
  CHECK_FALSE(CacheKey::parse(text + "extra=1\n").has_value());
  CHECK_FALSE(CacheKey::parse(text.substr(0, text.size() - 1)).has_value());
  CHECK_FALSE(CacheKey::parse("denox-plan-key/2" + text.substr(text.find('\n'))).has_value());
  CHECK_FALSE(CacheKey::parse("").has_value());
  // A length near 2^64 (length + 1 wrapped and the parser read past the text).
  const std::string field = "driver_name=";
  const size_t at = text.find(field);
  REQUIRE(at != std::string::npos);
  const size_t colon = text.find(':', at);
  CHECK_FALSE(CacheKey::parse(text.substr(0, at + field.size()) + "18446744073709551615" + text.substr(colon)).has_value());
}

TEST_CASE("a shipped cache is read without writing it or creating anything beside it", "[cache][shipped]") {
  TempDir dir;
  fs::create_directories(dir / "game");
  const fs::path source = dir / "source.sqlite3", shipped = dir / "game/shipped.sqlite3";
  fill(source, "a", 1);
  REQUIRE(export_plans(source, shipped, {}) == 1);
  fs::remove(shipped.string() + ".lock");  // the exporter's own lock file; a game ships the file alone
  // Exported files leave WAL mode (header bytes 18 and 19 are 1: rollback journal), so any
  // SQLite reads them without -wal/-shm files.
  const auto bytes = read_file(shipped);
  CHECK(bytes.at(18) == 1);
  CHECK(bytes.at(19) == 1);
  const auto names = names_in(dir / "game");
  CHECK(names == std::set<std::string>{"shipped.sqlite3"});  // no -wal or -shm left by the export
  const auto mtime = fs::last_write_time(shipped);
  {
    ReadOnlyScope read_only(shipped);
    PlanCache cache = PlanCache::open_read_only(shipped);
    REQUIRE(cache.enabled());
    CHECK(cache.read_only());
    CHECK(cache.path() == shipped);
    CHECK(cache.load_plan(sample_key("a")) == sample_bytes(20000, 1));
    CHECK(cache.load_spirv("spirv-a") == sample_words(300, 1));
    CHECK(cache.load_pipeline_cache(sample_device()) == sample_bytes(5000, 1));
    CHECK_FALSE(cache.load_plan(sample_key("b")).has_value());
    CHECK_FALSE(cache.store_plan(sample_key("b"), sample_bytes(10, 2)));
    CHECK_FALSE(cache.store_spirv("x", sample_words(4, 2)));
    const CacheStats s = cache.stats();
    CHECK(s.plan_hits == 1);
    CHECK(s.plan_misses == 1);
    CHECK(s.write_failures == 2);
    // The tool's view of it, also read-only.
    const CacheContents c = list_cache(shipped);
    REQUIRE(c.plans.size() == 1);
    CHECK(c.plans[0].intact);
    CHECK(c.plans[0].model_hash == "hash-of-a");
    CHECK(c.plans[0].device_digest == sample_device().digest());
    CHECK(c.spirv_rows == 1);
    CHECK(c.measurement_rows == 0);  // measurements are per device: not exported
  }
  CHECK(read_file(shipped) == bytes);
  CHECK(fs::last_write_time(shipped) == mtime);
  CHECK(names_in(dir / "game") == names);
}

TEST_CASE("a WAL-mode cache file is read as a shipped cache too", "[cache][shipped]") {
  TempDir dir;
  // URI syntax in the path ('?', '#', '%20') must reach the file system as written.
  const fs::path game = dir / "game ?#%20";
  fs::create_directories(game);
  const fs::path shipped = game / "copied.sqlite3";
  fill(shipped, "a", 1);  // a whole user cache copied into the game, still in WAL mode
  fs::remove(shipped.string() + ".lock");
  const auto bytes = read_file(shipped);
  REQUIRE(bytes.at(18) == 2);
  const auto names = names_in(game);
  {
    ReadOnlyScope read_only(shipped);
    PlanCache cache = PlanCache::open_read_only(shipped);
    CHECK(cache.load_plan(sample_key("a")) == sample_bytes(20000, 1));
    CHECK(cache.load_measurement("measure|a") == std::optional<std::string>("ok 0.25"));
  }
  CHECK(read_file(shipped) == bytes);
  CHECK(names_in(game) == names);
}

TEST_CASE("layered lookups try the writable cache, then the shipped one, and store to the writable one", "[cache][shipped]") {
  TempDir dir;
  const fs::path shipped_path = dir / "shipped.sqlite3", writable_path = dir / "user.sqlite3";
  fill(shipped_path, "a", 1);
  {
    PlanCache shipped_extra = PlanCache::open(shipped_path);
    REQUIRE(shipped_extra.store_plan(sample_key("b"), sample_bytes(100, 2)));
  }
  const auto shipped_bytes = read_file(shipped_path);
  LayeredCache cache(PlanCache::open(writable_path), PlanCache::open_read_only(shipped_path));
  REQUIRE(cache.store_plan(sample_key("b"), sample_bytes(100, 3)));  // the user's own plan of b

  CacheLayer from = CacheLayer::None;
  CHECK(cache.load_plan(sample_key("a"), &from) == sample_bytes(20000, 1));
  CHECK(from == CacheLayer::Shipped);
  CHECK(cache.load_plan(sample_key("b"), &from) == sample_bytes(100, 3));
  CHECK(from == CacheLayer::Writable);
  CHECK_FALSE(cache.load_plan(sample_key("c"), &from).has_value());
  CHECK(from == CacheLayer::None);
  CHECK(cache.load_spirv("spirv-a", &from) == sample_words(300, 1));
  CHECK(from == CacheLayer::Shipped);
  CHECK(cache.load_measurement("measure|a", &from) == std::optional<std::string>("ok 0.25"));
  CHECK(from == CacheLayer::Shipped);
  // Shipped hits are not copied into the writable cache.
  CHECK(cache.writable().stats().plan_stores == 1);
  CHECK(cache.writable().stats().spirv_stores == 0);

  REQUIRE(cache.store_pipeline_cache(sample_device(), sample_bytes(64, 9)));
  const auto seeds = cache.load_pipeline_caches(sample_device());
  REQUIRE(seeds.size() == 2);
  CHECK(seeds[0].from == CacheLayer::Writable);
  CHECK(seeds[0].data == sample_bytes(64, 9));
  CHECK(seeds[1].from == CacheLayer::Shipped);
  CHECK(seeds[1].data == sample_bytes(5000, 1));

  CHECK(cache.store_spirv("new", sample_words(8, 4)));
  CHECK(cache.writable().load_spirv("new") == sample_words(8, 4));
  CHECK_FALSE(cache.shipped().load_spirv("new").has_value());
  CHECK(cache.shipped().stats().write_failures == 0);  // never even asked
  CHECK(read_file(shipped_path) == shipped_bytes);

  SECTION("without a writable cache the shipped one still answers") {
    LayeredCache only_shipped(PlanCache::disabled("off"), PlanCache::open_read_only(shipped_path));
    CHECK(only_shipped.load_plan(sample_key("a"), &from).has_value());
    CHECK(from == CacheLayer::Shipped);
    CHECK_FALSE(only_shipped.store_plan(sample_key("d"), sample_bytes(10, 1)));
    CHECK(only_shipped.load_pipeline_caches(sample_device()).size() == 1);
  }
}

TEST_CASE("a shipped cache that cannot be used is an error naming the path and the cause", "[cache][shipped]") {
  TempDir dir;
  const fs::path path = dir / "shipped.sqlite3";
  std::string cause;
  SECTION("missing") { cause = "does not exist"; }
  SECTION("a directory") {
    fs::create_directories(path);
    cause = "not a regular file";
  }
  SECTION("not SQLite") {
    std::vector<std::uint8_t> garbage(4096, 'x');
    write_file(path, garbage);
    cause = "not a usable denox cache: not an SQLite database";
  }
  SECTION("an empty file") {
    write_file(path, {});
    cause = "not a denox cache";
  }
  SECTION("another application's database") {
    raw_exec(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY);");
    cause = "foreign SQLite database";
  }
  SECTION("another schema version") {
    fill(path, "a", 1);
    raw_exec(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'; PRAGMA user_version = 99;");
    cause = "schema version 99";
  }
  const std::set<std::string> before = names_in(dir.path());
  const std::string message = open_error(path);
  INFO(message);
  CHECK(message.find("'" + path.string() + "'") != std::string::npos);
  CHECK(message.find(cause) != std::string::npos);
  // Nothing was renamed, repaired or created.
  CHECK(names_in(dir.path()) == before);
}

TEST_CASE("a copy taken while a writer had the cache open is refused, naming its write-ahead log", "[cache][shipped]") {
  // Read-only (immutable) opening never reads the -wal: the rows still in it would be missing.
  TempDir dir;
  const fs::path source = dir / "user.sqlite3", copy = dir / "copied.sqlite3";
  PlanCache writer = PlanCache::open(source);
  REQUIRE(writer.store_plan(sample_key("a"), sample_bytes(300, 1)));
  REQUIRE(fs::file_size(source.string() + "-wal") > 0);  // the row is in the log, not yet in the file
  fs::copy_file(source, copy);
  fs::copy_file(source.string() + "-wal", copy.string() + "-wal");
  const std::string message = open_error(copy);
  INFO(message);
  CHECK(message.find("'" + copy.string() + "-wal'") != std::string::npos);
  CHECK(message.find("rows in it would be missing") != std::string::npos);
}

// Whether a process other than this one sees a read lock in SQLite's SHARED range of `db`
// (what a connection in WAL mode holds for as long as it is open). Asked from a forked child:
// POSIX locks are per process, so this process cannot see its own, and the child's descriptor
// must not be closed here, where closing it would drop them.
bool shared_lock_seen_from_another_process(const fs::path& db) {
  const std::vector<int> status = run_children(1, [&](int) {
    const int fd = ::open(db.c_str(), O_RDONLY);
    if (fd < 0) return 2;
    struct flock range {};
    range.l_type = F_WRLCK;
    range.l_whence = SEEK_SET;
    range.l_start = 0x40000000 + 2;  // SQLite's PENDING_BYTE + 2: its SHARED range
    range.l_len = 510;
    if (::fcntl(fd, F_GETLK, &range) != 0) return 3;
    return range.l_type == F_UNLCK ? 1 : 0;
  });
  REQUIRE(status.size() == 1);
  REQUIRE(status[0] >= 0);
  REQUIRE(status[0] <= 1);
  return status[0] == 0;
}

TEST_CASE("opening a process's own writable cache as its shipped cache keeps the writer's file locks", "[cache][shipped]") {
  // Closing any descriptor of a file drops every POSIX lock this process holds on it. A header
  // check that opened the file by itself dropped the writable connection's SHARED lock: then
  // another process closing its last connection could checkpoint and delete the -wal and -shm
  // this one still uses. SQLite's own descriptors are tracked per file and closed only once no
  // lock needs them.
  TempDir dir;
  const fs::path path = dir / "cache.sqlite3";
  PlanCache writer = PlanCache::open(path);
  REQUIRE(writer.store_plan(sample_key("a"), sample_bytes(300, 1)));
  REQUIRE(writer.load_plan(sample_key("a")).has_value());
  REQUIRE(shared_lock_seen_from_another_process(path));
  SECTION("shipped with its log folded in") {
    // A clean WAL (as after a checkpoint) is opened; the check itself must not cost the lock.
    raw_exec(path, "PRAGMA wal_checkpoint(TRUNCATE)");
    PlanCache shipped = PlanCache::open_read_only(path);
    CHECK(shipped.enabled());
    CHECK(shipped.load_plan(sample_key("a")) == sample_bytes(300, 1));
  }
  SECTION("refused for its write-ahead log") {
    CHECK_FALSE(open_error(path).empty());
  }
  SECTION("not an SQLite file beside it") {
    // (The same check on another file: no lock of this file is involved.)
    write_file(dir / "garbage.sqlite3", sample_bytes(4096, 3));
    CHECK(open_error(dir / "garbage.sqlite3").find("not an SQLite database") != std::string::npos);
  }
  CHECK(shared_lock_seen_from_another_process(path));
  CHECK(writer.load_plan(sample_key("a")) == sample_bytes(300, 1));
}

TEST_CASE("export and import never move aside a file that is not a cache", "[cache][shipped]") {
  // `denox cache export model.onnx` (arguments swapped) used to turn the model into a cache and
  // move it to model.onnx.corrupt-<time>.
  TempDir dir;
  const fs::path source = dir / "user.sqlite3", model = dir / "model.onnx";
  fill(source, "a", 1);
  const std::vector<std::uint8_t> bytes(1000, 'm');
  write_file(model, bytes);
  // (Reading the WAL-mode source may leave its -shm and -wal; nothing may appear beside the model.)
  const auto beside_model = [&] {
    std::set<std::string> names;
    for (const auto& name : names_in(dir.path()))
      if (name.rfind("model.onnx", 0) == 0) names.insert(name);
    return names;
  };
  for (bool exporting : {true, false}) {
    try {
      if (exporting) export_plans(source, model, {});
      else import_plans(source, model);
      FAIL("wrote into " << model);
    } catch (const denox::Error& e) {
      CHECK(e.code() == denox::ErrorCode::Io);
      CHECK_THAT(e.what(), Catch::Contains("'" + model.string() + "'") && Catch::Contains("not a usable denox cache"));
    }
    CHECK(read_file(model) == bytes);
    CHECK(beside_model() == std::set<std::string>{"model.onnx"});
  }
}

TEST_CASE("a shipped row failing its checksum is a miss and stays in place", "[cache][shipped]") {
  TempDir dir;
  const fs::path path = dir / "shipped.sqlite3";
  fill(path, "a", 1);
  {
    PlanCache extra = PlanCache::open(path);
    REQUIRE(extra.store_plan(sample_key("good"), sample_bytes(50, 5)));
  }
  raw_exec(path, "UPDATE plans SET plan = zeroblob(20000) WHERE key_digest = '" + sample_key("a").digest() + "';");
  const auto bytes = read_file(path);
  LogCapture log;
  PlanCache cache = PlanCache::open_read_only(path);
  CHECK_FALSE(cache.load_plan(sample_key("a")).has_value());
  CHECK(cache.load_plan(sample_key("good")) == sample_bytes(50, 5));
  CHECK(cache.stats().corrupt_rows == 1);
  CHECK(cache.enabled());
  CHECK(log.text().find("fails its checksum") != std::string::npos);
  CHECK(log.text().find(path.string()) != std::string::npos);
  CHECK(read_file(path) == bytes);
  CHECK(raw_query_int(path, "SELECT COUNT(*) FROM plans") == 2);
}

TEST_CASE("explain_shipped_miss says what the shipped plans of a model were made for", "[cache][shipped]") {
  TempDir dir;
  const fs::path path = dir / "shipped.sqlite3";
  CacheKey other_gpu = sample_key("m");
  other_gpu.device.device_id = 0x2684;
  CacheKey other_build = sample_key("m");
  other_build.denox_version = "0.0.9";
  CacheKey unrelated = sample_key("x");
  unrelated.device.device_id = 0x1111;
  {
    PlanCache writer = PlanCache::open(path);
    REQUIRE(writer.store_plan(other_gpu, sample_bytes(10, 1)));
    REQUIRE(writer.store_plan(unrelated, sample_bytes(10, 2)));
  }
  LayeredCache cache(PlanCache::disabled("off"), PlanCache::open_read_only(path));
  const CacheKey wanted = sample_key("m");
  CHECK(cache.shipped().plan_keys_for_model(wanted.model_hash) == std::vector<CacheKey>{other_gpu});
  const auto why = cache.explain_shipped_miss(wanted);
  REQUIRE(why.has_value());
  INFO(*why);
  CHECK(why->find("other devices or drivers") != std::string::npos);
  CHECK(why->find(other_gpu.device.describe()) != std::string::npos);
  CHECK(why->find(wanted.device.describe()) != std::string::npos);
  CHECK(why->find("0x1111") == std::string::npos);  // another model's plans are not mentioned
  CHECK_FALSE(cache.explain_shipped_miss(sample_key("absent")).has_value());

  SECTION("another denox build") {
    {
      PlanCache writer = PlanCache::open(path);
      REQUIRE(writer.store_plan(other_build, sample_bytes(10, 3)));
    }
    LayeredCache again(PlanCache::disabled("off"), PlanCache::open_read_only(path));
    const auto both = again.explain_shipped_miss(wanted);
    REQUIRE(both.has_value());
    CHECK(both->find("2 plan(s)") != std::string::npos);
    CHECK(both->find("another denox build: '0.0.9'") != std::string::npos);
  }
}
