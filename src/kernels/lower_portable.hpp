// The portable lowering: a graph -> a plan over the shaders of shaders/ that every Vulkan 1.3
// device runs (no cooperative matrices). One dispatch per op, except that a convolution takes
// the activation that alone consumes it into its epilogue and a Concat is one copy per input;
// Identity costs nothing (its output names its input's memory).
#pragma once

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"

namespace denox::kernels {

// Builds the plan without SPIR-V (kernels::compile_pipelines fills it in). Activations are
// NCHW in scratch in the precision's type; weights are repacked into the layout and type each
// shader reads. Throws denox::Error (Unsupported) naming the op for what the portable shaders
// cannot run (int64 tensors on the GPU, rank > 4, symbolic weight shapes, a constant output).
plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision);

}  // namespace denox::kernels
