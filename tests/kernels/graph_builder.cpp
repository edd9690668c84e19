#include "graph_builder.hpp"

#include <cmath>

#include "../runtime/gpu_test_support.hpp"

namespace denox::testing {

using namespace compiler;

TensorId GraphBuilder::conv(const std::string& name, TensorId x, int64_t c_out, std::array<int64_t, 2> kernel,
                            std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation, std::array<int64_t, 4> pads, bool bias,
                            uint64_t seed) {
  const int64_t c_in = g.program.constant_value(shape(x)[1]);
  // He-like scaling keeps activations O(1) through a chain of convolutions.
  const float scale = std::sqrt(2.0f / static_cast<float>(c_in * kernel[0] * kernel[1]));
  const TensorId w = constant(name + ".weight", {c_out, c_in, kernel[0], kernel[1]},
                              random_values(static_cast<size_t>(c_out * c_in * kernel[0] * kernel[1]), seed, scale));
  ConvAttrs a;
  a.kernel = kernel;
  a.stride = stride;
  a.dilation = dilation;
  a.pad_begin = {c(pads[0]), c(pads[1])};
  a.pad_end = {c(pads[2]), c(pads[3])};
  a.has_bias = bias;
  std::vector<TensorId> inputs = {x, w};
  if (bias) inputs.push_back(constant(name + ".bias", {c_out}, random_values(static_cast<size_t>(c_out), seed + 1, 0.5f)));
  std::vector<ValueId> out = {shape(x)[0], c(c_out)};
  for (int a2 = 0; a2 < 2; ++a2) {
    const ValueId padded = add(shape(x)[2 + a2], c(pads[a2] + pads[2 + a2]));
    out.push_back(add(div_floor(sub(padded, c(dilation[a2] * (kernel[a2] - 1) + 1)), stride[a2]), c(1)));
  }
  return op(name, "Conv", a, inputs, out);
}

TensorId GraphBuilder::activation(const std::string& name, TensorId x, ActivationAttrs attrs) {
  static const char* const names[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip"};
  return op(name, names[static_cast<int>(attrs.kind)], attrs, {x}, shape(x));
}

TensorId GraphBuilder::pool(const std::string& name, TensorId x, PoolAttrs attrs, std::array<int64_t, 4> pads, bool ceil_mode) {
  attrs.pad_begin = {c(pads[0]), c(pads[1])};
  attrs.pad_end = {c(pads[2]), c(pads[3])};
  std::vector<ValueId> out = {shape(x)[0], shape(x)[1]};
  for (int a = 0; a < 2; ++a) {
    const ValueId travel = sub(add(shape(x)[2 + a], c(pads[a] + pads[2 + a])), c(attrs.dilation[a] * (attrs.kernel[a] - 1) + 1));
    out.push_back(add(ceil_mode ? div_ceil(travel, attrs.stride[a]) : div_floor(travel, attrs.stride[a]), c(1)));
  }
  return op(name, attrs.kind == PoolKind::Max ? "MaxPool" : "AveragePool", attrs, {x}, out);
}

void GraphBuilder::crop_output(TensorId t, int64_t channels, int64_t top, int64_t left, ValueId rows_h, ValueId rows_w, ValueId out_h,
                               ValueId out_w) {
  SliceAttrs rows, cols;
  rows.start = {c(0), c(0), c(top), c(0)};
  cols.start = {c(0), c(0), c(0), c(left)};
  rows.step = cols.step = {1, 1, 1, 1};
  const TensorId s1 = op("crop_rows", "Slice", rows, {t}, {c(1), c(channels), rows_h, rows_w});
  output(op("crop_cols", "Slice", cols, {s1}, {c(1), c(channels), out_h, out_w}));
}

}  // namespace denox::testing
