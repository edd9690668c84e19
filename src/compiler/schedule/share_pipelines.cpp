#include "compiler/schedule/share_pipelines.hpp"

#include <map>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "compiler/supergraph/edge_graph.hpp"

namespace denox::autotune {

namespace {

// Whether `b` can stand in for `a` in a selection: the same ops from the same values to the
// same value, every tensor in the same layout.
bool equivalent(const kernels::Implementation& a, const kernels::Implementation& b) {
  if (a.kind != b.kind || a.ops != b.ops || a.inputs != b.inputs || a.output != b.output || a.output_layout != b.output_layout) return false;
  for (size_t k = 0; k < a.inputs.size(); ++k)  // (a conversion's tensor is its input: the same)
    if (a.input_layout(k) != b.input_layout(k)) return false;
  return true;
}

}  // namespace

size_t count_pipelines(const compiler::Graph& graph, plan::Precision precision, const std::vector<kernels::Implementation>& impls,
                       const std::vector<size_t>& chosen) {
  std::vector<const kernels::Implementation*> ptrs;
  for (size_t i : chosen) ptrs.push_back(&impls.at(i));
  return kernels::lower_implementations(graph, precision, ptrs).pipelines.size();
}

std::vector<std::string> implementation_pipelines(const compiler::Graph& graph, plan::Precision precision,
                                                  const kernels::Implementation& impl, const std::vector<int64_t>& values) {
  if (impl.kind == kernels::Implementation::Kind::Free) return {};
  const EdgeGraph edge = extract_edge_graph(graph, impl, values, precision);
  std::vector<std::string> keys;
  for (const plan::Pipeline& p : kernels::lower_implementations(edge.graph, precision, {&edge.impl}).pipelines)
    keys.push_back(plan::pipeline_key(p));
  return keys;
}

std::vector<PipelineSwap> share_pipelines(const compiler::Graph& graph, plan::Precision precision,
                                          const std::vector<kernels::Implementation>& impls, const std::vector<int64_t>& values,
                                          const std::vector<double>& cost, const std::vector<bool>& usable, std::vector<size_t>& chosen,
                                          double cold_ms, size_t* pipelines) {
  // Each implementation lowered once, alone (a few ms for the whole pass, where lowering the
  // network per candidate took ~0.6 s); empty where it does not lower.
  std::map<size_t, std::optional<std::vector<std::string>>> keys_of;
  auto keys = [&](size_t i) -> const std::optional<std::vector<std::string>>& {
    auto it = keys_of.find(i);
    if (it == keys_of.end()) {
      std::optional<std::vector<std::string>> k;
      try {
        k = implementation_pipelines(graph, precision, impls.at(i), values);
      } catch (const Error&) {
        // an alternative that does not lower is no alternative (checked below for the chosen)
      }
      it = keys_of.emplace(i, std::move(k)).first;
    }
    return it->second;
  };
  auto count = [&](const std::vector<size_t>& selection) {
    std::set<std::string> distinct;
    for (size_t i : selection) distinct.insert(keys(i)->begin(), keys(i)->end());
    return distinct.size();
  };
  for (size_t i : chosen)
    if (!keys(i)) fail(ErrorCode::Internal, "pipeline sharing: " + impls.at(i).name() + " does not lower alone");
  std::vector<PipelineSwap> swaps;
  size_t current = count(chosen);
  // Per position, the alternatives that could pay: a swap drops at most the pipelines of the
  // dispatches it replaces, so one costing cold_ms per dispatch more or above cannot.
  auto candidates_of = [&](size_t p) {
    std::vector<size_t> out;
    const kernels::Implementation& a = impls.at(chosen[p]);
    if (a.kind == kernels::Implementation::Kind::Free) return out;
    for (size_t j = 0; j < impls.size(); ++j)
      if (j != chosen[p] && usable[j] && equivalent(a, impls[j]) && cost[j] - cost[chosen[p]] < cold_ms * a.dispatches && keys(j))
        out.push_back(j);
    return out;
  };
  std::vector<std::vector<size_t>> candidates(chosen.size());
  for (size_t p = 0; p < chosen.size(); ++p) candidates[p] = candidates_of(p);
  for (;;) {
    PipelineSwap best;
    double best_gain = 0;
    size_t best_at = chosen.size();
    for (size_t p = 0; p < chosen.size(); ++p) {
      for (size_t j : candidates[p]) {
        std::vector<size_t> trial = chosen;
        trial[p] = j;
        const size_t n = count(trial);
        if (n >= current) continue;  // only swaps that save a pipeline (select already chose by cost)
        const double extra = cost[j] - cost[chosen[p]];
        const double gain = cold_ms * (static_cast<double>(current) - static_cast<double>(n)) - extra;
        if (gain > best_gain) best_gain = gain, best_at = p, best = {chosen[p], j, extra, current, n};
      }
    }
    if (best_at == chosen.size()) break;
    chosen[best_at] = best.to;
    current = best.pipelines_after;
    swaps.push_back(best);
    candidates[best_at] = candidates_of(best_at);
  }
  if (pipelines) *pipelines = current;
  return swaps;
}

}  // namespace denox::autotune
