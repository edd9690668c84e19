// Shared by the cooperative-matrix tests (test_coop.cpp) and the per-layer benchmark
// (bench/conv_layers.cpp): a device without the validation layer, plan compilation for a
// LoweringTarget, and running a plan on any context.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/lower_portable.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/executable_model.hpp"

namespace denox::testing {

// Dispatches per shader family.
std::map<std::string, int> families(const plan::Plan& plan);

// The device of the [coop] tests and benchmarks: the first discrete GPU with validation off
// (Debian 12's Khronos layer predates SPV_KHR_cooperative_matrix and cannot check these shaders).
runtime::DeviceContext& coop_device();
// Whether coop_device() has usable cooperative matrices; if not, a visible Catch2 WARN.
bool coop_available();

// build_portable_plan(g, p, target) with its SPIR-V.
plan::Plan compile(const compiler::Graph& g, plan::Precision p, const kernels::LoweringTarget& target);

// Runs a plan once on `ctx` (run_model_on: fp32 NCHW caller buffers).
std::vector<HostTensor> run_on(const runtime::DeviceContext& ctx, plan::Plan plan, const std::vector<HostTensor>& inputs);

}  // namespace denox::testing
