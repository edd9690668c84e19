// Select (pipeline step 7): the minimum-latency subgraph of the supergraph that derives the
// network's outputs from its inputs.
//
// The supergraph's nodes are values (a logical tensor in one memory layout); an edge is one
// implementation (a shader config matched on some ops) that reads its input nodes and writes
// its output node, at a measured or estimated cost. Intermediates a fused edge swallows never
// appear as nodes of that edge. A value computed once serves every consumer, so the cost of a
// selection is the sum over its distinct edges: a shortest-hyperpath problem with sharing.
//
// The solver walks the nodes from the outputs backwards in topological order. Its state is the
// set of values still to produce (a "cut" through the DAG, a handful of values wide for U-Nets:
// the chain plus its open skip connections), and it memoizes the best cost per state. Candidates
// are tried cheapest first, and a branch is cut when its cost plus an admissible lower bound
// (each pending value needs at least its cheapest producer) cannot beat the best selection so
// far. The result is exact.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace denox::compiler::select {

using NodeId = uint32_t;

struct Edge {
  std::vector<NodeId> inputs;
  NodeId output = 0;
  double cost = 0;  // >= 0; milliseconds when measured
};

struct Supergraph {
  uint32_t node_count = 0;
  std::vector<Edge> edges;
  std::vector<NodeId> sources;  // available for free (the network inputs in their layouts)
  std::vector<NodeId> targets;  // must be produced (the network outputs in their layouts)
};

struct Selection {
  bool feasible = false;
  double cost = std::numeric_limits<double>::infinity();
  std::vector<uint32_t> edges;  // indices into Supergraph::edges, in an order that runs
};

struct SelectStats {
  uint64_t states = 0;      // distinct pending sets solved
  uint64_t memo_hits = 0;
  uint64_t pruned = 0;      // branches cut by the bound
};

// Throws denox::Error (InvalidArgument) when an edge or a source/target names a node out of
// range, a cost is negative or not finite, or the edges form a cycle.
Selection select_min_latency(const Supergraph& graph, SelectStats* stats = nullptr);

// Tries every subset of edges (tests only: at most 20 edges).
Selection select_brute_force(const Supergraph& graph);

// True when `edges` derive every target from the sources, each edge's inputs produced by an
// earlier edge of the list or a source.
bool derives_targets(const Supergraph& graph, const std::vector<uint32_t>& edges);

}  // namespace denox::compiler::select
