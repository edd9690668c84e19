// Pad (constant mode, negative pads crop) -> shaders/pad.comp.
#include "common/error.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

void lower_pad(PlanBuilder& b, const compiler::Op& op) {
  const auto& attrs = std::get<compiler::PadAttrs>(op.attrs);
  const TensorId x = op.inputs.at(0), y = op.output;
  const size_t rank = b.graph().tensor(x).shape.size();
  if (attrs.begin.size() != rank) fail(ErrorCode::Internal, describe_op(op) + ": pads do not cover every axis");
  PipelineSpec spec;
  spec.family = "pad";
  spec.binding_count = 2;
  spec.push_constant_count = 12;
  spec.local_size = {32, 8, 1};
  const Extents4 xe = b.extents4(x), ye = b.extents4(y);
  std::vector<ValueId> push = {ye[1], ye[2], ye[3], xe[0], xe[1], xe[2], xe[3]};
  for (size_t k = 0; k < 4; ++k) push.push_back(k < 4 - rank ? b.constant(0) : attrs.begin[k - (4 - rank)]);
  push.push_back(b.float_bits(attrs.value));
  b.dispatch(op.name, b.pipeline(spec), {b.read(x), b.write(y)}, std::move(push), b.grid_32x8(ye));
}

}  // namespace denox::kernels
