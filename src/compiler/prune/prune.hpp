// Prune (pipeline step 5), structural half: keep only the implementations that lie on some
// derivation of the outputs with the fewest dispatches. Fusing never adds a dispatch, so this
// drops "conv, then a separate ReLU / pool / concat copy" wherever a fused edge covers the
// same ops, before anything is measured. Configurations are pruned separately (the reduced
// config sets of kernels::coop_configs_pruned, chosen offline by bench/prune/prune_configs.py).
#pragma once

#include <vector>

#include "compiler/ir/graph.hpp"
#include "kernels/implementations.hpp"

namespace denox::autotune {

struct PruneStats {
  size_t structures = 0, structures_kept = 0;
  size_t implementations = 0, implementations_kept = 0;
  size_t min_dispatches = 0;  // of the best derivation (a head counted as two: prune.cpp)
};

// keep[i] for each implementation. All configurations of a structure (same ops and pattern)
// share its verdict. If the outputs cannot be derived at all, everything is kept (select then
// reports it).
std::vector<bool> prune_structural(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls,
                                   PruneStats* stats = nullptr);

}  // namespace denox::autotune
