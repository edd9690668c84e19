#include "kernels/lower_portable.hpp"

#include <set>

#include "common/error.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

using compiler::Op;

namespace {

template <class... F> struct Overloaded : F... { using F::operator()...; };

// The activation op that alone consumes `conv`'s output, if there is one (and the output is not
// also a graph output, which must keep the value before the activation).
const Op* fusable_activation(const compiler::Graph& g, const Op& conv, const std::vector<std::vector<size_t>>& consumers) {
  const auto& readers = consumers[conv.output];
  if (readers.size() != 1) return nullptr;
  for (TensorId out : g.outputs)
    if (out == conv.output) return nullptr;
  const Op& next = g.ops[readers[0]];
  if (!std::holds_alternative<compiler::ActivationAttrs>(next.attrs) || next.inputs.size() != 1) return nullptr;
  return &next;
}

}  // namespace

plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision) {
  PlanBuilder b(graph, precision);
  std::vector<std::vector<size_t>> consumers(graph.tensors.size());
  for (size_t i = 0; i < graph.ops.size(); ++i)
    for (TensorId t : graph.ops[i].inputs) consumers.at(t).push_back(i);

  std::set<const Op*> fused;
  for (const Op& op : graph.ops) {
    if (fused.count(&op)) continue;
    std::visit(Overloaded{
                   [&](const compiler::ConvAttrs&) {
                     const Op* act = fusable_activation(graph, op, consumers);
                     if (act) fused.insert(act);
                     lower_conv2d(b, op, act);
                   },
                   [&](const compiler::PoolAttrs&) { lower_pool2d(b, op); },
                   [&](const compiler::ActivationAttrs&) { lower_unary(b, op); },
                   [&](const compiler::BinaryAttrs&) { lower_binary(b, op); },
                   [&](const compiler::UpsampleAttrs&) { lower_upsample_nearest(b, op); },
                   [&](const compiler::ConcatAttrs&) { lower_concat(b, op); },
                   [&](const compiler::PadAttrs&) { lower_pad(b, op); },
                   [&](const compiler::SliceAttrs&) { lower_slice(b, op); },
                   // Computed shapes stay on the host: if a float op reads one, b.read() reports it.
                   [&](const compiler::ShapeValuesAttrs&) {},
                   [&](const compiler::IdentityAttrs&) { b.alias(op.output, op.inputs.at(0)); },
               },
               op.attrs);
  }
  for (TensorId out : graph.outputs)
    if (b.is_constant(out))
      fail(ErrorCode::Unsupported, "output '" + graph.tensor(out).name + "' is a constant; the GPU path computes its outputs");
  plan::Plan plan = b.finish();
  plan::validate_plan(plan);
  return plan;
}

}  // namespace denox::kernels
