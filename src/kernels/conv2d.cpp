// Conv (+ bias + activation) -> shaders/conv2d.comp.
#include <array>
#include <optional>

#include "common/error.hpp"
#include "kernels/conv2d_layout.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

using compiler::ConvAttrs;

namespace {

int64_t constant_extent(PlanBuilder& b, const compiler::Tensor& t, size_t axis, const compiler::Op& op) {
  const ValueId v = t.shape.at(axis);
  if (!b.program().is_constant(v))
    fail(ErrorCode::Unsupported, describe_op(op) + ": weight '" + t.name + "' has a symbolic extent");
  return b.program().constant_value(v);
}

bool constant_4d_float(const compiler::Tensor& weight) { return weight.f32_data && weight.shape.size() == 4; }

Conv2dShape shape_of(const ConvAttrs& attrs, int64_t c_out, int64_t c_in) {
  Conv2dShape shape;
  shape.c_out = c_out;
  shape.c_in = c_in;
  shape.kh = attrs.kernel[0];
  shape.kw = attrs.kernel[1];
  shape.sh = attrs.stride[0];
  shape.sw = attrs.stride[1];
  shape.dh = attrs.dilation[0];
  shape.dw = attrs.dilation[1];
  return shape;
}

}  // namespace

std::optional<Conv2dShape> constant_conv2d_shape(const compiler::Graph& g, const compiler::Op& conv) {
  const compiler::Tensor& weight = g.tensor(conv.inputs.at(1));
  if (!constant_4d_float(weight)) return std::nullopt;
  for (ValueId v : weight.shape)
    if (!g.program.is_constant(v)) return std::nullopt;
  return shape_of(std::get<ConvAttrs>(conv.attrs), g.program.constant_value(weight.shape[0]), g.program.constant_value(weight.shape[1]));
}

Conv2dShape conv2d_shape(PlanBuilder& b, const compiler::Op& conv) {
  const compiler::Tensor& weight = b.graph().tensor(conv.inputs.at(1));
  if (!constant_4d_float(weight))
    fail(ErrorCode::Unsupported, describe_op(conv) + ": the portable convolution needs constant 4D float weights");
  return shape_of(std::get<ConvAttrs>(conv.attrs), constant_extent(b, weight, 0, conv), constant_extent(b, weight, 1, conv));
}

const compiler::Op& ConvFusion::last(const compiler::Op& conv) const {
  if (!tail_slices.empty()) return *tail_slices.back();
  if (tail_activation) return *tail_activation;
  if (tail) return *tail;
  if (!slices.empty()) return *slices.back();
  if (pool) return *pool;
  return activation ? *activation : conv;
}

std::string ConvFusion::pattern() const {
  std::string p = std::string(head_pad0 ? "pad+" : "") + (head ? std::string("conv") + (head_activation ? "+act" : "") + "+" : "") +
                  (pad0 ? "pad+" : "") + (upsample ? "upsample+" : "") + (pad1 ? "pad+" : "") + (concat ? "concat+" : "") +
                  "conv" + (activation ? "+act" : "") + (pool ? "+pool" : "");
  if (!slices.empty()) p += "+slice";
  if (tail) p += std::string("+conv") + (tail_activation ? "+act" : "") + (tail_slices.empty() ? "" : "+slice");
  return p;
}

std::vector<const compiler::Op*> ConvFusion::covered(const compiler::Op& conv) const {
  std::vector<const compiler::Op*> ops;
  for (const compiler::Op* op : {head, head_activation, upsample, concat, &conv, activation, pool})
    if (op) ops.push_back(op);
  ops.insert(ops.end(), slices.begin(), slices.end());
  for (const compiler::Op* op : {tail, tail_activation})
    if (op) ops.push_back(op);
  ops.insert(ops.end(), tail_slices.begin(), tail_slices.end());
  return ops;
}

std::vector<const compiler::Op*> ConvFusion::read_through() const {
  std::vector<const compiler::Op*> ops;
  for (const compiler::Op* op : {head_pad0, pad0, pad1})
    if (op) ops.push_back(op);
  return ops;
}

TensorId ConvFusion::x0(const compiler::Op& conv) const {
  if (head) return head_pad0 ? head_pad0->inputs.at(0) : head->inputs.at(0);
  if (pad0) return pad0->inputs.at(0);
  if (upsample) return upsample->inputs.at(0);
  return concat ? concat->inputs.at(0) : conv.inputs.at(0);
}

std::optional<TensorId> ConvFusion::x1() const {
  if (!concat) return std::nullopt;
  return pad1 ? pad1->inputs.at(0) : concat->inputs.at(1);
}

namespace {

// What both conv shaders read and write, and their common push constants (shaders/conv2d.comp
// and conv2d_coopmat.comp, "Push constants"): c_in h w c_out oh ow pad_top pad_left act_a act_b
// c0 h0 w0 out_h out_w h1 w1 bh1 bw1.
struct ConvIo {
  TensorId x0 = 0, y = 0;
  std::optional<TensorId> x1;
  std::vector<ValueId> push;
  Extents4 conv_out{};  // the computed part of the conv's output (after a folded crop)
  ActivationMacro act;
  bool has_bias = false;
  std::string name;
};

// The workgroup grid of a conv dispatch over its computed output: (ceil(W / tile_w),
// ceil(H / tile_h), N * channel_tiles).
std::array<ValueId, 3> tile_groups(PlanBuilder& b, const Extents4& conv_out, int64_t tile_w, int64_t tile_h, int64_t channel_tiles) {
  return {b.ceil_div(conv_out[3], tile_w), b.ceil_div(conv_out[2], tile_h), b.mul(conv_out[0], b.constant(channel_tiles))};
}

// The spatial pads of a zero Pad: (begin_h, begin_w, end_h, end_w).
std::array<ValueId, 4> spatial_pads(const compiler::Op& pad) {
  const auto& a = std::get<compiler::PadAttrs>(pad.attrs);
  const size_t r = a.begin.size();
  return {a.begin.at(r - 2), a.begin.at(r - 1), a.end.at(r - 2), a.end.at(r - 1)};
}

// Where a chain of spatial Slices (step 1) starts within its input: the sum of their starts along
// H and W.
std::pair<ValueId, ValueId> crop_start(PlanBuilder& b, const std::vector<const compiler::Op*>& slices) {
  ValueId h = b.constant(0), w = b.constant(0);
  for (const compiler::Op* s : slices) {
    const auto& sa = std::get<compiler::SliceAttrs>(s->attrs);
    const size_t r = sa.start.size();
    h = b.program().add(h, sa.start.at(r - 2));
    w = b.program().add(w, sa.start.at(r - 1));
  }
  return {h, w};
}

// What a conv of attributes `attrs` reads of its input `x` (extents xe), computed from `x0`
// (extents x0e) through an optional zero Pad: (h, w, pad_top, pad_left), the region that holds
// data and the padding, widened by the Pad's begin and bounded by what x0 covers.
std::array<ValueId, 4> read_region(PlanBuilder& b, const compiler::Op* pad, const Extents4& x0e, const Extents4& xe,
                                   const ConvAttrs& attrs) {
  auto& prog = b.program();
  if (!pad) return {xe[2], xe[3], attrs.pad_begin[0], attrs.pad_begin[1]};
  const auto p = spatial_pads(*pad);
  return {prog.min(x0e[2], prog.sub(xe[2], p[0])), prog.min(x0e[3], prog.sub(xe[3], p[1])), prog.add(attrs.pad_begin[0], p[0]),
          prog.add(attrs.pad_begin[1], p[1])};
}

ConvIo conv_io(PlanBuilder& b, const compiler::Op& conv, const Conv2dShape& shape, const ConvFusion& f) {
  const auto& attrs = std::get<ConvAttrs>(conv.attrs);
  auto& prog = b.program();
  ConvIo io;
  const TensorId x = conv.inputs.at(0);
  io.x0 = f.x0(conv);
  io.x1 = f.x1();
  io.y = f.last(conv).output;
  io.act = f.activation ? activation_macro(std::get<compiler::ActivationAttrs>(f.activation->attrs)) : ActivationMacro{};
  io.has_bias = attrs.has_bias && conv.inputs.size() > 2;

  // The conv's input as the GEMM sees it (after concat / upsample / pad): its extents bound
  // every read; a folded Pad shrinks them to what its input covers.
  const Extents4 xe = b.extents4(x), x0e = b.extents4(io.x0), ye = b.extents4(io.y);
  auto [h, w, pad_top, pad_left] = read_region(b, f.pad0, x0e, xe, attrs);
  // A folded crop computes output pixel o' as the conv's o' + start: input row
  // (o' + start) * stride - pad, i.e. the padding shrinks by start * stride.
  io.conv_out = b.extents4(conv.output);
  if (!f.slices.empty()) {
    const auto [start_h, start_w] = crop_start(b, f.slices);
    pad_top = prog.sub(pad_top, prog.mul(start_h, b.constant(shape.sh)));
    pad_left = prog.sub(pad_left, prog.mul(start_w, b.constant(shape.sw)));
    io.conv_out = ye;
  }
  ValueId h1 = h, w1 = w, bh1 = h, bw1 = w;
  if (io.x1) {
    const Extents4 x1e = b.extents4(*io.x1);
    h1 = x1e[2], w1 = x1e[3];
    if (f.pad1) bh1 = prog.min(x1e[2], h), bw1 = prog.min(x1e[3], w);
  }
  const ValueId c0 = io.x1 ? x0e[1] : b.constant(shape.c_in);
  io.push = {b.constant(shape.c_in), h, w, b.constant(shape.c_out), io.conv_out[2], io.conv_out[3], pad_top, pad_left,
             b.float_bits(io.act.a), b.float_bits(io.act.b), c0, x0e[2], x0e[3], ye[2], ye[3], h1, w1, bh1, bw1};
  for (const compiler::Op* op : f.covered(conv)) io.name += (io.name.empty() ? "" : "+") + op->name;
  if (f.pad0) io.name = f.pad0->name + "+" + io.name;
  if (f.head_pad0) io.name = f.head_pad0->name + "+" + io.name;
  return io;
}

// A conv2d_coopmat TAIL (ConvFusion::tail): what the ring pass after the conv dispatch needs.
struct TailLowering {
  int64_t cout = 0;
  ActivationMacro act;
  std::optional<plan::Binding> bias;
  uint32_t partials = 0;           // scratch tensor of the ring's partial sums
  std::array<ValueId, 6> push{};   // out_h out_w crop_top crop_left act_a act_b
  std::array<ValueId, 3> ring_groups{};
};

// The tail's macros, bindings (its weights, bias, the partials) and push constants added to
// the conv dispatch's (conv2d_coopmat.comp with TAIL=1, conv2d_coopmat_tail.glsl).
TailLowering lower_tail(PlanBuilder& b, const compiler::Op& conv, const Conv2dShape& shape, const ConvFusion& f, const CoopConvConfig& c,
                        const ConvIo& io, std::vector<std::pair<std::string, int64_t>>& defines, std::vector<plan::Binding>& bindings,
                        std::vector<ValueId>& push, std::span<const float> fold = {}) {
  const compiler::Op& t = *f.tail;
  const Conv2dShape ts = conv2d_shape(b, t);
  const CoopTail tail(ts.c_out, shape.c_out);
  if (f.pool || !f.slices.empty() || !coop_tail_shape_ok(ts) || c.up2 || c.tap_sum || c.b_global || c.nt < shape.c_out ||
      c.tile_h < 2 || tail.t_k > c.nt)
    fail(ErrorCode::Internal, describe_op(conv) + ": " + describe_op(t) + " cannot be a tail of configuration " + c.describe());
  auto& prog = b.program();
  TailLowering out;
  out.cout = ts.c_out;
  out.act = f.tail_activation ? activation_macro(std::get<compiler::ActivationAttrs>(f.tail_activation->attrs)) : ActivationMacro{};
  const auto& attrs = std::get<ConvAttrs>(t.attrs);
  if (attrs.has_bias && t.inputs.size() > 2) out.bias = b.read(t.inputs[2]);
  CoopConvConfig packing;
  packing.nt = tail.t_nt, packing.ck = 16;
  const compiler::Tensor& w2 = b.graph().tensor(t.inputs.at(1));
  // With `fold` (an int8 conv's channel factors, T_FOLD) the tail's weights of input channel k
  // are multiplied by fold[k].
  std::vector<float> w2_values = *w2.f32_data;
  if (!fold.empty()) {
    if (static_cast<int64_t>(fold.size()) != ts.c_in) fail(ErrorCode::Internal, describe_op(t) + ": folded factors do not match its input channels");
    for (size_t i = 0; i < w2_values.size(); ++i) w2_values[i] *= fold[(i / static_cast<size_t>(ts.kh * ts.kw)) % fold.size()];
  }
  const uint32_t packed = b.add_weights(w2.name + (fold.empty() ? " (conv2d_coopmat tail)" : " (conv2d_coopmat_q8 tail, factors folded)"),
                                        pack_coop_tapsum_weights(w2_values, ts, packing));
  // The tiles' ring partial sums: RING slots x channels, fp32, per tile of the conv's output.
  const ValueId tiles = prog.mul(prog.mul(b.ceil_div(io.conv_out[3], c.tile_w), b.ceil_div(io.conv_out[2], c.tile_h)), io.conv_out[0]);
  out.partials = b.internal_scratch(io.name + " (tail ring partial sums)",
                                    prog.mul(tiles, b.constant(4 * (c.tile_w + c.tile_h) * ts.c_out * 4)));
  // The crop after the tail: output pixel o is the tail's o + start (padding 1: the conv's pixel).
  const auto [crop_top, crop_left] = crop_start(b, f.tail_slices);
  const Extents4 ye = b.extents4(io.y);
  out.push = {ye[2], ye[3], crop_top, crop_left, b.float_bits(out.act.a), b.float_bits(out.act.b)};
  defines.insert(defines.end(), {{"TAIL", 1}, {"T_COUT", ts.c_out}, {"T_NT", tail.t_nt}, {"T_K", tail.t_k},
                                 {"T_HAS_BIAS", out.bias ? 1 : 0}, {"T_ACT", out.act.code}});
  if (!fold.empty()) defines.push_back({"T_FOLD", 1});
  // In a U-Net the tail conv is the last full-resolution one (OIDN: dec_conv1b): it reads the
  // largest tensor, just written by the conv before it, so it starts where that one ended
  // (shaders/tile_order.glsl; the result is the same either way).
  defines.push_back({"TILES_REVERSED", 1});
  bindings.push_back({plan::Resource::Weights, packed, plan::Access::Read});
  if (out.bias) bindings.push_back(*out.bias);
  bindings.push_back({plan::Resource::Scratch, out.partials, plan::Access::Write});
  push.insert(push.end(), out.push.begin(), out.push.end());
  return out;
}

// A conv2d_coopmat HEAD (ConvFusion::head): the head's macros, bindings (its weights packed as
// a NARROW=2 conv of 16-channel tiles, its bias) and push constants (h_c h_h h_w h_pad_top
// h_pad_left h_act_a h_act_b) added to the conv dispatch's (conv2d_coopmat_head.glsl).
void lower_head(PlanBuilder& b, const compiler::Op& conv, const Conv2dShape& shape, const ConvFusion& f, const CoopConvConfig& c,
                const ConvIo& io, std::vector<std::pair<std::string, int64_t>>& defines, std::vector<plan::Binding>& bindings,
                std::vector<ValueId>& push) {
  const compiler::Op& h = *f.head;
  const Conv2dShape hs = conv2d_shape(b, h);
  if (!coop_head_shape_ok(hs, shape) || f.concat || f.upsample || f.pad0 || f.tail || c.up2 || c.tap_sum || c.b_global || c.ck != 16)
    fail(ErrorCode::Internal, describe_op(conv) + ": " + describe_op(h) + " cannot be a head of configuration " + c.describe());
  const ActivationMacro act =
      f.head_activation ? activation_macro(std::get<compiler::ActivationAttrs>(f.head_activation->attrs)) : ActivationMacro{};
  const auto& attrs = std::get<ConvAttrs>(h.attrs);
  std::optional<plan::Binding> bias;
  if (attrs.has_bias && h.inputs.size() > 2) bias = b.read(h.inputs[2]);
  CoopConvConfig packing;  // [16-channel tile][ky][16][16]: one chunk of the conv per tile
  packing.nt = 16, packing.ck = 16;
  const compiler::Tensor& hw = b.graph().tensor(h.inputs.at(1));
  const uint32_t packed = b.add_weights(hw.name + " (conv2d_coopmat head)", pack_coop_weights(*hw.f32_data, hs, packing, 2));
  // The image as the head reads it: a folded Pad widens the padding and bounds the reads.
  const auto [ih, iw, pad_top, pad_left] = read_region(b, f.head_pad0, b.extents4(io.x0), b.extents4(h.inputs.at(0)), attrs);
  defines.insert(defines.end(), {{"HEAD", 1}, {"H_K", (shape.c_in + 15) / 16 * 16}, {"H_HAS_BIAS", bias ? 1 : 0}, {"H_ACT", act.code}});
  bindings.push_back({plan::Resource::Weights, packed, plan::Access::Read});
  if (bias) bindings.push_back(*bias);
  push.insert(push.end(), {b.constant(hs.c_in), ih, iw, pad_top, pad_left, b.float_bits(act.a), b.float_bits(act.b)});
}

// The ring pass (shaders/conv_tail_ring.comp): the tail's outputs on the tiles' borders.
void dispatch_tail_ring(PlanBuilder& b, const ConvIo& io, const CoopConvConfig& c, const TailLowering& tail) {
  PipelineSpec spec;
  spec.family = "conv_tail_ring";
  spec.defines = {{"TILE_H", c.tile_h}, {"TILE_W", c.tile_w}, {"T_COUT", tail.cout}, {"HAS_BIAS", tail.bias ? 1 : 0},
                  {"ACT", tail.act.code}};
  std::vector<plan::Binding> bindings = {{plan::Resource::Scratch, tail.partials, plan::Access::Read}, b.write(io.y)};
  if (tail.bias) bindings.push_back(*tail.bias);
  spec.binding_count = static_cast<uint32_t>(bindings.size());
  spec.push_constant_count = static_cast<uint32_t>(tail.push.size());
  spec.local_size = {64, 1, 1};  // the shader's RING_THREADS
  b.dispatch(io.name + " (tail ring)", b.pipeline(spec), std::move(bindings), {tail.push.begin(), tail.push.end()}, tail.ring_groups);
}

// `layouts`: X0's, X1's and Y's.
std::vector<plan::Binding> conv_bindings(PlanBuilder& b, const compiler::Op& conv, const ConvIo& io, uint32_t packed,
                                         std::array<Layout, 3> layouts = {Layout::NCHW, Layout::NCHW, Layout::NCHW}) {
  std::vector<plan::Binding> bindings = {b.read(io.x0, layouts[0])};
  if (io.x1) bindings.push_back(b.read(*io.x1, layouts[1]));
  bindings.push_back(b.write(io.y, layouts[2]));
  bindings.push_back({plan::Resource::Weights, packed, plan::Access::Read});
  if (io.has_bias) bindings.push_back(b.read(conv.inputs[2]));
  return bindings;
}

}  // namespace

void lower_conv2d(PlanBuilder& b, const compiler::Op& conv, const ConvFusion& fusion) {
  const compiler::Tensor& weight = b.graph().tensor(conv.inputs.at(1));
  const Conv2dShape shape = conv2d_shape(b, conv);
  const Conv2dTiling tiling = choose_conv2d_tiling(shape, fusion.pool != nullptr);
  const uint32_t packed = b.add_weights(weight.name + " (conv2d tiles)", pack_conv2d_weights(*weight.f32_data, shape, tiling));
  const ConvIo io = conv_io(b, conv, shape, fusion);

  PipelineSpec spec;
  spec.family = "conv2d";
  spec.defines = {{"KH", shape.kh}, {"KW", shape.kw}, {"SH", shape.sh}, {"SW", shape.sw}, {"DH", shape.dh}, {"DW", shape.dw},
                  {"TILE_W", tiling.tile_w}, {"TP", tiling.tp}, {"TC", tiling.tc}, {"CK", tiling.ck},
                  {"HAS_BIAS", io.has_bias ? 1 : 0}, {"ACT", io.act.code}, {"CONCAT", fusion.concat ? 1 : 0},
                  {"UPSAMPLE0", fusion.upsample ? 1 : 0}, {"POOL", fusion.pool ? 1 : 0}};
  spec.binding_count = 3 + (io.x1 ? 1 : 0) + (io.has_bias ? 1 : 0);
  spec.push_constant_count = static_cast<uint32_t>(io.push.size());
  spec.local_size = {256, 1, 1};
  const int64_t co_tiles = (shape.c_out + tiling.cout_tile() - 1) / tiling.cout_tile();
  const std::array<ValueId, 3> groups = tile_groups(b, io.conv_out, tiling.tile_w, tiling.tile_h(), co_tiles);
  b.dispatch(io.name, b.pipeline(spec), conv_bindings(b, conv, io, packed), io.push, groups);
}

namespace {

// The bias an int8 conv folds into its epilogue table at plan time (empty without a bias).
std::vector<float> q8_bias(PlanBuilder& b, const compiler::Op& conv, const ConvIo& io) {
  if (!io.has_bias) return {};
  const compiler::Tensor& bt = b.graph().tensor(conv.inputs[2]);
  if (!bt.f32_data) fail(ErrorCode::Unsupported, describe_op(conv) + ": the int8 precision needs a constant bias");
  return *bt.f32_data;
}

// An int8 conv's epilogue table (factor and bias per channel) and accumulator start values (the
// zero points' correction) as two weight ranges, named after the weights and the shader family.
std::array<uint32_t, 2> q8_tables(PlanBuilder& b, const std::string& weight, const std::string& family, const Q8ConvConstants& k) {
  auto bytes = [](const auto& v) { return std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(v[0])); };
  return {b.add_weight_bytes(weight + " (" + family + " factors and biases)", bytes(k.epilogue)),
          b.add_weight_bytes(weight + " (" + family + " zero-point corrections)", bytes(k.acc_start))};
}

// conv2d_coopmat_q8 (CoopConvConfig::q8): int8 weights, their epilogue table and accumulator
// start values (quantize_q8_conv) as three weight ranges; NHWC_Q8 inputs, an NHWC_Q8 or NHWC
// output, or with a tail (TAIL=1) the tail's NCHW output and a ring pass.
void lower_conv2d_q8(PlanBuilder& b, const compiler::Op& conv, const ConvFusion& f, const CoopConvLowering& how) {
  const compiler::Graph& g = b.graph();
  const compiler::Tensor& weight = g.tensor(conv.inputs.at(1));
  const Conv2dShape shape = conv2d_shape(b, conv);
  const CoopConvConfig& c = how.config;
  const ConvIo io = conv_io(b, conv, shape, f);
  if (f.head || !q8_config_valid(c) || (f.tail && c.sg_n != 1))
    fail(ErrorCode::Internal, describe_op(conv) + ": conv2d_coopmat_q8 takes no head, and not configuration " + c.describe() +
                                  (f.tail ? " with a tail" : ""));
  const bool y_q8 = how.y == Layout::NHWC_Q8;
  if (how.x0 != Layout::NHWC_Q8 || (io.x1 && how.x1 != Layout::NHWC_Q8) || (f.tail ? how.y != Layout::NCHW : !y_q8 && how.y != Layout::NHWC))
    fail(ErrorCode::Internal, describe_op(conv) + ": conv2d_coopmat_q8 reads NHWC_Q8 and writes NHWC_Q8 or NHWC (a tail: NCHW)");
  // NHWC_Q8 tensors have constant channel counts that are multiples of 16 (16-byte loads and
  // stores of whole channel groups), an NHWC output multiples of 8 (a tail's NCHW output: any).
  for (const auto& [t, multiple] : {std::pair{io.x0, 16}, std::pair{io.x1.value_or(io.x0), 16}, std::pair{io.y, f.tail ? 1 : y_q8 ? 16 : 8}}) {
    if (!b.channels_multiple_of(t, multiple))
      fail(ErrorCode::Internal, describe_op(conv) + ": tensor '" + g.tensor(t).name + "' needs a constant channel count that is a multiple of " +
                                    std::to_string(multiple) + " for conv2d_coopmat_q8");
  }
  const int64_t c0 = io.x1 ? b.program().constant_value(b.extents4(io.x0)[1]) : shape.c_in;
  // up2 (PHASES): an upsampled X0 and a concatenated X1, enumerated only where up2_applicable.
  if (c.up2 && (!f.upsample || !io.x1 || f.pool || f.tail))
    fail(ErrorCode::Internal, describe_op(conv) + ": conv2d_coopmat_q8 by phases needs a fused upsample and concat, no pool or tail");
  Q8ConvConstants k = c.up2 ? quantize_q8_phases(*weight.f32_data, q8_bias(b, conv, io), shape, c0, how.q_x0, how.q_x1, c)
                            : quantize_q8_conv(*weight.f32_data, q8_bias(b, conv, io), shape, c0, how.q_x0, how.q_x1, c);
  // A tail after an activation that commutes with the channel factors (none, ReLU, LeakyReLU:
  // ACT codes 0-2) takes them into its weights (T_FOLD): its rows then need no per-channel pass
  // (fold_q8_epilogue says why).
  std::optional<std::vector<float>> fold;
  if (f.tail && io.act.code <= 2) fold = fold_q8_epilogue(k, shape.c_out);
  const uint32_t packed = b.add_weight_bytes(weight.name + " (conv2d_coopmat_q8 int8 tiles)", k.packed);
  const auto [epilogue, start] = q8_tables(b, weight.name, c.family(), k);

  PipelineSpec spec;
  spec.family = c.family();
  spec.defines = {{"KH", shape.kh}, {"KW", shape.kw}, {"TILE_H", c.tile_h}, {"TILE_W", c.tile_w}, {"NT", c.nt}, {"CK", c.ck},
                  {"SG_M", c.sg_m}, {"SG_N", c.sg_n}, {"SUBGROUP_SIZE", how.subgroup_size}, {"ACT", io.act.code},
                  {"CONCAT", io.x1 ? 1 : 0}, {"UPSAMPLE0", f.upsample ? 1 : 0}, {"POOL", f.pool ? 1 : 0},
                  {"X0_ZP", how.q_x0.zero_point}, {"Y_Q8", y_q8 ? 1 : 0}};
  if (io.x1) spec.defines.push_back({"X1_ZP", how.q_x1.zero_point});
  if (y_q8) spec.defines.push_back({"Y_ZP", how.q_y.zero_point});
  if (c.b_global) spec.defines.push_back({"B_GLOBAL", 1});
  if (c.up2) spec.defines.push_back({"PHASES", 1});
  if (how.emulate) spec.defines.push_back({"COOP_EMULATE", 1});
  std::vector<plan::Binding> bindings = {b.read(io.x0, Layout::NHWC_Q8)};
  if (io.x1) bindings.push_back(b.read(*io.x1, Layout::NHWC_Q8));
  bindings.push_back(b.write(io.y, how.y));
  for (uint32_t range : {packed, epilogue, start}) bindings.push_back({plan::Resource::Weights, range, plan::Access::Read});
  std::vector<ValueId> push = io.push;
  push.push_back(b.float_bits(k.prescale));
  push.push_back(b.float_bits(y_q8 ? 1.0f / how.q_y.scale : 1.0f));
  std::optional<TailLowering> tail;
  if (f.tail) tail = lower_tail(b, conv, shape, f, c, io, spec.defines, bindings, push, fold ? std::span<const float>(*fold) : std::span<const float>());
  spec.binding_count = static_cast<uint32_t>(bindings.size());
  spec.push_constant_count = static_cast<uint32_t>(push.size());
  spec.local_size = {static_cast<uint32_t>(c.subgroups()) * how.subgroup_size, 1, 1};
  const std::array<ValueId, 3> groups = tile_groups(b, io.conv_out, c.tile_w, c.tile_h, (shape.c_out + c.nt - 1) / c.nt);
  b.dispatch(io.name, b.pipeline(spec), std::move(bindings), std::move(push), groups);
  if (tail) {
    tail->ring_groups = groups;
    dispatch_tail_ring(b, io, c, *tail);
  }
}

}  // namespace

void lower_conv2d_coop(PlanBuilder& b, const compiler::Op& conv, const ConvFusion& f, const CoopConvLowering& how) {
  if (how.config.q8) return lower_conv2d_q8(b, conv, f, how);
  const compiler::Tensor& weight = b.graph().tensor(conv.inputs.at(1));
  const Conv2dShape shape = conv2d_shape(b, conv);
  const CoopConvConfig& c = how.config;
  const ConvIo io = conv_io(b, conv, shape, f);
  std::vector<float> packed_values;
  int64_t narrow = 0;  // taps packed into K for an input of at most 12 channels (coop_narrow)
  bool skip_rows = false;  // a one-phase up2 conv's skip of more than 12 channels (up2_skip_rows)
  // An up2 conv reading an NHWC_Q8 X0 (X0_Q8): int8 weights, epilogue table and corrections.
  const bool x0_q8 = c.up2 && how.x0 == Layout::NHWC_Q8;
  std::optional<Q8ConvConstants> q8;
  if (c.up2) {
    // The enumeration checked the pattern (implementations.cpp, up2_applicable); the upsampled
    // channel count fixes the weight layout.
    const ValueId c0 = b.extents4(io.x0)[1];
    if (!f.upsample || f.pool || !f.slices.empty() || !b.program().is_constant(c0))
      fail(ErrorCode::Internal, describe_op(conv) + ": conv2d_coopmat_up2 needs a fused upsample, no pool or crop, and a constant channel count");
    skip_rows = up2_skip_rows(c, shape.c_in - b.program().constant_value(c0));
    if (x0_q8) {
      q8 = quantize_q8_up2(*weight.f32_data, q8_bias(b, conv, io), shape, b.program().constant_value(c0), how.q_x0, c);
    } else {
      packed_values = pack_coop_up2_weights(*weight.f32_data, shape, b.program().constant_value(c0), c);
    }
  } else if (c.tap_sum) {
    // The enumeration offers tap-sum configurations to plain convs only (coop_configs).
    if (f.concat || f.upsample || f.pool)
      fail(ErrorCode::Internal, describe_op(conv) + ": conv2d_coopmat_tapsum takes no fused concat, upsample or pool");
    packed_values = pack_coop_tapsum_weights(*weight.f32_data, shape, c);
  } else {
    narrow = coop_narrow(shape, c, !f.concat && !f.upsample);
    packed_values = pack_coop_weights(*weight.f32_data, shape, c, narrow);
  }
  const uint32_t packed = q8 ? b.add_weight_bytes(weight.name + " (" + c.family() + " int8 X0 and fp16 skip tiles)", q8->packed)
                             : b.add_weights(weight.name + " (" + c.family() + " tiles)", packed_values);

  PipelineSpec spec;
  spec.family = c.family();
  spec.defines = {{"TILE_H", c.tile_h}, {"TILE_W", c.tile_w}, {"NT", c.nt}, {"CK", c.ck},
                  {"SG_M", c.sg_m}, {"SG_N", c.sg_n}, {"SUBGROUP_SIZE", how.subgroup_size}, {"CM_N", c.cm_n},
                  {"ACC_F16", c.acc_f16 ? 1 : 0}, {"HAS_BIAS", io.has_bias && !x0_q8 ? 1 : 0}, {"ACT", io.act.code},
                  {"CONCAT", f.concat ? 1 : 0}};
  if (c.tap_sum) {  // one subgroup column and no concat: the shader has neither macro
    std::erase_if(spec.defines, [](const auto& d) { return d.first == "SG_N" || d.first == "CONCAT"; });
    spec.defines.insert(spec.defines.begin(), {{"KH", shape.kh}, {"KW", shape.kw}, {"COUT", shape.c_out}});
  } else if (!c.up2) {
    spec.defines.insert(spec.defines.begin(), {{"KH", shape.kh}, {"KW", shape.kw}});
    spec.defines.push_back({"UPSAMPLE0", f.upsample ? 1 : 0});
    spec.defines.push_back({"POOL", f.pool ? 1 : 0});
  }
  if (c.b_global) spec.defines.push_back({"B_GLOBAL", 1});
  if (c.one_phase) spec.defines.push_back({"ONE_PHASE", 1});
  if (skip_rows) spec.defines.push_back({"SKIP_ROWS", 1});
  if (c.epi_passes > 1) spec.defines.push_back({"EPI_PASSES", c.epi_passes});
  if (narrow) spec.defines.push_back({"NARROW", narrow});
  if (c.a_direct) spec.defines.push_back({"A_DIRECT", 1});
  // NHWC tensors have channel counts that are multiples of 8 (the enumeration's rule, checked
  // here: the shaders' NHWC paths rely on it): where every input is NHWC, only the 16-byte
  // staging path is compiled (fewer registers).
  const bool x0_hwc = how.x0 == Layout::NHWC || x0_q8, x1_hwc = io.x1 && how.x1 == Layout::NHWC;
  // (up2 specializes per chunk kind itself; NARROW stages its own way.)
  const bool hwc_only = !c.up2 && !c.tap_sum && !narrow && x0_hwc && (!io.x1 || x1_hwc);
  // An NHWC_Q8 output (the int8 precision's, quantized in the NHWC epilogue: Y_Q8) is NHWC too.
  const bool y_q8 = how.y == Layout::NHWC_Q8, y_hwc = how.y == Layout::NHWC || y_q8;
  if ((how.x0 == Layout::NHWC_Q8 && !x0_q8) || how.x1 == Layout::NHWC_Q8 || (y_q8 && (f.tail || c.tap_sum)))
    fail(ErrorCode::Internal, describe_op(conv) + ": " + c.family() + " reads no NHWC_Q8 tensor (but an up2 conv's X0), and writes one only from its NHWC epilogue");
  if (c.a_direct && (c.up2 ? !c.one_phase || how.x0 != Layout::NHWC || x0_q8 : !hwc_only || f.concat || f.upsample || f.head))
    fail(ErrorCode::Internal, describe_op(conv) + ": configuration " + c.describe() +
                                  " reads one NHWC input (no concat, upsample or head; up2: one-phase, X0 NHWC fp16)");
  if (x0_q8 && (!c.one_phase || c.cm_n != 16 || !y_hwc || f.tail || f.head))
    fail(ErrorCode::Internal, describe_op(conv) + ": an int8 X0 needs a one-phase 16-column up2 configuration and an NHWC output");
  for (const auto& [t, hwc] : {std::pair{io.x0, x0_hwc}, std::pair{io.x1.value_or(io.x0), x1_hwc}, std::pair{io.y, y_hwc}}) {
    if (hwc && !b.channels_multiple_of(t, t == io.x0 && x0_q8 ? 16 : 8))
      fail(ErrorCode::Internal, describe_op(conv) + ": an NHWC tensor needs a constant channel count that is a multiple of 8 (NHWC_Q8: 16)");
  }
  for (const auto& [macro, on] : {std::pair{"X0_HWC", x0_hwc}, std::pair{"X1_HWC", x1_hwc}, std::pair{"Y_HWC", y_hwc}, std::pair{"Y_Q8", y_q8},
                                  std::pair{"HWC_ONLY", hwc_only}})
    if (on) spec.defines.push_back({macro, 1});
  if (x0_q8) spec.defines.insert(spec.defines.end(), {{"X0_Q8", 1}, {"X0_ZP", how.q_x0.zero_point}});
  if (how.emulate) spec.defines.push_back({"COOP_EMULATE", 1});
  std::vector<plan::Binding> bindings = conv_bindings(b, conv, io, packed, {how.x0, how.x1, how.y});
  if (q8) {  // the epilogue table replaces the bias, the zero-point corrections follow
    if (io.has_bias) bindings.pop_back();
    for (uint32_t range : q8_tables(b, weight.name, c.family(), *q8)) bindings.push_back({plan::Resource::Weights, range, plan::Access::Read});
  }
  std::vector<ValueId> push = io.push;
  std::optional<TailLowering> tail;
  if (f.tail) tail = lower_tail(b, conv, shape, f, c, io, spec.defines, bindings, push);
  if (f.head) {
    if (how.x0 != Layout::NCHW) fail(ErrorCode::Internal, describe_op(conv) + ": a head reads an NCHW image");
    lower_head(b, conv, shape, f, c, io, spec.defines, bindings, push);
  }
  if (y_q8) {  // after the tail's and head's push constants, as the shaders declare them
    spec.defines.push_back({"Y_ZP", how.q_y.zero_point});
    push.push_back(b.float_bits(1.0f / how.q_y.scale));
  }
  if (q8) push.push_back(b.float_bits(q8->prescale));
  spec.binding_count = static_cast<uint32_t>(bindings.size());
  spec.push_constant_count = static_cast<uint32_t>(push.size());
  spec.local_size = {static_cast<uint32_t>(c.subgroups()) * how.subgroup_size, 1, 1};
  std::array<ValueId, 3> groups = tile_groups(b, io.conv_out, c.tile_w, c.tile_h, (shape.c_out + c.nt - 1) / c.nt);
  if (c.one_phase) {  // tiles of X0's (low-resolution) grid, 4 phases each (the fastest part of x)
    const Extents4 x0e = b.extents4(io.x0);
    groups = {b.mul(b.ceil_div(x0e[3], c.tile_w), b.constant(4)), b.ceil_div(x0e[2], c.tile_h), groups[2]};
  }
  b.dispatch(io.name, b.pipeline(spec), std::move(bindings), std::move(push), groups);
  if (tail) {
    tail->ring_groups = groups;
    dispatch_tail_ring(b, io, c, *tail);
  }
}

}  // namespace denox::kernels
