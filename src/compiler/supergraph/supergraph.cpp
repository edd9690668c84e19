#include "compiler/supergraph/supergraph.hpp"

#include "common/error.hpp"

namespace denox::autotune {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::NCHW: return "NCHW";
  }
  return "?";
}

Specialization specialize(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls) {
  Specialization s;
  auto add = [&](compiler::TensorId t, Layout l) {
    if (s.node_of.emplace(std::make_pair(t, l), static_cast<select::NodeId>(s.values.size())).second) s.values.emplace_back(t, l);
  };
  for (compiler::TensorId t : graph.inputs) add(t, Layout::NCHW);
  for (const kernels::Implementation& impl : impls) {
    for (compiler::TensorId t : impl.inputs) add(t, Layout::NCHW);
    add(impl.output, Layout::NCHW);
  }
  for (compiler::TensorId t : graph.outputs) add(t, Layout::NCHW);
  return s;
}

Supergraph build_supergraph(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls,
                            const std::vector<double>& costs, const std::vector<bool>& keep) {
  if (costs.size() != impls.size() || keep.size() != impls.size())
    fail(ErrorCode::Internal, "supergraph: costs/keep do not match the implementations");
  Supergraph sg;
  sg.values = specialize(graph, impls);
  sg.graph.node_count = static_cast<uint32_t>(sg.values.values.size());
  for (size_t i = 0; i < impls.size(); ++i) {
    if (!keep[i]) continue;
    select::Edge e;
    for (compiler::TensorId t : impls[i].inputs) e.inputs.push_back(sg.values.node(t));
    e.output = sg.values.node(impls[i].output);
    e.cost = costs[i];
    sg.graph.edges.push_back(std::move(e));
    sg.impl_of_edge.push_back(i);
  }
  for (compiler::TensorId t : graph.inputs) sg.graph.sources.push_back(sg.values.node(t));
  for (compiler::TensorId t : graph.outputs) sg.graph.targets.push_back(sg.values.node(t));
  return sg;
}

std::vector<size_t> structure_ids(const std::vector<kernels::Implementation>& impls, size_t* count) {
  std::map<std::pair<std::string, std::vector<const compiler::Op*>>, size_t> ids;
  std::vector<size_t> out;
  for (const auto& impl : impls) {
    auto [it, fresh] = ids.emplace(std::make_pair(impl.family + "/" + impl.pattern, impl.ops), ids.size());
    out.push_back(it->second);
  }
  if (count) *count = ids.size();
  return out;
}

}  // namespace denox::autotune
