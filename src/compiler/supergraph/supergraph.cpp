#include "compiler/supergraph/supergraph.hpp"

#include "common/error.hpp"

namespace denox::autotune {

Specialization specialize(const compiler::Graph& graph, const std::vector<kernels::Implementation>& impls) {
  Specialization s;
  auto add = [&](compiler::TensorId t, Layout l) {
    if (s.node_of.emplace(std::make_pair(t, l), static_cast<select::NodeId>(s.values.size())).second) s.values.emplace_back(t, l);
  };
  for (compiler::TensorId t : graph.inputs) add(t, Layout::NCHW);
  for (const kernels::Implementation& impl : impls) {
    for (size_t i = 0; i < impl.inputs.size(); ++i) add(impl.inputs[i], impl.input_layout(i));
    add(impl.output, impl.output_layout);
  }
  for (compiler::TensorId t : graph.outputs) add(t, Layout::NCHW);
  // Tensors with conversions: a written node beside every value node of theirs.
  for (const kernels::Implementation& impl : impls) {
    if (impl.kind != kernels::Implementation::Kind::Convert) continue;
    for (Layout l : {impl.input_layout(0), impl.output_layout}) {
      add(impl.output, l);
      const auto key = std::make_pair(impl.output, l);
      if (s.written_of.emplace(key, static_cast<select::NodeId>(s.values.size())).second) s.values.emplace_back(key);
    }
  }
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
    const kernels::Implementation& impl = impls[i];
    if (impl.kind == kernels::Implementation::Kind::Convert) {
      e.inputs.push_back(sg.values.written(impl.inputs.at(0), impl.input_layout(0)));
    } else {
      for (size_t k = 0; k < impl.inputs.size(); ++k) e.inputs.push_back(sg.values.node(impl.inputs[k], impl.input_layout(k)));
    }
    e.output = impl.kind == kernels::Implementation::Kind::Convert ? sg.values.node(impl.output, impl.output_layout)
                                                                   : sg.values.written(impl.output, impl.output_layout);
    e.cost = costs[i];
    sg.graph.edges.push_back(std::move(e));
    sg.impl_of_edge.push_back(i);
  }
  for (const auto& [key, written] : sg.values.written_of) {
    select::Edge e;
    e.inputs = {written};
    e.output = sg.values.node_of.at(key);
    sg.graph.edges.push_back(std::move(e));
    sg.impl_of_edge.push_back(Supergraph::kNoImplementation);
  }
  for (compiler::TensorId t : graph.inputs) sg.graph.sources.push_back(sg.values.written(t));
  for (compiler::TensorId t : graph.outputs) sg.graph.targets.push_back(sg.values.node(t));
  return sg;
}

std::vector<size_t> structure_ids(const std::vector<kernels::Implementation>& impls, size_t* count) {
  std::map<std::pair<std::string, std::vector<const compiler::Op*>>, size_t> ids;
  std::vector<size_t> out;
  for (const auto& impl : impls) {
    // Layout variants are structures of their own; a conversion (no ops) is one per tensor.
    std::string key = impl.family + "/" + impl.pattern + impl.layout_words();
    if (impl.kind == kernels::Implementation::Kind::Convert) key += "/" + std::to_string(impl.output);
    auto [it, fresh] = ids.emplace(std::make_pair(std::move(key), impl.ops), ids.size());
    out.push_back(it->second);
  }
  if (count) *count = ids.size();
  return out;
}

}  // namespace denox::autotune
