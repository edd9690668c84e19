// A read-only cache shipped with the application (denox_context_options::shipped_cache_path):
// exported from a cache that compiled the model, made read-only with its directory, it lets a
// context with an empty writable cache compile nothing, and stays byte for byte the same with
// nothing created beside it. A shipped cache made for another device warns through the log
// callback and the model is compiled; a missing or foreign file fails context creation with
// the path; a damaged row is a miss.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <thread>

#include "api_test_util.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "runtime/cache/cache_admin.hpp"
#include "runtime/cache/plan_cache.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;

namespace {

// One model, compiled once per test process into a writable cache, and exported from it.
struct Shipped {
  TempDir dir;
  fs::path model, source_cache, game_dir, file;
  denox::HostTensor input, want;
};

denox_model_options fp32() {
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  return o;
}

const Shipped& shipped_fixture() {
  static const Shipped s = [] {
    Shipped f;
    f.model = write_oidn(f.dir.path(), Size::Small, 3, true, 11);
    f.source_cache = f.dir / "developer-cache.sqlite3";
    f.game_dir = f.dir / "game";
    f.file = f.game_dir / "denox-cache.sqlite3";
    f.input = random_image(3, 23, 31, 4);
    f.want = reference_output(f.model, f.input);
    denox_context ctx = make_context(f.source_cache);
    const denox_model_options options = fp32();
    denox_model model = nullptr;
    require_ok(denox_model_load_file(ctx, f.model.string().c_str(), &options, &model), "load");
    run_on_buffers(ctx, model, f.input, DENOX_DTYPE_F32);  // compiles (and caches) the io adapters too
    denox_model_destroy(model);
    denox_context_destroy(ctx);  // saves the pipeline cache data, which the export takes along
    fs::create_directories(f.game_dir);
    REQUIRE(denox::cache::export_plans(f.source_cache, f.file, {}) == 1);
    fs::remove(f.file.string() + ".lock");  // the exporter's lock file: a game ships the cache alone
    return f;
  }();
  return s;
}

denox_context make_context_with(const fs::path& cache, const fs::path& shipped, denox_result expected = DENOX_SUCCESS) {
  const denox_vulkan_device dev = engine_device().as_denox();
  const std::string cache_path = cache.string(), shipped_path = shipped.string();
  denox_context_options options{};
  options.cache_path = cache_path.c_str();
  options.disable_cache = cache.empty() ? 1 : 0;
  options.shipped_cache_path = shipped.empty() ? nullptr : shipped_path.c_str();
  denox_context ctx = nullptr;
  const denox_result r = denox_context_create(&dev, &options, &ctx);
  INFO(denox_last_error());
  REQUIRE(r == expected);
  return ctx;
}

std::vector<char> bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Loads the fixture's model on ctx, runs it, checks the output; returns the context's stats.
denox_stats load_and_check(denox_context ctx) {
  const Shipped& f = shipped_fixture();
  const denox_model_options options = fp32();
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, f.model.string().c_str(), &options, &model), "load");
  CHECK(relative_l2(run_on_buffers(ctx, model, f.input, DENOX_DTYPE_F32), f.want.f32) <= 1e-4);
  denox_model_destroy(model);
  denox_stats stats{};
  require_ok(denox_context_get_stats(ctx, &stats), "stats");
  return stats;
}

// Copies every plan of `source_path`'s one model into a new cache file `out_path`, each key
// changed by `change` (another device or driver) and each plan by `change_plan` (if given):
// stored through the cache, so every row's checksum holds.
void forge_plans(const fs::path& source_path, const fs::path& out_path, const std::function<void(denox::cache::CacheKey&)>& change,
                 const std::function<void(denox::plan::Plan&)>& change_plan = {}) {
  const auto listing = denox::cache::list_cache(source_path);
  REQUIRE(listing.plans.size() == 1);
  denox::cache::PlanCache source = denox::cache::PlanCache::open_read_only(source_path);
  denox::cache::PlanCache out = denox::cache::PlanCache::open(out_path);
  for (denox::cache::CacheKey key : source.plan_keys_for_model(listing.plans[0].model_hash)) {
    auto plan = source.load_plan(key);
    REQUIRE(plan.has_value());
    change(key);
    if (change_plan) {
      denox::plan::Plan p = denox::plan::deserialize_plan(*plan);
      change_plan(p);
      plan = denox::plan::serialize_plan(p);
    }
    REQUIRE(out.store_plan(key, *plan));
  }
}

// Collects denox's warnings while alive.
struct WarningLog {
  std::vector<std::string> lines;
  WarningLog() {
    denox_set_log_callback([](denox_log_level, const char* m, void* user) { static_cast<WarningLog*>(user)->lines.emplace_back(m); },
                           this, DENOX_LOG_WARN);
  }
  ~WarningLog() { denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN); }
  std::string containing(const std::string& part) const {
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return l;
    return {};
  }
  std::string all() const {  // (for INFO)
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return text;
  }
};

}  // namespace

TEST_CASE("a shipped cache answers a fresh writable cache: nothing compiled, nothing written beside it", "[api][cache][shipped]") {
  const Shipped& f = shipped_fixture();
  TempDir user;
  const auto bytes = bytes_of(f.file);
  const auto names = names_in(f.game_dir);
  CHECK(names == std::set<std::string>{f.file.filename().string()});
  // A game's install: the file and its directory read-only (root ignores that, hence the byte
  // and directory comparisons at the end).
  struct ReadOnlyInstall {
    const Shipped& f;
    explicit ReadOnlyInstall(const Shipped& shipped) : f(shipped) {
      fs::permissions(f.file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
      fs::permissions(f.game_dir, fs::perms::owner_read | fs::perms::owner_exec);
    }
    ~ReadOnlyInstall() {
      std::error_code ec;
      fs::permissions(f.game_dir, fs::perms::owner_all, ec);
      fs::permissions(f.file, fs::perms::owner_read | fs::perms::owner_write, ec);
    }
  };
  std::optional<ReadOnlyInstall> read_only(std::in_place, f);

  const fs::path writable = user / "cache.sqlite3";
  denox_context ctx = make_context_with(writable, f.file);
  denox_context_info info{};
  require_ok(denox_context_get_info(ctx, &info), "info");
  CHECK(std::string(info.shipped_cache_path) == f.file.string());
  CHECK(std::string(info.cache_path) == writable.string());
  const denox_stats stats = load_and_check(ctx);
  CHECK(stats.plans_compiled == 0);
  CHECK(stats.plan_cache_hits == 1);
  CHECK(stats.shipped_plan_hits == 1);
  CHECK(stats.shaders_compiled == 0);  // the io adapters' SPIR-V came along in the export
  CHECK(stats.shipped_shader_hits == stats.shader_cache_hits);
  CHECK(stats.shipped_shader_hits > 0);
  CHECK(stats.shipped_pipeline_cache_hits == 1);
  denox_context_destroy(ctx);
  // Plans and SPIR-V stay in the shipped file; only the driver's pipeline cache is saved.
  const auto contents = denox::cache::list_cache(writable);
  CHECK(contents.plans.empty());
  CHECK(contents.spirv_rows == 0);
  CHECK(contents.pipeline_cache_rows == 1);

  // disable_cache turns off the writable cache only: the shipped one still answers.
  ctx = make_context_with({}, f.file);
  require_ok(denox_context_get_info(ctx, &info), "info");
  CHECK(info.cache_enabled == 0);
  const denox_stats only_shipped = load_and_check(ctx);
  CHECK(only_shipped.plans_compiled == 0);
  CHECK(only_shipped.shipped_plan_hits == 1);
  CHECK(only_shipped.shaders_compiled == 0);
  denox_context_destroy(ctx);

  read_only.reset();
  CHECK(bytes_of(f.file) == bytes);
  CHECK(names_in(f.game_dir) == names);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a shipped cache made for another device warns and the model is compiled", "[api][cache][shipped]") {
  const Shipped& f = shipped_fixture();
  TempDir dir;
  // Forge: the fixture's plans under another device and driver.
  const fs::path forged = dir / "other-gpu.sqlite3";
  forge_plans(f.source_cache, forged, [](denox::cache::CacheKey& key) {
    key.device.vendor_id = 0x10de;
    key.device.device_id = 0x2684;
    key.device.driver_name = "ForgedDriver";
  });
  WarningLog log;
  denox_context ctx = make_context_with(dir / "cache.sqlite3", forged);
  const denox_stats stats = load_and_check(ctx);
  CHECK(stats.plans_compiled == 1);
  CHECK(stats.shipped_plan_hits == 0);
  denox_context_destroy(ctx);
  const std::string warning = log.containing("has no plan of this model for this device");
  INFO("warnings:\n" << log.all());
  CHECK(warning.find(forged.string()) != std::string::npos);
  CHECK(warning.find("ForgedDriver") != std::string::npos);       // what it was made for
  CHECK(warning.find("device 0x2684") != std::string::npos);
  CHECK(warning.find("this one is [vendor") != std::string::npos);  // and this device
  CHECK(warning.find("compiling it here with heuristic tuning") != std::string::npos);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a cached plan whose SPIR-V is not the module its pipeline describes is compiled again", "[api][cache][shipped]") {
  // A row that passes its checksum (stored through the cache) but whose pipeline says another
  // workgroup size than its module: before 0.4.3 it went to the driver as it was.
  const Shipped& f = shipped_fixture();
  TempDir dir;
  const fs::path damaged = dir / "damaged.sqlite3";
  forge_plans(f.source_cache, damaged, [](denox::cache::CacheKey&) {}, [](denox::plan::Plan& p) {
    REQUIRE(!p.pipelines.empty());
    p.pipelines[0].local_size[0] += 1;
  });
  WarningLog log;
  denox_context ctx = make_context_with(damaged, {});
  const denox_stats stats = load_and_check(ctx);  // (the output against the CPU reference)
  CHECK(stats.plans_compiled == 1);
  denox_context_destroy(ctx);
  INFO("warnings:\n" << log.all());
  const std::string warning = log.containing("ignoring a cached plan that cannot be used");
  CHECK(warning.find("declares workgroups of") != std::string::npos);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("after a driver update, the shipped plan made under the old driver runs: nothing compiled, a warning", "[api][cache][shipped]") {
  // A player's driver updated since the game's cache was made: same GPU, another driver version
  // and pipeline cache UUID. Its plan (SPIR-V and configurations) still runs here; compiling or
  // tuning at the game's start is what the shipped cache is for avoiding.
  const Shipped& f = shipped_fixture();
  TempDir dir;
  const fs::path forged = dir / "older-driver.sqlite3";
  forge_plans(f.source_cache, forged, [](denox::cache::CacheKey& key) {
    key.device.driver_version ^= 0x00010000u;  // another driver release of the same driver
    key.device.pipeline_cache_uuid[0] ^= 0xffu;
  });
  WarningLog log;
  {
    denox_context ctx = make_context_with(dir / "cache.sqlite3", forged);
    const denox_stats stats = load_and_check(ctx);
    CHECK(stats.plans_compiled == 0);
    CHECK(stats.shipped_plan_hits == 1);
    denox_context_destroy(ctx);
  }
  const std::string warning = log.containing("using its plan made on this GPU");
  INFO("warnings:\n" << log.all());
  CHECK(warning.find(forged.string()) != std::string::npos);
  CHECK(warning.find("the driver changed") != std::string::npos);
  // Not copied to the writable cache: once the driver's own plan is there (a tune), it wins.
  CHECK(denox::cache::list_cache(dir / "cache.sqlite3").plans.empty());

  // Another GPU's plans are no fallback (the device test above): only the driver may differ.
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("after a driver update, a load that tunes in the background runs the old driver's tuned plan meanwhile",
          "[api][cache][shipped]") {
  const Shipped& f = shipped_fixture();
  TempDir dir;
  denox_model_options measured = fp32();
  measured.tuning = DENOX_TUNING_MEASURE;
  measured.tune_width = 37;  // (lavapipe is slow)
  measured.tune_height = 29;
  const fs::path developer = dir / "developer.sqlite3", forged = dir / "older-driver.sqlite3";
  {
    denox_context ctx = make_context(developer);
    denox_model model = nullptr;
    require_ok(denox_model_load_file(ctx, f.model.string().c_str(), &measured, &model), "load (measure)");
    denox_model_destroy(model);
    denox_context_destroy(ctx);
  }
  forge_plans(developer, forged, [](denox::cache::CacheKey& key) { key.device.driver_version ^= 0x00010000u; });
  denox_context ctx = make_context_with(dir / "cache.sqlite3", forged);
  denox_model_options background = measured;
  background.tune_in_background = 1;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, f.model.string().c_str(), &background, &model), "load (tune in background)");
  denox_stats stats{};
  require_ok(denox_context_get_stats(ctx, &stats), "stats");
  CHECK(stats.plans_compiled == 0);
  CHECK(stats.shipped_plan_hits == 1);
  denox_model_status status{};
  require_ok(denox_model_get_status(model, &status), "status");
  CHECK(status.active_plan == DENOX_PLAN_TUNED);  // the old driver's tuned plan, not the heuristic one
  CHECK((status.running_job == DENOX_JOB_TUNE || status.swap_pending));
  CHECK(relative_l2(run_on_buffers(ctx, model, f.input, DENOX_DTYPE_F32), f.want.f32) <= 1e-4);
  // The tune for this driver finishes and is swapped in at a record.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!status.swap_pending && status.failed_jobs == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    require_ok(denox_model_get_status(model, &status), "status");
  }
  INFO(status.last_error);
  REQUIRE(status.swap_pending);
  CHECK(relative_l2(run_on_buffers(ctx, model, f.input, DENOX_DTYPE_F32), f.want.f32) <= 1e-4);
  require_ok(denox_model_get_status(model, &status), "status");
  CHECK(status.swaps == 1);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(denox::cache::list_cache(dir / "cache.sqlite3").plans.size() == 1);  // this driver's, from the tune
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a missing or foreign shipped cache fails context creation naming it, a damaged row is a miss", "[api][cache][shipped]") {
  const Shipped& f = shipped_fixture();
  TempDir dir;
  SECTION("missing") {
    const fs::path missing = dir / "not-there.sqlite3";
    CHECK(make_context_with({}, missing, DENOX_ERROR_IO) == nullptr);
    const std::string message = denox_last_error();
    CHECK(message.find("shipped cache '" + missing.string() + "' does not exist") != std::string::npos);
    CHECK_FALSE(fs::exists(missing));
  }
  SECTION("not a denox cache") {
    const fs::path garbage = dir / "garbage.sqlite3";
    std::ofstream(garbage) << std::string(3000, 'g');
    CHECK(make_context_with({}, garbage, DENOX_ERROR_IO) == nullptr);
    const std::string message = denox_last_error();
    CHECK(message.find("'" + garbage.string() + "' is not a usable denox cache") != std::string::npos);
    CHECK(names_in(dir.path()) == std::set<std::string>{"garbage.sqlite3"});  // not set aside
  }
  SECTION("the writable cache itself") {
    const fs::path same = dir / "same.sqlite3";
    fs::copy_file(f.file, same);
    CHECK(make_context_with(same, same, DENOX_ERROR_INVALID_ARGUMENT) == nullptr);
    CHECK(std::string(denox_last_error()).find("is the writable cache itself") != std::string::npos);
  }
  SECTION("a row failing its checksum") {
    const fs::path damaged = dir / "damaged.sqlite3";
    fs::copy_file(f.file, damaged);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(damaged.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "UPDATE plans SET checksum = 'damaged'", nullptr, nullptr, nullptr) == SQLITE_OK);
    CHECK(sqlite3_close(db) == SQLITE_OK);
    WarningLog log;
    denox_context ctx = make_context_with({}, damaged);
    const denox_stats stats = load_and_check(ctx);
    CHECK(stats.plans_compiled == 1);
    CHECK(stats.shipped_plan_hits == 0);
    CHECK(stats.shaders_compiled == 0);  // the SPIR-V rows are intact
    denox_context_destroy(ctx);
    CHECK_FALSE(log.containing("fails its checksum").empty());
  }
}
