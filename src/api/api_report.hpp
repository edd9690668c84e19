// The JSON of denox_model_schedule_report: how a model's plan was made.
#pragma once

#include <string>

#include "api/api_plan_check.hpp"
#include "compiler/schedule/schedule.hpp"

namespace denox::api {

struct CompileTimes {
  double import_ms = 0, lower_ms = 0, shaders_ms = 0, total_ms = 0;
};

// `report` is null for a plan from the cache or a plan file ("from_cache": true). `check`: a tuned
// plan's check against the heuristic one ("check": both times and the plan kept, or
// {"timed": false} where the two plans are the same).
std::string schedule_report_json(const autotune::ScheduleReport* report, const CompileTimes& times, const std::string& tuning,
                                 size_t dispatches, const PlanCheck* check = nullptr);

}  // namespace denox::api
