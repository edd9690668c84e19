// Shared by the int8 tests (test_q8.cpp, test_q8_phases.cpp): targets, hand-picked plans and the
// check against the CPU reference.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/plan/plan.hpp"
#include "graph_builder.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lower_portable.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/vulkan/device_context.hpp"

namespace denox::testing {

// Whether the coop device runs int8 fragments; warns when it has coop matrices but no int8.
bool int8_coop_available();

// Whether `caps` is an llvmpipe older than Mesa 25, which computes garbage in the emulated
// by-phase int8 conv with three or more X0 chunks and two or more X1 chunks (src/kernels/int8.md);
// then a visible Catch2 WARN. The tests run on Mesa 25's lavapipe from scripts/setup-deps.sh.
bool llvmpipe_before_mesa25(const runtime::DeviceCapabilities& caps);

// The int8 dispatches (conv2d_coopmat_q8) of `plan` whose pipeline defines every macro of `want`
// with the value given (TAIL 1: a tail in the epilogue; T_FOLD 1: its factors folded; NT 64 ...).
int q8_dispatches_with(const plan::Plan& plan, std::initializer_list<std::pair<const char*, const char*>> want);

// Random inputs, made non-negative (an image).
std::vector<HostTensor> random_inputs(const GraphBuilder& b, int64_t h, int64_t w, uint64_t seed);

// The device's target (emulated or not) with int8 on, calibrated on two random inputs of `b`.
kernels::LoweringTarget q8_target(const GraphBuilder& b, bool emulate, const runtime::DeviceCapabilities& caps);

// A plan of the implementations `pick` chooses among every one `target` enumerates for `b`
// (select would take other paths); `expected` of them must be picked.
plan::Plan hand_picked(const GraphBuilder& b, const kernels::LoweringTarget& target, size_t expected,
                       const std::function<bool(const kernels::Implementation&)>& pick,
                       kernels::ConfigSpace space = kernels::ConfigSpace::Heuristic);

// Every output of `plan` on `ctx` against the CPU reference at each size (random non-negative
// inputs).
void check_sizes(const runtime::DeviceContext& ctx, const GraphBuilder& b, const plan::Plan& plan,
                 std::initializer_list<std::pair<int64_t, int64_t>> sizes, uint64_t seed, double limit);

// An H100-like target with int8 fragments, built without a device: the int8 precision calibrated
// on `sample` (one input set), or none (fp16 plans) where it is empty.
kernels::LoweringTarget h100_int8_target(const compiler::Graph& g, const std::vector<HostTensor>& sample);

// The heuristic plan of OIDN `size` (balanced by default; pad/crop) with `channels` input channels
// on an H100-like target, int8 (calibrated on one random image) or fp16.
plan::Plan oidn_heuristic_plan(int channels, bool int8,
                               modelgen::OidnUnetOptions::Size size = modelgen::OidnUnetOptions::Size::Balanced);

}  // namespace denox::testing
