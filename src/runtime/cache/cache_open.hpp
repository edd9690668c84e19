// Opening the cache file: validation, setting damaged files aside, schema creation. Private to
// the cache module; PlanCache::open() is the public entry.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "runtime/cache/plan_cache.hpp"
#include "runtime/cache/sqlite_db.hpp"

namespace denox::cache::detail {

struct OpenedCache {
  Db db;                                  // open and ready; empty when disabled
  std::string disabled_reason;            // set when db is empty
  std::optional<CacheRecovery> recovery;  // set when a previous file was moved aside
};

// Never throws (except std::bad_alloc): every failure ends in a disabled result with a
// warning logged.
OpenedCache open_cache_file(const std::filesystem::path& path, const CacheOpenOptions& options);

}  // namespace denox::cache::detail
