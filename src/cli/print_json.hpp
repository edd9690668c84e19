#pragma once
// One JSON object on stdout for the CLI's --json flags. nlohmann escapes what model and cache
// paths, device names and cache rows may hold (quotes, backslashes); bytes that are not UTF-8 (a
// Linux path may have them) become U+FFFD instead of throwing mid-output. ordered_json keeps the
// keys in the order each command lists them.
#include <cstdio>

#include <nlohmann/json.hpp>

namespace denox::cli {

inline void print_json(const nlohmann::ordered_json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

// What the load cost in compiles and cache hits: the same keys in every command that loads a
// model (`run --json`, `bench --json`), in denox_stats' order. (A template so that this header
// need not include denox.h, which must come after volk in the CLI's files.)
template <class DenoxStats> void add_load_counters(nlohmann::ordered_json& j, const DenoxStats& st) {
  j["plans_compiled"] = st.plans_compiled;
  j["plan_cache_hits"] = st.plan_cache_hits;
  j["shaders_compiled"] = st.shaders_compiled;
  j["shader_cache_hits"] = st.shader_cache_hits;
  j["pipeline_cache_hits"] = st.pipeline_cache_hits;
  j["shipped_plan_hits"] = st.shipped_plan_hits;
  j["shipped_shader_hits"] = st.shipped_shader_hits;
  j["shipped_pipeline_cache_hits"] = st.shipped_pipeline_cache_hits;
}

}  // namespace denox::cli
