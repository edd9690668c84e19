// `denox cache list|export|import|clear`: what a cache file holds, shipping the plans of one
// model (optionally for one device) as a file a game puts next to its assets (and names in
// denox_context_options::shipped_cache_path), merging such a file into a cache, and emptying
// one. --cache picks the file (default: the user's cache); `list FILE` reads any cache file,
// a read-only shipped one included, without writing anything.
#include <cstdio>
#include <ctime>

#include "cli/commands.hpp"
#include "cli/print_json.hpp"
#include "runtime/cache/cache_admin.hpp"
#include "runtime/cache/plan_cache.hpp"

namespace denox::cli {
namespace {

struct CacheOptions {
  std::string cache, file, model_hash, device;
  bool json = false;
};

std::filesystem::path cache_path(const CacheOptions& o) {
  if (!o.cache.empty()) return o.cache;
  const auto p = cache::PlanCache::default_path();
  if (p.empty()) throw CLI::ValidationError("--cache", "no home directory: give --cache PATH");
  return p;
}

std::string date(std::int64_t t) {
  char buf[32];
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int list(const CacheOptions& o) {
  const std::filesystem::path path = o.file.empty() ? cache_path(o) : std::filesystem::path(o.file);
  const auto c = cache::list_cache(path);
  if (o.json) {
    nlohmann::ordered_json plans = nlohmann::ordered_json::array();
    for (const auto& p : c.plans)
      plans.push_back({{"key", p.key_digest},
                       {"model_hash", p.model_hash},
                       {"device", p.device},
                       {"device_digest", p.device_digest},
                       {"options", p.options},
                       {"bytes", p.bytes},
                       {"intact", p.intact}});
    const nlohmann::ordered_json j = {{"path", path.string()},
                                      {"plans", std::move(plans)},
                                      {"spirv_rows", c.spirv_rows},
                                      {"pipeline_cache_rows", c.pipeline_cache_rows},
                                      {"measurement_rows", c.measurement_rows}};
    print_json(j);
    return 0;
  }
  std::printf("%s\n%zu plan(s), %llu SPIR-V module(s) (%llu KiB), %llu pipeline cache(s) (%llu KiB), %llu measurement(s)\n",
              path.string().c_str(), c.plans.size(), static_cast<unsigned long long>(c.spirv_rows),
              static_cast<unsigned long long>(c.spirv_bytes / 1024), static_cast<unsigned long long>(c.pipeline_cache_rows),
              static_cast<unsigned long long>(c.pipeline_cache_bytes / 1024), static_cast<unsigned long long>(c.measurement_rows));
  if (c.plans.empty()) return 0;
  std::printf("\n%-16s %-12s %-44s %-28s %8s %-16s %s\n", "model hash", "device", "device key", "options", "KiB", "last used (UTC)", "");
  for (const auto& p : c.plans)
    std::printf("%-16.16s %-12.12s %-44.44s %-28.28s %8llu %-16s %s\n", p.model_hash.c_str(), p.device_digest.c_str(), p.device.c_str(),
                p.options.c_str(), static_cast<unsigned long long>(p.bytes / 1024), date(p.last_used_at).c_str(),
                p.intact ? "" : "DAMAGED");
  return 0;
}

}  // namespace

Action register_cache(CLI::App& app) {
  auto* cmd = app.add_subcommand("cache", "List, export, import or clear a denox cache file");
  cmd->require_subcommand(1);
  auto o = std::make_shared<CacheOptions>();
  cmd->add_option("--cache", o->cache, "The cache file (default: $DENOX_CACHE_DIR/cache.sqlite3 or ~/.cache/denox/cache.sqlite3)");
  auto* ls = cmd->add_subcommand("list", "What the cache holds: one line per plan (model hash, device, options)");
  ls->add_option("file", o->file, "The cache file to list instead of --cache (e.g. a shipped, read-only one)");
  ls->add_flag("--json", o->json, "Print one JSON object");
  auto* ex = cmd->add_subcommand("export", "Write the plans of one model (optionally one device) to a new cache file to ship");
  ex->add_option("out", o->file, "The cache file to write (created, or merged into)")->required();
  ex->add_option("--model-hash", o->model_hash, "Model hash (or a prefix) as `denox cache list` prints it; default: all");
  ex->add_option("--device", o->device, "Device digest (or a prefix) as `denox cache list` prints it; default: all");
  auto* im = cmd->add_subcommand("import", "Copy every intact plan of a cache file (e.g. one a game ships) into the cache");
  im->add_option("file", o->file, "The cache file to read")->required()->check(CLI::ExistingFile);
  auto* cl = cmd->add_subcommand("clear", "Delete everything in the cache file");
  return [o, ls, ex, im, cl] {
    if (ls->parsed()) return list(*o);
    if (ex->parsed()) {
      const size_t n = cache::export_plans(cache_path(*o), o->file, {o->model_hash, o->device});
      std::printf("exported %zu plan(s) to %s\n", n, o->file.c_str());
      return n > 0 ? 0 : 1;
    }
    if (im->parsed()) {
      const size_t n = cache::import_plans(o->file, cache_path(*o));
      std::printf("imported %zu plan(s) into %s\n", n, cache_path(*o).string().c_str());
      return 0;
    }
    if (cl->parsed()) {
      cache::clear_cache(cache_path(*o));
      std::printf("cleared %s\n", cache_path(*o).string().c_str());
      return 0;
    }
    return 2;
  };
}

}  // namespace denox::cli
