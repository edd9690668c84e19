// Pure data movement -> shaders/copy.comp (a strided 4D copy): Concat is one copy per input
// into its range of the output, Slice one copy with the starts as offset and steps as strides.
#include "common/error.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

namespace {

struct StridedView {
  ValueId offset;
  Extents4 strides;
};

// dst[view] = src[view] over `extents`; one dispatch.
void copy(PlanBuilder& b, std::string name, plan::Binding src, const StridedView& from, plan::Binding dst, const StridedView& to,
          const Extents4& extents) {
  PipelineSpec spec;
  spec.family = "copy";
  spec.binding_count = 2;
  spec.push_constant_count = 13;
  spec.local_size = {32, 8, 1};
  std::vector<ValueId> push = {extents[1], extents[2], extents[3], from.offset};
  push.insert(push.end(), from.strides.begin(), from.strides.end());
  push.push_back(to.offset);
  push.insert(push.end(), to.strides.begin(), to.strides.end());
  b.dispatch(std::move(name), b.pipeline(spec), {src, dst}, std::move(push), b.grid_32x8(extents));
}

size_t normalized_axis(int64_t axis, size_t rank, const compiler::Op& op) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(ErrorCode::InvalidModel, describe_op(op) + ": axis " + std::to_string(axis) + " out of range");
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace

void lower_concat(PlanBuilder& b, const compiler::Op& op) {
  const TensorId y = op.output;
  const size_t rank = b.graph().tensor(y).shape.size();
  const size_t axis = normalized_axis(std::get<compiler::ConcatAttrs>(op.attrs).axis, rank, op) + (4 - rank);
  const Extents4 ye = b.extents4(y);
  const Extents4 y_strides = b.strides(ye);
  ValueId start = b.constant(0);  // along the axis, in elements of the axis
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    const TensorId x = op.inputs[k];
    const Extents4 xe = b.extents4(x);
    copy(b, op.name + " input " + std::to_string(k), b.read(x), {b.constant(0), b.strides(xe)}, b.write(y),
         {b.mul(start, y_strides[axis]), y_strides}, xe);
    start = b.program().add(start, xe[axis]);
  }
}

void lower_slice(PlanBuilder& b, const compiler::Op& op) {
  const auto& attrs = std::get<compiler::SliceAttrs>(op.attrs);
  const TensorId x = op.inputs.at(0), y = op.output;
  const size_t rank = b.graph().tensor(x).shape.size();
  if (attrs.start.size() != rank || attrs.step.size() != rank)
    fail(ErrorCode::Internal, describe_op(op) + ": slice attributes do not cover every axis");
  const Extents4 x_strides = b.strides(b.extents4(x)), ye = b.extents4(y);
  StridedView from{b.constant(0), {}};
  for (size_t k = 0; k < 4; ++k) {
    if (k < 4 - rank) {
      from.strides[k] = b.constant(0);  // a leading axis of extent 1
      continue;
    }
    const size_t axis = k - (4 - rank);
    from.offset = b.program().add(from.offset, b.mul(attrs.start[axis], x_strides[k]));
    from.strides[k] = b.mul(b.constant(attrs.step[axis]), x_strides[k]);
  }
  copy(b, op.name, b.read(x), from, b.write(y), {b.constant(0), b.strides(ye)}, ye);
}

void lower_layout_conversion(PlanBuilder& b, TensorId t, Layout from, Layout to) {
  // The copy walks (N, C, H, W); each side's strides say where an element lives in its layout.
  const Extents4 e = b.extents4(t);
  auto strides = [&](Layout l) {
    if (l == Layout::NCHW) return b.strides(e);
    const ValueId wc = b.mul(e[3], e[1]);
    return Extents4{b.mul(wc, e[2]), b.constant(1), wc, e[1]};
  };
  const std::string name = b.graph().tensor(t).name + " " + layout_name(from) + "->" + layout_name(to);
  copy(b, name, b.read(t, from), {b.constant(0), strides(from)}, b.write(t, to), {b.constant(0), strides(to)}, e);
}

}  // namespace denox::kernels
