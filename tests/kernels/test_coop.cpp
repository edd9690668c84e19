// The cooperative-matrix convolution family (shaders/conv2d_coopmat.comp, src/kernels/conv2d_coopmat.*):
//  - [coop-plan]: plan structure, no device (weight packing and configuration choice:
//    test_coop_packing.cpp; the graphs: coop_cases.cpp).
//  - [coop-emulate]: the family's data flow with COOP_EMULATE=1 (plain arithmetic in place of
//    the matrix operations) on any device, lavapipe included, against the CPU reference: the
//    staging, halo, channel masking, weight layout, epilogue and fusions are checked on every
//    CI run even though lavapipe has no cooperative matrices.
//  - [coop]: the real thing on a device with cooperative matrices (skipped with a warning
//    elsewhere): every configuration the heuristic or the benchmark's sweep can use, fused and
//    unfused, and the whole OIDN U-Net, against the CPU reference at odd sizes.
//  - [.][coop-bench] (hidden): per-layer and end-to-end timings of OIDN balanced
//    (bench/conv_layers.md says how to run it; DENOX_BENCH_SIZE, DENOX_BENCH_SWEEP=0|1).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "../runtime/gpu_test_support.hpp"
#include "coop_cases.hpp"
#include "coop_support.hpp"
#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "compiler/schedule/schedule.hpp"
#include "kernels/shader_compiler.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/lowering_target.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "runtime/vulkan/vk_check.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

int nhwc_dispatches(const plan::Plan& plan);

// Random inputs for every graph input at the H and W symbol values h, w.
std::vector<HostTensor> inputs_for(const GraphBuilder& b, int64_t h, int64_t w, uint64_t seed) { return random_graph_inputs(b, h, w, seed); }

// Worst relative L2 of the outputs against the CPU reference (infinity on NaN).
double error_on(const runtime::DeviceContext& ctx, const compiler::Graph& g, const LoweringTarget& target,
                const std::vector<HostTensor>& inputs, int* coop_dispatches = nullptr,
                plan::Precision precision = plan::Precision::F16, size_t* dispatches = nullptr, int* up2_dispatches = nullptr,
                int* nhwc = nullptr, int* tail_rings = nullptr) {
  plan::Plan plan = compile(g, precision, target);
  if (tail_rings) *tail_rings = families(plan)["conv_tail_ring"];
  if (nhwc) *nhwc = nhwc_dispatches(plan);
  if (coop_dispatches) *coop_dispatches = testing::coop_dispatches(plan);
  if (up2_dispatches) *up2_dispatches = families(plan)["conv2d_coopmat_up2"];
  if (dispatches) *dispatches = plan.dispatches.size();
  const auto expected = reference::run_reference(g, inputs);
  const auto actual = run_on(ctx, std::move(plan), inputs);
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, relative_l2(actual.at(i), expected[i]));
  return worst;
}


// How many coop pipelines of a plan read or write an NHWC tensor.
int nhwc_dispatches(const plan::Plan& plan) {
  int n = 0;
  for (const auto& d : plan.dispatches) {
    const auto& p = plan.pipelines[d.pipeline];
    n += define(p, "X0_HWC") == "1" || define(p, "X1_HWC") == "1" || define(p, "Y_HWC") == "1";
  }
  return n;
}

// Configurations beyond the heuristic's that the tests force (each where it fits): the tile,
// N, chunk, subgroup grid, coop N and accumulator corners of the space.
std::vector<CoopConvConfig> forced_configs() {
  std::vector<CoopConvConfig> v;
  auto add = [&](int64_t th, int64_t tw, int64_t nt, int64_t ck, int64_t sg_m, int64_t sg_n, int64_t cm_n, bool f16, bool bg) {
    CoopConvConfig c;
    c.tile_h = th, c.tile_w = tw, c.nt = nt, c.ck = ck, c.sg_m = sg_m, c.sg_n = sg_n, c.cm_n = cm_n, c.acc_f16 = f16;
    c.b_global = bg;
    v.push_back(c);
  };
  add(4, 16, 16, 16, 2, 1, 8, true, true);
  add(4, 32, 16, 32, 4, 1, 16, false, false);
  add(16, 16, 64, 16, 4, 2, 16, true, false);
  add(2, 32, 48, 16, 4, 1, 16, false, true);
  add(4, 64, 64, 16, 4, 2, 16, true, true);
  add(4, 64, 16, 16, 16, 1, 16, true, false);  // 16 subgroups (512 invocations)
  add(4, 32, 32, 16, 2, 2, 8, true, false);   // 4 subgroups
  // Winners of the H100's exhaustive tuning (bench/RESULTS.md), 16 and 32 subgroups.
  add(8, 64, 32, 16, 16, 1, 16, true, false);
  add(4, 64, 64, 16, 8, 2, 16, true, false);
  add(8, 32, 48, 16, 8, 2, 8, true, false);
  add(8, 64, 32, 16, 32, 1, 16, true, false);
  add(4, 64, 64, 16, 16, 2, 16, true, false);
  // conv2d_coopmat_up2 (phase-decomposed upsampled convs; forcing one keeps conv2d_coopmat off
  // the upsampled convs): two output-channel tiles, fp32 accumulation, 8 and 16 subgroups.
  auto up2 = [&](int64_t th, int64_t tw, int64_t nt, int64_t sg_m, int64_t sg_n, int64_t cm_n, bool f16) {
    add(th, tw, nt, 16, sg_m, sg_n, cm_n, f16, false);
    v.back().up2 = true;
  };
  up2(4, 32, 8, 4, 1, 8, false);   // index 12
  up2(4, 32, 16, 4, 2, 8, true);   // index 13
  up2(4, 64, 64, 8, 2, 16, true);
  up2(8, 64, 32, 16, 1, 16, true);
  up2(8, 32, 48, 8, 1, 16, false);
  // One output phase per workgroup (tiles of the low-resolution grid; skips of <= 4 channels).
  up2(4, 16, 16, 4, 1, 8, false);  // index 17
  v.back().one_phase = true;
  up2(8, 16, 64, 4, 2, 16, true);  // the H100's dec_conv1a winner
  v.back().one_phase = true;
  up2(16, 16, 32, 8, 2, 8, true);
  v.back().one_phase = true;
  add(4, 16, 16, 32, 4, 1, 8, true, false);  // index 20: one phase, 32-channel chunks
  v.back().up2 = v.back().one_phase = true;
  // conv2d_coopmat_tapsum (convs with kh * kw * c_out <= nt, no pool, concat or upsample): 32- and
  // 16-channel chunks, fp16 and fp32 accumulators, and a patch of 7 fragments on 2 subgroups
  // (the second's last fragment is past the patch).
  add(8, 32, 32, 32, 8, 1, 16, true, false);  // index 21
  v.back().tap_sum = true;
  add(4, 16, 64, 16, 2, 1, 8, false, false);  // index 22
  v.back().tap_sum = true;
  // One phase with the epilogue in channel passes (EPI_PASSES), every pass real channels of the
  // 32-channel conv_up: 2 passes of one fragment column each on 4x2 subgroups, and 4 passes of one
  // of each subgroup's 4 fragments (8x1, 16x8x16, fp32).
  up2(16, 16, 32, 4, 2, 16, true);  // index 23
  v.back().one_phase = true, v.back().epi_passes = 2;
  up2(8, 16, 32, 8, 1, 8, false);  // index 24
  v.back().one_phase = true, v.back().epi_passes = 4;
  // A head's tile with 16x8x16 fragments (two head N fragments per chunk) and fp32 accumulators.
  add(8, 32, 32, 16, 8, 1, 8, false, false);  // index 25
  // All phases on 16x32 pixels, 32-channel tiles on 16 subgroups of one column (the heuristic's
  // for up2 convs of more than 64 channels; 40 KB, more than llvmpipe's 32 KB, so only the [coop]
  // test on hardware runs it).
  up2(16, 32, 32, 16, 1, 16, true);  // index 26
  return v;
}

}  // namespace

TEST_CASE("the wide-skip and narrow-plane cases take the paths they are there for (skip planes, SKIP_ROWS, NARROW planes)",
          "[kernels][coop-plan]") {
  // The heuristic plans of the emulated cases below, on an H100-like target: if a heuristic
  // change moved these convs elsewhere, those cases would stop covering the paths.
  LoweringTarget target;
  target.coop = h100_like();
  int checked = 0;
  for (Case& c : cases()) {
    if (c.name.rfind("wide skips", 0) != 0 && c.name.rfind("narrow planes", 0) != 0) continue;
    const plan::Plan plan = build_portable_plan(c.b.g, plan::Precision::F16, target);
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines[d.pipeline];
      INFO(c.name << ": " << d.name);
      if (d.name.find("conv_skip9") != std::string::npos) {  // 3 planes of slots
        CHECK(define(p, "ONE_PHASE") == "1");
        CHECK(define(p, "SKIP_ROWS").empty());
        ++checked;
      }
      if (d.name.find("conv_skip56") != std::string::npos) {  // row steps
        CHECK(define(p, "ONE_PHASE") == "1");
        CHECK(define(p, "SKIP_ROWS") == "1");
        CHECK(define(p, "X1_HWC") == "1");
        ++checked;
      }
      if (d.name.find("conv11") != std::string::npos || d.name.find("conv9") != std::string::npos) {  // NARROW planes
        CHECK(define(p, "NARROW") == "2");
        ++checked;
      }
      if (d.name.find("conv6") != std::string::npos) {  // one-pixel slots
        CHECK(define(p, "NARROW") == "1");
        ++checked;
      }
    }
  }
  CHECK(checked == 8);  // the narrow planes' case at two widths
}

TEST_CASE("coop lowering of the OIDN U-Net: default and fp32 plans unchanged and the fp16 coop plan fuses pool/upsample/concat",
          "[kernels][coop-plan]") {
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  const auto portable = families(build_portable_plan(g, plan::Precision::F16));
  CHECK(portable.count("conv2d_coopmat") == 0);
  LoweringTarget target;
  target.coop = h100_like();
  // fp32 plans never use the coop family; a target without shapes is the default.
  CHECK(families(build_portable_plan(g, plan::Precision::F32, target)) == families(build_portable_plan(g, plan::Precision::F32)));
  CHECK(families(build_portable_plan(g, plan::Precision::F16, LoweringTarget{})) == portable);
  CHECK(LoweringTarget{}.key() == "portable");
  CHECK(target.key() != "portable");

  const plan::Plan plan = build_portable_plan(g, plan::Precision::F16, target);
  const auto f = families(plan);
  CHECK(f.at("conv2d_coopmat") == 10);  // enc_conv0 in enc_conv1's prologue (HEAD)
  CHECK(f.at("conv2d_coopmat_up2") == 4);  // the heuristic cost model takes the 4-tap phases
  // The last conv (32 -> 3) in dec_conv1b's epilogue (TAIL), plus its ring pass.
  CHECK(f.count("conv2d_coopmat_tapsum") == 0);
  CHECK(f.at("conv_tail_ring") == 1);
  CHECK(f.count("conv2d") == 0);
  CHECK(f.count("pool2d") == 0);            // all four max-pools in the epilogues
  CHECK(f.count("upsample_nearest") == 0);  // all four upsamples in the prologues
  CHECK(f.count("copy") == 0);              // the concats and the crop are gone
  CHECK(f.count("pad") == 0);               // read through by enc_conv0 (the head) and dec_conv1a
  CHECK(plan.dispatches.size() == 15);
  int pools = 0, concats = 0, heads = 0;
  for (const auto& d : plan.dispatches) {
    const auto& p = plan.pipelines[d.pipeline];
    if (p.family == "conv2d_coopmat_up2") concats += define(p, "CONCAT") == "1";
    if (define(p, "TAIL") == "1") {
      CHECK(d.name.find("dec_conv1b") != std::string::npos);
      CHECK(d.name.find("dec_conv0") != std::string::npos);
      CHECK(define(p, "T_COUT") == "3");
      CHECK(define(p, "X0_HWC") == "1");
    }
    if (p.family != "conv2d_coopmat" && p.family != "conv2d_coopmat_up2") continue;
    pools += define(p, "POOL") == "1";
    // enc_conv0 (3 input channels, read through the pad-to-16) runs in enc_conv1's prologue.
    CHECK(define(p, "NARROW").empty());
    if (define(p, "HEAD") == "1") {
      ++heads;
      CHECK(d.name == "/Pad+/enc_conv0/Conv+/enc_conv0/Relu+/enc_conv1/Conv+/enc_conv1/Relu+/pool1/MaxPool");
      CHECK(define(p, "H_K") == "32");
      CHECK(define(p, "POOL") == "1");
      CHECK(define(p, "X0_HWC").empty());
    }
    concats += define(p, "CONCAT") == "1" && define(p, "UPSAMPLE0") == "1";
    CHECK(std::stoi(define(p, "SG_M")) * std::stoi(define(p, "SG_N")) * 32 == static_cast<int>(p.local_size[0]));
    // The up2 convs of more than 64 channels on all phases of 16x32 pixels, 32-channel tiles on
    // 16 subgroups of one column (choose_coop_up2_config).
    if (d.name.find("dec_conv3a") != std::string::npos || d.name.find("dec_conv4a") != std::string::npos) {
      CHECK(p.family == "conv2d_coopmat_up2");
      CHECK(define(p, "ONE_PHASE").empty());
      CHECK(define(p, "TILE_H") == "16");
      CHECK(define(p, "TILE_W") == "32");
      CHECK(define(p, "NT") == "32");
      CHECK(define(p, "SG_M") == "16");
    }
  }
  CHECK(pools == 4);
  CHECK(concats == 4);
  CHECK(heads == 1);
  // Every tensor between two convs is NHWC (the network's 3-channel input and output stay
  // NCHW): each conv reads or writes one, and no conversion is needed.
  CHECK(nhwc_dispatches(plan) == 14);
  // The plan with one switch of the target changed (which its cache key must name).
  auto plan_with = [&](auto change) {
    LoweringTarget changed = target;
    change(changed);
    CHECK(changed.key() != target.key());
    return build_portable_plan(g, plan::Precision::F16, changed);
  };
  // Without tails: the last conv on conv2d_coopmat_tapsum (27 taps x channels in N).
  const plan::Plan untailed = plan_with([](LoweringTarget& t) { t.coop_tail = false; });
  CHECK(families(untailed).at("conv2d_coopmat_tapsum") == 1);
  CHECK(families(untailed).count("conv_tail_ring") == 0);
  CHECK(untailed.dispatches.size() == 15);
  for (const auto& d : untailed.dispatches)
    if (untailed.pipelines[d.pipeline].family == "conv2d_coopmat_tapsum") {
      CHECK(d.name.find("dec_conv0") != std::string::npos);
      CHECK(define(untailed.pipelines[d.pipeline], "X0_HWC") == "1");
    }
  plan::validate_plan(plan);
  const plan::Plan nchw_plan = plan_with([](LoweringTarget& t) { t.nhwc = false; });
  CHECK(nhwc_dispatches(nchw_plan) == 0);
  CHECK(nchw_plan.dispatches.size() == 15);

  // Without the phase-decomposed family: conv2d_coopmat reads the upsampled inputs itself.
  const plan::Plan plain = plan_with([](LoweringTarget& t) { t.coop_up2 = false; });
  CHECK(families(plain).at("conv2d_coopmat") == 14);
  CHECK(families(plain).at("conv_tail_ring") == 1);
  CHECK(plain.dispatches.size() == 15);

  // Without heads: enc_conv0 a dispatch of its own, its taps packed into K (NARROW=2).
  const plan::Plan headless = plan_with([](LoweringTarget& t) { t.coop_head = false; });
  CHECK(families(headless).at("conv2d_coopmat") == 11);
  CHECK(headless.dispatches.size() == 16);
  CHECK(nhwc_dispatches(headless) == 15);
  int narrow = 0;
  for (const auto& d : headless.dispatches) {
    const auto& p = headless.pipelines[d.pipeline];
    CHECK(define(p, "HEAD").empty());
    if (!define(p, "NARROW").empty()) {
      ++narrow;
      CHECK(define(p, "NARROW") == "2");
      CHECK(d.name.find("enc_conv0") != std::string::npos);
    }
  }
  CHECK(narrow == 1);

  // Without fusion: one coop dispatch per conv, the rest one dispatch per op.
  target.fuse = false;
  const auto unfused = families(build_portable_plan(g, plan::Precision::F16, target));
  CHECK(unfused.at("conv2d_coopmat") == 15);
  CHECK(unfused.at("conv2d_coopmat_tapsum") == 1);
  CHECK(unfused.at("pool2d") == 4);
  CHECK(unfused.at("upsample_nearest") == 4);
}

TEST_CASE("the forced 16x32 all-phase up2 configuration applies to every up2 conv of the cases on a 48 KB target", "[kernels][coop-plan]") {
  // The [coop] test runs forced configuration 26 on hardware only (40 KB: more than llvmpipe's
  // 32 KB), and its counts hold whether or not a forced configuration fits; so check here that
  // it takes every up2 conv of the cases where 48 KB are available.
  LoweringTarget target;
  target.coop = h100_like();
  target.force_config = forced_configs()[26];
  int checked = 0;
  for (Case& c : cases()) {
    const plan::Plan plan = build_portable_plan(c.b.g, plan::Precision::F16, target);
    int up2 = 0;
    for (const auto& d : plan.dispatches) {
      const auto& p = plan.pipelines[d.pipeline];
      if (p.family != "conv2d_coopmat_up2") continue;
      ++up2;
      INFO(c.name << ": " << d.name);
      CHECK(define(p, "TILE_H") == "16");
      CHECK(define(p, "TILE_W") == "32");
      CHECK(define(p, "SG_M") == "16");
      CHECK(define(p, "ONE_PHASE").empty());
    }
    CHECK(up2 == c.upsampled);
    checked += up2;
  }
  CHECK(checked >= 4);
}

TEST_CASE("coop family emulated (COOP_EMULATE) against the CPU reference at odd sizes with channel padding and every fusion",
          "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  LoweringTarget target = emulated_lowering_target(caps);
  for (Case& c : cases()) {
    // The heuristic and forced configurations (B_GLOBAL and not, 16 subgroups, 2x2 subgroups: a
    // head on two subgroup columns; then the up2, tap-sum and two-pass ones): llvmpipe
    // compiles each variant for a while; the [coop] test runs them all on real hardware. The
    // NHWC cases also without NHWC (-2: the heuristic, NCHW only).
    // -3: the heuristic without tails (where the case has any); -4: without heads (likewise).
    for (int variant : {-4, -3, -2, -1, 0, 1, 5, 6, 12, 13, 17, 20, 21, 22, 23, 24, 25}) {
      if ((variant == -2 && !c.nhwc) || (variant == -3 && !c.tails) || (variant == -4 && !c.heads)) continue;
      target.nhwc = variant != -2;
      target.coop_tail = variant != -3;
      target.coop_head = variant != -4;
      if (variant >= 0) target.force_config = forced_configs()[static_cast<size_t>(variant)];
      else target.force_config.reset();
      int coop = 0, up2 = 0, nhwc = 0, rings = 0;
      const double err = error_on(device(), c.b.g, target, inputs_for(c.b, c.h, c.w, 40), &coop, plan::Precision::F16, nullptr,
                                  &up2, &nhwc, &rings);
      INFO(c.name << ", config " << (variant < 0 ? std::string("heuristic") : target.force_config->describe())
                  << (target.nhwc ? "" : ", NCHW only") << (target.coop_tail ? "" : ", no tails") << (target.coop_head ? "" : ", no heads")
                  << ": relative L2 " << err);
      CHECK(coop == c.expected_coop + (target.coop_tail ? 0 : c.tails) + (target.coop_head ? 0 : c.heads));
      CHECK(rings == (target.coop_tail ? c.tails : 0));
      CHECK(up2 == (target.force_config && !target.force_config->up2 ? 0 : c.upsampled));
      // (Without heads the heads case's intermediate tensors may go NHWC.)
      if (target.coop_head) CHECK(nhwc == (c.nhwc && target.nhwc ? c.expected_coop : 0));
      CHECK(err <= 2e-2);
    }
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("portable conv2d with every fusion (pad, upsample, concat, pool, crop) against the CPU reference at odd sizes",
          "[kernels][conv-fusion]") {
  const LoweringTarget portable;
  for (Case& c : cases()) {
    for (plan::Precision p : {plan::Precision::F32, plan::Precision::F16}) {
      if (p == plan::Precision::F16 && !device().caps().fp16_usable()) continue;
      size_t dispatches = 0;
      const double err = error_on(device(), c.b.g, portable, inputs_for(c.b, c.h, c.w, 60), nullptr, p, &dispatches);
      INFO(c.name << ", " << plan::precision_name(p) << ": relative L2 " << err);
      CHECK(dispatches == c.expected_dispatches);
      CHECK(err <= (p == plan::Precision::F32 ? 1e-5 : 2e-2));
    }
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("coop family emulated: OIDN small U-Net with every fusion at 45x37", "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!caps.fp16_usable()) return;
  LoweringTarget target = emulated_lowering_target(caps);
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Small);
  const double err = error_on(device(), g, target, {random_tensor({1, 3, 45, 37}, 9)});
  INFO("relative L2 " << err);
  CHECK(err <= 2e-2);
  // The last conv (32 -> 3, reading dec_conv1b's NHWC output, cropped) is dec_conv1b's tail.
  CHECK(families(compile(g, plan::Precision::F16, target))["conv_tail_ring"] == 1);
  // Without tails, on conv2d_coopmat_tapsum, forced: the one layer it fits.
  target.coop_tail = false;
  target.force_config = forced_configs()[21];
  plan::Plan plan = compile(g, plan::Precision::F16, target);
  CHECK(families(plan)["conv2d_coopmat_tapsum"] == 1);
  for (const auto& d : plan.dispatches)
    if (plan.pipelines[d.pipeline].family == "conv2d_coopmat_tapsum") CHECK(define(plan.pipelines[d.pipeline], "X0_HWC") == "1");
  const double err_tapsum = error_on(device(), g, target, {random_tensor({1, 3, 45, 37}, 9)});
  INFO("tap-sum last conv: relative L2 " << err_tapsum);
  CHECK(err_tapsum <= 2e-2);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("DENOX_TEST_SHARD splits a sweep into disjoint slices that cover it, and a malformed value is refused",
          "[kernels][coop-plan]") {
  const char* before = std::getenv("DENOX_TEST_SHARD");
  const std::string saved = before ? before : "";
  std::vector<int> runs(10, 0);
  for (int i = 0; i < 3; ++i) {
    ::setenv("DENOX_TEST_SHARD", (std::to_string(i) + "/3").c_str(), 1);
    ShardedSweep sweep("test");
    for (size_t k = 0; k < runs.size(); ++k) runs[k] += sweep.take();
  }
  CHECK(runs == std::vector<int>(10, 1));
  for (const char* bad : {"3/3", "1/0", "x", "1/2/3", "-1/2", "1/2 "}) {
    ::setenv("DENOX_TEST_SHARD", bad, 1);
    INFO(bad);
    CHECK_THROWS_WITH(test_shard(), Catch::Contains(std::string("DENOX_TEST_SHARD='") + bad + "'"));
  }
  if (before) ::setenv("DENOX_TEST_SHARD", saved.c_str(), 1);
  else ::unsetenv("DENOX_TEST_SHARD");
}

TEST_CASE("coop family on the GPU's cooperative matrices against the CPU reference", "[kernels][coop][sweep]") {
  if (!coop_available()) return;
  LoweringTarget target = lowering_target(coop_device().caps());
  // Every configuration the sweep of the benchmark can pick, on every case where it fits.
  std::vector<std::optional<CoopConvConfig>> configs = {std::nullopt};
  for (const auto& c : forced_configs()) configs.push_back(c);
  ShardedSweep sweep("coop configuration sweep");
  for (bool f16 : {true, false}) {
    target.coop.prefer_f16_accumulate = f16;
    for (Case& c : cases())
      for (const auto& config : configs) {
        if (!sweep.take()) continue;
        target.force_config = config;
        int coop = 0, up2 = 0, nhwc = 0, rings = 0;
        const double err = error_on(coop_device(), c.b.g, target, inputs_for(c.b, c.h, c.w, 50), &coop, plan::Precision::F16,
                                    nullptr, &up2, &nhwc, &rings);
        INFO(c.name << ", " << (config ? config->describe() : std::string("heuristic, prefer ") + (f16 ? "f16" : "f32"))
                    << ": relative L2 " << err);
        CHECK(coop == c.expected_coop);
        CHECK(rings == c.tails);
        CHECK(nhwc == (c.nhwc ? c.expected_coop : 0));
        // A forced up2 configuration that does not fit leaves the heuristic's up2 choice.
        CHECK(up2 == (config && !config->up2 ? 0 : c.upsampled));
        CHECK(err <= 2e-2);
      }
  }
  sweep.report();
}

// GPU-AV (1.4.363) reports a shared-memory race in this case's second tail under forced
// configuration 1 (4x32, nt16, ck32), the one tail configuration small enough for its race check
// to instrument; it counts only workgroup barriers as synchronization (conv2d_coopmat_tail.glsl,
// TAIL_WG_SYNC). With workgroup barriers in the tail, the same plan must give the same results
// and, under GPU-AV, no report: nothing but the subgroup-scope synchronization is flagged.
namespace {

void check_tail_wg_sync(const runtime::DeviceContext& ctx, LoweringTarget target) {
  target.force_config = forced_configs()[1];
  std::vector<Case> all = cases();
  const auto tails = std::find_if(all.begin(), all.end(), [](const Case& c) { return c.name.rfind("tails:", 0) == 0; });
  REQUIRE(tails != all.end());
  const std::vector<HostTensor> inputs = inputs_for(tails->b, tails->h, tails->w, 50);
  const HostTensor expected = reference::run_reference(tails->b.g, inputs).at(1);
  for (bool f16 : {true, false}) {
    target.coop.prefer_f16_accumulate = f16;
    plan::Plan plan = compile(tails->b.g, plan::Precision::F16, target);
    // The flagged dispatch, on the flagged configuration: 16 conv channels, Z 32 wide.
    int narrow_tails = 0;
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines.at(d.pipeline);
      narrow_tails += d.name == "conv_e+relu_e+conv_tail2+sig" && p.family == "conv2d_coopmat" && define(p, "TAIL") == "1" &&
                      define(p, "NT") == "16" && define(p, "T_NT") == "32";
    }
    add_coop_defines(plan, {{"TAIL_WG_SYNC", "1"}}, {"conv2d_coopmat"});
    const double err = relative_l2(run_on(ctx, std::move(plan), inputs).at(1), expected);
    INFO((f16 ? "fp16" : "fp32") << " accumulators: relative L2 " << err);
    CHECK(narrow_tails == 1);
    CHECK(err <= 2e-2);
  }
}

}  // namespace

TEST_CASE("a TAIL with workgroup barriers in place of its subgroup ones (TAIL_WG_SYNC) on the GPU", "[kernels][coop]") {
  if (!coop_available()) return;
  check_tail_wg_sync(coop_device(), lowering_target(coop_device().caps()));
}

TEST_CASE("a TAIL with workgroup barriers in place of its subgroup ones (TAIL_WG_SYNC), emulated", "[kernels][coop-emulate]") {
  if (!fp16_available(device().caps())) return;
  check_tail_wg_sync(device(), emulated_lowering_target(device().caps()));
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("coop family on the GPU: OIDN balanced and small U-Nets at odd sizes", "[kernels][coop]") {
  if (!coop_available()) return;
  for (auto size : {modelgen::OidnUnetOptions::Size::Balanced, modelgen::OidnUnetOptions::Size::Small}) {
    const compiler::Graph g = oidn(size);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{203, 317}, {61, 93}}) {
      const std::vector<HostTensor> inputs = {random_tensor({1, 3, h, w}, 77)};
      const auto expected = reference::run_reference(g, inputs);
      for (bool f16 : {true, false}) {
        LoweringTarget target = lowering_target(coop_device().caps());
        target.coop.prefer_f16_accumulate = f16;
        plan::Plan plan = compile(g, plan::Precision::F16, target);
        const int coop = coop_dispatches(plan);
        const int ups = families(plan)["conv2d_coopmat_up2"], rings = families(plan)["conv_tail_ring"];
        const double err = relative_l2(run_on(coop_device(), std::move(plan), inputs).at(0), expected.at(0));
        std::printf("coop U-Net %s %lldx%lld %s accumulation: relative L2 %.3e (%d coop dispatches)\n",
                    size == modelgen::OidnUnetOptions::Size::Balanced ? "balanced" : "small", static_cast<long long>(w),
                    static_cast<long long>(h), f16 ? "fp16" : "fp32", err, coop);
        CHECK(coop == 14);  // the first conv is enc_conv1's head, the last dec_conv1b's tail
        CHECK(rings == 1);
        // Every upsampled conv phase-decomposed, but small's dec_conv4a: 64 channels at 1/8
        // resolution, a small layer at the 1920x1088 the heuristic ranks at, reads its upsampled
        // input directly (test_coop_layer_size.cpp).
        CHECK(ups == (size == modelgen::OidnUnetOptions::Size::Balanced ? 4 : 3));
        CHECK(err <= 2e-2);
      }
    }
  }
}

namespace {

// Costs by rule (a stand-in for the device measurer).
class RuleMeasurer : public autotune::Measurer {
 public:
  std::function<double(const Implementation&)> rule;
  std::vector<autotune::Measured> measure(const compiler::Graph&, const std::vector<const Implementation*>& impls, plan::Precision,
                                          uint32_t, uint32_t, const autotune::Progress&) override {
    std::vector<autotune::Measured> out;
    for (const Implementation* i : impls) {
      autotune::Measured m;
      m.ok = true;
      m.ms = rule(*i);
      out.push_back(m);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("layout conversions: NHWC convs next to an NCHW-only op and at the network's boundary, emulated, against the CPU reference",
          "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!caps.fp16_usable()) return;
  // x (8 ch) -> conv_a 8->16 relu -> average pool (portable, NCHW only) -> output
  //                               \-> conv_b 16->8 -> output
  // With NHWC convs made cheap, select keeps a NHWC and pays for three conversions: x to NHWC,
  // a back to NCHW for the pool, and conv_b's output back to NCHW.
  GraphBuilder b;
  const TensorId x = b.input("x", 8);
  const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 61), relu());
  PoolAttrs avg;
  avg.kind = PoolKind::Average;
  avg.kernel = {2, 2};
  avg.stride = {2, 2};
  b.output(b.pool("avg", a, avg, {0, 0, 0, 0}, false));
  b.output(b.conv("conv_b", a, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 62));

  autotune::ScheduleOptions opt;
  opt.precision = plan::Precision::F16;
  opt.target = emulated_lowering_target(caps);
  opt.width = 29, opt.height = 23;
  // Structural pruning would drop the conversions (each adds a dispatch; the NCHW variants
  // derive the outputs with fewer): this checks what select and the lowering do with them.
  opt.structural_prune = false;
  RuleMeasurer m;
  m.rule = [](const Implementation& i) {
    if (i.kind == Implementation::Kind::CoopConv) return i.layout_words().empty() ? 1.0 : 0.001;
    return i.kind == Implementation::Kind::PortableConv ? 2.0 : 0.01;
  };
  opt.measurer = &m;
  const autotune::Schedule s = autotune::schedule_graph(b.g, opt);
  std::set<std::string> conversions;
  for (const auto& step : s.report.steps)
    if (step.family == "copy") conversions.insert(step.name);
  CHECK(conversions == std::set<std::string>{"x NCHW->NHWC", "relu_a_out NHWC->NCHW", "conv_b_out NHWC->NCHW"});
  plan::Plan plan = autotune::lower_schedule(b.g, s, plan::Precision::F16);
  kernels::compile_pipelines(plan, shader_compiler(), 0);
  CHECK(nhwc_dispatches(plan) == 2);
  CHECK(families(plan)["copy"] == 3);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{23, 29}, {16, 36}}) {
    const std::vector<HostTensor> inputs = inputs_for(b, h, w, 63);
    const auto expected = reference::run_reference(b.g, inputs);
    const auto actual = run_on(device(), plan, inputs);
    for (size_t i = 0; i < expected.size(); ++i) {
      const double err = relative_l2(actual.at(i), expected[i]);
      INFO("output " << i << " at " << w << "x" << h << ": relative L2 " << err);
      CHECK(err <= 2e-2);
    }
  }
  CHECK(device().validation_errors() == 0);
}
