// One supergraph edge as a network of its own, for measuring it in isolation: the ops the
// implementation covers, with every shape fixed at the tuning extent, its computed inputs as
// the network inputs and its output as the network output. Its signature names what the
// latency depends on (shader, configuration, op attributes, shapes, precision) and nothing
// model-specific (names, weight values), so two models that share a layer share a measurement.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "kernels/implementations.hpp"

namespace denox::autotune {

struct EdgeGraph {
  compiler::Graph graph;
  kernels::Implementation impl;  // the same implementation, pointing into `graph`
  std::string signature;
};

// `values`: the source graph's shape-program values at the tuning extent.
EdgeGraph extract_edge_graph(const compiler::Graph& source, const kernels::Implementation& impl, const std::vector<int64_t>& values,
                             plan::Precision precision);

}  // namespace denox::autotune
