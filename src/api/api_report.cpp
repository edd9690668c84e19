#include "api/api_report.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace denox::api {

namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string schedule_report_json(const autotune::ScheduleReport* r, const CompileTimes& t, const std::string& tuning, size_t dispatches,
                                 const PlanCheck* check) {
  nlohmann::ordered_json j;
  j["from_cache"] = r == nullptr;
  j["tuning"] = tuning;
  j["dispatches"] = dispatches;
  nlohmann::ordered_json time;
  time["import"] = number(t.import_ms);
  if (r) {
    j["space"] = r->space;
    j["tune_extent"] = std::to_string(r->width) + "x" + std::to_string(r->height);
    j["implementations"] = r->implementations;
    j["structures"] = r->structures;
    j["structures_kept"] = r->structures_kept;
    j["edges"] = r->edges;
    j["measured_edges"] = r->measured_edges;
    j["cached_edges"] = r->cached_edges;
    j["failed_edges"] = r->failed_edges;
    j["same_edges"] = r->same_edges;
    j["timed_again_edges"] = r->timed_again_edges;
    j["select_states"] = r->select_states;
    if (r->pipelines) {  // measured plans (share_pipelines)
      j["pipelines"] = r->pipelines;
      j["pipeline_swaps"] = nlohmann::ordered_json::array();
      for (const auto& s : r->pipeline_swaps)
        j["pipeline_swaps"].push_back({{"step", s.step}, {"from", s.from}, {"to", s.to}, {"measured_extra_ms", number(s.measured_extra_ms)},
                                       {"pipelines_before", s.pipelines_before}, {"pipelines_after", s.pipelines_after}});
    }
    j["total_ms"] = number(r->predicted_ms);
    time["enumerate"] = number(r->enumerate_ms);
    time["prune"] = number(r->prune_ms);
    time["measure"] = number(r->measure_ms);
    time["select"] = number(r->select_ms);
  } else {
    j["measured_edges"] = 0;
    j["cached_edges"] = 0;
  }
  time["lower"] = number(t.lower_ms);
  time["shaders"] = number(t.shaders_ms);
  time["total"] = number(t.total_ms);
  j["time_ms"] = time;
  if (check) {
    nlohmann::ordered_json c;
    c["timed"] = check->timed;
    if (check->timed) {
      c["tuned_ms"] = number(check->tuned_ms);
      c["heuristic_ms"] = number(check->heuristic_ms);
      c["kept"] = check->kept_heuristic ? "heuristic" : "tuned";
    }
    j["check"] = std::move(c);
  }
  if (r) {
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const auto& s : r->steps) {
      nlohmann::ordered_json step;
      step["name"] = s.name;
      step["pattern"] = s.pattern;
      step["family"] = s.family;
      step["config"] = s.config;
      step["inputs"] = s.inputs;
      step["output"] = s.output;
      step["dispatches"] = s.dispatches;
      step["ms"] = number(s.ms);
      step["measured"] = s.measured;
      steps.push_back(std::move(step));
    }
    j["schedule"] = std::move(steps);
  }
  // Node names come from the model: bytes that are not UTF-8 become U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace denox::api
