// The on-disk cache: compiled plans, SPIR-V and VkPipelineCache data in one SQLite file.
//
// Failure policy (see README.md): the cache is an accelerator, never a requirement. Nothing in
// this class throws because of the file system or the file's content, except
// open_read_only(), whose caller asked for one particular file. A file that is corrupt,
// foreign or of another schema version is moved aside and rebuilt at open(); a cache that
// cannot be opened or written runs disabled (every load misses, every store returns false)
// after a logged warning, and denox compiles as if there were no cache.
//
// Thread safety: every member function may be called from any thread; calls on one PlanCache
// are serialized by an internal mutex. Several processes may use one file at once. A PlanCache
// must not be used across fork(): open a new one in the child.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cache/cache_key.hpp"

namespace denox::cache {

// Counters since open(). "compiled nothing" is observable as plan_misses == 0 (and
// spirv_misses == 0) after a run.
struct CacheStats {
  std::uint64_t plan_hits = 0;
  std::uint64_t plan_misses = 0;
  std::uint64_t plan_stores = 0;
  std::uint64_t spirv_hits = 0;
  std::uint64_t spirv_misses = 0;
  std::uint64_t spirv_stores = 0;
  std::uint64_t pipeline_cache_hits = 0;
  std::uint64_t pipeline_cache_misses = 0;
  std::uint64_t pipeline_cache_stores = 0;
  std::uint64_t measurement_hits = 0;
  std::uint64_t measurement_misses = 0;
  std::uint64_t measurement_stores = 0;
  // Rows whose checksum did not match (each was also counted as a miss and deleted).
  std::uint64_t corrupt_rows = 0;
  // Stores that did not reach the file (disk full, I/O error, lock timeout, disabled cache).
  std::uint64_t write_failures = 0;
};

struct CacheOpenOptions {
  // How long a statement waits for another process's lock before giving up. Long enough for
  // another process's store of a large pipeline cache, short enough not to hang a game.
  std::chrono::milliseconds busy_timeout{10000};
  // Run PRAGMA quick_check at open. It reads the whole file (~1 s per GB), which catches
  // damage in pages that individual loads would otherwise only meet later.
  bool verify_on_open = true;
  // Tests only: treat the file as lying on this network file system ("nfs"), as statfs would.
  std::string assume_network_file_system_for_testing;
};

// What open() did with a file it could not use.
struct CacheRecovery {
  std::string cause;                       // e.g. "not an SQLite database", "schema version 7"
  std::filesystem::path set_aside_path;    // where the old file went (<path>.corrupt-<time>)
};

class PlanCache {
 public:
  // Bumped on every change to the tables; a file with another version is set aside.
  static constexpr int kSchemaVersion = 2;  // 2: measurements
  // PRAGMA application_id: 'dnox'. Marks the file as a denox cache for us and for file(1).
  static constexpr std::int32_t kApplicationId = 0x646e6f78;

  // A disabled cache (loads miss, stores do nothing). Use it when caching is turned off.
  PlanCache();
  ~PlanCache();
  PlanCache(PlanCache&&) noexcept;
  PlanCache& operator=(PlanCache&&) noexcept;
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // Opens or creates the cache at path, creating parent directories. Never throws for
  // file-system or content problems: a damaged file is set aside and rebuilt (recovery()
  // says so), an unusable location yields a disabled cache (disabled_reason() says why).
  // An empty path yields a disabled cache.
  static PlanCache open(const std::filesystem::path& path, const CacheOpenOptions& options = {});
  static PlanCache disabled(std::string reason);

  // Opens an existing cache that belongs to someone else (a cache shipped with a game) for
  // loads only, as SQLite's mode=ro&immutable=1: nothing is ever written to it or created
  // beside it (no -wal, -shm, -journal or .lock), so it may lie in a read-only directory.
  // Throws denox::Error (Io) with the path and the cause when the file is missing,
  // unreadable, not a denox cache, of another schema version, or fails quick_check
  // (options.verify_on_open); it is never renamed or repaired. Afterwards: a row failing its
  // checksum is a miss (warned, counted in corrupt_rows, left in place); SQLite reporting
  // corruption mid-run disables this PlanCache. Stores return false.
  static PlanCache open_read_only(const std::filesystem::path& path, const CacheOpenOptions& options = {});

  // $DENOX_CACHE_DIR/cache.sqlite3, else $XDG_CACHE_HOME/denox/cache.sqlite3 (if absolute),
  // else $HOME/.cache/denox/cache.sqlite3 (HOME from the passwd entry when unset); an empty
  // path if no home directory can be found.
  static std::filesystem::path default_path();

  bool enabled() const;
  // The file in use (empty when disabled).
  std::filesystem::path path() const;
  // Why the cache is disabled (empty when enabled). A cache can become disabled after open()
  // if sqlite reports the file corrupt mid-run; the next open() then repairs it.
  std::string disabled_reason() const;
  std::optional<CacheRecovery> recovery() const;
  // Opened with open_read_only().
  bool read_only() const;

  // Plans: the serialized plan blob under the full key. A hit refreshes last_used_at.
  std::optional<std::vector<std::uint8_t>> load_plan(const CacheKey& key);
  bool store_plan(const CacheKey& key, std::span<const std::uint8_t> plan);
  // The keys of every plan of this model (any device, denox version or options), parsed from
  // the stored key texts; rows whose key text does not parse are left out. A scan of the key
  // column: meant for explaining a miss, not for the load path.
  std::vector<CacheKey> plan_keys_for_model(std::string_view model_hash);

  // SPIR-V, content-addressed: source_hash must cover everything that determines the words
  // (GLSL source, macro set, glslang version, target environment).
  std::optional<std::vector<std::uint32_t>> load_spirv(std::string_view source_hash);
  bool store_spirv(std::string_view source_hash, std::span<const std::uint32_t> words);

  // VkPipelineCache data per device (DeviceIdentity::digest()). Last store wins; callers
  // load, merge their new pipelines in through Vulkan, and store the result.
  std::optional<std::vector<std::uint8_t>> load_pipeline_cache(const DeviceIdentity& device);
  bool store_pipeline_cache(const DeviceIdentity& device, std::span<const std::uint8_t> data);

  // Autotuning measurements (src/runtime/measure): one row per (device, shader set, shader,
  // configuration, operation signature), `key_text` spelling all of it out. The result is a
  // short text (measure::MeasurementResult's encoding); a failed configuration is stored as
  // such so it is never tried again on this device and driver.
  std::optional<std::string> load_measurement(const std::string& key_text);
  // Durability::Synced commits with synchronous=FULL: the row, and everything committed
  // before it, is on the disk when this returns, not only in the OS's page cache (one fsync).
  // For crash-journal markers of steps that can hang the whole machine.
  enum class Durability { Normal, Synced };
  bool store_measurement(const std::string& key_text, std::string_view result, Durability durability = Durability::Normal);

  CacheStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace denox::cache
