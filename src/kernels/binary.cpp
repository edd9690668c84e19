// Add / Sub / Mul / Div with numpy broadcasting -> shaders/binary.comp.
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

namespace {

// Element strides of an operand read at output indices: 0 on every axis of extent 1, so a
// broadcast axis re-reads the same element (right-aligned ranks come from extents4's leading 1s).
Extents4 broadcast_strides(PlanBuilder& b, TensorId t) {
  const Extents4 e = b.extents4(t);
  Extents4 s = b.strides(e);
  for (size_t k = 0; k < 4; ++k) {
    const ValueId is_one = b.program().binary(compiler::IntOp::Eq, e[k], b.constant(1));
    s[k] = b.program().select(is_one, b.constant(0), s[k]);
  }
  return s;
}

}  // namespace

void lower_binary(PlanBuilder& b, const compiler::Op& op) {
  const auto& attrs = std::get<compiler::BinaryAttrs>(op.attrs);
  const TensorId a = op.inputs.at(0), c = op.inputs.at(1), y = op.output;
  PipelineSpec spec;
  spec.family = "binary";
  spec.defines = {{"OP", static_cast<int64_t>(attrs.kind)}};  // BinaryKind order: add, sub, mul, div
  spec.binding_count = 3;
  spec.push_constant_count = 11;
  spec.local_size = {32, 8, 1};
  const Extents4 ye = b.extents4(y), as = broadcast_strides(b, a), cs = broadcast_strides(b, c);
  std::vector<ValueId> push = {ye[1], ye[2], ye[3]};
  push.insert(push.end(), as.begin(), as.end());
  push.insert(push.end(), cs.begin(), cs.end());
  b.dispatch(op.name, b.pipeline(spec), {b.read(a), b.read(c), b.write(y)}, std::move(push), b.grid_32x8(ye));
}

}  // namespace denox::kernels
