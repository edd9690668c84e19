// After measured tuning: the tuned plan checked against the heuristic one, both timed whole.
//
// Why: the tuner times every edge as a network of its own, and a dispatch can run at another
// speed inside the real network (what its neighbours leave in L2, where its tensors sit), so the
// sum of the fastest edges can come out slower than the heuristic plan. On an H100 the tuned
// int8 plan of OIDN balanced at 1280x720 ran 0.723 ms against the heuristic plan's 0.717
// (bench/RESULTS.md, 2026-11-27 fourth session). Timing both plans at the tune extent and keeping
// the faster one means tuning never makes a model slower than not tuning it. The heuristic plan
// is a candidate only where every implementation it uses measured fine on the device: one the
// tuner saw fail, or crash the process, is never brought back this way (compile_plan).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "compiler/plan/plan.hpp"
#include "runtime/measure/measure.hpp"

namespace denox::api {

struct PlanCheck {
  bool timed = false;           // both plans were timed (they differ)
  double tuned_ms = 0, heuristic_ms = 0;
  bool kept_heuristic = false;
};

// The heuristic plan is kept only where it is faster by more than this fraction: the medians of
// one plan vary by ~0.3% between runs on the H100.
constexpr double kHeuristicMargin = 0.005;

// Which plan to keep, from two interleaved medians of each (tuned, heuristic, tuned, heuristic):
// each plan's faster median, the heuristic one kept only beyond the margin. (Inline: the API
// tests check it without the library's internals.)
inline PlanCheck decide_plan_check(double tuned1, double heuristic1, double tuned2, double heuristic2) {
  PlanCheck c;
  c.timed = true;
  c.tuned_ms = std::min(tuned1, tuned2);
  c.heuristic_ms = std::min(heuristic1, heuristic2);
  c.kept_heuristic = c.heuristic_ms < c.tuned_ms * (1.0 - kHeuristicMargin);
  return c;
}

// Whether the two plans need timing: they differ, or the test hook DENOX_TEST_PLAN_CHECK is set
// (heuristic or tuned: that plan is kept whatever the times, even of two identical plans).
bool plan_check_needed(const plan::Plan& tuned, const plan::Plan& heuristic);

// Times `tuned` and `heuristic` (SPIR-V filled in) at width x height on the measurer's device,
// interleaved, the GPU's clock warmed for `warm_ms` first (the test hook above applies).
PlanCheck check_tuned_plan(measure::DeviceMeasurer& measurer, const plan::Plan& tuned, const plan::Plan& heuristic, uint32_t width,
                           uint32_t height, uint32_t warm_ms);

}  // namespace denox::api
