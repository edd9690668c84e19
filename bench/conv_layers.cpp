// Per-layer and end-to-end benchmark of the cooperative-matrix convolutions (hidden Catch2 test
// of denox_kernel_tests, tag [coop-bench]; bench/conv_layers.sh runs it on the GPU machine).
//
// Per layer (every conv of OIDN balanced at DENOX_BENCH_SIZE, default 1920x1088): the conv
// (+ReLU) alone on the portable shader, on the coop heuristic's configuration (the plan `denox
// compile` makes for the layer where it sits in a 1920x1088 frame: the heuristic sizes its
// configurations at that extent, whatever the run's) and, with
// DENOX_BENCH_SWEEP=1 (default), on a sweep of configurations (the best is re-run with a
// 32-channel chunk, the other accumulator type and the other B source); time (serialized timestamps,
// median of 16: 2 submits of 8 back-to-back records after a warm-up submit), TFLOP/s and GB/s (input + output + weights, each once).
// The heuristic's and the best configuration's outputs are compared with the portable one's
// at full size (relative L2 <= 2e-2, no NaN). Then the fused forms of the layers that have one
// (conv+ReLU+pool; upsample+concat+conv+ReLU): the portable op sequence, the coop conv with
// the other ops unfused, and the single fused coop dispatch.
// End to end: OIDN balanced (pad/crop model) portable, coop unfused, coop fused (heuristic) and
// coop tuned (every conv on its sweep winner): median of 24
// (not serialized) and the fused plan's per-dispatch table. DENOX_BENCH_VARIANTS=FILE: kernel
// experiments on the fused plan side by side (bench/conv_variants.cpp). The helpers they share:
// bench/conv_bench_support.{hpp,cpp}.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "../tests/kernels/coop_support.hpp"
#include "../tests/kernels/graph_builder.hpp"
#include "../tests/runtime/gpu_test_support.hpp"
#include "compiler/calibrate/calibrate.hpp"
#include "compiler/schedule/schedule.hpp"
#include "compiler/import/onnx_import.hpp"
#include "conv_bench_support.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lowering_target.hpp"
#include "modelgen/oidn_unet.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;
using namespace denox::bench;

namespace {

// The heuristic plan of a layer's graph as the network's plan has it: ranked at the extent
// (kHeuristicWidth / d) x (kHeuristicHeight / d) that a 1920x1088 frame gives a layer at 1/d
// resolution (build_portable_plan ranks any graph at 1920x1088, which sizes every layer as a
// full-resolution one).
plan::Plan compile_layer(const Graph& g, const LoweringTarget& target, int64_t divisor) {
  autotune::ScheduleOptions options;
  options.precision = plan::Precision::F16;
  options.target = target;
  options.width = autotune::kHeuristicWidth / static_cast<uint32_t>(divisor);
  options.height = autotune::kHeuristicHeight / static_cast<uint32_t>(divisor);
  plan::Plan plan = autotune::lower_schedule(g, autotune::schedule_graph(g, options), plan::Precision::F16);
  compile_pipelines(plan, shader_compiler(), 0);
  return plan;
}

}  // namespace

TEST_CASE("benchmark: OIDN balanced convolutions and network on portable shaders and cooperative matrices", "[.][coop-bench]") {
  if (!coop_available()) return;
  const runtime::DeviceContext& ctx = coop_device();
  uint32_t W = 1920, H = 1088;
  if (const char* s = std::getenv("DENOX_BENCH_SIZE")) std::sscanf(s, "%ux%u", &W, &H);
  const bool do_sweep = !std::getenv("DENOX_BENCH_SWEEP") || std::string(std::getenv("DENOX_BENCH_SWEEP")) != "0";
  const bool do_layers = !std::getenv("DENOX_BENCH_LAYERS") || std::string(std::getenv("DENOX_BENCH_LAYERS")) != "0";
  const LoweringTarget coop = lowering_target_with_a_direct(ctx);  // (the variants may name A_DIRECT configurations)
  LoweringTarget tuned;  // the e2e plan with every conv on its sweep winner
  std::map<std::string, CoopConvConfig> tuned_configs;
  std::printf("device: %s, driver %s; %ux%u fp16; coop target %s\n", ctx.caps().device_name.c_str(), ctx.caps().driver_info.c_str(), W,
              H, coop.key().c_str());
  const auto layers = modelgen::oidn_unet_conv_layers(modelgen::OidnUnetOptions::Size::Balanced, 3);

  if (do_layers) {
    std::printf("\n## per layer: conv (+ReLU) alone, serialized timestamps, median of 16 (2 submits of 8 back-to-back records)\n");
    std::printf("%-11s %9s %9s %7s %9s %9s %7s %9s %7s %7s  %s\n", "layer", "HxW", "cin->cout", "GFLOP", "portable", "coop-heur", "TF/s",
                "coop-best", "TF/s", "GB/s", "best config");
    std::vector<std::string> fused_rows;
    for (size_t li = 0; li < layers.size(); ++li) {
      const auto& L = layers[li];
      const int64_t d = divisor_of(L.name);
      const uint32_t h = H / static_cast<uint32_t>(d), w = W / static_cast<uint32_t>(d);
      GraphBuilder b;
      const TensorId x = b.input("x", L.in_channels);
      TensorId y = b.conv(L.name, x, L.out_channels, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 100 + li);
      if (L.relu) y = b.activation(L.name + "_relu", y, ActivationAttrs{});
      b.output(y);
      const Conv2dShape shape{L.in_channels, L.out_channels, 3, 3};
      const double flop = 2.0 * h * w * L.out_channels * L.in_channels * 9;
      const double bytes = 2.0 * (static_cast<double>(h) * w * (L.in_channels + L.out_channels) + 9.0 * L.in_channels * L.out_channels);
      runtime::Buffer in = random_f16_buffer(ctx, static_cast<size_t>(L.in_channels) * h * w, 7 + li);
      runtime::Buffer out = device_buffer_on(ctx, static_cast<size_t>(L.out_channels) * h * w * 2);
      auto run = [&](const LoweringTarget& t, bool read) {
        return measure(ctx, compile(b.g, plan::Precision::F16, t), w, h, {&in}, out, true, 2, read);
      };
      const Timing portable = run(LoweringTarget{}, true);
      const Timing heur = measure(ctx, compile_layer(b.g, coop, d), w, h, {&in}, out, true, 2, true);
      const double heur_err = rel_l2(heur.output, portable.output);
      // "coop-best": the fastest configuration of the sweep, each forced on the layer (without the
      // sweep: choose_coop_config's pick, conv2d_coopmat or tap-sum, at the layer's size in a
      // 1920x1088 frame). It can be slower than "coop-heur", whose plan may run A_DIRECT.
      const int64_t heur_pixels = int64_t{autotune::kHeuristicWidth / d} * (autotune::kHeuristicHeight / d);
      std::optional<CoopConvConfig> best_cfg = choose_coop_config(shape, coop.coop, false, true, heur_pixels);
      double best_ms = std::numeric_limits<double>::infinity();
      if (do_sweep) {
        auto try_config = [&](const CoopConvConfig& c) {
          if (!coop_config_fits(c, shape, coop.coop, false)) return;
          LoweringTarget t = coop;
          t.force_config = c;
          const Timing m = run(t, false);
          if (m.ms < best_ms) best_ms = m.ms, best_cfg = c;
        };
        if (best_cfg) try_config(*best_cfg);
        for (const CoopConvConfig& c : coop_config_space(shape, coop.coop, false)) try_config(c);
        const CoopConvConfig base = *best_cfg;
        CoopConvConfig v = base;
        v.ck = 32;
        try_config(v);
        v = base;
        v.acc_f16 = !v.acc_f16;
        try_config(v);
        v = base;
        v.b_global = !v.b_global;
        try_config(v);
      }
      // The best configuration's output against the portable one's, at full size.
      LoweringTarget tb = coop;
      tb.force_config = best_cfg;
      const Timing best = run(tb, true);
      const double best_err = rel_l2(best.output, portable.output);
      tuned_configs["/" + L.name + "/Conv"] = *best_cfg;
      std::printf("%-11s %4ux%-4u %4d->%-4d %7.1f %9.3f %9.3f %7.1f %9.3f %7.1f %7.0f  %s  (rel L2 vs portable: heur %.1e, best %.1e)\n",
                  L.name.c_str(), w, h, L.in_channels, L.out_channels, flop * 1e-9, portable.ms, heur.ms, flop / heur.ms * 1e-9, best.ms,
                  flop / best.ms * 1e-9, bytes / best.ms * 1e-6, best_cfg->describe().c_str(), heur_err, best_err);
      std::fflush(stdout);
      CHECK(heur_err <= 2e-2);
      CHECK(best_err <= 2e-2);

      // Fused forms: enc_conv1..4 + ReLU + 2x2 max-pool; dec_conv{4,3,2,1}a = upsample + concat + conv + ReLU.
      const bool pooled = L.name == "enc_conv1" || L.name == "enc_conv2" || L.name == "enc_conv3" || L.name == "enc_conv4";
      const bool upcat = L.name.size() == 10 && L.name.rfind("dec_conv", 0) == 0 && L.name.back() == 'a';
      if (!pooled && !upcat) continue;
      GraphBuilder f;
      std::vector<const runtime::Buffer*> inputs;
      std::optional<runtime::Buffer> lo, skip;
      if (pooled) {
        const TensorId fx = f.input("x", L.in_channels);
        const TensorId r = f.activation("relu", f.conv(L.name, fx, L.out_channels, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 100 + li), ActivationAttrs{});
        PoolAttrs p;
        p.kernel = {2, 2};
        p.stride = {2, 2};
        f.output(f.pool("pool", r, p, {0, 0, 0, 0}, false));
        inputs = {&in};
      } else {
        // The upsampled part: the previous decoder level's channels; the skip: the rest. The
        // runtime gives every input the same extent, so the low-resolution tensor is a max-pool
        // ("mk", left out of the sums) of a full-resolution input.
        const int64_t up_c = layers[li - 1].out_channels, skip_c = L.in_channels - up_c;
        const TensorId src = f.input("src", up_c), s = f.input("skip", skip_c);
        PoolAttrs p;
        p.kernel = {2, 2};
        p.stride = {2, 2};
        const TensorId a = f.pool("mk", src, p, {0, 0, 0, 0}, false);
        const std::vector<ValueId> big = {f.c(1), f.c(up_c), f.g.program.mul(f.shape(a)[2], f.c(2)), f.g.program.mul(f.shape(a)[3], f.c(2))};
        const TensorId u = f.op("up", "Resize", UpsampleAttrs{}, {a}, big);
        const TensorId cat = f.op("cat", "Concat", ConcatAttrs{1}, {u, s}, {f.c(1), f.c(L.in_channels), big[2], big[3]});
        f.output(f.activation("relu", f.conv(L.name, cat, L.out_channels, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 100 + li), ActivationAttrs{}));
        lo.emplace(random_f16_buffer(ctx, static_cast<size_t>(up_c) * h * w, 11 + li));
        skip.emplace(random_f16_buffer(ctx, static_cast<size_t>(skip_c) * h * w, 13 + li));
        inputs = {&*lo, &*skip};
      }
      auto frun = [&](const LoweringTarget& t, bool read) {
        return measure(ctx, compile(f.g, plan::Precision::F16, t), w, h, inputs, out, true, 2, read);
      };
      LoweringTarget unfused = coop;
      unfused.fuse = false;
      const Timing fp = frun(LoweringTarget{}, true), fu = frun(unfused, false);
      const Timing ff = measure(ctx, compile_layer(f.g, coop, d), w, h, inputs, out, true, 2, true);
      const double ferr = rel_l2(ff.output, fp.output);
      fused_rows.push_back(L.name + (pooled ? " +pool      " : " up+concat+ ") + fmt("%9.3f", fp.ms) +
                           fmt(" %9.3f", fu.ms) + fmt(" %9.3f", ff.ms) + fmt("   %.2fx", ff.ms / fu.ms) + fmt("   rel L2 %.1e", ferr));
      CHECK(ferr <= 2e-2);
    }
    std::printf("\n## fused forms (serialized sum of the sequence, ms): portable ops | coop conv + portable ops | one fused coop dispatch | fused/unfused\n");
    for (const auto& r : fused_rows) std::printf("%s\n", r.c_str());
  }

  // End to end.
  // DENOX_BENCH_CHANNELS=6 or 9: the end-to-end model (and the variants) with that many input
  // channels (the per-layer part keeps the 3-channel layers).
  modelgen::OidnUnetOptions options;
  options.pad_to_16_and_crop = true;
  if (const char* c = std::getenv("DENOX_BENCH_CHANNELS")) options.input_channels = std::atoi(c);
  std::string model_bytes;
  modelgen::build_oidn_unet(options).SerializeToString(&model_bytes);
  const compiler::Graph g = compiler::import_onnx_bytes(model_bytes.data(), model_bytes.size());
  runtime::Buffer in = random_f16_buffer(ctx, static_cast<size_t>(options.input_channels) * H * W, 3);
  runtime::Buffer out = device_buffer_on(ctx, static_cast<size_t>(3) * H * W * 2);
  LoweringTarget unfused = coop;
  unfused.fuse = false;
  tuned = coop;
  tuned.conv_configs = tuned_configs;
  LoweringTarget nchw = coop;
  nchw.nhwc = false;
  LoweringTarget no_tail = coop;  // the last conv on its own (conv2d_coopmat_tapsum), not dec_conv1b's tail
  no_tail.coop_tail = false;
  std::vector<std::pair<const char*, LoweringTarget>> plans = {
      {"portable", LoweringTarget{}}, {"coop unfused", unfused}, {"coop NCHW", nchw}, {"coop no tail", no_tail}, {"coop fused", coop}};
  if (!tuned_configs.empty()) plans.push_back({"coop tuned", tuned});
  // The opt-in int8 precision where the device has int8 fragments: calibrated on one random
  // 128x96 input on the CPU (timing only: random weights have no meaningful ranges).
  std::shared_ptr<kernels::QuantTable> int8_table;  // also for the variants' target.int8=1
  if (coop.coop.int8) {
    LoweringTarget int8 = coop;
    // The sample has the benchmark input's distribution (random_f16_buffer's: signed, |x| in
    // [0.1, 1]); calibrated on |x| the int8 plan's output was 1.8e-1 off the portable one's.
    const HostTensor sample = random_tensor({1, options.input_channels, 96, 128}, 5);
    int8_table = std::make_shared<kernels::QuantTable>(autotune::calibrate_int8(g, {{sample}}));
    int8.int8 = int8_table;
    plans.push_back({"coop int8", int8});
  }
  std::printf("\n## end to end: OIDN balanced %ux%u (pad/crop model, fp16 CHW io buffers), median of 24 (3 submits of 8 records), not serialized\n", W, H);
  std::vector<uint16_t> reference_out;
  for (const auto& [label, target] : plans) {
    const plan::Plan plan = compile(g, plan::Precision::F16, target);
    const size_t dispatches = plan.dispatches.size();
    const Timing t = measure(ctx, plan, W, H, {&in}, out, false, 3, true);
    if (reference_out.empty()) reference_out = t.output;
    const double err = rel_l2(t.output, reference_out);
    std::printf("%-13s %8.3f ms  (%zu plan dispatches; rel L2 vs portable %.1e)\n", label, t.ms, dispatches, err);
    // DENOX_BENCH_REPEAT=N: N more unserialized measurements of the plan (clock effects show).
    if (const char* r = std::getenv("DENOX_BENCH_REPEAT"))
      for (int k = 0; k < std::atoi(r); ++k) std::printf("  again: %8.3f ms\n", measure(ctx, plan, W, H, {&in}, out, false, 3, false).ms);
    CHECK(err <= (std::string(label) == "coop int8" ? 1e-1 : 2e-2));  // int8: 8-bit tensors between 16 convs
    if (std::string(label) == "coop fused" || std::string(label) == "coop tuned" || std::string(label) == "coop NCHW" ||
        std::string(label) == "coop no tail" || std::string(label) == "coop int8") {
      // Unserialized, the stamps after each command still show where the time goes when the
      // dispatches overlap (a command's delta includes waiting at its barrier).
      std::printf("\nper command (not serialized: timestamp deltas), %s:\n", label);
      for (const auto& [name, ms] : t.commands) std::printf("  %-60s %8.4f ms\n", name.c_str(), ms);
      const Timing s = measure(ctx, plan, W, H, {&in}, out, true, 3, true);
      // A missing barrier would show as a difference: the kernels are deterministic.
      const double race = rel_l2(s.output, t.output);
      std::printf("\nrel L2 serialized vs not: %.1e\n", race);
      CHECK(race == 0.0);
      double sum = 0;
      for (const auto& [name, ms] : s.commands) sum += ms;
      std::printf("\nper dispatch (serialized), %s:\n", label);
      for (const auto& [name, ms] : s.commands) std::printf("  %-60s %8.4f ms %5.1f%%\n", name.c_str(), ms, 100.0 * ms / sum);
      std::printf("  %-60s %8.4f ms\n", "sum", sum);
    }
    std::fflush(stdout);
  }

  // DENOX_BENCH_PROFILE=1: where the coop convs' time goes. The fused plan again with every
  // conv2d_coopmat pipeline built without its fragment loads and multiplies (staging, barriers
  // and epilogue remain) and without its global-memory loads (multiplies on register values):
  // serialized per-dispatch times side by side. The variants compute garbage; timing only.
  if (std::getenv("DENOX_BENCH_PROFILE") && std::string(std::getenv("DENOX_BENCH_PROFILE")) == "1") {
    const plan::Plan base = compile(g, plan::Precision::F16, coop);
    auto variant = [&](const char* define) {
      plan::Plan p = base;
      if (define) add_coop_defines(p, {{define, "1"}}, {"conv2d_coopmat"});
      return measure(ctx, std::move(p), W, H, {&in}, out, true, 3, false);
    };
    const Timing full = variant(nullptr), no_mma = variant("PROFILE_SKIP_MMA"), no_fetch = variant("PROFILE_SKIP_FETCH");
    std::printf("\n## profile of the fused coop plan (serialized ms): full | without fragment loads + MMAs | without global loads\n");
    for (size_t i = 0; i < full.commands.size(); ++i)
      std::printf("  %-60s %8.4f %8.4f %8.4f\n", full.commands[i].first.c_str(), full.commands[i].second, no_mma.commands[i].second,
                  no_fetch.commands[i].second);
  }

  // DENOX_BENCH_VARIANTS=FILE: kernel experiments on the fused (heuristic) plan (bench/conv_variants.cpp).
  if (const char* file = std::getenv("DENOX_BENCH_VARIANTS")) run_variants(file, ctx, g, coop, int8_table, W, H, in, out);
}
