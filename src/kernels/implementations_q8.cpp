// The int8 precision's implementations (implementations_q8.hpp).
#include "kernels/implementations_q8.hpp"

namespace denox::kernels {

using compiler::TensorId;

namespace {

// How `table` quantizes `t`, where `t` may be NHWC_Q8 (calibrated, channels a multiple of 16).
const TensorQuant* q8_quant(const compiler::Graph& g, TensorId t, const QuantTable& table) {
  if (!constant_channels_multiple_of(g, t, 16)) return nullptr;
  const auto it = table.find(g.tensor(t).name);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

// The int8 variants of a coop convolution (conv2d_coopmat_q8): X0 and X1 NHWC_Q8, each quantized
// as `table` says, and Y NHWC_Q8 (where calibrated) or NHWC fp16 (for a reader without int8
// inputs: no conversion dispatch); with a tail, only the tail's fp16 output as the fp16 conv
// writes it. None where an input is not calibrated, a channel count is no constant multiple of
// 16 (8 for an fp16 output), the bias is not constant, or the conv has a head (fp16 only).
std::vector<Implementation> q8_variants(const compiler::Graph& g, const Implementation& c, const QuantTable& table) {
  if (c.fusion.head || c.inputs.empty() || c.inputs[0] != c.fusion.x0(*c.anchor)) return {};
  if (c.anchor->inputs.size() > 2 && !g.tensor(c.anchor->inputs[2]).f32_data) return {};
  Implementation v = c;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    const TensorQuant* q = q8_quant(g, v.inputs[i], table);
    if (!q) return {};
    v.input_layouts[i] = Layout::NHWC_Q8;
    (i == 0 ? v.coop.q_x0 : v.coop.q_x1) = *q;
  }
  v.coop.x0 = v.input_layout(0);
  v.coop.x1 = v.input_layout(1);
  std::vector<Implementation> out;
  if (c.fusion.tail) return {v};
  if (const TensorQuant* q = q8_quant(g, v.output, table)) {
    out.push_back(v);
    out.back().output_layout = out.back().coop.y = Layout::NHWC_Q8;
    out.back().coop.q_y = *q;
  }
  if (nhwc_allowed(g, v.output)) {
    out.push_back(v);
    out.back().output_layout = out.back().coop.y = Layout::NHWC;
  }
  return out;
}

// An fp16 coop convolution writing NHWC_Q8 (Y_Q8: its NHWC epilogue quantizes), from `base`
// (whose inputs keep their layouts), where the output is calibrated; else nullopt.
std::optional<Implementation> q8_output_variant(const compiler::Graph& g, const Implementation& base, const QuantTable& table) {
  const TensorQuant* q = q8_quant(g, base.output, table);
  if (!q) return std::nullopt;
  Implementation v = base;
  v.output_layout = v.coop.y = Layout::NHWC_Q8;
  v.coop.q_y = *q;
  return v;
}

std::optional<Implementation> q8_x0_variant(const compiler::Graph& g, const Implementation& base, const QuantTable& table) {
  if (base.fusion.head || base.fusion.tail || base.inputs.empty() || base.inputs[0] != base.fusion.x0(*base.anchor)) return std::nullopt;
  if (base.output_layout != Layout::NHWC && base.output_layout != Layout::NHWC_Q8) return std::nullopt;
  if (base.anchor->inputs.size() > 2 && !g.tensor(base.anchor->inputs[2]).f32_data) return std::nullopt;
  const TensorQuant* q = q8_quant(g, base.inputs[0], table);
  if (!q) return std::nullopt;
  Implementation v = base;
  v.input_layouts[0] = v.coop.x0 = Layout::NHWC_Q8;
  v.coop.q_x0 = *q;
  return v;
}

}  // namespace denox::kernels
