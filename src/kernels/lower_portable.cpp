#include "kernels/lower_portable.hpp"

#include <map>
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

bool is_graph_output(const compiler::Graph& g, TensorId t) {
  for (TensorId out : g.outputs)
    if (out == t) return true;
  return false;
}

// The op that alone reads `t` (and `t` is no graph output), if it is of attribute type A.
template <class A>
const Op* sole_consumer(const compiler::Graph& g, TensorId t, const std::vector<std::vector<size_t>>& consumers) {
  const auto& readers = consumers[t];
  if (readers.size() != 1 || is_graph_output(g, t)) return nullptr;
  const Op& next = g.ops[readers[0]];
  return std::holds_alternative<A>(next.attrs) ? &next : nullptr;
}

bool is_const(const compiler::Graph& g, ValueId v, int64_t lo, int64_t hi) {
  if (!g.program.is_constant(v)) return false;
  const int64_t c = g.program.constant_value(v);
  return c >= lo && c <= hi;
}

// A 2x2/2 max-pool without begin padding that conv2d_coopmat's epilogue can apply.
bool fusable_pool(const compiler::Graph& g, const Op& op) {
  const auto& a = std::get<compiler::PoolAttrs>(op.attrs);
  if (a.kind != compiler::PoolKind::Max || a.kernel != std::array<int64_t, 2>{2, 2} || a.stride != std::array<int64_t, 2>{2, 2} ||
      a.dilation != std::array<int64_t, 2>{1, 1} || op.inputs.size() != 1 || g.tensor(op.output).shape.size() != 4)
    return false;
  return is_const(g, a.pad_begin[0], 0, 0) && is_const(g, a.pad_begin[1], 0, 0) && is_const(g, a.pad_end[0], 0, 1) &&
         is_const(g, a.pad_end[1], 0, 1);
}

// A nearest 2x upsample whose source index is o / 2 (what the coop prologue reads).
bool fusable_upsample(const compiler::Graph& g, const Op& op) {
  const auto& a = std::get<compiler::UpsampleAttrs>(op.attrs);
  return a.scale == std::array<int64_t, 2>{2, 2} && a.is_floor_division() && op.inputs.size() >= 1 &&
         g.tensor(op.inputs[0]).shape.size() == 4;
}

// The coop convolutions of the plan and what each absorbs; the absorbed ops go into `fused`.
std::map<const Op*, CoopConvLowering> plan_coop_convs(PlanBuilder& b, const compiler::Graph& g, const LoweringTarget& target,
                                                      const std::vector<std::vector<size_t>>& consumers,
                                                      const std::vector<const Op*>& producer, std::set<const Op*>& fused) {
  std::map<const Op*, CoopConvLowering> out;
  for (const Op& op : g.ops) {
    if (!std::holds_alternative<compiler::ConvAttrs>(op.attrs) || fused.count(&op)) continue;
    const compiler::Tensor& weight = g.tensor(op.inputs.at(1));
    if (!weight.f32_data || weight.shape.size() != 4 || g.tensor(op.inputs[0]).shape.size() != 4) continue;
    bool symbolic = false;
    for (ValueId v : weight.shape) symbolic |= !g.program.is_constant(v);
    if (symbolic) continue;
    const Conv2dShape shape = conv2d_shape(b, op);
    if (!coop_conv_applicable(shape)) continue;

    CoopConvLowering how;
    how.emulate = target.coop_emulate;
    how.subgroup_size = target.coop.subgroup_size;
    how.activation = fusable_activation(g, op, consumers);
    if (target.fuse) {
      const TensorId out_t = how.activation ? how.activation->output : op.output;
      if (const Op* pool = sole_consumer<compiler::PoolAttrs>(g, out_t, consumers); pool && fusable_pool(g, *pool)) how.pool = pool;
      const TensorId x = op.inputs[0];
      const Op* src = producer[x];
      if (src && consumers[x].size() == 1 && !is_graph_output(g, x) && std::holds_alternative<compiler::ConcatAttrs>(src->attrs) &&
          src->inputs.size() == 2) {
        const int64_t axis = std::get<compiler::ConcatAttrs>(src->attrs).axis;
        if ((axis == 1 || axis == -3) && g.tensor(src->inputs[0]).shape.size() == 4 && g.tensor(src->inputs[1]).shape.size() == 4 &&
            src->inputs[0] != src->inputs[1]) {
          how.concat = src;
          src = producer[src->inputs[0]];
          if (src && consumers[how.concat->inputs[0]].size() == 1 && !is_graph_output(g, how.concat->inputs[0]) &&
              std::holds_alternative<compiler::UpsampleAttrs>(src->attrs) && fusable_upsample(g, *src))
            how.upsample = src;
        }
      } else if (src && consumers[x].size() == 1 && !is_graph_output(g, x) && std::holds_alternative<compiler::UpsampleAttrs>(src->attrs) &&
                 fusable_upsample(g, *src)) {
        how.upsample = src;
      }
    }
    std::optional<CoopConvConfig> config;
    if (auto it = target.conv_configs.find(op.name);
        it != target.conv_configs.end() && coop_config_fits(it->second, shape, target.coop, how.pool != nullptr))
      config = it->second;
    if (!config && target.force_config && coop_config_fits(*target.force_config, shape, target.coop, how.pool != nullptr))
      config = target.force_config;
    if (!config) config = choose_coop_config(shape, target.coop, how.pool != nullptr);
    if (!config && how.pool) {
      how.pool = nullptr;
      config = choose_coop_config(shape, target.coop, false);
    }
    if (!config) continue;  // the portable convolution
    how.config = *config;
    for (const Op* absorbed : {how.activation, how.pool, how.concat, how.upsample})
      if (absorbed) fused.insert(absorbed);
    out.emplace(&op, how);
  }
  return out;
}

}  // namespace

std::string LoweringTarget::key() const {
  if (!uses_coop()) return "portable";
  std::string k = "coop(";
  for (const auto& s : coop.shapes)
    k += std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.acc_f16 ? "f16," : "f32,");
  k += "sg" + std::to_string(coop.subgroup_size) + ";smem" + std::to_string(coop.max_shared_bytes) +
       (coop.prefer_f16_accumulate ? ";f16acc" : ";f32acc") + (fuse ? ";fuse" : "") + (coop_emulate ? ";emulate" : "");
  if (force_config) k += ";force " + force_config->describe();
  for (const auto& [name, c] : conv_configs) k += ";" + name + " " + c.describe();
  return k + ")";
}

plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision) {
  return build_portable_plan(graph, precision, LoweringTarget{});
}

plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision, const LoweringTarget& target) {
  PlanBuilder b(graph, precision);
  std::vector<std::vector<size_t>> consumers(graph.tensors.size());
  std::vector<const Op*> producer(graph.tensors.size(), nullptr);
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    for (TensorId t : graph.ops[i].inputs) consumers.at(t).push_back(i);
    producer.at(graph.ops[i].output) = &graph.ops[i];
  }

  std::set<const Op*> fused;
  std::map<const Op*, CoopConvLowering> coop;
  if (precision == plan::Precision::F16 && target.uses_coop()) coop = plan_coop_convs(b, graph, target, consumers, producer, fused);
  for (const Op& op : graph.ops) {
    if (fused.count(&op)) continue;
    std::visit(Overloaded{
                   [&](const compiler::ConvAttrs&) {
                     if (auto it = coop.find(&op); it != coop.end()) {
                       lower_conv2d_coop(b, op, it->second);
                       return;
                     }
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
