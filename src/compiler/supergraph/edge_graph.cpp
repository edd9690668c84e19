#include "compiler/supergraph/edge_graph.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/error.hpp"

namespace denox::autotune {

using compiler::ValueId;

namespace {

template <class... F> struct Overloaded : F... { using F::operator()...; };

// The attributes that change what a kernel does, in words (values already concrete).
std::string describe_attrs(const compiler::Graph& g, const compiler::Op& op) {
  std::ostringstream s;
  auto v = [&](ValueId id) { return g.program.constant_value(id); };
  std::visit(Overloaded{
                 [&](const compiler::ConvAttrs& a) {
                   s << "k" << a.kernel[0] << "x" << a.kernel[1] << " s" << a.stride[0] << "x" << a.stride[1] << " d" << a.dilation[0]
                     << "x" << a.dilation[1] << " p" << v(a.pad_begin[0]) << "," << v(a.pad_begin[1]) << "," << v(a.pad_end[0]) << ","
                     << v(a.pad_end[1]) << (a.has_bias ? " bias" : "");
                 },
                 [&](const compiler::PoolAttrs& a) {
                   s << (a.kind == compiler::PoolKind::Max ? "max" : "avg") << " k" << a.kernel[0] << "x" << a.kernel[1] << " s"
                     << a.stride[0] << "x" << a.stride[1] << " p" << v(a.pad_begin[0]) << "," << v(a.pad_begin[1]) << ","
                     << v(a.pad_end[0]) << "," << v(a.pad_end[1]) << (a.count_include_pad ? " incl" : "");
                 },
                 [&](const compiler::ActivationAttrs& a) { s << static_cast<int>(a.kind) << " " << a.alpha << " " << a.min << " " << a.max; },
                 [&](const compiler::BinaryAttrs& a) { s << static_cast<int>(a.kind); },
                 [&](const compiler::UpsampleAttrs& a) {
                   s << a.scale[0] << "x" << a.scale[1] << " c" << static_cast<int>(a.coordinate_mode) << " n"
                     << static_cast<int>(a.nearest_mode);
                 },
                 [&](const compiler::ConcatAttrs& a) { s << "axis" << a.axis; },
                 [&](const compiler::PadAttrs& a) {
                   for (size_t i = 0; i < a.begin.size(); ++i) s << v(a.begin[i]) << "," << v(a.end[i]) << ";";
                   s << a.value;
                 },
                 [&](const compiler::SliceAttrs& a) {
                   for (size_t i = 0; i < a.start.size(); ++i) s << v(a.start[i]) << ":" << a.step[i] << ";";
                 },
                 [&](const auto&) {},
             },
             op.attrs);
  return s.str();
}

}  // namespace

EdgeGraph extract_edge_graph(const compiler::Graph& source, const kernels::Implementation& impl, const std::vector<int64_t>& values,
                             plan::Precision precision) {
  EdgeGraph e;
  compiler::Graph& g = e.graph;
  g.opset = source.opset;
  std::map<compiler::TensorId, compiler::TensorId> tensor_of;
  auto constant = [&](ValueId v) { return g.program.constant(values.at(v)); };
  auto tensor = [&](compiler::TensorId t) {
    auto it = tensor_of.find(t);
    if (it != tensor_of.end()) return it->second;
    compiler::Tensor copy = source.tensor(t);
    for (ValueId& v : copy.shape) v = constant(v);
    const compiler::TensorId id = g.add_tensor(std::move(copy));
    tensor_of.emplace(t, id);
    return id;
  };
  std::map<const compiler::Op*, const compiler::Op*> op_of;
  // The ops read through (a folded Pad) and the covered ones, in graph order (source.ops is
  // one vector, so address order is graph order); reserve: pointers into g.ops must stay valid.
  std::vector<const compiler::Op*> ops = impl.reads_through;
  ops.insert(ops.end(), impl.ops.begin(), impl.ops.end());
  std::sort(ops.begin(), ops.end());
  g.ops.reserve(ops.size());
  for (const compiler::Op* op : ops) {
    compiler::Op copy = *op;
    for (compiler::TensorId& t : copy.inputs) t = tensor(t);
    copy.output = tensor(op->output);
    std::visit(
        [&](auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, compiler::ConvAttrs> || std::is_same_v<A, compiler::PoolAttrs>) {
            for (auto& v : a.pad_begin) v = constant(v);
            for (auto& v : a.pad_end) v = constant(v);
          } else if constexpr (std::is_same_v<A, compiler::PadAttrs>) {
            for (auto& v : a.begin) v = constant(v);
            for (auto& v : a.end) v = constant(v);
          } else if constexpr (std::is_same_v<A, compiler::SliceAttrs>) {
            for (auto& v : a.start) v = constant(v);
          } else if constexpr (std::is_same_v<A, compiler::ShapeValuesAttrs>) {
            for (auto& v : a.values) v = constant(v);
          }
        },
        copy.attrs);
    g.ops.push_back(std::move(copy));
    op_of[op] = &g.ops.back();
  }
  for (compiler::TensorId t : impl.inputs) g.inputs.push_back(tensor(t));
  g.outputs.push_back(tensor(impl.output));

  e.impl = impl;
  auto remap = [&](const compiler::Op* op) { return op ? op_of.at(op) : nullptr; };
  // A conversion's anchor (its tensor's producer) is not part of its edge graph.
  e.impl.anchor = impl.kind == kernels::Implementation::Kind::Convert ? nullptr : remap(impl.anchor);
  for (auto& op : e.impl.ops) op = remap(op);
  for (auto& t : e.impl.inputs) t = tensor_of.at(t);
  e.impl.output = tensor_of.at(impl.output);
  for (auto& op : e.impl.reads_through) op = remap(op);
  kernels::ConvFusion& f = e.impl.fusion;
  for (const compiler::Op** op : {&f.concat, &f.upsample, &f.pad0, &f.pad1, &f.activation, &f.pool, &f.tail, &f.tail_activation,
                                  &f.head, &f.head_activation, &f.head_pad0})
    *op = remap(*op);
  for (auto* list : {&f.slices, &f.tail_slices})
    for (auto& op : *list) op = remap(op);

  std::ostringstream sig;
  sig << "edge/1|" << plan::precision_name(precision) << "|" << impl.family << "|" << impl.pattern << "|" << impl.config
      << (impl.coop.emulate ? " emulate" : "") << "|";
  for (const compiler::Op& op : g.ops) {
    sig << op.onnx_op << "(" << describe_attrs(g, op) << ")[";
    for (compiler::TensorId t : op.inputs) {
      sig << (g.tensor(t).is_constant() ? "c" : "") << g.shape_string(t) << ",";
    }
    sig << "->" << g.shape_string(op.output) << "]";
  }
  if (g.ops.empty()) sig << g.shape_string(g.outputs[0]);  // a conversion: its tensor's shape
  e.signature = sig.str();
  return e;
}

}  // namespace denox::autotune
