// The heuristic cost model: an estimate of each implementation's latency for when measuring is
// off (CI, deterministic builds, no time) and as the order in which select tries candidates.
//
// A roofline per implementation at the tuning extent: max(FLOPs / family throughput, bytes
// moved / memory bandwidth) + a fixed cost per dispatch. The throughputs are H100 figures
// (bench/RESULTS.md); on another device the absolute numbers are off but the ranking that
// matters here (fused beats unfused, cooperative matrices beat FMA loops, fewer bytes win)
// holds. Without concrete shapes (a model whose input extents cannot be bound to the tuning
// extent), every dispatch costs 1 and FMA convolutions 1 more.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "kernels/implementations.hpp"

namespace denox::autotune {

// Shape-program values with the network inputs' last two axes (H, W) at height x width (other
// symbolic axes at 1); nullopt when the model cannot be bound that way.
std::optional<std::vector<int64_t>> values_at_extent(const compiler::Graph& graph, uint32_t width, uint32_t height);

// Estimated milliseconds. `values`: from values_at_extent (nullopt: the structural fallback).
double estimate_cost(const compiler::Graph& graph, const kernels::Implementation& impl, plan::Precision precision,
                           const std::optional<std::vector<int64_t>>& values);

}  // namespace denox::autotune
