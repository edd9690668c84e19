// One function per op family: each appends the dispatch(es) implementing one graph op (or a
// fused pair) to the plan through a PlanBuilder. lower_portable.cpp decides which to call.
#pragma once

#include "compiler/ir/graph.hpp"
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
void lower_pool2d(PlanBuilder& b, const compiler::Op& op);
void lower_upsample_nearest(PlanBuilder& b, const compiler::Op& op);
void lower_concat(PlanBuilder& b, const compiler::Op& op);  // one copy per input
void lower_slice(PlanBuilder& b, const compiler::Op& op);
void lower_pad(PlanBuilder& b, const compiler::Op& op);
void lower_binary(PlanBuilder& b, const compiler::Op& op);
void lower_unary(PlanBuilder& b, const compiler::Op& op);

}  // namespace denox::kernels
