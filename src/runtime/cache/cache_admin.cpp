#include "runtime/cache/cache_admin.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <ctime>
#include <map>
#include <set>

#include "common/error.hpp"
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

// An existing denox cache of this schema, opened for reading and writing. Unlike
// PlanCache::open, a file that is not one is an error here (a tool must not move a file the
// user named aside).
Db open_existing(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(ErrorCode::Io, "'" + path.string() + "' is not a file");
  try {
    Db db = Db::open(path.string());
    db.set_busy_timeout(static_cast<int>(kTimeout.count()));
    if (detail::query_int(db, "PRAGMA application_id") != PlanCache::kApplicationId)
      fail(ErrorCode::Io, "'" + path.string() + "' is not a denox cache");
    const std::string version = detail::query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (version != std::to_string(PlanCache::kSchemaVersion))
      fail(ErrorCode::Io, "'" + path.string() + "' has cache schema version " + version + ", this denox reads " +
                              std::to_string(PlanCache::kSchemaVersion));
    return db;
  } catch (const detail::SqliteError& e) {
    fail(ErrorCode::Io, "'" + path.string() + "': " + e.what());
  }
}

// A writable cache: PlanCache::open's checks, creation and repair (so `out` may be new).
Db open_or_create(const fs::path& path) {
  auto opened = detail::open_cache_file(path, CacheOpenOptions{});
  if (!opened.db) fail(ErrorCode::Io, "cannot write the cache '" + path.string() + "': " + opened.disabled_reason);
  return std::move(opened.db);
}

// The fields of a canonical key text (cache_key.cpp): "name=<len>:<bytes>\n" for strings,
// "name=value\n" otherwise.
std::map<std::string, std::string> parse_key_text(const std::string& text) {
  std::map<std::string, std::string> fields;
  size_t pos = text.find('\n');
  pos = pos == std::string::npos ? text.size() : pos + 1;
  while (pos < text.size()) {
    const size_t eq = text.find('=', pos);
    if (eq == std::string::npos) break;
    const std::string name = text.substr(pos, eq - pos);
    size_t digits = eq + 1;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits > eq + 1 && digits < text.size() && text[digits] == ':') {
      const size_t length = std::stoull(text.substr(eq + 1, digits - eq - 1));
      fields[name] = text.substr(digits + 1, length);
      pos = digits + 1 + length + 1;
    } else {
      const size_t end = text.find('\n', eq);
      fields[name] = text.substr(eq + 1, end == std::string::npos ? std::string::npos : end - eq - 1);
      pos = end == std::string::npos ? text.size() : end + 1;
    }
  }
  return fields;
}

// The device part of a plan key, as DeviceIdentity::canonical() writes it, for its digest.
std::string device_canonical(const std::map<std::string, std::string>& f) {
  auto get = [&](const char* k) { auto it = f.find(k); return it == f.end() ? std::string() : it->second; };
  const std::string name = get("driver_name");
  return "denox-device-key/1\nvendor_id=" + get("vendor_id") + "\ndevice_id=" + get("device_id") +
         "\npipeline_cache_uuid=" + get("pipeline_cache_uuid") + "\ndriver_version=" + get("driver_version") +
         "\ndriver_name=" + std::to_string(name.size()) + ":" + name + "\n";
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
    r.summary.intact = content_hash_hex(r.key_text) == r.summary.key_digest &&
                       detail::row_checksum(r.summary.key_digest, r.plan) == r.checksum;
    const auto f = parse_key_text(r.key_text);
    auto get = [&](const char* k) { auto it = f.find(k); return it == f.end() ? std::string() : it->second; };
    r.summary.model_hash = get("model_hash");
    r.summary.denox_version = get("denox_version");
    r.summary.options = get("options");
    r.summary.device = "vendor " + get("vendor_id") + " device " + get("device_id") + " driver '" + get("driver_name") + "' " +
                       get("driver_version");
    r.summary.device_digest = content_hash_hex(device_canonical(f));
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
        spdlog::warn("denox cache: skipping plan {} of '{}': its checksum or key digest does not match", r.summary.key_digest, from.string());
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
        spdlog::warn("denox cache: skipping pipeline cache {} of '{}': its checksum does not match", r.device_key, from.string());
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
  Db db = open_existing(cache);
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
    Db db = open_existing(cache);
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
  Db dst = open_or_create(out);
  return with_sqlite_errors(out, [&] { return write_rows(dst, plans, spirv, pipelines, cache); });
}

size_t import_plans(const fs::path& from, const fs::path& cache) {
  std::vector<PlanRow> plans;
  std::vector<SpirvRow> spirv;
  std::vector<PipelineRow> pipelines;
  {
    Db src = open_existing(from);
    with_sqlite_errors(from, [&] {
      plans = read_plans(src);
      spirv = read_spirv(src);
      pipelines = read_pipeline_caches(src);
      return 0;
    });
  }
  Db dst = open_or_create(cache);
  return with_sqlite_errors(cache, [&] { return write_rows(dst, plans, spirv, pipelines, from); });
}

void clear_cache(const fs::path& cache) {
  Db db = open_existing(cache);
  with_sqlite_errors(cache, [&] {
    detail::write_transaction(db, kTimeout, [&] { db.exec("DELETE FROM plans; DELETE FROM spirv; DELETE FROM pipeline_caches; DELETE FROM measurements;"); });
    db.exec("VACUUM");
    return 0;
  });
}

}  // namespace denox::cache
