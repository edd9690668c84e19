// MaxPool / AveragePool -> shaders/pool2d.comp.
#include "common/error.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

void lower_pool2d(PlanBuilder& b, const compiler::Op& op) {
  const auto& attrs = std::get<compiler::PoolAttrs>(op.attrs);
  const TensorId x = op.inputs.at(0), y = op.output;
  if (b.graph().tensor(x).shape.size() != 4) fail(ErrorCode::Unsupported, describe_op(op) + ": the portable pooling needs NCHW input");
  const bool is_max = attrs.kind == compiler::PoolKind::Max;
  PipelineSpec spec;
  spec.family = "pool2d";
  spec.defines = {{"KH", attrs.kernel[0]}, {"KW", attrs.kernel[1]}, {"SH", attrs.stride[0]}, {"SW", attrs.stride[1]},
                  {"DH", attrs.dilation[0]}, {"DW", attrs.dilation[1]}, {"POOL_MAX", is_max ? 1 : 0},
                  {"COUNT_INCLUDE_PAD", !is_max && attrs.count_include_pad ? 1 : 0}};
  spec.binding_count = 2;
  spec.push_constant_count = 8;
  spec.local_size = {32, 8, 1};
  const Extents4 xe = b.extents4(x), ye = b.extents4(y);
  std::vector<ValueId> push = {xe[2], xe[3], ye[2], ye[3], attrs.pad_begin[0], attrs.pad_begin[1], attrs.pad_end[0], attrs.pad_end[1]};
  b.dispatch(op.name, b.pipeline(spec), {b.read(x), b.write(y)}, std::move(push), b.grid_32x8(ye));
}

}  // namespace denox::kernels
