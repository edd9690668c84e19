// A chain of elementwise ops on one tensor and scalar or per-channel constants ->
// shaders/eltwise.comp (one dispatch instead of one per op; implementations.cpp matches it).
#include <bit>
#include <cstdio>
#include <map>

#include "common/error.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

namespace {

template <class... F> struct Overloaded : F... { using F::operator()...; };

std::string number(float v) {  // 9 significant digits (std::to_string prints 1e-7 as 0.000000)
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  return text;
}

int64_t float_bits(float v) { return static_cast<int64_t>(std::bit_cast<int32_t>(v)); }

}  // namespace

std::optional<std::vector<float>> eltwise_constant(const compiler::Graph& g, TensorId t, TensorId x) {
  const compiler::Tensor& c = g.tensor(t);
  if (!c.f32_data || c.f32_data->empty()) return std::nullopt;
  if (c.f32_data->size() == 1) return c.f32_data;
  // Per channel: [1, C, 1, 1] or [C, 1, 1] against a rank-4 X of C channels (C constant).
  const auto& xs = g.tensor(x).shape;
  if (xs.size() != 4 || !g.program.is_constant(xs[1])) return std::nullopt;
  const int64_t channels = g.program.constant_value(xs[1]);
  std::vector<int64_t> dims;
  for (ValueId v : c.shape) {
    if (!g.program.is_constant(v)) return std::nullopt;
    dims.push_back(g.program.constant_value(v));
  }
  const bool per_channel = (dims == std::vector<int64_t>{1, channels, 1, 1} || dims == std::vector<int64_t>{channels, 1, 1});
  if (!per_channel || static_cast<int64_t>(c.f32_data->size()) != channels) return std::nullopt;
  return c.f32_data;
}

EltwiseProgram eltwise_program(const compiler::Graph& g, const std::vector<const compiler::Op*>& ops, TensorId x) {
  if (ops.empty() || ops.size() > kEltwiseMaxSteps)
    fail(ErrorCode::Internal, "eltwise: a chain of " + std::to_string(ops.size()) + " ops (1.." + std::to_string(kEltwiseMaxSteps) + ")");
  EltwiseProgram p;
  std::map<TensorId, int64_t> step_of;
  // Operand `side` (0 left, 1 right) of step `i`: X, a constant (into the table) or a step.
  auto operand = [&](const compiler::Op& op, TensorId t, size_t i, int side) -> int64_t {
    if (t == x) return -1;
    if (auto c = eltwise_constant(g, t, x)) {
      p.constants.push_back({i, side, *c});
      if (c->size() > 1) p.channels = static_cast<int64_t>(c->size());
      return -2;
    }
    auto it = step_of.find(t);
    if (it == step_of.end()) fail(ErrorCode::Internal, "eltwise: " + describe_op(op) + " reads a tensor outside its chain");
    return it->second;
  };
  for (const compiler::Op* op : ops) {
    EltwiseStep s;
    const size_t i = p.steps.size();
    std::visit(Overloaded{
                   [&](const compiler::BinaryAttrs& a) {
                     s.kind = static_cast<int64_t>(a.kind);  // add, sub, mul, div (BinaryKind order)
                     s.left = operand(*op, op->inputs.at(0), i, 0);
                     s.right = operand(*op, op->inputs.at(1), i, 1);
                   },
                   [&](const compiler::ActivationAttrs& a) {
                     const ActivationMacro m = activation_macro(a);
                     s.kind = 10 + m.code;
                     s.left = operand(*op, op->inputs.at(0), i, 0);
                     s.act_a = m.a, s.act_b = m.b;
                   },
                   [&](const auto&) { fail(ErrorCode::Internal, "eltwise: " + describe_op(*op) + " is not elementwise"); },
               },
               op->attrs);
    if (s.left == -2 && s.right == -2) fail(ErrorCode::Internal, "eltwise: " + describe_op(*op) + " of constants only");
    step_of[op->output] = static_cast<int64_t>(i);
    p.steps.push_back(s);
  }
  return p;
}

std::vector<float> EltwiseProgram::table() const {
  std::vector<float> t(steps.size() * 2 * static_cast<size_t>(channels), 0.0f);
  for (const auto& c : constants)
    for (int64_t k = 0; k < channels; ++k)
      t[(c.step * 2 + static_cast<size_t>(c.side)) * static_cast<size_t>(channels) + static_cast<size_t>(k)] =
          c.values.size() == 1 ? c.values[0] : c.values[static_cast<size_t>(k)];
  return t;
}

std::string EltwiseProgram::describe() const {
  static const char* const binary[] = {"+", "-", "*", "/"};
  static const char* const act[] = {"id", "relu", "leaky", "sigmoid", "tanh", "clip"};
  auto name = [&](int64_t ref, size_t step, int side) {
    if (ref >= 0) return std::string("r").append(std::to_string(ref));
    if (ref == -1) return std::string("x");
    for (const auto& c : constants)
      if (c.step == step && c.side == side) return c.values.size() == 1 ? number(c.values[0]) : std::string("c[ch]");
    return std::string("?");
  };
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const EltwiseStep& s = steps[i];
    out.append(i ? "; r" : "r").append(std::to_string(i)).append("=");
    if (s.kind < 10) out += name(s.left, i, 0) + binary[s.kind] + name(s.right, i, 1);
    else out += std::string(act[s.kind - 10]) + "(" + name(s.left, i, 0) + ")";
  }
  return out;
}

void lower_eltwise(PlanBuilder& b, const std::vector<const compiler::Op*>& ops, TensorId x) {
  constexpr int64_t kGroupSize = 256, kPerInvocation = 4;
  const EltwiseProgram p = eltwise_program(b.graph(), ops, x);
  const TensorId y = ops.back()->output;
  PipelineSpec spec;
  spec.family = "eltwise";
  spec.defines = {{"STEPS", static_cast<int64_t>(p.steps.size())}, {"CT", p.channels}};
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const EltwiseStep& s = p.steps[i];
    const std::string n = std::string("_").append(std::to_string(i));
    spec.defines.push_back({"K" + n, s.kind});
    spec.defines.push_back({"L" + n, s.left});
    spec.defines.push_back({"R" + n, s.right});
    if (s.kind >= 10) {
      spec.defines.push_back({"AA" + n, float_bits(s.act_a)});
      spec.defines.push_back({"AB" + n, float_bits(s.act_b)});
    }
  }
  const std::vector<float> table = p.table();
  const uint32_t constants = b.add_weights(ops.back()->name + " (eltwise constants)", table);
  spec.binding_count = 3;
  spec.push_constant_count = 3;
  spec.local_size = {kGroupSize, 1, 1};
  const Extents4 e = b.extents4(y);
  const ValueId count = b.product(e);
  ValueId row;
  const std::array<ValueId, 3> groups = b.grid_rows(count, kGroupSize * kPerInvocation, row);
  std::vector<ValueId> push = {count, row, b.mul(e[2], e[3])};
  std::string name;  // "/Mul+/Add+/Div", as fused conv dispatches are named
  for (const compiler::Op* op : ops) name.append(name.empty() ? "" : "+").append(op->name);
  b.dispatch(name, b.pipeline(spec), {b.read(x), b.write(y), {plan::Resource::Weights, constants, plan::Access::Read}},
             std::move(push), groups);
}

}  // namespace denox::kernels
