// Converters for nodes that read a tensor computed by the network: each becomes a graph IR op
// (or an alias) whose output extents are shape-program expressions of the input extents.
// Anything a later stage could not execute faithfully is rejected here, with the node named.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

#include "compiler/import/node_context.hpp"

namespace denox::compiler {
namespace {

using TP = onnx::TensorProto;

const Tensor& tensor_of(NodeContext& ctx, TensorId id) { return ctx.graph().tensor(id); }

void require_float(NodeContext& ctx, TensorId id) {
  if (tensor_of(ctx, id).dtype != DType::F32) ctx.unsupported("tensor inputs must be float32");
}

void require_rank(NodeContext& ctx, TensorId id, size_t rank, const char* what) {
  if (tensor_of(ctx, id).shape.size() != rank) {
    ctx.unsupported(std::string(what) + " on a rank-" + std::to_string(tensor_of(ctx, id).shape.size()) +
                    " tensor (denox supports rank " + std::to_string(rank) + ")");
  }
}

// Reads kernel/stride/dilation/pads/auto_pad shared by Conv and the pools, and computes the
// output extents. `ceil_mode` follows PyTorch/ONNX Runtime: the last window must start inside
// the input or its left padding.
// The largest kernel, stride and dilation denox takes. Far above any denoiser's (3x3 windows,
// stride 2 pools), and small enough that the windows' extents and the kernels' shared-memory
// sizes (kernels/conv2d_layout.cpp) stay far inside int64: an attribute of 2^62 was signed
// overflow there.
constexpr int64_t kMaxWindowAttr = 4096;

struct Window {
  std::array<int64_t, 2> kernel{}, stride{1, 1}, dilation{1, 1};
  std::array<ValueId, 2> pad_begin{}, pad_end{}, out{};
};

Window read_window(NodeContext& ctx, TensorId x, std::array<int64_t, 2> kernel, bool ceil_mode) {
  ShapeProgram& p = ctx.program();
  const auto& shape = tensor_of(ctx, x).shape;
  Window w;
  w.kernel = kernel;
  auto strides = ctx.attr_ints("strides", {1, 1});
  auto dilations = ctx.attr_ints("dilations", {1, 1});
  auto pads = ctx.attr_ints("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) ctx.invalid("strides, dilations or pads of the wrong length");
  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  for (size_t a = 0; a < 2; ++a) {
    if (kernel[a] < 1 || strides[a] < 1 || dilations[a] < 1) ctx.invalid("kernel, strides and dilations must be positive");
    if (kernel[a] > kMaxWindowAttr || strides[a] > kMaxWindowAttr || dilations[a] > kMaxWindowAttr)
      ctx.unsupported("kernel " + std::to_string(kernel[a]) + ", stride " + std::to_string(strides[a]) + " and dilation " +
                      std::to_string(dilations[a]) + " on axis " + std::to_string(2 + a) + ": denox takes at most " +
                      std::to_string(kMaxWindowAttr));
    if (pads[a] < 0 || pads[a + 2] < 0) ctx.invalid("negative pads");
    w.stride[a] = strides[a];
    w.dilation[a] = dilations[a];
    ValueId in = shape[2 + a];
    ValueId extent = p.constant((kernel[a] - 1) * dilations[a] + 1);
    ValueId s = p.constant(strides[a]);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[a] = p.binary(IntOp::DivCeil, in, s);
      ValueId total = p.max(p.constant(0), p.sub(p.add(p.mul(p.sub(w.out[a], p.constant(1)), s), extent), in));
      ValueId half = p.binary(IntOp::DivFloor, total, p.constant(2));
      ValueId other = p.sub(total, half);
      w.pad_begin[a] = auto_pad == "SAME_UPPER" ? half : other;
      w.pad_end[a] = auto_pad == "SAME_UPPER" ? other : half;
      continue;
    }
    if (auto_pad != "NOTSET" && auto_pad != "VALID") ctx.invalid("unknown auto_pad '" + auto_pad + "'");
    bool valid = auto_pad == "VALID";
    w.pad_begin[a] = p.constant(valid ? 0 : pads[a]);
    w.pad_end[a] = p.constant(valid ? 0 : pads[a + 2]);
    ValueId span = p.sub(p.add(p.add(in, w.pad_begin[a]), w.pad_end[a]), extent);
    ctx.program().require(p.binary(IntOp::Le, p.constant(0), span),
                          ctx.where() + ": the window is larger than the padded input at this resolution");
    if (!ceil_mode) {
      w.out[a] = p.add(p.binary(IntOp::DivFloor, span, s), p.constant(1));
    } else {
      ValueId out = p.add(p.binary(IntOp::DivCeil, span, s), p.constant(1));
      ValueId last_start = p.mul(p.sub(out, p.constant(1)), s);
      ValueId starts_in_padding = p.binary(IntOp::Le, p.add(in, w.pad_begin[a]), last_start);
      w.out[a] = p.select(starts_in_padding, p.sub(out, p.constant(1)), out);
    }
  }
  return w;
}

void convert_conv(NodeContext& ctx) {
  TensorId x = ctx.data_input(0);
  require_float(ctx, x);
  require_rank(ctx, x, 4, "Conv");
  if (ctx.input(1).is_data) ctx.unsupported("the weights must be a constant (initializer)");
  TensorId w = ctx.tensor_input(1);
  // Copies: materializing the bias below may grow the tensor list and move its elements.
  struct {
    std::vector<ValueId> shape;
    DType dtype;
  } wt{tensor_of(ctx, w).shape, tensor_of(ctx, w).dtype};
  ShapeProgram& p = ctx.program();
  if (wt.shape.size() != 4 || wt.dtype != DType::F32) ctx.unsupported("weights must be a float tensor of rank 4 (2D convolution)");
  if (ctx.attr_int("group", 1) != 1) ctx.unsupported("group=" + std::to_string(ctx.attr_int("group", 1)) + " (denox supports group=1)");
  std::array<int64_t, 2> kernel{p.constant_value(wt.shape[2]), p.constant_value(wt.shape[3])};
  auto ks = ctx.attr_ints("kernel_shape", {kernel[0], kernel[1]});
  if (ks.size() != 2 || ks[0] != kernel[0] || ks[1] != kernel[1]) ctx.invalid("kernel_shape does not match the weights");
  const std::vector<ValueId> xs = tensor_of(ctx, x).shape;  // copy: adding tensors moves them
  if (!p.require_equal(xs[1], wt.shape[1], ctx.where() + ": input channels must match the weights")) {
    ctx.invalid("the input has " + p.to_string(xs[1]) + " channels, the weights expect " + p.to_string(wt.shape[1]));
  }
  Window win = read_window(ctx, x, kernel, false);
  ConvAttrs a;
  a.kernel = kernel;
  a.stride = win.stride;
  a.dilation = win.dilation;
  a.pad_begin = win.pad_begin;
  a.pad_end = win.pad_end;
  std::vector<TensorId> inputs{x, w};
  if (ctx.has_input(2)) {
    if (ctx.input(2).is_data) ctx.unsupported("the bias must be a constant (initializer)");
    TensorId b = ctx.tensor_input(2);
    const auto& bs = tensor_of(ctx, b).shape;
    if (bs.size() != 1 || bs[0] != wt.shape[0]) ctx.invalid("bias shape does not match the output channels");
    // (An integer bias passed the import and failed in the kernels, without the node's name.)
    if (tensor_of(ctx, b).dtype != DType::F32) ctx.invalid("the bias is an integer tensor; ONNX gives it the input's floating-point type");
    inputs.push_back(b);
    a.has_bias = true;
  }
  ctx.add_op(a, inputs, {xs[0], wt.shape[0], win.out[0], win.out[1]});
}

void convert_pool(NodeContext& ctx) {
  bool is_max = ctx.node().op_type() == "MaxPool";
  TensorId x = ctx.data_input(0);
  require_float(ctx, x);
  require_rank(ctx, x, 4, ctx.node().op_type().c_str());
  if (is_max && ctx.output_consumed(1)) ctx.unsupported("the Indices output");
  ctx.require_attr_default("storage_order", 0);
  auto ks = ctx.attr_ints("kernel_shape");
  if (ks.size() != 2) ctx.unsupported("kernel_shape of " + std::to_string(ks.size()) + " axes (denox supports 2D pooling)");
  Window win = read_window(ctx, x, {ks[0], ks[1]}, ctx.attr_int("ceil_mode", 0) != 0);
  PoolAttrs a;
  a.kind = is_max ? PoolKind::Max : PoolKind::Average;
  a.kernel = win.kernel;
  a.stride = win.stride;
  a.dilation = win.dilation;
  a.pad_begin = win.pad_begin;
  a.pad_end = win.pad_end;
  a.count_include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const std::vector<ValueId> xs = tensor_of(ctx, x).shape;  // copy: adding tensors moves them
  ctx.add_op(a, {x}, {xs[0], xs[1], win.out[0], win.out[1]});
}

void convert_activation(NodeContext& ctx) {
  TensorId x = ctx.data_input(0);
  require_float(ctx, x);
  ActivationAttrs a;
  const std::string& op = ctx.node().op_type();
  if (op == "Relu") a.kind = Activation::Relu;
  if (op == "Sigmoid") a.kind = Activation::Sigmoid;
  if (op == "Tanh") a.kind = Activation::Tanh;
  if (op == "LeakyRelu") {
    a.kind = Activation::LeakyRelu;
    a.alpha = ctx.attr_float("alpha", 0.01f);
  }
  if (op == "Clip") {
    a.kind = Activation::Clip;
    SymMath m = ctx.math();
    if (ctx.opset() < 11) {
      a.min = ctx.attr_float("min", a.min);
      a.max = ctx.attr_float("max", a.max);
    }
    if (ctx.has_input(1)) a.min = saturate_to_float(m.constant_double(m.element(ctx.static_input(1, "min"), 0)));
    if (ctx.has_input(2)) a.max = saturate_to_float(m.constant_double(m.element(ctx.static_input(2, "max"), 0)));
  }
  ctx.add_op(a, {x}, tensor_of(ctx, x).shape);
}

// numpy broadcasting of symbolic extents: equal ids, or a constant 1 on one side; anything
// else is checked when the program runs.
std::vector<ValueId> broadcast_shapes(NodeContext& ctx, const std::vector<TensorId>& inputs) {
  ShapeProgram& p = ctx.program();
  size_t rank = 0;
  for (TensorId t : inputs) rank = std::max(rank, tensor_of(ctx, t).shape.size());
  std::vector<ValueId> out(rank, p.constant(1));
  for (TensorId t : inputs) {
    const auto& s = tensor_of(ctx, t).shape;
    for (size_t k = 0; k < s.size(); ++k) {
      ValueId& o = out[rank - s.size() + k];
      if (p.is_constant(s[k], 1) || o == s[k]) continue;
      if (p.is_constant(o, 1)) {
        o = s[k];
        continue;
      }
      if (!p.require_equal(o, s[k], ctx.where() + ": operand extents on axis " + std::to_string(rank - s.size() + k) + " differ")) {
        ctx.invalid("operands of shapes " + ctx.graph().shape_string(inputs[0]) + " and " + ctx.graph().shape_string(t) + " do not broadcast");
      }
    }
  }
  return out;
}

void convert_binary(NodeContext& ctx) {
  BinaryAttrs a;
  const std::string& op = ctx.node().op_type();
  a.kind = op == "Add" ? BinaryKind::Add : op == "Sub" ? BinaryKind::Sub : op == "Mul" ? BinaryKind::Mul : BinaryKind::Div;
  TensorId lhs = ctx.tensor_input(0), rhs = ctx.tensor_input(1);
  require_float(ctx, lhs);
  require_float(ctx, rhs);
  ctx.add_op(a, {lhs, rhs}, broadcast_shapes(ctx, {lhs, rhs}));
}

void convert_concat(NodeContext& ctx) {
  std::vector<TensorId> inputs;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i)) inputs.push_back(ctx.tensor_input(i));
  }
  ShapeProgram& p = ctx.program();
  std::vector<ValueId> shape = tensor_of(ctx, inputs[0]).shape;
  auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 1), shape.size()));
  shape[axis] = p.constant(0);
  for (TensorId t : inputs) {
    require_float(ctx, t);
    const auto& s = tensor_of(ctx, t).shape;
    if (s.size() != shape.size()) ctx.invalid("inputs of different ranks");
    for (size_t k = 0; k < s.size(); ++k) {
      if (k == axis) continue;
      if (!p.require_equal(shape[k], s[k], ctx.where() + ": input extents on axis " + std::to_string(k) + " differ (" +
                                               p.to_string(shape[k]) + " vs " + p.to_string(s[k]) + ")")) {
        ctx.invalid("inputs differ on axis " + std::to_string(k) + ": " + p.to_string(shape[k]) + " vs " + p.to_string(s[k]));
      }
    }
    shape[axis] = p.add(shape[axis], s[axis]);
  }
  ctx.add_op(ConcatAttrs{static_cast<int64_t>(axis)}, inputs, shape);
}

void convert_pad(NodeContext& ctx) {
  TensorId x = ctx.data_input(0);
  require_float(ctx, x);
  std::string mode = ctx.attr_string("mode", "constant");
  if (mode != "constant") ctx.unsupported("mode '" + mode + "' (denox supports constant padding)");
  const std::vector<ValueId> xs = tensor_of(ctx, x).shape;  // copy: adding tensors moves them
  const size_t rank = xs.size();
  std::vector<ValueId> pads;
  PadAttrs a;
  if (ctx.opset() < 11) {
    for (int64_t v : ctx.attr_ints("pads")) pads.push_back(ctx.program().constant(v));
    a.value = ctx.attr_float("value", 0.0f);
  } else {
    pads = ctx.symbolic_ints(1, "pads");
    if (ctx.has_input(2)) {
      SymMath m = ctx.math();
      a.value = saturate_to_float(m.constant_double(m.element(ctx.static_input(2, "constant_value"), 0)));
    }
  }
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    for (size_t v : distinct_axes(ctx, ctx.constant_ints(3, "axes"), rank, "axes")) axes.push_back(static_cast<int64_t>(v));
  } else {
    for (size_t k = 0; k < rank; ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (pads.size() != 2 * axes.size()) ctx.invalid("pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  ShapeProgram& p = ctx.program();
  a.begin.assign(rank, p.constant(0));
  a.end.assign(rank, p.constant(0));
  for (size_t k = 0; k < axes.size(); ++k) {
    a.begin[static_cast<size_t>(axes[k])] = pads[k];
    a.end[static_cast<size_t>(axes[k])] = pads[k + axes.size()];
  }
  std::vector<ValueId> shape;
  for (size_t k = 0; k < rank; ++k) shape.push_back(p.add(p.add(xs[k], a.begin[k]), a.end[k]));
  ctx.add_op(a, {x}, shape);
}

void convert_slice(NodeContext& ctx) {
  TensorId x = ctx.data_input(0);
  require_float(ctx, x);
  ShapeProgram& p = ctx.program();
  const auto xs = tensor_of(ctx, x).shape;
  std::vector<ValueId> starts, ends;
  std::vector<int64_t> axes, steps;
  if (ctx.opset() >= 10) {
    starts = ctx.symbolic_ints(1, "starts");
    ends = ctx.symbolic_ints(2, "ends");
    if (ctx.has_input(3)) axes = ctx.constant_ints(3, "axes");
    if (ctx.has_input(4)) steps = ctx.constant_ints(4, "steps");
  } else {
    for (int64_t v : ctx.attr_ints("starts")) starts.push_back(p.constant(v));
    for (int64_t v : ctx.attr_ints("ends")) ends.push_back(p.constant(v));
    axes = ctx.attr_ints("axes");
  }
  if (axes.empty()) for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.invalid("starts, ends, axes and steps have different lengths");
  }
  SliceAttrs a;
  a.start.assign(xs.size(), p.constant(0));
  a.step.assign(xs.size(), 1);
  std::vector<ValueId> shape = xs;
  const std::vector<size_t> slice_axes = distinct_axes(ctx, axes, xs.size(), "axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t axis = slice_axes[k];
    // A step beyond any extent takes one element, as 2^40 does (and -INT64_MIN would overflow).
    const int64_t step = std::clamp(steps[k], -(int64_t{1} << 40), int64_t{1} << 40);
    if (step == 0) ctx.invalid("slice step 0");
    ValueId dim = xs[axis];
    // Constants beyond any extent (INT64_MAX for "to the end") clamp to the extent.
    auto clamp_big = [&](ValueId v) {
      if (p.is_constant(v) && p.constant_value(v) > (int64_t{1} << 40)) return p.constant(int64_t{1} << 40);
      if (p.is_constant(v) && p.constant_value(v) < -(int64_t{1} << 40)) return p.constant(-(int64_t{1} << 40));
      return v;
    };
    ValueId b = p.slice_index(clamp_big(starts[k]), dim, step > 0 ? 0 : 1);
    ValueId e = p.slice_index(clamp_big(ends[k]), dim, step > 0 ? 0 : 2);
    ValueId span = step > 0 ? p.sub(e, b) : p.sub(b, e);
    shape[axis] = p.max(p.constant(0), p.binary(IntOp::DivCeil, span, p.constant(step > 0 ? step : -step)));
    // Backwards over an empty axis the clamped start (0) and end (-1) span one element: no
    // slice is longer than its axis.
    if (step < 0) shape[axis] = p.min(dim, shape[axis]);
    a.start[axis] = b;
    a.step[axis] = step;
  }
  ctx.add_op(a, {x}, shape);
}

// Resize (opset 10+) and Upsample: nearest, integer upscaling of the two spatial axes.
// The largest factor taken: a sizes input is matched against 1..64 times its input extent, and
// scales are held to the same (a scale of 1e18, or inf, would otherwise reach int64 math and
// allocations of that many source indices).
constexpr int64_t kMaxUpscale = 64;

int64_t integer_scale(const NodeContext& ctx, double s, int64_t axis) {
  const std::string which = std::to_string(s) + " on axis " + std::to_string(axis);
  if (s != std::floor(s)) ctx.unsupported("non-integer scale " + which + " (denox supports integer upscaling)");
  const std::string shown = format_double(s);
  if (s < 1) ctx.unsupported("scale " + shown + " on axis " + std::to_string(axis) + " is below 1 (denox supports integer upscaling)");
  if (s > static_cast<double>(kMaxUpscale))
    ctx.unsupported("scale " + shown + " on axis " + std::to_string(axis) + " is above " + std::to_string(kMaxUpscale) +
                    ", the largest upscaling denox takes");
  return static_cast<int64_t>(s);
}

void convert_resize(NodeContext& ctx) {
  TensorId x = ctx.data_input(0);
  require_float(ctx, x);
  require_rank(ctx, x, 4, ctx.node().op_type().c_str());
  ShapeProgram& p = ctx.program();
  const auto xs = tensor_of(ctx, x).shape;
  std::string mode = ctx.attr_string("mode", "nearest");
  if (mode != "nearest") ctx.unsupported("mode '" + mode + "' (denox supports nearest)");
  UpsampleAttrs a;
  const bool is_upsample = ctx.node().op_type() == "Upsample";
  if (is_upsample || ctx.opset() < 11) {
    a.coordinate_mode = CoordinateMode::Asymmetric;
    a.nearest_mode = NearestMode::Floor;
  } else {
    std::string cm = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
    static const std::map<std::string, CoordinateMode> modes{
        {"half_pixel", CoordinateMode::HalfPixel}, {"pytorch_half_pixel", CoordinateMode::PytorchHalfPixel},
        {"asymmetric", CoordinateMode::Asymmetric}, {"align_corners", CoordinateMode::AlignCorners},
        {"tf_half_pixel_for_nearest", CoordinateMode::TfHalfPixelForNearest},
        {"half_pixel_symmetric", CoordinateMode::HalfPixelSymmetric}};
    if (!modes.count(cm)) ctx.unsupported("coordinate_transformation_mode '" + cm + "'");
    a.coordinate_mode = modes.at(cm);
    std::string nm = ctx.attr_string("nearest_mode", "round_prefer_floor");
    static const std::map<std::string, NearestMode> nearest{
        {"round_prefer_floor", NearestMode::RoundPreferFloor}, {"round_prefer_ceil", NearestMode::RoundPreferCeil},
        {"floor", NearestMode::Floor}, {"ceil", NearestMode::Ceil}};
    if (!nearest.count(nm)) ctx.unsupported("nearest_mode '" + nm + "'");
    a.nearest_mode = nearest.at(nm);
    ctx.require_attr_default("antialias", 0);
    if (ctx.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") ctx.unsupported("keep_aspect_ratio_policy other than stretch");
  }
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty()) axes = {0, 1, 2, 3};
  {
    const auto checked = distinct_axes(ctx, axes, 4, "axes");
    axes.assign(checked.begin(), checked.end());
  }
  // Per-axis integer factors, from scales (float) or sizes (integers, maybe symbolic).
  std::vector<int64_t> factor(4, 1);
  size_t scales_input = is_upsample ? 1 : (ctx.opset() < 11 ? 1 : 2);
  bool have_scales = false;
  if (is_upsample && ctx.opset() < 9) {
    auto scales = ctx.attr_floats("scales");
    if (scales.size() != 4) ctx.invalid("scales must have 4 entries");
    for (size_t k = 0; k < 4; ++k) {
      factor[k] = integer_scale(ctx, scales[k], static_cast<int64_t>(k));
    }
    have_scales = true;
  } else if (ctx.has_input(scales_input) && ctx.static_input(scales_input, "scales").size() > 0) {
    const StaticTensor& st = ctx.static_input(scales_input, "scales");
    if (st.size() != axes.size()) ctx.invalid("scales has " + std::to_string(st.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    SymMath m = ctx.math();
    for (size_t k = 0; k < axes.size(); ++k) {
      if (!m.is_constant(m.element(st, k))) ctx.unsupported("scales that depend on the input size");
      double s = m.constant_double(m.element(st, k));
      factor[static_cast<size_t>(axes[k])] = integer_scale(ctx, s, axes[k]);
    }
    have_scales = true;
  }
  if (!have_scales) {
    if (!ctx.has_input(3)) ctx.invalid("neither scales nor sizes are given");
    auto sizes = ctx.symbolic_ints(3, "sizes");
    if (sizes.size() != axes.size()) ctx.invalid("sizes has the wrong length");
    for (size_t k = 0; k < axes.size(); ++k) {
      ValueId in = xs[static_cast<size_t>(axes[k])];
      int64_t found = 0;
      // The factor must be a static integer: sizes[k] is in * f, structurally (hash-consing makes
      // "in * 2" the same id wherever it is built) or numerically for static extents.
      for (int64_t f = 1; f <= kMaxUpscale && !found; ++f) {
        if (p.mul(in, p.constant(f)) == sizes[k]) found = f;
      }
      if (!found) ctx.unsupported("sizes " + p.to_string(sizes[k]) + " is not a static integer multiple of the input extent " + p.to_string(in));
      factor[static_cast<size_t>(axes[k])] = found;
    }
  }
  if (factor[0] != 1 || factor[1] != 1) ctx.unsupported("resizing the batch or channel axis");
  a.scale = {factor[2], factor[3]};
  ctx.add_op(a, {x}, {xs[0], xs[1], p.mul(xs[2], p.constant(factor[2])), p.mul(xs[3], p.constant(factor[3]))});
}

void convert_shape_of_data(NodeContext& ctx) {
  const std::vector<ValueId> xs = tensor_of(ctx, ctx.data_input(0)).shape;  // copy: adding tensors moves them
  SymMath m = ctx.math();
  std::vector<SymScalar> elems;
  if (ctx.node().op_type() == "Size") {
    ValueId n = ctx.program().constant(1);
    for (ValueId v : xs) n = ctx.program().mul(n, v);
    ctx.set_static_output(0, make_symbolic(TP::INT64, {}, {m.from_value(n)}));
    return;
  }
  auto rank = static_cast<int64_t>(xs.size());
  int64_t start = std::clamp<int64_t>(ctx.attr_int("start", 0), -rank, rank);
  int64_t end = std::clamp<int64_t>(ctx.attr_int("end", rank), -rank, rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  for (int64_t a = start; a < end; ++a) elems.push_back(m.from_value(xs[static_cast<size_t>(a)]));
  auto n = static_cast<int64_t>(elems.size());
  ctx.set_static_output(0, make_symbolic(TP::INT64, {n}, std::move(elems)));
}

}  // namespace

const std::map<std::string, Converter>& tensor_converters() {
  static const std::map<std::string, Converter> converters = [] {
    std::map<std::string, Converter> m;
    m["Conv"] = convert_conv;
    m["MaxPool"] = convert_pool;
    m["AveragePool"] = convert_pool;
    for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip"}) m[op] = convert_activation;
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) m[op] = convert_binary;
    m["Concat"] = convert_concat;
    m["Pad"] = convert_pad;
    m["Slice"] = convert_slice;
    m["Resize"] = convert_resize;
    m["Upsample"] = convert_resize;
    m["Shape"] = convert_shape_of_data;
    m["Size"] = convert_shape_of_data;
    m["Identity"] = [](NodeContext& ctx) { ctx.alias_output(0, ctx.data_input(0)); };
    // CastLike(value, like) where `like` is a network tensor that only names the type: a
    // constant is cast at import; a float32 tensor cast to float32 is itself.
    m["CastLike"] = [](NodeContext& ctx) {
      if (!ctx.input(0).is_data) return static_converters().at("CastLike")(ctx);
      TensorId x = ctx.data_input(0);
      require_float(ctx, x);
      const ImportedValue& like = ctx.input(1);
      if (like.is_data ? tensor_of(ctx, like.tensor).dtype != DType::F32 : like.value.onnx_type != TP::FLOAT) {
        ctx.unsupported("casting a network tensor to another type");
      }
      ctx.alias_output(0, x);
    };
    return m;
  }();
  return converters;
}

}  // namespace denox::compiler
