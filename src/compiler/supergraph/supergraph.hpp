// Specialize and supergraph (pipeline steps 3 and 4): the graph's tensors become values (one
// per tensor and memory layout), the kernels' implementations become edges between them, and
// the result is what select (step 7) solves.
//
// Layouts: every kernel of shaders/ reads and writes activations as NCHW today, so each tensor
// has one value. The caller's layout (CHW or HWC, fp32 or fp16, buffers or images) is handled
// at the boundary by the runtime's io adapters, which is where "network inputs and outputs keep
// the layout the caller asked for" happens. A kernel that reads or writes another layout will
// need Implementation to name the layout of each input and of the output, and specialize to
// create a value per (tensor, layout) it meets.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/select/select.hpp"
#include "kernels/implementations.hpp"

namespace denox::autotune {

namespace select = compiler::select;

enum class Layout : uint8_t { NCHW };
const char* layout_name(Layout l);

// Step 3: one value per (tensor, layout) that some implementation reads or writes, plus the
// network's inputs and outputs.
struct Specialization {
  std::vector<std::pair<compiler::TensorId, Layout>> values;  // NodeId -> (tensor, layout)
  std::map<std::pair<compiler::TensorId, Layout>, select::NodeId> node_of;
  select::NodeId node(compiler::TensorId t, Layout l = Layout::NCHW) const { return node_of.at({t, l}); }
};
Specialization specialize(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls);

// Step 4: edge i of `graph` is implementation impl_of_edge[i], at cost costs[impl]. Sources are
// the network inputs, targets its outputs. Implementations with `keep[i] == false` (pruned)
// get no edge.
struct Supergraph {
  Specialization values;
  select::Supergraph graph;
  std::vector<size_t> impl_of_edge;
};
Supergraph build_supergraph(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls,
                            const std::vector<double>& costs, const std::vector<bool>& keep);

// Implementations that cover the same ops with the same pattern (differing in configuration)
// share a structure id: pruning and reports group by it.
std::vector<size_t> structure_ids(const std::vector<kernels::Implementation>& impls, size_t* count = nullptr);

}  // namespace denox::autotune
