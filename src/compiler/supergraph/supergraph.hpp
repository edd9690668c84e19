// Specialize and supergraph (pipeline steps 3 and 4): the graph's tensors become values (one
// per tensor and memory layout), the kernels' implementations become edges between them, and
// the result is what select (step 7) solves.
//
// Layouts: every kernel reads and writes NCHW, and the coop convolutions also NHWC (channel
// counts that are multiples of 8); an Implementation names the layout of each input and of its
// output, so a tensor has one value per layout some implementation meets, and conversion
// edges (one strided copy) join them. Select then decides where tensors live: a chain of coop
// convs stays NHWC, and where a kernel that reads only NCHW follows, the NCHW variant competes
// with an NHWC one plus a conversion (structural pruning, which counts dispatches, keeps only
// the former). The
// network's inputs and outputs are NCHW values: the caller's layout (CHW or HWC, fp32 or fp16,
// buffers or images) is handled at the boundary by the runtime's io adapters, which is where
// "network inputs and outputs keep the layout the caller asked for" happens.
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

using kernels::Layout;
using kernels::layout_name;

// Step 3: one value per (tensor, layout) that some implementation reads or writes, plus the
// network's inputs and outputs.
//
// A tensor with conversions has two nodes per layout, so that conversions both ways form no
// cycle (select solves DAGs): kernels write the "written" node, readers read the value node, a
// free edge joins the two of one layout and a conversion reads a written node and writes the
// other layout's value node. (A conversion of a converted value would never pay anyway.)
struct Specialization {
  std::vector<std::pair<compiler::TensorId, Layout>> values;  // NodeId -> (tensor, layout)
  std::map<std::pair<compiler::TensorId, Layout>, select::NodeId> node_of;     // what readers read
  std::map<std::pair<compiler::TensorId, Layout>, select::NodeId> written_of;  // where split
  select::NodeId node(compiler::TensorId t, Layout l = Layout::NCHW) const { return node_of.at({t, l}); }
  select::NodeId written(compiler::TensorId t, Layout l = Layout::NCHW) const {
    const auto it = written_of.find({t, l});
    return it == written_of.end() ? node(t, l) : it->second;
  }
};
Specialization specialize(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls);

// Step 4: edge i of `graph` is implementation impl_of_edge[i], at cost costs[impl]. Sources are
// the network inputs, targets its outputs. Implementations with `keep[i] == false` (pruned)
// get no edge. The free edges between the two nodes of a split value come after every
// implementation's edge, with impl_of_edge kNoImplementation.
struct Supergraph {
  static constexpr size_t kNoImplementation = static_cast<size_t>(-1);
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
