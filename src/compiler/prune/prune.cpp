#include "compiler/prune/prune.hpp"

#include <algorithm>

#include "compiler/supergraph/supergraph.hpp"

namespace denox::autotune {

namespace {

// What an implementation counts as in structural pruning: its dispatches, and one more for a
// head (conv2d_coopmat HEAD), which recomputes its conv on every patch's halo instead of
// storing it: counted as the dispatch it replaces, it ties with the unfused pair, so both
// are kept and measured (a head is not always the faster one, as the absorbed pools are).
size_t structural_dispatches(const kernels::Implementation& impl) { return impl.dispatches + (impl.fusion.head ? 1 : 0); }

// The dispatch count of a selection of structure edges (heads counted as above).
size_t dispatches_of(const select::Selection& sel, const std::vector<size_t>& impl_of_structure,
                     const std::vector<kernels::Implementation>& impls) {
  size_t n = 0;
  for (uint32_t e : sel.edges)
    if (impl_of_structure[e] != Supergraph::kNoImplementation) n += structural_dispatches(impls[impl_of_structure[e]]);
  return n;
}

}  // namespace

std::vector<bool> prune_structural(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls,
                                   PruneStats* stats) {
  size_t structure_count = 0;
  const std::vector<size_t> sid = structure_ids(impls, &structure_count);
  // One representative implementation per structure; the supergraph gets one edge each.
  std::vector<size_t> rep(structure_count, impls.size());
  for (size_t i = 0; i < impls.size(); ++i)
    if (rep[sid[i]] == impls.size()) rep[sid[i]] = i;
  std::vector<kernels::Implementation> reps;
  for (size_t r : rep) reps.push_back(impls[r]);

  // Costs: the dispatch count plus a tiny constant, so that free edges (Identity) still cost
  // something and a structure made free below strictly beats every derivation without it.
  const double eps = 1e-6;
  std::vector<double> cost(structure_count);
  for (size_t s = 0; s < structure_count; ++s) cost[s] = static_cast<double>(structural_dispatches(reps[s])) + eps;
  const std::vector<bool> all(structure_count, true);
  Supergraph sg = build_supergraph(graph, reps, cost, all);
  const select::Selection best = select::select_min_latency(sg.graph);

  std::vector<bool> keep_structure(structure_count, true);
  size_t min_dispatches = 0;
  if (best.feasible) {
    min_dispatches = dispatches_of(best, sg.impl_of_edge, reps);
    for (size_t s = 0; s < structure_count; ++s) {
      // Is s on some minimum-dispatch derivation? Make it free: the best derivation through it
      // then wins, and its true dispatch count tells.
      sg.graph.edges[s].cost = 0;
      const select::Selection with = select::select_min_latency(sg.graph);
      sg.graph.edges[s].cost = cost[s];
      const bool uses = std::find(with.edges.begin(), with.edges.end(), static_cast<uint32_t>(s)) != with.edges.end();
      keep_structure[s] = uses && dispatches_of(with, sg.impl_of_edge, reps) == min_dispatches;
    }
  }
  std::vector<bool> keep(impls.size());
  for (size_t i = 0; i < impls.size(); ++i) keep[i] = keep_structure[sid[i]];
  if (stats) {
    stats->structures = structure_count;
    stats->structures_kept = static_cast<size_t>(std::count(keep_structure.begin(), keep_structure.end(), true));
    stats->implementations = impls.size();
    stats->implementations_kept = static_cast<size_t>(std::count(keep.begin(), keep.end(), true));
    stats->min_dispatches = min_dispatches;
  }
  return keep;
}

}  // namespace denox::autotune
