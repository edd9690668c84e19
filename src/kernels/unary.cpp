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
  constexpr int64_t kGroupSize = 256, kMaxGroupsX = 32768;
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
  // A 2D grid: rows of at most kMaxGroupsX groups (at least one, so the row count never
  // divides by zero for an empty tensor: it is then 0 and the runtime skips the dispatch).
  const ValueId blocks = b.ceil_div(count, kGroupSize);
  const ValueId gx = b.program().max(b.program().min(blocks, b.constant(kMaxGroupsX)), b.constant(1));
  const ValueId gy = b.program().binary(compiler::IntOp::DivCeil, blocks, gx);
  std::vector<ValueId> push = {count, b.mul(gx, b.constant(kGroupSize)), b.float_bits(act.a), b.float_bits(act.b)};
  b.dispatch(op.name, b.pipeline(spec), {b.read(x), b.write(y)}, std::move(push), {gx, gy, b.constant(1)});
}

}  // namespace denox::kernels
