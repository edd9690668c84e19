// share_pipelines (src/compiler/schedule/share_pipelines.hpp): after select, a step moves to an
// equivalent implementation whose pipeline another dispatch runs exactly when that costs less
// than the cold code it saves, and the measured schedule reports its distinct pipelines.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "../runtime/gpu_test_support.hpp"
#include "compiler/cost_model/cost_model.hpp"
#include "compiler/schedule/schedule.hpp"
#include "compiler/schedule/share_pipelines.hpp"
#include "coop_support.hpp"
#include "q8_support.hpp"

using namespace denox;
using namespace denox::kernels;
using namespace denox::testing;
using Size = modelgen::OidnUnetOptions::Size;

namespace {

// Coop convolutions with NHWC tensors 0.9 ms (only they come in every configuration), NCHW ones 1,
// portable ones 2.
class FlatMeasurer : public autotune::Measurer {
 public:
  // What an int8 convolution (conv2d_coopmat_q8) measures; by default as any other layout variant.
  double q8_ms = 0.9;
  std::vector<autotune::Measured> measure(const compiler::Graph&, const std::vector<const Implementation*>& impls, plan::Precision,
                                          uint32_t, uint32_t, const autotune::Progress&) override {
    std::vector<autotune::Measured> out(impls.size());
    for (size_t i = 0; i < impls.size(); ++i) {
      const Implementation& impl = *impls[i];
      out[i].ok = true;
      out[i].ms = impl.family == "conv2d" ? 2.0 : impl.family == "conv2d_coopmat_q8" ? q8_ms : impl.layout_words().empty() ? 1.0 : 0.9;
    }
    return out;
  }
};

bool covers(const Implementation& impl, const std::string& op_name) {
  for (const compiler::Op* op : impl.ops)
    if (op->name == op_name) return true;
  return false;
}

// Same ops, same tensors in the same layouts (what share_pipelines may swap).
bool same_step(const Implementation& a, const Implementation& b) {
  return a.kind == b.kind && a.ops == b.ops && a.inputs == b.inputs && a.input_layouts == b.input_layouts && a.output == b.output &&
         a.output_layout == b.output_layout;
}

}  // namespace

TEST_CASE("share_pipelines moves a step to another dispatch's pipeline only when the cold code costs more", "[kernels][schedule]") {
  const compiler::Graph g = oidn(Size::Balanced);
  autotune::ScheduleOptions o;
  o.precision = plan::Precision::F16;
  o.target.coop = h100_like();
  o.space = ConfigSpace::Pruned;
  FlatMeasurer m;
  o.measurer = &m;
  const autotune::Schedule s = autotune::schedule_graph(g, o);
  const std::vector<Implementation>& impls = s.impls;
  // The measured schedule counts its pipelines from its implementations lowered alone: as many
  // as its plan has.
  CHECK(s.report.pipelines == autotune::count_pipelines(g, o.precision, impls, s.chosen));
  CHECK(s.report.pipelines == autotune::lower_schedule(g, s, o.precision).pipelines.size());

  // enc_conv5a (80 -> 96) and enc_conv5b (96 -> 96) have the same fusion (conv + ReLU): one
  // configuration in the same layouts is one pipeline (channel counts are push constants).
  size_t at_a = s.chosen.size(), at_b = s.chosen.size();
  for (size_t p = 0; p < s.chosen.size(); ++p) {
    if (covers(impls[s.chosen[p]], "/enc_conv5a/Conv")) at_a = p;
    if (covers(impls[s.chosen[p]], "/enc_conv5b/Conv")) at_b = p;
  }
  REQUIRE(at_a < s.chosen.size());
  REQUIRE(at_b < s.chosen.size());
  const Implementation& a = impls[s.chosen[at_a]];
  REQUIRE(a.family == "conv2d_coopmat");
  REQUIRE_FALSE(a.layout_words().empty());
  // `other`: a configuration of enc_conv5b's that no other chosen step runs (one more pipeline).
  const size_t chosen_pipelines = autotune::count_pipelines(g, o.precision, impls, s.chosen);
  size_t shared = impls.size(), other = impls.size();
  std::vector<size_t> start = s.chosen;
  for (size_t j = 0; j < impls.size(); ++j) {
    if (!same_step(impls[j], impls[s.chosen[at_b]]) || impls[j].family != a.family || impls[j].layout_words() != a.layout_words()) continue;
    if (impls[j].config == a.config) {
      shared = j;
    } else if (other == impls.size()) {
      start[at_b] = j;
      if (autotune::count_pipelines(g, o.precision, impls, start) == chosen_pipelines + 1) other = j;
    }
  }
  REQUIRE(shared < impls.size());
  REQUIRE(other < impls.size());

  // enc_conv5b on `other`; the only affordable alternative anywhere is its `shared`, `extra` ms dearer.
  start[at_b] = other;
  const size_t before = chosen_pipelines + 1;  // (how `other` was chosen)
  const std::vector<bool> usable(impls.size(), true);
  const std::vector<int64_t> values = *autotune::values_at_extent(g, o.width, o.height);
  for (const double extra : {0.001, 0.003}) {
    INFO("shared configuration dearer by " << extra << " ms");
    // Every step as chosen 1 ms, every alternative out of reach but enc_conv5b's `shared`.
    std::vector<double> cost(impls.size(), 2.0);
    for (size_t i : start) cost[i] = 1.0;
    cost[shared] = 1.0 + extra;
    std::vector<size_t> chosen = start;
    size_t after = 0;
    const auto swaps = autotune::share_pipelines(g, o.precision, impls, values, cost, usable, chosen, autotune::kColdPipelineMs, &after);
    CHECK(after == autotune::count_pipelines(g, o.precision, impls, chosen));
    bool moved = false;
    for (const auto& swap : swaps) {
      CHECK(swap.pipelines_after < swap.pipelines_before);
      CHECK(swap.extra_ms < autotune::kColdPipelineMs * (swap.pipelines_before - swap.pipelines_after));
      if (swap.from == other) {
        moved = true;
        CHECK(swap.to == shared);
        CHECK(impls[swap.from].name().find("/enc_conv5b/Conv") == 0);
      }
    }
    if (extra < autotune::kColdPipelineMs) {
      CHECK(moved);
      CHECK(chosen[at_b] == shared);
      CHECK(after < before);
    } else {
      CHECK_FALSE(moved);
      CHECK(chosen[at_b] == other);
    }
    // An alternative that may not be taken (not measured on this device) is never moved to.
    std::vector<bool> not_shared = usable;
    not_shared[shared] = false;
    std::vector<size_t> unchanged = start;
    CHECK(autotune::share_pipelines(g, o.precision, impls, values, cost, not_shared, unchanged, autotune::kColdPipelineMs).empty());
    CHECK(unchanged == start);
  }
}

TEST_CASE("pipelines counted from implementations lowered alone are the int8 plan's, key for key", "[kernels][schedule]") {
  // The int8 plan has the macros most likely to depend on context: zero points, folded tails,
  // quantize conversions, int8 up2 inputs.
  const compiler::Graph g = oidn(Size::Balanced);
  autotune::ScheduleOptions o;
  o.precision = plan::Precision::F16;
  o.target = h100_int8_target(g, std::vector<HostTensor>{random_tensor({1, 3, 40, 48}, 5)});
  o.space = ConfigSpace::Pruned;
  FlatMeasurer m;
  m.q8_ms = 0.8;  // (so that the int8 convolutions are chosen wherever they can be, not only where sharing a pipeline favours them)
  o.measurer = &m;
  const autotune::Schedule s = autotune::schedule_graph(g, o);
  const plan::Plan p = autotune::lower_schedule(g, s, o.precision);
  REQUIRE(s.report.pipelines > 0);
  CHECK(s.report.pipelines == p.pipelines.size());
  const std::vector<int64_t> values = *autotune::values_at_extent(g, o.width, o.height);
  std::set<std::string> alone, whole;
  for (size_t i : s.chosen)
    for (const std::string& key : autotune::implementation_pipelines(g, o.precision, s.impls[i], values)) alone.insert(key);
  for (const plan::Pipeline& pipe : p.pipelines) whole.insert(plan::pipeline_key(pipe));
  CHECK(alone == whole);
  int q8 = 0;
  for (const std::string& key : whole) q8 += key.rfind("conv2d_coopmat_q8 ", 0) == 0;
  CHECK(q8 >= 3);
}
