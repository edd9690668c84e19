#include "api/api_plan_check.hpp"

#include <cstdlib>
#include <string>

#include "compiler/plan/plan_serialize.hpp"

namespace denox::api {

namespace {

const char* plan_check_hook() { return std::getenv("DENOX_TEST_PLAN_CHECK"); }

}  // namespace

bool plan_check_needed(const plan::Plan& tuned, const plan::Plan& heuristic) {
  return plan_check_hook() != nullptr || plan::serialize_plan(tuned) != plan::serialize_plan(heuristic);
}

PlanCheck check_tuned_plan(measure::DeviceMeasurer& measurer, const plan::Plan& tuned, const plan::Plan& heuristic, uint32_t width,
                           uint32_t height, uint32_t warm_ms) {
  // Interleaved, so that a clock or thermal drift during the four runs touches both plans alike.
  const double t1 = measurer.time_network(tuned, width, height, "the tuned plan", warm_ms);
  const double h1 = measurer.time_network(heuristic, width, height, "the heuristic plan", 0);
  const double t2 = measurer.time_network(tuned, width, height, "the tuned plan", 0);
  const double h2 = measurer.time_network(heuristic, width, height, "the heuristic plan", 0);
  PlanCheck c = decide_plan_check(t1, h1, t2, h2);
  if (const char* force = plan_check_hook()) c.kept_heuristic = std::string(force) == "heuristic";
  return c;
}

}  // namespace denox::api
