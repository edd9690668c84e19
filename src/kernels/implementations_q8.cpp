// The int8 precision's implementations (implementations_q8.hpp).
#include "kernels/implementations_q8.hpp"

namespace denox::kernels {

using compiler::TensorId;

// The int8 variants of a coop convolution (conv2d_coopmat_q8): X0 and X1 NHWC_Q8, each quantized
// as `table` says, and Y NHWC_Q8 (where calibrated) or NHWC fp16 (for a reader without int8
// inputs: no conversion dispatch); none where an input is not calibrated, a channel count is no
// constant multiple of 16 (8 for an fp16 output), the bias is not constant, or the conv has a
// head or a tail (fp16 only).
std::vector<Implementation> q8_variants(const compiler::Graph& g, const Implementation& c, const QuantTable& table) {
  if (c.fusion.head || c.fusion.tail || c.inputs.empty() || c.inputs[0] != c.fusion.x0(*c.anchor)) return {};
  if (c.anchor->inputs.size() > 2 && !g.tensor(c.anchor->inputs[2]).f32_data) return {};
  auto quant_of = [&](TensorId t) -> const TensorQuant* {
    const auto& shape = g.tensor(t).shape;
    if (shape.size() != 4 || !g.program.is_constant(shape[1]) || g.program.constant_value(shape[1]) % 16 != 0) return nullptr;
    const auto it = table.find(g.tensor(t).name);
    return it == table.end() ? nullptr : &it->second;
  };
  Implementation v = c;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    const TensorQuant* q = quant_of(v.inputs[i]);
    if (!q) return {};
    v.input_layouts[i] = Layout::NHWC_Q8;
    (i == 0 ? v.coop.q_x0 : v.coop.q_x1) = *q;
  }
  v.coop.x0 = v.input_layout(0);
  v.coop.x1 = v.input_layout(1);
  std::vector<Implementation> out;
  if (const TensorQuant* q = quant_of(v.output)) {
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
  const auto& shape = g.tensor(base.output).shape;
  if (shape.size() != 4 || !g.program.is_constant(shape[1]) || g.program.constant_value(shape[1]) % 16 != 0) return std::nullopt;
  const auto it = table.find(g.tensor(base.output).name);
  if (it == table.end()) return std::nullopt;
  Implementation v = base;
  v.output_layout = v.coop.y = Layout::NHWC_Q8;
  v.coop.q_y = it->second;
  return v;
}

}  // namespace denox::kernels
