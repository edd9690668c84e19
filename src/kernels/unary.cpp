// A standalone activation -> shaders/unary.comp (and the ACT macro every family shares).
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

ActivationMacro activation_macro(const compiler::ActivationAttrs& attrs) {
  // Codes of common.glsl's ACT_* macros.
  switch (attrs.kind) {
    case compiler::Activation::Relu: return {1, 0.0f, 0.0f};
    case compiler::Activation::LeakyRelu: return {2, attrs.alpha, 0.0f};
    case compiler::Activation::Sigmoid: return {3, 0.0f, 0.0f};
    case compiler::Activation::Tanh: return {4, 0.0f, 0.0f};
    case compiler::Activation::Clip: return {5, attrs.min, attrs.max};
  }
  return {};
}

void lower_unary(PlanBuilder& b, const compiler::Op& op) {
  constexpr int64_t kGroupSize = 256;
  const ActivationMacro act = activation_macro(std::get<compiler::ActivationAttrs>(op.attrs));
  const TensorId x = op.inputs.at(0), y = op.output;
  PipelineSpec spec;
  spec.family = "unary";
  spec.defines = {{"ACT", act.code}};
  spec.binding_count = 2;
  spec.push_constant_count = 4;
  spec.local_size = {kGroupSize, 1, 1};
  const Extents4 e = b.extents4(y);
  const ValueId count = b.product(e);
  ValueId row;
  const std::array<ValueId, 3> groups = b.grid_rows(count, kGroupSize, row);
  std::vector<ValueId> push = {count, row, b.float_bits(act.a), b.float_bits(act.b)};
  b.dispatch(op.name, b.pipeline(spec), {b.read(x), b.write(y)}, std::move(push), groups);
}

}  // namespace denox::kernels
