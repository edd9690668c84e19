// Pipeline step 7b, after select: fewer distinct pipelines where that is cheaper.
//
// A dispatch whose code no earlier dispatch of the frame ran starts cold: on the H100 a
// dispatch pays 2-8 us to start, and where it shares its pipeline (shader family and macros;
// channel counts are push constants) with another dispatch of the frame it pays 1.5-3 us less
// (bench/RESULTS.md: 2026-11-27 fourth session, "what a dispatch pays for starting cold";
// 2026-11-28 tenth session, where dec_conv3b went 0.0529 -> 0.0558 ms when enc_conv5a/5b stopped
// sharing its pipeline). The tuner times every edge alone and warm, so select cannot see this:
// its objective is the sum of the edges' costs. This pass adds kColdPipelineMs per distinct
// pipeline to that sum and improves it by swapping one implementation at a time for an
// equivalent one: the same ops, reading the same values and writing the same value, in the same
// layouts, so the rest of the selection stays valid.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/implementations.hpp"

namespace denox::autotune {

// What a distinct pipeline costs the frame: the low end of the measured 1.5-3 us.
inline constexpr double kColdPipelineMs = 0.002;

struct PipelineSwap {
  size_t from = 0, to = 0;  // implementation indices
  double extra_ms = 0;      // cost[to] - cost[from], the costs the pass weighed (select's, with its margin)
  size_t pipelines_before = 0, pipelines_after = 0;
};

// The number of distinct pipelines of `chosen` lowered as one plan (PlanBuilder deduplicates
// them by family and macros). Throws what the lowering throws.
size_t count_pipelines(const compiler::Graph& graph, plan::Precision precision, const std::vector<kernels::Implementation>& impls,
                       const std::vector<size_t>& chosen);

// The pipelines `impl` runs, as plan::pipeline_key strings: the implementation lowered alone
// as its edge graph (supergraph/edge_graph.hpp, what the tuner times). They do not depend on the
// rest of a selection (macros follow from the implementation's own ops and their attributes,
// weight shapes and constants' sizes, layouts, configuration and quantization; shapes, crops and
// graph inputs and outputs reach only push constants, groups and bindings), so a selection's
// count is the size of the union of its implementations' keys. schedule.cpp checks the result
// against the lowered selection.
// `values`: the shape program at the tuning extent. Throws what the lowering throws.
std::vector<std::string> implementation_pipelines(const compiler::Graph& graph, plan::Precision precision,
                                                  const kernels::Implementation& impl, const std::vector<int64_t>& values);

// Swaps implementations of `chosen` (indices into impls, in an order that runs; changed in
// place) for equivalent `usable` ones that save a pipeline while sum(cost) + cold_ms * (distinct
// pipelines) falls, the largest fall first. Each implementation is lowered once, alone
// (implementation_pipelines); alternatives that do not lower are skipped, a chosen one that does
// not lower throws. Returns the swaps made, in order; `pipelines` (if given) gets the final count.
std::vector<PipelineSwap> share_pipelines(const compiler::Graph& graph, plan::Precision precision,
                                          const std::vector<kernels::Implementation>& impls, const std::vector<int64_t>& values,
                                          const std::vector<double>& cost, const std::vector<bool>& usable, std::vector<size_t>& chosen,
                                          double cold_ms, size_t* pipelines = nullptr);

}  // namespace denox::autotune
