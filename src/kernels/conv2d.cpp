// Conv (+ bias + activation) -> shaders/conv2d.comp.
#include "common/error.hpp"
#include "kernels/conv2d_layout.hpp"
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

void lower_conv2d(PlanBuilder& b, const compiler::Op& conv, const compiler::Op* activation) {
  const auto& attrs = std::get<ConvAttrs>(conv.attrs);
  const TensorId x = conv.inputs.at(0), w = conv.inputs.at(1);
  const compiler::Tensor& weight = b.graph().tensor(w);
  const Conv2dShape shape = conv2d_shape(b, conv);
  const Conv2dTiling tiling = choose_conv2d_tiling(shape);
  const uint32_t packed = b.add_weights(weight.name + " (conv2d tiles)", pack_conv2d_weights(*weight.f32_data, shape, tiling));

  const ActivationMacro act = activation ? activation_macro(std::get<compiler::ActivationAttrs>(activation->attrs)) : ActivationMacro{};
  const TensorId y = activation ? activation->output : conv.output;
  const bool has_bias = attrs.has_bias && conv.inputs.size() > 2;
  PipelineSpec spec;
  spec.family = "conv2d";
  spec.defines = {{"KH", shape.kh}, {"KW", shape.kw}, {"SH", shape.sh}, {"SW", shape.sw}, {"DH", shape.dh}, {"DW", shape.dw},
                  {"TILE_W", tiling.tile_w}, {"TP", tiling.tp}, {"TC", tiling.tc}, {"CK", tiling.ck},
                  {"HAS_BIAS", has_bias ? 1 : 0}, {"ACT", act.code}};
  spec.binding_count = has_bias ? 4 : 3;
  spec.push_constant_count = 10;
  spec.local_size = {256, 1, 1};
  std::vector<plan::Binding> bindings = {b.read(x), b.write(y), {plan::Resource::Weights, packed, plan::Access::Read}};
  if (has_bias) bindings.push_back(b.read(conv.inputs[2]));

  const Extents4 xe = b.extents4(x), ye = b.extents4(y);
  std::vector<ValueId> push = {b.constant(shape.c_in), xe[2], xe[3], b.constant(shape.c_out), ye[2], ye[3],
                               attrs.pad_begin[0], attrs.pad_begin[1], b.float_bits(act.a), b.float_bits(act.b)};
  const int64_t co_tiles = (shape.c_out + tiling.cout_tile() - 1) / tiling.cout_tile();
  const std::array<ValueId, 3> groups = {b.ceil_div(ye[3], tiling.tile_w), b.ceil_div(ye[2], tiling.tile_h()),
                                         b.mul(ye[0], b.constant(co_tiles))};
  const std::string name = activation ? conv.name + "+" + activation->name : conv.name;
  b.dispatch(name, b.pipeline(spec), std::move(bindings), std::move(push), groups);
}

void lower_conv2d_coop(PlanBuilder& b, const compiler::Op& conv, const CoopConvLowering& how) {
  const auto& attrs = std::get<ConvAttrs>(conv.attrs);
  const compiler::Tensor& weight = b.graph().tensor(conv.inputs.at(1));
  const Conv2dShape shape = conv2d_shape(b, conv);
  const CoopConvConfig& c = how.config;
  const uint32_t packed = b.add_weights(weight.name + " (conv2d_coopmat tiles)", pack_coop_weights(*weight.f32_data, shape, c));

  // The tensors the shader reads: X0 (maybe before a 2x upsample) and, with a concat, X1.
  const TensorId x = conv.inputs.at(0);
  TensorId x0 = how.concat ? how.concat->inputs.at(0) : x;
  if (how.upsample) x0 = how.upsample->inputs.at(0);
  const compiler::Op* last = how.pool ? how.pool : how.activation ? how.activation : &conv;
  const TensorId y = last->output;

  const ActivationMacro act = how.activation ? activation_macro(std::get<compiler::ActivationAttrs>(how.activation->attrs)) : ActivationMacro{};
  const bool has_bias = attrs.has_bias && conv.inputs.size() > 2;
  PipelineSpec spec;
  spec.family = "conv2d_coopmat";
  spec.defines = {{"KH", shape.kh}, {"KW", shape.kw}, {"TILE_H", c.tile_h}, {"TILE_W", c.tile_w}, {"NT", c.nt}, {"CK", c.ck},
                  {"SG_M", c.sg_m}, {"SG_N", c.sg_n}, {"SUBGROUP_SIZE", how.subgroup_size}, {"CM_N", c.cm_n},
                  {"ACC_F16", c.acc_f16 ? 1 : 0}, {"HAS_BIAS", has_bias ? 1 : 0}, {"ACT", act.code},
                  {"CONCAT", how.concat ? 1 : 0}, {"UPSAMPLE0", how.upsample ? 1 : 0}, {"POOL", how.pool ? 1 : 0}};
  if (c.b_global) spec.defines.push_back({"B_GLOBAL", 1});
  if (how.emulate) spec.defines.push_back({"COOP_EMULATE", 1});
  spec.binding_count = 3 + (how.concat ? 1 : 0) + (has_bias ? 1 : 0);
  spec.push_constant_count = 15;
  spec.local_size = {static_cast<uint32_t>(c.subgroups()) * how.subgroup_size, 1, 1};
  std::vector<plan::Binding> bindings = {b.read(x0)};
  if (how.concat) bindings.push_back(b.read(how.concat->inputs.at(1)));
  bindings.push_back(b.write(y));
  bindings.push_back({plan::Resource::Weights, packed, plan::Access::Read});
  if (has_bias) bindings.push_back(b.read(conv.inputs[2]));

  const Extents4 xe = b.extents4(x), x0e = b.extents4(x0), ce = b.extents4(conv.output), ye = b.extents4(y);
  std::vector<ValueId> push = {b.constant(shape.c_in), xe[2], xe[3], b.constant(shape.c_out), ce[2], ce[3],
                               attrs.pad_begin[0], attrs.pad_begin[1], b.float_bits(act.a), b.float_bits(act.b),
                               x0e[1], x0e[2], x0e[3], ye[2], ye[3]};
  if (!how.concat) push[10] = b.constant(shape.c_in);
  const int64_t co_tiles = (shape.c_out + c.nt - 1) / c.nt;
  const std::array<ValueId, 3> groups = {b.ceil_div(ce[3], c.tile_w), b.ceil_div(ce[2], c.tile_h), b.mul(ce[0], b.constant(co_tiles))};
  std::string name;
  for (const compiler::Op* op : {how.upsample, how.concat, &conv, how.activation, how.pool})
    if (op) name += (name.empty() ? "" : "+") + op->name;
  b.dispatch(name, b.pipeline(spec), std::move(bindings), std::move(push), groups);
}

}  // namespace denox::kernels
