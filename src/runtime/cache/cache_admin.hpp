// Managing cache files from tools (`denox cache list|export|import|clear`): what a game ships is
// a cache file (or a plan file) holding the plans of its models for the GPUs it targets; an
// engine opens it next to the user's writable cache (denox_context_options::shipped_cache_path,
// LayeredCache). Every function opens its files itself and throws denox::Error (Io naming the
// path) when one is missing, unreadable, or not a denox cache of this schema version; rows
// whose checksum or key digest does not match are skipped with a warning, never copied. Files
// that are only read are opened read-only (see open_existing in cache_admin.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace denox::cache {

struct PlanSummary {
  std::string key_digest;
  std::string model_hash;
  std::string device;  // DeviceIdentity::describe(): "vendor 0x10de device 0x2330 driver 'NVIDIA' 0x91060400 uuid ..."
  std::string device_digest;
  std::string denox_version;
  std::string options;
  std::uint64_t bytes = 0;
  std::int64_t created_at = 0, last_used_at = 0;  // Unix time
  bool intact = false;                            // checksum and key digest match
};

struct CacheContents {
  std::vector<PlanSummary> plans;
  std::uint64_t spirv_rows = 0, spirv_bytes = 0;
  std::uint64_t pipeline_cache_rows = 0, pipeline_cache_bytes = 0;
  std::uint64_t measurement_rows = 0;  // autotuning measurements (not exported: per device)
};

CacheContents list_cache(const std::filesystem::path& cache);

// Which plans to export: those whose model hash starts with model_hash_prefix (empty: all) and,
// if device_digest_prefix is set, whose device digest starts with it.
struct ExportFilter {
  std::string model_hash_prefix;
  std::string device_digest_prefix;
};

// Writes the matching, intact plans (with every SPIR-V module and the pipeline caches of their
// devices) into `out`, a new or existing cache file, and leaves it in rollback-journal mode (one
// self-contained file to ship). Returns how many plans were written.
std::size_t export_plans(const std::filesystem::path& cache, const std::filesystem::path& out, const ExportFilter& filter);

// Copies every intact plan, SPIR-V module and pipeline cache of `from` into `cache` (created if
// missing);
// returns how many plans were copied. The same key replaces the old row.
std::size_t import_plans(const std::filesystem::path& from, const std::filesystem::path& cache);

// Deletes every row of every table (the file stays, empty).
void clear_cache(const std::filesystem::path& cache);

}  // namespace denox::cache
