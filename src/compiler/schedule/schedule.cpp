#include "compiler/schedule/schedule.hpp"


#include <algorithm>
#include <chrono>
#include <set>

#include "common/error.hpp"
#include "common/log.hpp"
#include "compiler/cost_model/cost_model.hpp"
#include "compiler/prune/prune.hpp"
#include "compiler/schedule/share_pipelines.hpp"
#include "compiler/supergraph/supergraph.hpp"

namespace denox::autotune {

namespace {

double ms_since(std::chrono::steady_clock::time_point& t0) {
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - t0).count();
  t0 = now;
  return ms;
}

// Why select found no derivation: the ops whose every implementation was pruned or failed.
[[noreturn]] void fail_infeasible(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls,
                                  const std::vector<bool>& keep, const std::vector<std::string>& failures) {
  std::set<const compiler::Op*> covered;
  for (size_t i = 0; i < impls.size(); ++i)
    if (keep[i])
      for (const compiler::Op* op : impls[i].ops) covered.insert(op);
  std::string missing;
  for (const compiler::Op& op : graph.ops) {
    if (covered.count(&op)) continue;
    std::string why;
    for (size_t i = 0; i < impls.size(); ++i)
      if (impls[i].anchor == &op && impls[i].kind != kernels::Implementation::Kind::Convert && !failures[i].empty()) why = failures[i];
    missing += "\n  " + kernels::describe_op(op) + (why.empty() ? "" : ": " + why);
  }
  fail(ErrorCode::Unsupported, "no implementation derives the network's outputs; ops without a working implementation:" +
                                   (missing.empty() ? std::string("\n  (none: the outputs are not reachable from the inputs)") : missing));
}

std::string value_name(const compiler::Graph& g, compiler::TensorId t, Layout l) { return g.tensor(t).name + " [" + layout_name(l) + "]"; }

// Measured tuning: an implementation the heuristic would not have chosen must beat the measured
// alternatives by more than this before select takes it. The tuner's edge timings repeat to
// within +-0.5% (p10-p90) and +-2.5% at worst (bench/RESULTS.md, 2026-11-27, "Tuning noise"), and
// an edge timed alone can order two near-equal configurations the other way round in the
// network (2026-11-27 sixth session: dec_conv3a's phase conv on 8 x 1 subgroups won alone within
// noise and ran 0.0843 ms in the network against 0.0776 for the heuristic's 16 x 1). Below the
// margin the heuristic's choice, which came from exhaustive H100 data, keeps its place.
constexpr double kTunedMargin = 0.02;

std::string implementation_key(const kernels::Implementation& impl) { return impl.name() + "|" + impl.family + "|" + impl.config; }

// The keys of the implementations the heuristic chooses among (ConfigSpace::Heuristic, ranked
// at the heuristic plans' extent whatever the tuning extent: those of the plan the tuned one is
// checked against), which kTunedMargin spares; empty (no margin) unless measuring in another space.
std::set<std::string> heuristic_keys(const compiler::Graph& graph, const ScheduleOptions& opt) {
  std::set<std::string> keys;
  if (!opt.measurer || opt.space == kernels::ConfigSpace::Heuristic) return keys;
  const auto values = values_at_extent(graph, kHeuristicWidth, kHeuristicHeight);
  for (const kernels::Implementation& impl :
       kernels::enumerate_implementations(graph, opt.precision, opt.target, kernels::ConfigSpace::Heuristic, values))
    keys.insert(implementation_key(impl));
  return keys;
}

// Select's costs: the measured or estimated ones, those of measured implementations outside the
// heuristic's set (`heuristic`, heuristic_keys; empty: none) raised by kTunedMargin.
std::vector<double> select_costs(const std::vector<kernels::Implementation>& impls, const std::vector<double>& cost,
                                 const std::vector<bool>& measured, const std::set<std::string>& heuristic) {
  std::vector<double> out = cost;
  if (heuristic.empty()) return out;
  for (size_t i = 0; i < impls.size(); ++i)
    if (measured[i] && !heuristic.count(implementation_key(impls[i]))) out[i] *= 1.0 + kTunedMargin;
  return out;
}

}  // namespace

Schedule schedule_graph(const compiler::Graph& graph, const ScheduleOptions& opt) {
  if (graph.ops.size() > kMaxScheduledOperators)
    fail(ErrorCode::Unsupported, "the network has " + std::to_string(graph.ops.size()) + " operators after import; the GPU path schedules at most " +
                                     std::to_string(kMaxScheduledOperators) + " (its fusion search grows with the square of the count)");
  for (compiler::TensorId out : graph.outputs)
    if (graph.tensor(out).is_constant())
      fail(ErrorCode::Unsupported, "output '" + graph.tensor(out).name + "' is a constant; the GPU path computes its outputs");
  Schedule s;
  ScheduleReport& r = s.report;
  r.space = kernels::config_space_name(opt.space);
  r.width = opt.width, r.height = opt.height;
  auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const char* stage, size_t done, size_t total, const std::string& what) {
    if (opt.progress) opt.progress(stage, done, total, what);
  };

  progress("enumerate", 0, 1, "");
  // The values at the extent select ranks at: the cost model's, and the heuristic configurations'
  // sense of each layer's size.
  const auto values = values_at_extent(graph, opt.width, opt.height);
  s.impls = kernels::enumerate_implementations(graph, opt.precision, opt.target, opt.space, values);
  const std::vector<kernels::Implementation>& impls = s.impls;
  r.implementations = impls.size();
  structure_ids(impls, &r.structures);
  r.enumerate_ms = ms_since(t0);

  std::vector<bool> keep(impls.size(), true);
  if (opt.structural_prune) {
    PruneStats ps;
    keep = prune_structural(graph, impls, &ps);
    r.structures_kept = ps.structures_kept;
  } else {
    r.structures_kept = r.structures;
  }
  r.prune_ms = ms_since(t0);

  std::vector<double> cost(impls.size());
  std::vector<bool> measured(impls.size(), false);
  std::vector<std::string> failures(impls.size());
  for (size_t i = 0; i < impls.size(); ++i) cost[i] = estimate_cost(graph, impls[i], opt.precision, values);

  // Costs of the implementations in `todo` from the measurer (failures drop them).
  auto measure = [&](const std::vector<size_t>& todo) {
    std::vector<const kernels::Implementation*> ptrs;
    for (size_t i : todo) ptrs.push_back(&impls[i]);
    const std::vector<Measured> m = opt.measurer->measure(graph, ptrs, opt.precision, opt.width, opt.height, opt.progress);
    if (m.size() != todo.size()) fail(ErrorCode::Internal, "measurer returned a wrong number of results");
    for (size_t j = 0; j < todo.size(); ++j) {
      const size_t i = todo[j];
      if (!m[j].ok) {
        keep[i] = false;
        failures[i] = m[j].failure;
        ++r.failed_edges;
        continue;
      }
      cost[i] = m[j].ms;
      measured[i] = true;
      ++(m[j].from_store ? r.cached_edges : r.measured_edges);
      r.same_edges += m[j].same_edge_as_another ? 1 : 0;
      r.timed_again_edges += m[j].timed_again && !m[j].same_edge_as_another ? 1 : 0;
    }
  };
  auto measurable = [&](size_t i) { return impls[i].kind != kernels::Implementation::Kind::Free; };
  const std::vector<bool> pruned_keep = keep;
  if (opt.measurer) {
    std::vector<size_t> todo;
    for (size_t i = 0; i < impls.size(); ++i)
      if (keep[i] && measurable(i)) todo.push_back(i);
    measure(todo);
  }
  r.measure_ms = ms_since(t0);

  progress("select", 0, 1, "");
  const std::set<std::string> heuristic = heuristic_keys(graph, opt);
  Supergraph sg = build_supergraph(graph, impls, select_costs(impls, cost, measured, heuristic), keep);
  select::SelectStats stats;
  select::Selection sel = select::select_min_latency(sg.graph, &stats);
  if (!sel.feasible && opt.structural_prune) {
    // Failures (a shader the driver refuses, a configuration that crashed a measuring process)
    // can leave an op whose every minimum-dispatch structure is gone: the structures pruning
    // dropped come back (measured too, where measuring), so the network still compiles, with
    // a dispatch more where it must.
    std::vector<size_t> todo;
    for (size_t i = 0; i < impls.size(); ++i)
      if (!pruned_keep[i] && failures[i].empty()) {
        keep[i] = true;
        if (opt.measurer && measurable(i)) todo.push_back(i);
      }
    if (!todo.empty()) measure(todo);
    log::warn("denox: failed implementations left no minimum-dispatch schedule; selecting among the structurally pruned ones too");
    sg = build_supergraph(graph, impls, select_costs(impls, cost, measured, heuristic), keep);
    sel = select::select_min_latency(sg.graph, &stats);
  }
  r.edges = static_cast<size_t>(std::count_if(sg.impl_of_edge.begin(), sg.impl_of_edge.end(),
                                              [](size_t i) { return i != Supergraph::kNoImplementation; }));
  r.select_states = stats.states;
  if (!sel.feasible) fail_infeasible(graph, impls, keep, failures);
  for (uint32_t e : sel.edges) {
    const size_t i = sg.impl_of_edge[e];
    if (i != Supergraph::kNoImplementation) s.chosen.push_back(i);  // else a written value read as is
  }
  if (opt.measurer && values) {
    // Measured edges were timed warm; a pipeline no other dispatch runs starts cold
    // (share_pipelines.hpp). Measured plans only: the heuristic plan stays what the cost model says.
    std::vector<bool> usable(impls.size());
    for (size_t i = 0; i < impls.size(); ++i) usable[i] = keep[i] && (measured[i] || !measurable(i));
    const std::vector<size_t> selected = s.chosen;
    try {
      const std::vector<double> costs = select_costs(impls, cost, measured, heuristic);
      const std::vector<PipelineSwap> swaps =
          share_pipelines(graph, opt.precision, impls, *values, costs, usable, s.chosen, kColdPipelineMs, &r.pipelines);
      // The count came from the implementations lowered alone; a swapped selection is lowered
      // whole once, so that a future macro that depends on context cannot slip through.
      if (!swaps.empty() && count_pipelines(graph, opt.precision, impls, s.chosen) != r.pipelines)
        fail(ErrorCode::Internal, "the swapped selection lowers into another pipeline count than its steps alone");
      for (const PipelineSwap& swap : swaps)
        r.pipeline_swaps.push_back({impls[swap.from].name(), impls[swap.from].family + " " + impls[swap.from].config,
                                    impls[swap.to].family + " " + impls[swap.to].config, cost[swap.to] - cost[swap.from],
                                    swap.pipelines_before, swap.pipelines_after});
    } catch (const Error& e) {
      // The plan stays what select chose (if that does not lower at all, lower_schedule reports
      // it with its context).
      log::warn("denox: pipeline sharing skipped: {}", e.what());
      s.chosen = selected, r.pipelines = 0, r.pipeline_swaps.clear();
    }
  }
  r.predicted_ms = 0;  // the chosen edges' own costs (sel.cost has the tuning margin in it)
  for (const size_t i : s.chosen) {
    const kernels::Implementation& impl = impls[i];
    ScheduledStep step;
    step.name = impl.name();
    step.pattern = impl.pattern;
    step.family = impl.family;
    step.config = impl.config;
    for (size_t k = 0; k < impl.inputs.size(); ++k) step.inputs.push_back(value_name(graph, impl.inputs[k], impl.input_layout(k)));
    step.output = value_name(graph, impl.output, impl.output_layout);
    step.dispatches = impl.dispatches;
    step.ms = cost[i];
    r.predicted_ms += cost[i];
    step.measured = measured[i];
    r.dispatches += impl.dispatches;
    r.steps.push_back(std::move(step));
  }
  r.select_ms = ms_since(t0);
  return s;
}

plan::Plan lower_schedule(const compiler::Graph& graph, const Schedule& schedule, plan::Precision precision) {
  std::vector<const kernels::Implementation*> chosen;
  for (size_t i : schedule.chosen) chosen.push_back(&schedule.impls.at(i));
  return kernels::lower_implementations(graph, precision, chosen);
}

}  // namespace denox::autotune
