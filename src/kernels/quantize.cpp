// The int8 precision's layout conversions (shaders/quantize.comp): a float tensor, NCHW or
// NHWC, to its NHWC_Q8 form and back, one item per 16 channels of a pixel.
#include "common/error.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

void lower_quantize_conversion(PlanBuilder& b, TensorId t, Layout from, Layout to, const TensorQuant& q) {
  const bool to_q8 = to == Layout::NHWC_Q8;
  const Layout float_layout = to_q8 ? from : to;
  const std::string name = b.graph().tensor(t).name + " " + layout_name(from) + "->" + layout_name(to);
  if ((from == Layout::NHWC_Q8) == to_q8 || float_layout == Layout::NHWC_Q8)
    fail(ErrorCode::Internal, name + ": a quantize conversion is between NHWC_Q8 and a float layout");
  const Extents4 e = b.extents4(t);
  if (!b.channels_multiple_of(t, 16))
    fail(ErrorCode::Internal, name + ": an NHWC_Q8 tensor needs a constant channel count that is a multiple of 16");
  PipelineSpec spec;
  spec.family = "quantize";
  spec.defines = {{"TO_Q8", to_q8 ? 1 : 0}, {"F_HWC", float_layout == Layout::NHWC ? 1 : 0}, {"ZP", q.zero_point}};
  spec.binding_count = 2;
  spec.push_constant_count = 5;
  spec.local_size = {256, 1, 1};
  const ValueId plane = b.mul(e[2], e[3]);
  const ValueId count = b.product(std::array{e[0], plane, b.constant(b.program().constant_value(e[1]) / 16)});
  ValueId row;
  const std::array<ValueId, 3> groups = b.grid_rows(count, 256, row);
  std::vector<ValueId> push = {count, row, e[1], plane, b.float_bits(to_q8 ? 1.0f / q.scale : q.scale)};
  b.dispatch(name, b.pipeline(spec), {b.read(t, from), b.write(t, to)}, std::move(push), groups);
}

}  // namespace denox::kernels
