// Per-layer and end-to-end benchmark of the cooperative-matrix convolutions (hidden Catch2 test
// of denox_kernel_tests, tag [coop-bench]; bench/conv_layers.sh runs it on the GPU machine).
//
// Per layer (every conv of OIDN balanced at DENOX_BENCH_SIZE, default 1920x1088): the conv
// (+ReLU) alone on the portable shader, on the coop heuristic's configuration and, with
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
// experiments on the fused plan side by side (see the end of the test case).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <optional>
#include <random>
#include <string>

#include "../tests/kernels/coop_support.hpp"
#include "../tests/kernels/graph_builder.hpp"
#include "../tests/runtime/gpu_test_support.hpp"
#include "compiler/import/onnx_import.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lowering_target.hpp"
#include "compiler/calibrate/calibrate.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "kernels/plan_builder.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/vulkan/vk_check.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// fp16 CHW buffer of `count` random values in +-[0.1, 1] (never zero).
runtime::Buffer random_f16_buffer(const runtime::DeviceContext& ctx, size_t count, uint64_t seed) {
  std::vector<uint16_t> host(count);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& h : host) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float mag = 0.1f + 0.9f * static_cast<float>((s >> 40) & 0xffff) / 65535.0f;
    h = float_to_half((s >> 63) ? -mag : mag);
  }
  runtime::Buffer b = device_buffer_on(ctx, std::max<size_t>(count * 2, 4));
  runtime::upload(ctx, b.handle(), 0, host.data(), count * 2);
  return b;
}

runtime::IoSource f16_chw(const runtime::Buffer& b, uint32_t channels, uint32_t first = 0) {
  runtime::IoSource s;
  s.channel_count = channels;
  s.buffer = b.handle();
  s.pixel_channels = channels;
  s.type = runtime::ElementType::F16;
  s.source_first_channel = first;
  return s;
}

struct Timing {
  double ms = 0;  // sum over the commands but the io adapters and "mk*" (serialized), or the total
  std::vector<std::pair<std::string, double>> commands;  // per command, adapters included
  std::vector<uint16_t> output;      // fp16 CHW output 0, when asked for
  size_t barriers = 0;               // the barriers record() derives (serialize adds more)
};

// Builds `plan` into a model, binds fp16 CHW buffers (inputs[i] for input i, `out` for output
// 0) and records it kRecords times into each of `submits` command buffers, after warm-up ones
// (0.3 s of them), each record with its own timestamp pool (a timestamp after every command,
// serialized or not): back-to-back records keep the GPU busy, so no clock ramps between
// samples. Returns the medians over the kRecords * submits samples.
constexpr int kRecords = 8;
Timing measure(const runtime::DeviceContext& ctx, plan::Plan plan, uint32_t w, uint32_t h, const std::vector<const runtime::Buffer*>& inputs,
               const runtime::Buffer& out, bool serialize, int submits, bool read_output) {
  runtime::ExecutableModel model(ctx, std::move(plan), VK_NULL_HANDLE, adapter_compiler(), false);
  model.set_extent(w, h);
  for (size_t i = 0; i < inputs.size(); ++i) model.bind_input(i, {f16_chw(*inputs[i], model.input_channels(i))});
  model.bind_output(0, {f16_chw(out, model.output_channels(0))});
  const auto& vk = ctx.vk();
  const uint32_t queries = static_cast<uint32_t>(model.command_count() + 1);
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = queries;
  std::vector<VkQueryPool> pools(kRecords, VK_NULL_HANDLE);
  for (auto& pool : pools) runtime::vk_check(vk.vkCreateQueryPool(ctx.device(), &info, nullptr, &pool), "vkCreateQueryPool");
  std::vector<std::vector<double>> per(model.command_count());
  std::vector<double> totals;
  const auto names = model.command_names();
  // DENOX_BENCH_BRACKET=1: the end-to-end (not serialized) runs write only a first and a last
  // timestamp around record(), no timestamp between commands: the NVIDIA driver makes commands
  // after a timestamp wait for it, so per-command timestamps would order dispatches that no
  // barrier orders (bench.overlap_warm). The per-command times then read 0 but the last, the whole.
  const bool bracket = !serialize && std::getenv("DENOX_BENCH_BRACKET") && std::string(std::getenv("DENOX_BENCH_BRACKET")) == "1";
  auto submit_records = [&] {
    runtime::submit_and_wait(ctx, "bench", [&](VkCommandBuffer cmd) {
      for (VkQueryPool pool : pools) {
        if (!bracket) {
          model.record(cmd, pool, serialize);
          continue;
        }
        vk.vkCmdResetQueryPool(cmd, pool, 0, queries);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, 0);
        model.record(cmd);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, queries - 1);
      }
    });
  };
  // Warm-up: the clock drops while the host builds a model (new pipelines compile for seconds),
  // and one submit did not bring it back (an int8 plan read 5.3, 3.1, 3.0, 1.86 ms in a row,
  // bench/RESULTS.md 2026-11-26 fourth session): keep the GPU busy for 0.3 s of wall time first.
  const auto warm_start = std::chrono::steady_clock::now();
  do submit_records();
  while (std::chrono::steady_clock::now() - warm_start < std::chrono::milliseconds(300));
  for (int submit = 0; submit < submits; ++submit) {
    submit_records();
    for (VkQueryPool pool : pools) {
      std::vector<uint64_t> stamps(queries);
      if (bracket) {  // only the first and the last query were written; the others read as the first
        for (uint32_t q : {0u, queries - 1})
          runtime::vk_check(vk.vkGetQueryPoolResults(ctx.device(), pool, q, 1, 8, &stamps[q], 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                            "vkGetQueryPoolResults");
        for (uint32_t q = 1; q + 1 < queries; ++q) stamps[q] = stamps[0];
      } else {
        runtime::vk_check(vk.vkGetQueryPoolResults(ctx.device(), pool, 0, queries, stamps.size() * 8, stamps.data(), 8,
                                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                          "vkGetQueryPoolResults");
      }
      const double ns = ctx.caps().timestamp_period_ns;
      double sum = 0;
      for (size_t i = 0; i + 1 < queries; ++i) {
        const double ms = static_cast<double>(stamps[i + 1] - stamps[i]) * ns * 1e-6;
        per[i].push_back(ms);
        if (names[i].rfind("input '", 0) != 0 && names[i].rfind("output '", 0) != 0 && names[i].rfind("mk", 0) != 0) sum += ms;
      }
      totals.push_back(serialize ? sum : static_cast<double>(stamps.back() - stamps.front()) * ns * 1e-6);
    }
  }
  for (VkQueryPool pool : pools) vk.vkDestroyQueryPool(ctx.device(), pool, nullptr);
  Timing t;
  t.ms = median(totals);
  t.barriers = model.barrier_count();
  for (size_t i = 0; i < per.size(); ++i) t.commands.emplace_back(names[i], median(per[i]));
  if (read_output) {
    const auto shape = model.output_shape(0);
    t.output.resize(static_cast<size_t>(shape[0] * shape[1] * shape[2] * shape[3]));
    runtime::download(ctx, out.handle(), 0, t.output.data(), t.output.size() * 2);
  }
  return t;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal
      float f = std::ldexp(static_cast<float>(man), -24);
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ||a - b|| / ||b|| over fp16 data (infinity on NaN or size mismatch).
double rel_l2(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = half_to_float(a[i]), y = half_to_float(b[i]);
    d += (x - y) * (x - y);
    n += y * y;
  }
  if (std::isnan(d)) return INFINITY;
  return n == 0 ? std::sqrt(d) : std::sqrt(d / n);
}

int64_t divisor_of(const std::string& name) {
  if (name == "enc_conv0" || name == "enc_conv1" || name == "dec_conv1a" || name == "dec_conv1b" || name == "dec_conv0") return 1;
  if (name == "enc_conv2" || name.rfind("dec_conv2", 0) == 0) return 2;
  if (name == "enc_conv3" || name.rfind("dec_conv3", 0) == 0) return 4;
  if (name == "enc_conv4" || name.rfind("dec_conv4", 0) == 0) return 8;
  return 16;
}

// A configuration as CoopConvConfig::describe() writes it ("8x64 nt32 ck16 sg16x1 16x16x16
// f16acc" plus " bglobal" / " up2" / " 1ph" / " ep2" / " tapsum"); throws on anything else.
CoopConvConfig parse_config(const std::string& text) {
  CoopConvConfig c;
  std::istringstream in(text);
  std::string tok;
  bool tile = false;
  while (in >> tok) {
    long long a = 0, b = 0, d = 0;
    char x = 0, y = 0;
    if (!tile && std::sscanf(tok.c_str(), "%lld%c%lld", &a, &x, &b) == 3 && x == 'x' && tok.find('x', tok.find('x') + 1) == std::string::npos)
      c.tile_h = a, c.tile_w = b, tile = true;
    else if (std::sscanf(tok.c_str(), "nt%lld", &a) == 1) c.nt = a;
    else if (std::sscanf(tok.c_str(), "ck%lld", &a) == 1) c.ck = a;
    else if (std::sscanf(tok.c_str(), "sg%lldx%lld", &a, &b) == 2) c.sg_m = a, c.sg_n = b;
    else if (std::sscanf(tok.c_str(), "%lld%c%lld%c%lld", &a, &x, &b, &y, &d) == 5) c.cm_n = b;
    else if (tok == "f16acc" || tok == "f32acc") c.acc_f16 = tok == "f16acc";
    else if (tok == "bglobal") c.b_global = true;
    else if (tok == "up2") c.up2 = true;
    else if (tok == "1ph") c.one_phase = true;
    else if (std::sscanf(tok.c_str(), "ep%lld", &a) == 1) c.epi_passes = a;
    else if (tok == "tapsum") c.tap_sum = true;
    else if (tok == "q8") c.q8 = true, c.acc_f16 = false;  // conv2d_coopmat_q8 (16x16x32 int8 fragments)
    else if (tok == "i32acc") c.acc_f16 = false;
    else throw std::runtime_error("bad configuration token '" + tok + "' in '" + text + "'");
  }
  if (!tile || !(c.q8 ? kernels::q8_config_valid(c) : c.valid())) throw std::runtime_error("invalid configuration '" + text + "'");
  return c;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}


}  // namespace

TEST_CASE("benchmark: OIDN balanced convolutions and network on portable shaders and cooperative matrices", "[.][coop-bench]") {
  if (!coop_available()) return;
  const runtime::DeviceContext& ctx = coop_device();
  uint32_t W = 1920, H = 1088;
  if (const char* s = std::getenv("DENOX_BENCH_SIZE")) std::sscanf(s, "%ux%u", &W, &H);
  const bool do_sweep = !std::getenv("DENOX_BENCH_SWEEP") || std::string(std::getenv("DENOX_BENCH_SWEEP")) != "0";
  const bool do_layers = !std::getenv("DENOX_BENCH_LAYERS") || std::string(std::getenv("DENOX_BENCH_LAYERS")) != "0";
  const LoweringTarget coop = lowering_target(ctx.caps());
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
      const Timing heur = run(coop, true);
      const double heur_err = rel_l2(heur.output, portable.output);
      std::optional<CoopConvConfig> best_cfg = choose_coop_config(shape, coop.coop, false);
      double best_ms = heur.ms;
      if (do_sweep) {
        auto try_config = [&](const CoopConvConfig& c) {
          if (!coop_config_fits(c, shape, coop.coop, false)) return;
          LoweringTarget t = coop;
          t.force_config = c;
          const Timing m = run(t, false);
          if (m.ms < best_ms) best_ms = m.ms, best_cfg = c;
        };
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
      const Timing fp = frun(LoweringTarget{}, true), fu = frun(unfused, false), ff = frun(coop, true);
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

  // DENOX_BENCH_VARIANTS=FILE: kernel experiments on the fused (heuristic) plan. Each line of
  // FILE: "label ; DEF=V DEF=V ; /layer/Conv=config, /layer/Conv=config" (both parts may be
  // empty; '#' starts a comment): the defines are added to every conv2d_coopmat,
  // conv2d_coopmat_up2, conv2d_coopmat_q8 and conv_tail_ring pipeline, or with FAMILY:DEF=V to
  // that family's only (target.coop_head=0 and the like switch
  // the LoweringTarget instead; target.int8=1 compiles the "coop int8" plan's precision;
  // bench.twice=1 runs every dispatch twice in a row, the second named "again ...";
  // bench.prewarm=1 runs it on one workgroup first, named "warm ..."; bench.overlap_warm=1 runs
  // the next one on one workgroup right after it, with no barrier between them), the
  // configurations replace the heuristic's for those convs.
  // Per variant: end-to-end time (not serialized), relative L2 against the first variant's
  // output, and a per-dispatch column (serialized). With DENOX_BENCH_PLAN_DIR each variant's
  // plan is written there as LABEL.plan (for denox_pipeline_stats).
  if (const char* vf = std::getenv("DENOX_BENCH_VARIANTS")) {
    std::ifstream file(vf);
    REQUIRE(file.good());
    const char* plan_dir = std::getenv("DENOX_BENCH_PLAN_DIR");
    std::vector<std::string> labels;
    std::vector<Timing> serial;
    std::vector<uint16_t> first_out;
    std::printf("\n## variants (DENOX_BENCH_VARIANTS=%s): end to end median of 24 (not serialized), rel L2 vs the first\n", vf);
    for (std::string line; std::getline(file, line);) {
      line = trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      std::vector<std::string> parts;
      for (size_t at = 0;;) {
        const size_t semi = line.find(';', at);
        parts.push_back(trim(line.substr(at, semi == std::string::npos ? std::string::npos : semi - at)));
        if (semi == std::string::npos) break;
        at = semi + 1;
      }
      parts.resize(3);
      LoweringTarget t = coop;
      for (size_t at = 0; !parts[2].empty() && at <= parts[2].size();) {
        const size_t comma = std::min(parts[2].find(',', at), parts[2].size());
        const std::string item = trim(parts[2].substr(at, comma - at));
        const size_t eq = item.find('=');
        REQUIRE(eq != std::string::npos);
        t.conv_configs[trim(item.substr(0, eq))] = parse_config(item.substr(eq + 1));
        at = comma + 1;
      }
      std::istringstream defs(parts[1]);
      std::vector<std::pair<std::string, std::string>> extra;
      std::map<std::string, std::vector<std::pair<std::string, std::string>>> extra_of_family;
      bool twice = false, prewarm = false, overlap_warm = false;
      for (std::string d; defs >> d;) {
        const size_t eq = d.find('=');
        const std::string key = d.substr(0, eq), value = eq == std::string::npos ? "1" : d.substr(eq + 1);
        // target.coop_head=0 (likewise coop_tail, coop_up2, nhwc): a LoweringTarget switch, not a define.
        if (key == "target.coop_head") t.coop_head = value != "0";
        else if (key == "target.coop_tail") t.coop_tail = value != "0";
        else if (key == "target.coop_up2") t.coop_up2 = value != "0";
        else if (key == "target.nhwc") t.nhwc = value != "0";
        else if (key == "target.int8") t.int8 = value != "0" ? int8_table : nullptr;  // the int8 plan above
        else if (key == "bench.twice") twice = value != "0";
        else if (key == "bench.prewarm") prewarm = value != "0";
        else if (key == "bench.overlap_warm") overlap_warm = value != "0";
        else if (const size_t colon = key.find(':'); colon != std::string::npos)
          extra_of_family[key.substr(0, colon)].push_back({key.substr(colon + 1), value});
        else extra.push_back({key, value});
      }
      plan::Plan p = compile(g, plan::Precision::F16, t);
      add_coop_defines(p, extra, {"conv2d_coopmat", "conv2d_coopmat_up2", "conv2d_coopmat_q8", "conv_tail_ring"});
      for (const auto& [family, defines] : extra_of_family) add_coop_defines(p, defines, {family});
      // bench.twice=1: every dispatch runs twice in a row, the second as "again <name>" (timing
      // only: a tail's ring adds into its output twice), so that the second shows what the
      // first paid for its start (instructions and weights not yet cached).
      if (twice) {
        std::vector<plan::Dispatch> doubled;
        for (const plan::Dispatch& d : p.dispatches) {
          doubled.push_back(d);
          doubled.push_back(d);
          doubled.back().name = "again " + d.name;
        }
        p.dispatches = std::move(doubled);
      }
      // bench.prewarm=1: before every dispatch the same dispatch on one workgroup, named "warm
      // <name>" (timing only): whether one workgroup's run leaves the full dispatch as fast as a
      // second run (its code and weights then cached), the question for warming them early.
      if (prewarm) {
        const ValueId one = p.inputs.at(0).shape[0];  // the batch: a constant 1
        std::vector<plan::Dispatch> warmed;
        for (const plan::Dispatch& d : p.dispatches) {
          warmed.push_back(d);
          warmed.back().name = "warm " + d.name;
          warmed.back().groups = {one, one, one};
          warmed.push_back(d);
        }
        p.dispatches = std::move(warmed);
      }
      // bench.overlap_warm=1 (experiment): right after every dispatch, the next one on one
      // workgroup with every scratch binding moved to a shadow tensor nobody else touches, so
      // record() derives no barrier between it and the dispatch before it where that dispatch
      // starts a barrier window (every dispatch of a chain like OIDN's; the variant line prints
      // the barrier count, which must not grow): does warming code and weights while the
      // previous dispatch drains pay end to end? Named "warm <name>". Time it with
      // DENOX_BENCH_BRACKET=1 (measure above).
      if (overlap_warm) {
        const ValueId one = p.inputs.at(0).shape[0];
        ValueId biggest = p.scratch.at(0).size_bytes;
        for (const plan::ScratchTensor& s : p.scratch) biggest = p.program.max(biggest, s.size_bytes);
        const uint32_t shadow = static_cast<uint32_t>(p.scratch.size());
        p.scratch.push_back({"warm shadow", biggest});
        std::vector<plan::Dispatch> warmed;
        for (size_t i = 0; i < p.dispatches.size(); ++i) {
          warmed.push_back(p.dispatches[i]);
          if (i + 1 == p.dispatches.size()) break;
          plan::Dispatch w = p.dispatches[i + 1];
          w.name = "warm " + w.name;
          w.groups = {one, one, one};
          for (plan::Binding& b : w.bindings)
            if (b.resource == plan::Resource::Scratch) b.index = shadow;
          warmed.push_back(w);
        }
        p.dispatches = std::move(warmed);
      }
      if (plan_dir) {
        const std::vector<uint8_t> bytes = plan::serialize_plan(p);
        std::ofstream(std::string(plan_dir) + "/" + parts[0] + ".plan", std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      }
      const Timing e2e = measure(ctx, p, W, H, {&in}, out, false, 3, true);
      if (first_out.empty()) first_out = e2e.output;
      std::printf("%-24s %8.3f ms  rel L2 %.1e  %zu barriers  (%s | %s)\n", parts[0].c_str(), e2e.ms, rel_l2(e2e.output, first_out),
                  e2e.barriers, parts[1].c_str(), parts[2].c_str());
      std::fflush(stdout);
      labels.push_back(parts[0]);
      serial.push_back(measure(ctx, std::move(p), W, H, {&in}, out, true, 3, false));
    }
    std::printf("\nper dispatch (serialized ms):\n%-48s", "dispatch");
    for (const auto& l : labels) std::printf(" %12.12s", l.c_str());
    std::printf("\n");
    // One row per dispatch name, in the order the variants first list them, so that plans with
    // other dispatches (an fp16 plan beside an int8 one: a head instead of enc_conv0 apart) line
    // up by name; "-" where a variant has no such dispatch.
    std::vector<std::string> rows;
    for (const Timing& v : serial)
      for (const auto& [name, ms] : v.commands)
        if (std::find(rows.begin(), rows.end(), name) == rows.end()) rows.push_back(name);
    for (const std::string& row : rows) {
      std::printf("%-48.48s", row.c_str());
      for (const Timing& v : serial) {
        const auto it = std::find_if(v.commands.begin(), v.commands.end(), [&](const auto& c) { return c.first == row; });
        if (it == v.commands.end()) std::printf(" %12s", "-");
        else std::printf(" %12.4f", it->second);
      }
      std::printf("\n");
    }
  }
}
