// One function per op family: each appends the dispatch(es) implementing one graph op (or a
// fused pair) to the plan through a PlanBuilder. lower_portable.cpp decides which to call.
#pragma once

#include <optional>

#include "compiler/ir/graph.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/conv2d_layout.hpp"
#include "kernels/plan_builder.hpp"

namespace denox::kernels {

// The ACT macro of common.glsl and its two parameters (act_a, act_b push constants).
struct ActivationMacro {
  int64_t code = 0;
  float a = 0.0f, b = 0.0f;
};
ActivationMacro activation_macro(const compiler::ActivationAttrs& attrs);

// Conv with its bias; `activation` (may be null) is an activation op that alone consumes the
// convolution's output: it is applied in the epilogue and the dispatch writes its output.
void lower_conv2d(PlanBuilder& b, const compiler::Op& conv, const compiler::Op* activation);

// The convolution's shape when its weights are constant 4D floats with constant extents, else
// nullopt; conv2d_shape throws Unsupported instead, naming the op and what is not constant.
std::optional<Conv2dShape> constant_conv2d_shape(const compiler::Graph& g, const compiler::Op& conv);
Conv2dShape conv2d_shape(PlanBuilder& b, const compiler::Op& conv);

// A convolution on conv2d_coopmat with the ops it absorbs (each may be null): `activation`
// alone consumes the conv, `pool` (2x2/2 max) alone consumes the activation (or the conv),
// `concat` (two inputs, channels) alone feeds the conv, `upsample` (nearest 2x, floor) alone
// feeds the concat's first input or, without a concat, the conv. The dispatch writes the last
// op's output; the absorbed ops get no dispatch and their outputs no memory.
struct CoopConvLowering {
  CoopConvConfig config;
  const compiler::Op* activation = nullptr;
  const compiler::Op* pool = nullptr;
  const compiler::Op* concat = nullptr;
  const compiler::Op* upsample = nullptr;
  bool emulate = false;  // COOP_EMULATE=1: plain arithmetic instead of cooperative matrices (tests)
  uint32_t subgroup_size = 32;
};
void lower_conv2d_coop(PlanBuilder& b, const compiler::Op& conv, const CoopConvLowering& how);
void lower_pool2d(PlanBuilder& b, const compiler::Op& op);
void lower_upsample_nearest(PlanBuilder& b, const compiler::Op& op);
void lower_concat(PlanBuilder& b, const compiler::Op& op);  // one copy per input
void lower_slice(PlanBuilder& b, const compiler::Op& op);
void lower_pad(PlanBuilder& b, const compiler::Op& op);
void lower_binary(PlanBuilder& b, const compiler::Op& op);
void lower_unary(PlanBuilder& b, const compiler::Op& op);

}  // namespace denox::kernels
