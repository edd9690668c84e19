// One function per op family: each appends the dispatch(es) implementing one graph op (or a
// fused pair) to the plan through a PlanBuilder. lower_portable.cpp decides which to call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/conv2d_layout.hpp"
#include "kernels/plan_builder.hpp"
#include "kernels/quant.hpp"
#include "kernels/tensor_layout.hpp"

namespace denox::kernels {

// The ACT macro of common.glsl and its two parameters (act_a, act_b push constants).
struct ActivationMacro {
  int64_t code = 0;
  float a = 0.0f, b = 0.0f;
};
ActivationMacro activation_macro(const compiler::ActivationAttrs& attrs);

// What one convolution dispatch absorbs besides the conv itself (every field may be null or
// empty); both conv families (conv2d, conv2d_coopmat) take the same set. The dispatch writes
// the last absorbed op's output; the absorbed ops get no dispatch and their outputs no memory.
//   prologue (how the conv's input is read):
//     concat    a two-input channel Concat that alone feeds the conv: two reduction loops;
//     upsample  a nearest 2x Resize (floor) that alone feeds the concat's first input or, without
//               a concat, the conv: read at (y/2, x/2);
//     pad0      a zero Pad (spatial axes, constant begin >= 0) feeding the conv directly: the
//               conv reads the Pad's input with its padding widened (the Pad may have other
//               readers: it is read through, not covered; see Implementation::reads_through);
//     pad1      the same for the concat's second input (begin 0 only).
//     head      (conv2d_coopmat only, without another prologue) the convolution whose activated
//               output alone feeds this one, when it reads an image of at most 4 channels
//               (3x3, stride 1, padding 1; head_pad0 a zero Pad it reads through, as pad0):
//               computed per workgroup into the staged patch (HEAD), so its output is never
//               stored and it has no dispatch; head_activation its activation.
//   epilogue (what happens to the result):
//     activation  an activation op that alone consumes the conv;
//     pool        a 2x2/2 max-pool that alone consumes the activation (or the conv);
//     slices      a chain of Slice ops (spatial axes, step 1) that alone consume the activation
//                 (or the conv): only the cropped region is computed (the conv's padding is
//                 shifted by the crop's start).
//     tail        (conv2d_coopmat only, without pool or slices) a second convolution that alone
//                 consumes the activation (or the conv), 3x3, stride 1, padding 1, with at most
//                 4 output channels: a tap-sum in the epilogue (TAIL) plus a small ring pass
//                 (conv_tail_ring), so the intermediate tensor is never stored; tail_activation
//                 and tail_slices are the tail's own activation and crop, as above.
struct ConvFusion {
  const compiler::Op* concat = nullptr;
  const compiler::Op* upsample = nullptr;
  const compiler::Op* pad0 = nullptr;
  const compiler::Op* pad1 = nullptr;
  const compiler::Op* activation = nullptr;
  const compiler::Op* pool = nullptr;
  std::vector<const compiler::Op*> slices;
  const compiler::Op* tail = nullptr;
  const compiler::Op* tail_activation = nullptr;
  std::vector<const compiler::Op*> tail_slices;
  const compiler::Op* head = nullptr;
  const compiler::Op* head_activation = nullptr;
  const compiler::Op* head_pad0 = nullptr;

  // The op whose output the dispatch writes.
  const compiler::Op& last(const compiler::Op& conv) const;
  // "pad+upsample+concat+conv+act+pool": the pattern's name (conv alone: "conv").
  std::string pattern() const;
  // The covered ops in graph order (conv included; pads are read through, not covered).
  std::vector<const compiler::Op*> covered(const compiler::Op& conv) const;
  // The folded Pads (pad0, pad1 where set), in graph order.
  std::vector<const compiler::Op*> read_through() const;
  // The tensors the dispatch reads: X0 (before upsample / pad; with a head, the head's input)
  // and, with a concat, X1.
  compiler::TensorId x0(const compiler::Op& conv) const;
  std::optional<compiler::TensorId> x1() const;
};

// Conv (portable family) with its bias and the fusions above.
void lower_conv2d(PlanBuilder& b, const compiler::Op& conv, const ConvFusion& fusion);

// The convolution's shape when its weights are constant 4D floats with constant extents, else
// nullopt; conv2d_shape throws Unsupported instead, naming the op and what is not constant.
std::optional<Conv2dShape> constant_conv2d_shape(const compiler::Graph& g, const compiler::Op& conv);
Conv2dShape conv2d_shape(PlanBuilder& b, const compiler::Op& conv);

// How a convolution runs on conv2d_coopmat (stride and dilation 1).
struct CoopConvLowering {
  CoopConvConfig config;
  Layout x0 = Layout::NCHW, x1 = Layout::NCHW, y = Layout::NCHW;  // X0_HWC, X1_HWC, Y_HWC
  bool emulate = false;  // COOP_EMULATE=1: plain arithmetic instead of cooperative matrices (tests)
  uint32_t subgroup_size = 32;
  // config.q8 (conv2d_coopmat_q8): X0 and X1 are NHWC_Q8 quantized as q_x0 and q_x1; Y is
  // NHWC_Q8 quantized as q_y, or NHWC fp16.
  TensorQuant q_x0, q_x1, q_y;
};
void lower_conv2d_coop(PlanBuilder& b, const compiler::Op& conv, const ConvFusion& fusion, const CoopConvLowering& how);
void lower_pool2d(PlanBuilder& b, const compiler::Op& op);
void lower_upsample_nearest(PlanBuilder& b, const compiler::Op& op);
void lower_concat(PlanBuilder& b, const compiler::Op& op);  // one copy per input
void lower_slice(PlanBuilder& b, const compiler::Op& op);
void lower_pad(PlanBuilder& b, const compiler::Op& op);
void lower_binary(PlanBuilder& b, const compiler::Op& op);
void lower_unary(PlanBuilder& b, const compiler::Op& op);
// Tensor `t` from layout `from` to layout `to` (one strided copy).
void lower_layout_conversion(PlanBuilder& b, TensorId t, Layout from, Layout to);
// Tensor `t` between a float layout and NHWC_Q8 (quantized as `q`), either way (quantize.comp).
void lower_quantize_conversion(PlanBuilder& b, TensorId t, Layout from, Layout to, const TensorQuant& q);

// A chain of elementwise ops (Add/Sub/Mul/Div, activations) on one tensor X and constants
// (scalars, or per channel of a rank-4 X with a constant channel count), as
// shaders/eltwise.comp's register program: step i computes r[i] from `left` and `right` (-1 X,
// -2 a constant of the table, k >= 0 step k's result); `kind` 0..3 add, sub, mul, div, or 10 +
// common.glsl's ACT_* code for an activation of `left` with parameters act_a, act_b.
constexpr size_t kEltwiseMaxSteps = 8;
struct EltwiseStep {
  int64_t kind = 0, left = -1, right = -1;
  float act_a = 0.0f, act_b = 0.0f;
};
struct EltwiseProgram {
  struct Constant {
    size_t step;
    int side;                   // 0 left, 1 right
    std::vector<float> values;  // 1 (a scalar) or `channels`
  };
  std::vector<EltwiseStep> steps;
  std::vector<Constant> constants;
  int64_t channels = 1;  // the table's channels: 1, or X's where a constant is per channel
  // The constants as eltwise.comp reads them: [step][side][channel] (zero where no constant).
  std::vector<float> table() const;
  std::string describe() const;  // "r0=x*c[ch]; r1=r0+1.000000; r2=x/r1"
};
// The values of constant `t` as an operand beside X: one (a scalar) or one per channel of X.
std::optional<std::vector<float>> eltwise_constant(const compiler::Graph& g, TensorId t, TensorId x);
// The program of `ops` (graph order, each reading X, a constant or an earlier op's output; the
// last one's output is the result). Throws Internal otherwise.
EltwiseProgram eltwise_program(const compiler::Graph& g, const std::vector<const compiler::Op*>& ops, TensorId x);
void lower_eltwise(PlanBuilder& b, const std::vector<const compiler::Op*>& ops, TensorId x);

}  // namespace denox::kernels
