#include "runtime/cache/cache_admin.hpp"


#include <unistd.h>

#include <ctime>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "common/log.hpp"
#include "runtime/cache/cache_key.hpp"
#include "runtime/cache/cache_open.hpp"
#include "runtime/cache/content_hash.hpp"
#include "runtime/cache/plan_cache.hpp"
#include "runtime/cache/sqlite_db.hpp"

namespace denox::cache {

namespace fs = std::filesystem;
using detail::Db;
using detail::Statement;

namespace {

constexpr std::chrono::milliseconds kTimeout{10000};

// An existing denox cache of this schema. Unlike PlanCache::open, a file that is not one is an
// error here (a tool must not move a file the user named aside). Reading never writes the
// file; a file we may not write, or one in a directory we may not write (a game's install, a
// read-only mount), is opened immutable so that nothing (-wal, -shm) is created beside it
// either, and SQLite's WAL, which needs those files, is not required.
enum class Access { Read, Write };
Db open_existing(const fs::path& path, Access access) {
  if (access == Access::Write) return detail::open_existing_cache(path, detail::OpenMode::ReadWriteCreate, false, kTimeout);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const bool nobody_writes = ::access(path.c_str(), W_OK) != 0 || ::access(dir.c_str(), W_OK) != 0;
  return detail::open_existing_cache(path, nobody_writes ? detail::OpenMode::Immutable : detail::OpenMode::ReadOnly, false, kTimeout);
}

// A writable cache: an existing file must be a denox cache of this schema (a tool never moves
// a file the user named aside: `export model.onnx` by mistake fails and leaves it as it was);
// a new one is created with PlanCache::open's checks.
Db open_or_create(const fs::path& path) {
  std::error_code ec;
  const fs::file_type type = fs::symlink_status(path, ec).type();
  if (type != fs::file_type::not_found && type != fs::file_type::none) return open_existing(path, Access::Write);
  auto opened = detail::open_cache_file(path, CacheOpenOptions{});
  if (!opened.db) fail(ErrorCode::Io, "cannot write the cache '" + path.string() + "': " + opened.disabled_reason);
  return std::move(opened.db);
}

struct PlanRow {
  PlanSummary summary;
  std::string key_text, checksum;
  std::vector<std::uint8_t> plan;
};

std::vector<PlanRow> read_plans(const Db& db) {
  std::vector<PlanRow> rows;
  Statement select(db, "SELECT key_digest, key_text, plan, checksum, created_at, last_used_at FROM plans ORDER BY created_at");
  while (select.step()) {
    PlanRow r;
    r.summary.key_digest = select.column_text(0);
    r.key_text = select.column_text(1);
    const auto blob = select.column_blob(2);
    r.plan.assign(blob.begin(), blob.end());
    r.checksum = select.column_text(3);
    r.summary.created_at = select.column_int(4);
    r.summary.last_used_at = select.column_int(5);
    r.summary.bytes = r.plan.size();
    const std::optional<CacheKey> key = CacheKey::parse(r.key_text);
    r.summary.intact = key && content_hash_hex(r.key_text) == r.summary.key_digest &&
                       detail::row_checksum(r.summary.key_digest, r.plan) == r.checksum;
    if (key) {
      r.summary.model_hash = key->model_hash;
      r.summary.denox_version = key->denox_version;
      r.summary.options = key->options;
      r.summary.device = key->device.describe();
      r.summary.device_digest = key->device.digest();
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

struct PipelineRow {
  std::string device_key, device_text, checksum;
  std::vector<std::uint8_t> data;
  bool intact = false;
};

std::vector<PipelineRow> read_pipeline_caches(const Db& db) {
  std::vector<PipelineRow> rows;
  Statement select(db, "SELECT device_key, device_text, data, checksum FROM pipeline_caches");
  while (select.step()) {
    PipelineRow r;
    r.device_key = select.column_text(0);
    r.device_text = select.column_text(1);
    const auto blob = select.column_blob(2);
    r.data.assign(blob.begin(), blob.end());
    r.checksum = select.column_text(3);
    r.intact = content_hash_hex(r.device_text) == r.device_key && detail::row_checksum(r.device_key, r.data) == r.checksum;
    rows.push_back(std::move(r));
  }
  return rows;
}

struct SpirvRow {
  std::string source_hash, checksum;
  std::vector<std::uint8_t> words;
  bool intact = false;
};

// Every SPIR-V module: content-addressed and small, and the runtime's io adapters are compiled
// through this table, so a shipped cache that carries them compiles nothing at all.
std::vector<SpirvRow> read_spirv(const Db& db) {
  std::vector<SpirvRow> rows;
  Statement select(db, "SELECT source_hash, words, checksum FROM spirv");
  while (select.step()) {
    SpirvRow r;
    r.source_hash = select.column_text(0);
    const auto blob = select.column_blob(1);
    r.words.assign(blob.begin(), blob.end());
    r.checksum = select.column_text(2);
    r.intact = detail::row_checksum(r.source_hash, r.words) == r.checksum;
    rows.push_back(std::move(r));
  }
  return rows;
}

// Writes plan, SPIR-V and pipeline rows into `db` in one transaction; skips (and logs) damaged
// rows.
size_t write_rows(Db& db, const std::vector<PlanRow>& plans, const std::vector<SpirvRow>& spirv,
                  const std::vector<PipelineRow>& pipelines, const fs::path& from) {
  size_t written = 0;
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  detail::write_transaction(db, kTimeout, [&] {
    written = 0;
    for (const PlanRow& r : plans) {
      if (!r.summary.intact) {
        log::warn("denox cache: skipping plan {} of '{}': its checksum or key digest does not match", r.summary.key_digest, from.string());
        continue;
      }
      Statement insert(db, "INSERT OR REPLACE INTO plans (key_digest, key_text, plan, checksum, created_at, last_used_at) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
      insert.bind(1, r.summary.key_digest).bind(2, r.key_text).bind_blob(3, r.plan.data(), r.plan.size()).bind(4, r.checksum);
      insert.bind(5, r.summary.created_at).bind(6, now).run();
      ++written;
    }
    for (const SpirvRow& r : spirv) {
      if (!r.intact) continue;
      Statement insert(db, "INSERT OR REPLACE INTO spirv (source_hash, words, checksum, created_at) VALUES (?1, ?2, ?3, ?4)");
      insert.bind(1, r.source_hash).bind_blob(2, r.words.data(), r.words.size()).bind(3, r.checksum).bind(4, now).run();
    }
    for (const PipelineRow& r : pipelines) {
      if (!r.intact) {
        log::warn("denox cache: skipping pipeline cache {} of '{}': its checksum does not match", r.device_key, from.string());
        continue;
      }
      Statement insert(db, "INSERT OR REPLACE INTO pipeline_caches (device_key, device_text, data, checksum, updated_at) "
                           "VALUES (?1, ?2, ?3, ?4, ?5)");
      insert.bind(1, r.device_key).bind(2, r.device_text).bind_blob(3, r.data.data(), r.data.size()).bind(4, r.checksum);
      insert.bind(5, now).run();
    }
  });
  return written;
}

template <typename Fn>
auto with_sqlite_errors(const fs::path& path, Fn&& fn) {
  try {
    return fn();
  } catch (const detail::SqliteError& e) {
    fail(ErrorCode::Io, "'" + path.string() + "': " + e.what());
  }
}

}  // namespace

CacheContents list_cache(const fs::path& cache) {
  Db db = open_existing(cache, Access::Read);
  return with_sqlite_errors(cache, [&] {
    CacheContents c;
    for (auto& r : read_plans(db)) c.plans.push_back(std::move(r.summary));
    c.spirv_rows = static_cast<std::uint64_t>(detail::query_int(db, "SELECT COUNT(*) FROM spirv"));
    c.spirv_bytes = static_cast<std::uint64_t>(detail::query_int(db, "SELECT COALESCE(SUM(LENGTH(words)), 0) FROM spirv"));
    c.pipeline_cache_rows = static_cast<std::uint64_t>(detail::query_int(db, "SELECT COUNT(*) FROM pipeline_caches"));
    c.measurement_rows = static_cast<std::uint64_t>(detail::query_int(db, "SELECT COUNT(*) FROM measurements"));
    c.pipeline_cache_bytes =
        static_cast<std::uint64_t>(detail::query_int(db, "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM pipeline_caches"));
    return c;
  });
}

size_t export_plans(const fs::path& cache, const fs::path& out, const ExportFilter& filter) {
  std::vector<PlanRow> plans;
  std::vector<SpirvRow> spirv;
  std::vector<PipelineRow> pipelines;
  {
    Db db = open_existing(cache, Access::Read);
    with_sqlite_errors(cache, [&] {
      std::set<std::string> devices;
      for (auto& r : read_plans(db)) {
        if (r.summary.model_hash.rfind(filter.model_hash_prefix, 0) != 0) continue;
        if (r.summary.device_digest.rfind(filter.device_digest_prefix, 0) != 0) continue;
        devices.insert(r.summary.device_digest);
        plans.push_back(std::move(r));
      }
      for (auto& p : read_pipeline_caches(db))
        if (devices.count(p.device_key)) pipelines.push_back(std::move(p));
      if (!plans.empty()) spirv = read_spirv(db);
      return 0;
    });
  }
  std::optional<detail::UsersLock> users;  // declared first: released after the connection closes
  Db dst = open_or_create(out);
  users.emplace(detail::UsersLock::shared(out));  // the file is not set aside under the tool
  return with_sqlite_errors(out, [&] {
    const size_t written = write_rows(dst, plans, spirv, pipelines, cache);
    // A file to ship is one self-contained file: leaving WAL mode checkpoints the log into it
    // and makes every SQLite (also one from before 3.22, which cannot read a WAL file
    // read-only) read it without -wal/-shm files. Refused if another connection has `out`
    // open; then the file stays in WAL mode, and its log is folded in when that connection
    // closes (a shipped copy with a non-empty -wal beside it is refused, naming the log).
    try {
      const std::string mode = detail::query_text(dst, "PRAGMA journal_mode=DELETE");
      if (mode != "delete") log::warn("denox cache: '{}' stays in journal mode '{}'", out.string(), mode);
    } catch (const detail::SqliteError& e) {
      log::warn("denox cache: '{}' stays in WAL mode while another process has it open ({}): ship it after that process "
                   "closes it", out.string(), e.what());
    }
    return written;
  });
}

size_t import_plans(const fs::path& from, const fs::path& cache) {
  std::vector<PlanRow> plans;
  std::vector<SpirvRow> spirv;
  std::vector<PipelineRow> pipelines;
  {
    Db src = open_existing(from, Access::Read);
    with_sqlite_errors(from, [&] {
      plans = read_plans(src);
      spirv = read_spirv(src);
      pipelines = read_pipeline_caches(src);
      return 0;
    });
  }
  std::optional<detail::UsersLock> users;  // declared first: released after the connection closes
  Db dst = open_or_create(cache);
  users.emplace(detail::UsersLock::shared(cache));  // the file is not set aside under the tool
  return with_sqlite_errors(cache, [&] { return write_rows(dst, plans, spirv, pipelines, from); });
}

void clear_cache(const fs::path& cache) {
  Db db = open_existing(cache, Access::Write);
  with_sqlite_errors(cache, [&] {
    detail::write_transaction(db, kTimeout, [&] { db.exec("DELETE FROM plans; DELETE FROM spirv; DELETE FROM pipeline_caches; DELETE FROM measurements;"); });
    // The rows are gone once the DELETE commits; VACUUM only gives the pages back to the file
    // system and needs room for a copy, so a full disk does not turn the clear into a failure.
    try {
      db.exec("VACUUM");
    } catch (const detail::SqliteError& e) {
      log::warn("denox cache: '{}' is cleared, but VACUUM failed ({}): the file keeps its size until the next clear",
                   cache.string(), e.what());
    }
    return 0;
  });
}

}  // namespace denox::cache
