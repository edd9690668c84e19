// The JSON of denox_model_schedule_report: how a model's plan was made.
#pragma once

#include <string>

#include "compiler/schedule/schedule.hpp"

namespace denox::api {

struct CompileTimes {
  double import_ms = 0, lower_ms = 0, shaders_ms = 0, total_ms = 0;
};

// `report` is null for a plan from the cache or a plan file ("from_cache": true).
std::string schedule_report_json(const autotune::ScheduleReport* report, const CompileTimes& times, const std::string& tuning,
                                 size_t dispatches);

}  // namespace denox::api
