// Hand-built graphs for the kernel tests: inputs with symbolic H and W (so that one plan serves
// several sizes), ops with their output shapes written as the importer would.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace denox::testing {

struct GraphBuilder {
  compiler::Graph g;
  compiler::ValueId H = g.program.symbol("H"), W = g.program.symbol("W");

  compiler::ValueId c(int64_t v) { return g.program.constant(v); }
  compiler::ValueId add(compiler::ValueId a, compiler::ValueId b) { return g.program.add(a, b); }
  compiler::ValueId sub(compiler::ValueId a, compiler::ValueId b) { return g.program.sub(a, b); }
  compiler::ValueId div_floor(compiler::ValueId a, int64_t b) { return g.program.binary(compiler::IntOp::DivFloor, a, c(b)); }
  compiler::ValueId div_ceil(compiler::ValueId a, int64_t b) { return g.program.binary(compiler::IntOp::DivCeil, a, c(b)); }

  // An NCHW input of `channels` x H x W.
  compiler::TensorId input(const std::string& name, int64_t channels) {
    return input_shaped(name, {c(1), c(channels), H, W});
  }
  compiler::TensorId input_shaped(const std::string& name, std::vector<compiler::ValueId> shape) {
    const compiler::TensorId id = g.add_tensor({name, compiler::DType::F32, std::move(shape), {}, {}});
    g.inputs.push_back(id);
    return id;
  }
  compiler::TensorId constant(const std::string& name, const std::vector<int64_t>& shape, std::vector<float> data) {
    compiler::Tensor t{name, compiler::DType::F32, {}, {}, {}};
    for (int64_t d : shape) t.shape.push_back(c(d));
    t.f32_data = std::move(data);
    return g.add_tensor(std::move(t));
  }
  compiler::TensorId op(const std::string& name, const std::string& onnx_op, compiler::OpAttrs attrs,
                        std::vector<compiler::TensorId> inputs, std::vector<compiler::ValueId> out_shape) {
    const compiler::TensorId out = g.add_tensor({name + "_out", compiler::DType::F32, std::move(out_shape), {}, {}});
    g.ops.push_back({name, onnx_op, std::move(attrs), std::move(inputs), out});
    return out;
  }
  const std::vector<compiler::ValueId>& shape(compiler::TensorId t) const { return g.tensor(t).shape; }
  void output(compiler::TensorId t) { g.outputs.push_back(t); }

  // --- ops with their output shapes ---
  // Conv with random weights (and bias); spatial output by the ONNX formula.
  compiler::TensorId conv(const std::string& name, compiler::TensorId x, int64_t c_out, std::array<int64_t, 2> kernel,
                          std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation, std::array<int64_t, 4> pads,
                          bool bias, uint64_t seed);
  compiler::TensorId activation(const std::string& name, compiler::TensorId x, compiler::ActivationAttrs attrs);
  compiler::TensorId pool(const std::string& name, compiler::TensorId x, compiler::PoolAttrs attrs, std::array<int64_t, 4> pads,
                          bool ceil_mode);
  // A crop of `t` (`channels` channels) as two spatial Slices, rows from `top` then columns from
  // `left`: a (channels, rows_h, rows_w) tensor, then the (channels, out_h, out_w) graph output.
  void crop_output(compiler::TensorId t, int64_t channels, int64_t top, int64_t left, compiler::ValueId rows_h, compiler::ValueId rows_w,
                   compiler::ValueId out_h, compiler::ValueId out_w);
};

}  // namespace denox::testing
