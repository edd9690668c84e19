// Opening the cache file: validation, setting damaged files aside, schema creation. Private to
// the cache module; PlanCache::open() is the public entry.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <string>

#include "runtime/cache/plan_cache.hpp"
#include "runtime/cache/sqlite_db.hpp"

namespace denox::cache::detail {

// The checksum stored with every row. It covers the key too, so a payload that ended up under
// the wrong key (a tool that edited the file, a bug in a future migration) is caught like
// flipped bits are.
std::string row_checksum(std::string_view key, std::span<const std::uint8_t> payload);

struct OpenedCache {
  Db db;                                  // open and ready; empty when disabled
  std::string disabled_reason;            // set when db is empty
  std::optional<CacheRecovery> recovery;  // set when a previous file was moved aside
};

// Never throws (except std::bad_alloc): every failure ends in a disabled result with a
// warning logged.
OpenedCache open_cache_file(const std::filesystem::path& path, const CacheOpenOptions& options);

// Opens a denox cache that must already exist, for tools and for a shipped cache: nothing is
// created, repaired or moved aside (the file is not ours to fix). With OpenMode::Immutable no
// file is ever created beside it. Throws denox::Error (ErrorCode::Io) whose message starts
// with the quoted path and says why: it does not exist, cannot be read, is not a denox cache
// (not SQLite, another application's database, an empty database), has another schema
// version, or (quick_check) is damaged.
Db open_existing_cache(const std::filesystem::path& path, OpenMode mode, bool quick_check, std::chrono::milliseconds busy_timeout);

}  // namespace denox::cache::detail
