// Nearest Resize / Upsample by integer factors -> shaders/upsample_nearest.comp.
#include "common/error.hpp"
#include "kernels/lowering_ops.hpp"
#include "runtime/reference/reference_ops.hpp"

namespace denox::kernels {

namespace {

// For every coordinate mode but align_corners the source index of output o is
// o / S + D0 + (o % S >= T ? 1 : 0) before clamping (the shift depends on o % S only): read D0
// and T off the CPU reference's own indices, far enough from the edges that none is clamped.
std::pair<int64_t, int64_t> affine_offsets(int64_t scale, const compiler::UpsampleAttrs& attrs, const compiler::Op& op) {
  constexpr int64_t kProbeExtent = 8, kProbeBlock = 3;
  const auto index = reference::nearest_source_indices(kProbeExtent, scale, attrs.coordinate_mode, attrs.nearest_mode);
  auto offset = [&](int64_t r) { return index[static_cast<size_t>(kProbeBlock * scale + r)] - kProbeBlock; };
  const int64_t d0 = offset(0);
  int64_t t = scale;
  for (int64_t r = 0; r < scale; ++r) {
    const int64_t o = offset(r);
    if (o != d0 && o != d0 + 1) fail(ErrorCode::Unsupported, describe_op(op) + ": coordinate transform not representable");
    if (o == d0 + 1 && t == scale) t = r;
    if (o == d0 && t != scale) fail(ErrorCode::Unsupported, describe_op(op) + ": coordinate transform not representable");
  }
  return {d0, t};
}

}  // namespace

void lower_upsample_nearest(PlanBuilder& b, const compiler::Op& op) {
  const auto& attrs = std::get<compiler::UpsampleAttrs>(op.attrs);
  const TensorId x = op.inputs.at(0), y = op.output;
  if (attrs.scale[0] < 1 || attrs.scale[1] < 1) fail(ErrorCode::Unsupported, describe_op(op) + ": scales must be positive integers");
  PipelineSpec spec;
  spec.family = "upsample_nearest";
  spec.defines = {{"SCALE_H", attrs.scale[0]}, {"SCALE_W", attrs.scale[1]}};
  if (attrs.coordinate_mode == compiler::CoordinateMode::AlignCorners) {
    spec.defines.push_back({"ALIGN_CORNERS", 1});
    spec.defines.push_back({"NEAREST", static_cast<int64_t>(attrs.nearest_mode)});
  } else {
    const auto [d0_h, t_h] = affine_offsets(attrs.scale[0], attrs, op);
    const auto [d0_w, t_w] = affine_offsets(attrs.scale[1], attrs, op);
    spec.defines.insert(spec.defines.end(), {{"ALIGN_CORNERS", 0}, {"D0_H", d0_h}, {"T_H", t_h}, {"D0_W", d0_w}, {"T_W", t_w}});
  }
  spec.binding_count = 2;
  spec.push_constant_count = 4;
  spec.local_size = {32, 8, 1};
  const Extents4 xe = b.extents4(x), ye = b.extents4(y);
  b.dispatch(op.name, b.pipeline(spec), {b.read(x), b.write(y)}, {xe[2], xe[3], ye[2], ye[3]}, b.grid_32x8(ye));
}

}  // namespace denox::kernels
