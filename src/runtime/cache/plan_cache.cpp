#include "runtime/cache/plan_cache.hpp"

#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>


#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "common/log.hpp"
#include "runtime/cache/cache_open.hpp"
#include "runtime/cache/content_hash.hpp"
#include "runtime/cache/sqlite_db.hpp"

namespace denox::cache {

namespace fs = std::filesystem;
using detail::Db;
using detail::SqliteError;
using detail::Statement;
using detail::row_checksum;

namespace {

// The three tables share one shape: key -> payload + checksum. Table describes the names, so
// one load/store implementation serves all of them.
struct Table {
  const char* name;           // for log messages
  const char* select_sql;     // ?1 = key -> (payload, checksum, key text)
  const char* insert_sql;     // ?1 key, ?2 key text, ?3 payload, ?4 checksum, ?5 now
  const char* delete_sql;     // ?1 = key, ?2 = the checksum the row had when it was read
  const char* touch_sql;      // ?1 key, ?2 now; nullptr if the table has no last-used time
};

constexpr Table kPlans{
    "plan",
    "SELECT plan, checksum, key_text FROM plans WHERE key_digest = ?1",
    "INSERT OR REPLACE INTO plans (key_digest, key_text, plan, checksum, created_at, last_used_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
    "DELETE FROM plans WHERE key_digest = ?1 AND checksum = ?2",
    "UPDATE plans SET last_used_at = ?2 WHERE key_digest = ?1",
};
// SPIR-V rows have no separate key text: the source hash is the whole key.
constexpr Table kSpirv{
    "SPIR-V",
    "SELECT words, checksum, source_hash FROM spirv WHERE source_hash = ?1",
    "INSERT OR REPLACE INTO spirv (source_hash, words, checksum, created_at) VALUES (?1, ?3, ?4, ?5)",
    "DELETE FROM spirv WHERE source_hash = ?1 AND checksum = ?2",
    nullptr,
};
constexpr Table kPipelineCaches{
    "pipeline cache",
    "SELECT data, checksum, device_text FROM pipeline_caches WHERE device_key = ?1",
    "INSERT OR REPLACE INTO pipeline_caches (device_key, device_text, data, checksum, updated_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5)",
    "DELETE FROM pipeline_caches WHERE device_key = ?1 AND checksum = ?2",
    nullptr,
};

constexpr Table kMeasurements{
    "measurement",
    "SELECT result, checksum, key_text FROM measurements WHERE key_digest = ?1",
    "INSERT OR REPLACE INTO measurements (key_digest, key_text, result, checksum, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    "DELETE FROM measurements WHERE key_digest = ?1 AND checksum = ?2",
    nullptr,
};

std::int64_t unix_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

}  // namespace

struct PlanCache::Impl {
  mutable std::mutex mutex;
  detail::UsersLock users;  // held while db is open (writable caches); declared first: released after db closes
  Db db;
  fs::path path;
  std::string disabled_reason;
  std::optional<CacheRecovery> recovery;
  CacheOpenOptions options;
  CacheStats stats;
  bool write_failure_logged = false;
  bool read_only = false;  // open_read_only(): nothing is written, nothing is deleted
  bool always_synced = false;  // synchronous=FULL for every commit (on a network file system)
  bool full_left_on = false;   // restoring synchronous=NORMAL after a synced store failed: retried

  // On a network file system the file must stay in the rollback journal; another process (an
  // older denox, or one on the file server, whose statfs says local) may switch it back to WAL
  // between our transactions, and this connection would follow it at the next one. Header
  // byte 18 is 2 in WAL mode.
  bool left_rollback_journal() {
    const Db::FilePrefix header = db.read_file_prefix(20);
    return header.bytes.size() == 20 && header.bytes[18] == 2;
  }

  // What happens after a failed sqlite call during normal use. Corruption found mid-run
  // disables the cache for this process (other processes may still be using the file, so it
  // is not renamed under them); the next open() checks and repairs it. Anything else (disk
  // full, lock timeout) leaves the cache usable for the next call.
  void on_error(const SqliteError& e, std::string_view action) {
    if (e.is_corruption()) {
      // A read-only file is not ours to repair: this PlanCache just stops reading it.
      log::warn("denox cache: '{}' is corrupt ({} failed: {}); {}", path.string(), action, e.what(),
                   read_only ? "not reading from it any more" : "caching is off until the next open");
      db.close();
      users = {};  // no longer a user: the next open may set the file aside
      disabled_reason = std::string("the file became corrupt: ") + e.what();
      return;
    }
    log::warn("denox cache: {} failed: {}", action, e.what());
  }

  // Returns the payload if the row exists, matches its checksum and its full key text.
  std::optional<std::vector<std::uint8_t>> load(const Table& table, const std::string& key, const std::string& key_text,
                                                std::uint64_t& hits, std::uint64_t& misses) {
    log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
    std::lock_guard lock(mutex);
    if (!db) {
      ++misses;
      return std::nullopt;
    }
    try {
      std::vector<std::uint8_t> payload;
      bool bad_checksum = false;
      std::string stored_checksum;
      {
        Statement select(db, table.select_sql);
        select.bind(1, key);
        if (!select.step()) {
          ++misses;
          return std::nullopt;
        }
        const auto blob = select.column_blob(0);
        payload.assign(blob.begin(), blob.end());
        stored_checksum = select.column_text(1);
        bad_checksum = stored_checksum != row_checksum(key, payload);
        // Equal digests of different key texts: a hash collision, absurdly unlikely, but
        // comparing costs nothing and turns it into a plain miss.
        if (!bad_checksum && select.column_text(2) != key_text) {
          log::warn("denox cache: {} key digest {} collides with a different key; treating as a miss", table.name, key);
          ++misses;
          return std::nullopt;
        }
      }
      if (bad_checksum && read_only) {
        ++stats.corrupt_rows;
        ++misses;
        log::warn("denox cache: {} row {} in the read-only cache '{}' fails its checksum; ignoring it", table.name, key,
                     path.string());
        return std::nullopt;
      }
      if (bad_checksum) {
        ++stats.corrupt_rows;
        ++misses;
        log::warn("denox cache: {} row {} in '{}' fails its checksum; deleting it", table.name, key, path.string());
        try {
          // Only the row as it was read: another process may have stored a good one since.
          detail::write_transaction(db, options.busy_timeout,
                                    [&] { Statement(db, table.delete_sql).bind(1, key).bind(2, stored_checksum).run(); });
        } catch (const SqliteError& e) {
          on_error(e, std::string("deleting a corrupt ") + table.name + " row");
        }
        return std::nullopt;
      }
      if (table.touch_sql != nullptr && !read_only) touch(table, key);
      ++hits;
      return payload;
    } catch (const SqliteError& e) {
      on_error(e, std::string("loading a ") + table.name);
      ++misses;
      return std::nullopt;
    }
  }

  // Best effort: last_used_at is for a future eviction policy, not worth waiting for another
  // process's write lock (the busy timeout is dropped to zero for this one statement).
  void touch(const Table& table, const std::string& key) {
    try {
      db.set_busy_timeout(0);
      Statement(db, table.touch_sql).bind(1, key).bind(2, unix_now()).run();
    } catch (const SqliteError& e) {
      log::debug("denox cache: updating last_used_at skipped: {}", e.what());
    }
    try {
      db.set_busy_timeout(static_cast<int>(options.busy_timeout.count()));
    } catch (const SqliteError& e) {
      on_error(e, "restoring the busy timeout");
    }
  }

  bool store(const Table& table, const std::string& key, const std::string& key_text,
             std::span<const std::uint8_t> payload, std::uint64_t& stores, bool synced = false) {
    log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
    std::lock_guard lock(mutex);
    if (!db || read_only) {
      ++stats.write_failures;
      return false;
    }
    const std::string checksum = row_checksum(key, payload);
    try {
      if (always_synced && left_rollback_journal()) {
        log::warn("denox cache: '{}' lies on a network file system and another process switched it back to SQLite's write-ahead log "
                  "(an older denox, or one running on the file server); not writing to it any more in this process",
                  path.string());
        db.close();
        users = {};
        disabled_reason = "another process switched the cache on a network file system back to its write-ahead log, unsafe there";
        ++stats.write_failures;
        return false;
      }
      // In WAL mode FULL syncs the log at this commit; the log is appended in order, so the
      // sync covers every earlier commit too. NORMAL comes back even when the write fails (or
      // at a later store, where it cannot).
      synced = synced && !always_synced;
      if (!synced && full_left_on) {  // (only a synced store sets it, never with always_synced)
        db.exec("PRAGMA synchronous=NORMAL");
        full_left_on = false;
      }
      if (synced) db.exec("PRAGMA synchronous=FULL");
      struct BackToNormal {
        Impl& impl;
        bool on;
        ~BackToNormal() {
          if (!on) return;
          try {
            impl.db.exec("PRAGMA synchronous=NORMAL");
            impl.full_left_on = false;
          } catch (...) {
            impl.full_left_on = true;
          }
        }
      } back_to_normal{*this, synced};
      detail::write_transaction(db, options.busy_timeout, [&] {
        Statement insert(db, table.insert_sql);
        insert.bind(1, key).bind(2, key_text).bind_blob(3, payload.data(), payload.size());
        insert.bind(4, checksum).bind(5, unix_now());
        insert.run();
      });
      ++stores;
      return true;
    } catch (const SqliteError& e) {
      ++stats.write_failures;
      if (e.is_corruption() || !write_failure_logged) {
        on_error(e, std::string("storing a ") + table.name);
      } else {
        // Disk full tends to repeat for every store of a compile; warn once, then quietly.
        log::debug("denox cache: storing a {} failed: {}", table.name, e.what());
      }
      write_failure_logged = true;
      return false;
    }
  }
};

PlanCache::PlanCache() : impl_(std::make_unique<Impl>()) { impl_->disabled_reason = "caching is off"; }
PlanCache::~PlanCache() = default;
PlanCache::PlanCache(PlanCache&&) noexcept = default;
PlanCache& PlanCache::operator=(PlanCache&&) noexcept = default;

namespace {

// Kept absolute: SQLite resolves a relative path once, at open, but the lock file beside it
// (users and liveness locks, crash-journal slots) is opened again later by name, and a chdir
// in between would make those another file's.
fs::path absolute_path(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  return ec ? path : absolute;
}

}  // namespace

PlanCache PlanCache::open(const fs::path& given, const CacheOpenOptions& options) {
  if (given.empty()) return disabled("no cache path");
  const fs::path path = absolute_path(given);
  auto opened = detail::open_cache_file(path, options);
  PlanCache cache;
  cache.impl_->options = options;
  cache.impl_->recovery = std::move(opened.recovery);
  if (!opened.db) {
    cache.impl_->disabled_reason = std::move(opened.disabled_reason);
    return cache;
  }
  cache.impl_->db = std::move(opened.db);
  cache.impl_->users = std::move(opened.users);
  cache.impl_->always_synced = opened.always_synced;
  cache.impl_->path = path;
  cache.impl_->disabled_reason.clear();
  return cache;
}

PlanCache PlanCache::open_read_only(const fs::path& given, const CacheOpenOptions& options) {
  const fs::path path = absolute_path(given);
  PlanCache cache;
  cache.impl_->db = detail::open_existing_cache(path, detail::OpenMode::Immutable, options.verify_on_open, options.busy_timeout);
  cache.impl_->options = options;
  cache.impl_->path = path;
  cache.impl_->read_only = true;
  cache.impl_->disabled_reason.clear();
  return cache;
}

PlanCache PlanCache::disabled(std::string reason) {
  PlanCache cache;
  cache.impl_->disabled_reason = std::move(reason);
  return cache;
}

fs::path PlanCache::default_path() {
  // Empty variables count as unset (as the XDG spec says for XDG_CACHE_HOME), so
  // `DENOX_CACHE_DIR= denox ...` does not put a cache into the working directory.
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (const std::string dir = env("DENOX_CACHE_DIR"); !dir.empty()) return fs::path(dir) / "cache.sqlite3";
  // XDG: a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "denox" / "cache.sqlite3";
  std::string home = env("HOME");
  if (home.empty()) {
    // Services and some containers run without HOME; the passwd entry still knows it.
    long size = sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
    passwd entry{};
    passwd* result = nullptr;
    if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &result) == 0 && result != nullptr &&
        result->pw_dir != nullptr)
      home = result->pw_dir;
  }
  if (home.empty()) return {};
  return fs::path(home) / ".cache" / "denox" / "cache.sqlite3";
}

bool PlanCache::enabled() const {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  return static_cast<bool>(impl_->db);
}

fs::path PlanCache::path() const {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  return impl_->db ? impl_->path : fs::path();
}

std::string PlanCache::disabled_reason() const {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  return impl_->db ? std::string() : impl_->disabled_reason;
}

std::optional<CacheRecovery> PlanCache::recovery() const {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  return impl_->recovery;
}

bool PlanCache::read_only() const {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  return impl_->read_only;
}

std::optional<std::vector<std::uint8_t>> PlanCache::load_plan(const CacheKey& key) {
  auto& s = impl_->stats;
  return impl_->load(kPlans, key.digest(), key.canonical(), s.plan_hits, s.plan_misses);
}

bool PlanCache::store_plan(const CacheKey& key, std::span<const std::uint8_t> plan) {
  return impl_->store(kPlans, key.digest(), key.canonical(), plan, impl_->stats.plan_stores);
}

std::vector<CacheKey> PlanCache::plan_keys_for_model(std::string_view model_hash) {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  std::vector<CacheKey> keys;
  if (!impl_->db) return keys;
  try {
    Statement select(impl_->db, "SELECT key_text FROM plans ORDER BY key_digest");
    while (select.step()) {
      auto key = CacheKey::parse(select.column_text(0));
      if (key && key->model_hash == model_hash) keys.push_back(std::move(*key));
    }
  } catch (const SqliteError& e) {
    impl_->on_error(e, "listing the plans of a model");
  }
  return keys;
}

std::optional<std::vector<std::uint32_t>> PlanCache::load_spirv(std::string_view source_hash) {
  const std::string key(source_hash);
  auto& s = impl_->stats;
  auto bytes = impl_->load(kSpirv, key, key, s.spirv_hits, s.spirv_misses);
  if (!bytes) return std::nullopt;
  if (bytes->size() % sizeof(std::uint32_t) != 0) {
    // Only a checksummed row gets here, so this means a writer stored a non-word payload.
    log::warn("denox cache: SPIR-V row {} is not a whole number of words; ignoring it", key);
    log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
    std::lock_guard lock(impl_->mutex);
    --s.spirv_hits;
    ++s.spirv_misses;
    return std::nullopt;
  }
  // Words are stored in host byte order: a cache is specific to its machine's GPU anyway.
  std::vector<std::uint32_t> words(bytes->size() / sizeof(std::uint32_t));
  if (!words.empty()) std::memcpy(words.data(), bytes->data(), bytes->size());
  return words;
}

bool PlanCache::store_spirv(std::string_view source_hash, std::span<const std::uint32_t> words) {
  const std::string key(source_hash);
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(words.data()), words.size_bytes());
  return impl_->store(kSpirv, key, key, bytes, impl_->stats.spirv_stores);
}

std::optional<std::vector<std::uint8_t>> PlanCache::load_pipeline_cache(const DeviceIdentity& device) {
  auto& s = impl_->stats;
  return impl_->load(kPipelineCaches, device.digest(), device.canonical(), s.pipeline_cache_hits,
                     s.pipeline_cache_misses);
}

bool PlanCache::store_pipeline_cache(const DeviceIdentity& device, std::span<const std::uint8_t> data) {
  return impl_->store(kPipelineCaches, device.digest(), device.canonical(), data, impl_->stats.pipeline_cache_stores);
}

std::optional<std::string> PlanCache::load_measurement(const std::string& key_text) {
  auto& s = impl_->stats;
  auto bytes = impl_->load(kMeasurements, ContentHasher().field(key_text).hex(), key_text, s.measurement_hits, s.measurement_misses);
  if (!bytes) return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

bool PlanCache::store_measurement(const std::string& key_text, std::string_view result, Durability durability) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(result.data());
  return impl_->store(kMeasurements, ContentHasher().field(key_text).hex(), key_text, std::span<const std::uint8_t>(p, result.size()),
                      impl_->stats.measurement_stores, durability == Durability::Synced);
}

CacheStats PlanCache::stats() const {
  log::DeferScope defer;  // (lines logged under the lock reach a callback after it)
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

}  // namespace denox::cache
