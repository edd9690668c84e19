// Shared by the int8 tests (q8_support.hpp).
#include "q8_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "../llvmpipe_version.hpp"
#include "../runtime/gpu_test_support.hpp"
#include "compiler/calibrate/calibrate.hpp"
#include "coop_support.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/shader_compiler.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace denox::testing {

using namespace kernels;

// Whether the coop device runs int8 fragments; warns when it has coop matrices but no int8.
bool int8_coop_available() {
  if (!coop_available()) return false;
  if (lowering_target(coop_device().caps()).coop.int8) return true;
  WARN("SKIPPED: the coop device reports no int8 16x16x32 fragments or has shaderInt8 off");
  return false;
}

// The int8 dispatches (conv2d_coopmat_q8) of `plan` whose pipeline defines every macro of `want`
// with the value given (TAIL 1: a tail in the epilogue; T_FOLD 1: its factors folded; NT 64 ...).
int q8_dispatches_with(const plan::Plan& plan, std::initializer_list<std::pair<const char*, const char*>> want) {
  int n = 0;
  for (const auto& d : plan.dispatches) {
    const auto& p = plan.pipelines[d.pipeline];
    if (p.family != "conv2d_coopmat_q8") continue;
    n += std::all_of(want.begin(), want.end(), [&](const auto& kv) { return define(p, kv.first) == kv.second; });
  }
  return n;
}

// Random inputs, made non-negative (an image).
std::vector<HostTensor> random_inputs(const GraphBuilder& b, int64_t h, int64_t w, uint64_t seed) {
  std::vector<HostTensor> inputs = random_graph_inputs(b, h, w, seed);
  for (HostTensor& t : inputs)
    for (float& v : t.f32) v = std::abs(v);
  return inputs;
}

LoweringTarget q8_target(const GraphBuilder& b, bool emulate, const runtime::DeviceCapabilities& caps) {
  LoweringTarget target = emulate ? emulated_lowering_target(caps) : lowering_target(caps);
  target.int8 = std::make_shared<QuantTable>(autotune::calibrate_int8(b.g, {random_inputs(b, 26, 34, 100), random_inputs(b, 18, 22, 200)}));
  return target;
}

// A plan of the implementations `pick` chooses among every one `target` enumerates for `b`
// (select would take other paths); `expected` of them must be picked.
plan::Plan hand_picked(const GraphBuilder& b, const LoweringTarget& target, size_t expected,
                       const std::function<bool(const Implementation&)>& pick, ConfigSpace space) {
  const std::vector<Implementation> impls = enumerate_implementations(b.g, plan::Precision::F16, target, space);
  std::vector<const Implementation*> chosen;
  for (const Implementation& i : impls)
    if (pick(i)) chosen.push_back(&i);
  for (const Implementation* i : chosen) UNSCOPED_INFO("picked " << i->name() << " (" << i->family << ") " << i->config);
  REQUIRE(chosen.size() == expected);
  plan::Plan plan = lower_implementations(b.g, plan::Precision::F16, chosen);
  compile_pipelines(plan, shader_compiler(), 0);
  return plan;
}

bool llvmpipe_before_mesa25(const runtime::DeviceCapabilities& caps) {
  if (!test::llvmpipe_before_mesa25(caps.device_name.rfind("llvmpipe", 0) == 0, caps.driver_info)) return false;
  // "skipped on llvmpipe": CTest's skip (or, on Mesa 25's driver, fail) pattern for these tests.
  WARN("skipped on llvmpipe, " << caps.driver_info << ": it miscomputes this emulated int8 conv (Mesa 25 or later needed)");
  return true;
}

// Every output of `plan` on `ctx` against the CPU reference at each size (random non-negative
// inputs).
void check_sizes(const runtime::DeviceContext& ctx, const GraphBuilder& b, const plan::Plan& plan,
                 std::initializer_list<std::pair<int64_t, int64_t>> sizes, uint64_t seed, double limit) {
  for (auto [h, w] : sizes) {
    const auto inputs = random_inputs(b, h, w, seed);
    const auto expected = reference::run_reference(b.g, inputs);
    const auto got = run_on(ctx, plan, inputs);
    REQUIRE(got.size() == expected.size());
    for (size_t o = 0; o < expected.size(); ++o) {
      const double err = relative_l2(got.at(o), expected.at(o));
      INFO(h << "x" << w << ", output " << o << ": relative L2 " << err);
      CHECK(err <= limit);
    }
  }
}

// An H100-like target with int8 fragments, without a device: int8 calibrated on `sample`, or
// fp16 only where `sample` is empty.
LoweringTarget h100_int8_target(const compiler::Graph& g, const std::vector<HostTensor>& sample) {
  LoweringTarget target;
  target.coop = h100_like();
  target.coop.int8 = true;
  if (!sample.empty()) target.int8 = std::make_shared<QuantTable>(autotune::calibrate_int8(g, {sample}));
  return target;
}

// The heuristic plan of OIDN `size` (balanced by default; pad/crop) with `channels` input channels
// on an H100-like target, int8 (calibrated on one random image) or fp16.
plan::Plan oidn_heuristic_plan(int channels, bool int8, modelgen::OidnUnetOptions::Size size) {
  const compiler::Graph g = oidn(size, true, channels);
  const std::vector<HostTensor> sample = int8 ? std::vector<HostTensor>{random_tensor({1, channels, 40, 48}, 5)} : std::vector<HostTensor>{};
  return build_portable_plan(g, plan::Precision::F16, h100_int8_target(g, sample));
}

}  // namespace denox::testing
