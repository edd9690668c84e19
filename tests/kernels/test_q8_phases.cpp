// conv2d_coopmat_q8 by output phase (PHASES: an upsampled X0 concatenated with X1, src/kernels/
// README.md "By output phase") and the int8 heuristic plan's choices for OIDN's up2 convs.
//  - [q8-plan]: the phase weights' packing and corrections on the host; the heuristic plans.
//  - [q8-emulate]: the conv with COOP_EMULATE=1 against the fp32 CPU reference.
//  - [q8]: the same on the device's int8 cooperative matrices (skipped where there are none).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/implementations.hpp"
#include "kernels/quant.hpp"
#include "q8_support.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

TEST_CASE("int8 weights by output phase: each phase's exact zero-point correction and its summed 2x2 weights", "[kernels][q8-plan]") {
  // One output pixel of each phase of a 3x3 conv over upsample(X0) (48 channels: two chunks, the
  // second half empty) concatenated with X1 (16), 40 output channels in tiles of 32, computed as
  // conv2d_coopmat_q8 does by phases from the packed constants: the accumulator must equal the
  // centred sum of the packed codes exactly (each phase has its own correction), and every packed
  // weight times its channel's scale the phase's summed weight (up2_phase_weight) within half a
  // step; the output then matches the float conv within those half steps times the codes.
  const int64_t c0 = 48, c1 = 16, c_out = 40;
  const Conv2dShape s{c0 + c1, c_out, 3, 3};
  std::vector<float> w(static_cast<size_t>(s.c_in * c_out * 9)), bias(static_cast<size_t>(c_out));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i)) * 0.3f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.5f;
  const TensorQuant x0{0.02f, -128}, x1{0.005f, 0};
  CoopConvConfig c;
  c.q8 = true, c.up2 = true, c.tile_h = 16, c.tile_w = 32, c.nt = 32, c.ck = 32, c.sg_m = 8, c.sg_n = 1;
  REQUIRE(q8_config_valid(c));
  const Q8ConvConstants k = quantize_q8_phases(w, bias, s, c0, x0, x1, c);
  const int64_t x0_chunk = 16 * 32 * 32, x1_chunk = 9 * 32 * 32, tile = 2 * x0_chunk + x1_chunk;
  REQUIRE(k.packed.size() == static_cast<size_t>(2 * tile));
  REQUIRE(k.acc_start.size() == static_cast<size_t>(4 * 2 * 32 * 16));
  // Codes of X0 at low resolution (rows, columns 1..3) and of X1 at full resolution (3..6).
  auto code0 = [](int64_t y, int64_t x, int64_t ch) { return static_cast<int32_t>((y * 131 + x * 71 + ch * 37) % 256) - 128; };
  auto code1 = [](int64_t y, int64_t x, int64_t ch) { return static_cast<int32_t>((y * 29 + x * 97 + ch * 53) % 256) - 128; };
  auto packed = [&](int64_t at) { return static_cast<int64_t>(static_cast<int8_t>(k.packed[static_cast<size_t>(at)])); };
  int weights_off = 0;
  for (int64_t ph = 0; ph < 4; ++ph) {
    const int64_t py = ph >> 1, px = ph & 1, y = 2 * 2 + py, x = 2 * 2 + px;  // in low-resolution pixel (2, 2)
    for (int64_t n = 0; n < c_out; ++n) {
      const int64_t ct = n / 32, nn = n % 32;
      // The real weight of one code step of X0 (X1 is read in X0's code units).
      const double step = k.epilogue[2 * static_cast<size_t>(n)] * static_cast<double>(k.prescale);
      int64_t acc = k.acc_start[static_cast<size_t>(((ph * 2 + ct) * 2 + nn / 16) * 256 + nn % 16)], centred = 0;
      double direct = bias[static_cast<size_t>(n)], worst = 1e-6;  // worst: the weights' rounding, bounded
      for (int64_t ch = 0; ch < c0; ++ch) {
        for (int64_t tap = 0; tap < 4; ++tap) {
          const int32_t q = code0(2 + py + tap / 2 - 1, 2 + px + tap % 2 - 1, ch);
          worst += 0.5 * step * std::abs(q - x0.zero_point);
          const int64_t wq = packed(ct * tile + (ch / 32) * x0_chunk + ((ph * 4 + tap) * 32 + nn) * 32 + ch % 32);
          acc += wq * q, centred += wq * (q - x0.zero_point);
          const double summed = up2_phase_weight<double>(&w[static_cast<size_t>((n * s.c_in + ch) * 9)], ph, tap) * x0.scale;
          weights_off += std::abs(static_cast<double>(wq) * step - summed) > 0.5001 * step;
        }
        for (int64_t t9 = 0; t9 < 9; ++t9)
          direct += w[static_cast<size_t>((n * s.c_in + ch) * 9 + t9)] * dequantize(code0((y + t9 / 3 - 1) >> 1, (x + t9 % 3 - 1) >> 1, ch), x0);
      }
      for (int64_t ch = 0; ch < c1; ++ch)
        for (int64_t t9 = 0; t9 < 9; ++t9) {
          const int32_t q = code1(y + t9 / 3 - 1, x + t9 % 3 - 1, ch);
          worst += 0.5 * step * std::abs(q - x1.zero_point);
          const int64_t wq = packed(ct * tile + 2 * x0_chunk + (t9 * 32 + nn) * 32 + ch);
          acc += wq * q, centred += wq * (q - x1.zero_point);
          const double real = w[static_cast<size_t>((n * s.c_in + c0 + ch) * 9 + t9)] * x1.scale;
          weights_off += std::abs(static_cast<double>(wq) * step - real) > 0.5001 * step;
          direct += w[static_cast<size_t>((n * s.c_in + c0 + ch) * 9 + t9)] * dequantize(q, x1);
        }
      INFO("phase " << ph << ", channel " << n);
      CHECK(acc == centred);
      const double got = step * static_cast<double>(acc) + k.epilogue[2 * static_cast<size_t>(n) + 1];
      CHECK(std::abs(got - direct) <= worst);
    }
  }
  CHECK(weights_off == 0);
}

namespace {

// x (16 channels) -> conv_a (skip channels, ReLU) -> conv_b (c0 channels, ReLU) + pool ->
// upsample + concat with conv_a -> conv1 (c_out, ReLU): conv1 on conv2d_coopmat_q8 by output
// phase (PHASES) with the configuration `phases`, named for it.
struct PhaseCase {
  GraphBuilder b;
  plan::Plan plan;
};
PhaseCase q8_phase_case(int64_t c0, int64_t skip, int64_t c_out, const CoopConvConfig& phases, bool emulate,
                        const runtime::DeviceCapabilities& caps) {
  PhaseCase p;
  GraphBuilder& b = p.b;
  const TensorId x = b.input("x", 16);
  const TensorId a = b.activation("ra", b.conv("conva", x, skip, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 81), ActivationAttrs{});
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  const TensorId rb = b.activation("rb", b.conv("convb", a, c0, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 82), ActivationAttrs{});
  const TensorId lb = b.pool("pool", rb, pool, {0, 0, 0, 0}, false);
  const TensorId up = b.op("up", "Resize", UpsampleAttrs{}, {lb}, {b.c(1), b.c(c0), b.H, b.W});
  const TensorId cat = b.op("cat", "Concat", ConcatAttrs{}, {up, a}, {b.c(1), b.c(c0 + skip), b.H, b.W});
  b.output(b.activation("r1", b.conv("conv1", cat, c_out, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 83), ActivationAttrs{}));
  LoweringTarget target = q8_target(b, emulate, caps);
  REQUIRE(q8_config_valid(phases));
  target.conv_configs["conv1"] = phases;
  // Picked by hand (select would rather stay in fp16 here): conv_a in fp16 writing NHWC_Q8, conv_b
  // and conv1 in int8, conv1 writing fp16 NHWC, copied to the NCHW output.
  bool conva = false, convb = false, conv1 = false;
  p.plan = hand_picked(b, target, 4, [&](const Implementation& i) {
    const std::string n = i.name(), w = i.layout_words();
    return (n == "conva+ra" && i.family == "conv2d_coopmat" && w == " q8(y)" && !std::exchange(conva, true)) ||
           (n == "convb+rb+pool" && i.family == "conv2d_coopmat_q8" && w == " q8(x0,y)" && !std::exchange(convb, true)) ||
           (n == "up+cat+conv1+r1" && i.family == "conv2d_coopmat_q8" && w == " nhwc(y) q8(x0,x1)" && !std::exchange(conv1, true)) ||
           (i.kind == Implementation::Kind::Convert && i.tensor_name == "r1_out" && i.pattern == "NHWC->NCHW");
  });
  return p;
}

CoopConvConfig q8_phases(int64_t tile_h, int64_t tile_w, int64_t nt, int64_t sg_m, int64_t sg_n) {
  CoopConvConfig c;
  c.q8 = true, c.up2 = true, c.acc_f16 = false, c.cm_n = 16;
  c.tile_h = tile_h, c.tile_w = tile_w, c.nt = nt, c.ck = 32, c.sg_m = sg_m, c.sg_n = sg_n;
  return c;
}

}  // namespace

TEST_CASE("int8 up+concat convs by output phase (PHASES), emulated, against the fp32 CPU reference", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  // X0 in one chunk and X1 in one; then 48 + 48 channels: X0's second chunk half empty, X1's too.
  // (Emulated: one B fragment per subgroup. Even sizes: pool and upsample meet again.)
  for (auto [c0, skip] : {std::pair<int64_t, int64_t>{32, 32}, {48, 48}}) {
    INFO("X0 " << c0 << " channels, X1 " << skip);
    const PhaseCase p = q8_phase_case(c0, skip, 32, q8_phases(8, 32, 32, 4, 2), true, caps);
    CHECK(q8_dispatches_with(p.plan, {{"PHASES", "1"}}) == 1);
    check_sizes(device(), p.b, p.plan, {{38, 30}, {22, 66}}, 91, 3e-2);
  }
  CHECK(device().validation_errors() == 0);
}

// Registered apart (tests/kernels/CMakeLists.txt) to run on Mesa 25's lavapipe.
TEST_CASE("int8 up+concat convs by output phase with 3+ X0 chunks and 2 X1 chunks, emulated, against the fp32 CPU reference", "[.][q8-emulate-mesa25]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps) || llvmpipe_before_mesa25(caps)) return;
  // OIDN balanced's dec_conv4a and dec_conv3a, two channel tiles each: Mesa 22.3's llvmpipe
  // computes garbage here (inf, other bits each run), Mesa 25's the right values.
  for (auto [c0, skip, c_out] : {std::tuple<int64_t, int64_t, int64_t>{96, 64, 112}, {112, 48, 96}}) {
    INFO("X0 " << c0 << " channels, X1 " << skip << ", " << c_out << " out");
    const PhaseCase p = q8_phase_case(c0, skip, c_out, q8_phases(8, 32, 32, 4, 2), true, caps);
    CHECK(q8_dispatches_with(p.plan, {{"PHASES", "1"}}) == 1);
    check_sizes(device(), p.b, p.plan, {{38, 30}, {22, 66}}, 91, 3e-2);
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 up+concat convs by output phase (PHASES) on the GPU's int8 cooperative matrices", "[kernels][q8][sweep]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  // Every configuration q8_phase_configs offers, on OIDN-like channel counts: dec_conv2a's 96 + 32
  // -> 64 (two channel tiles), 48 + 48 -> 32 (half-empty chunks), and OIDN balanced's dec_conv4a
  // (96 + 64 -> 112) and dec_conv3a (112 + 48 -> 96): three or four X0 chunks, then two X1 chunks
  // (emulated, Debian 12's llvmpipe gives garbage that changes from run to run and Mesa 25's runs
  // them right: [q8-emulate-mesa25]; bench/RESULTS.md, twenty-fourth and twenty-sixth sessions).
  // Each plan runs three times and must give the same bits.
  ShardedSweep sweep("int8 PHASES sweep");
  for (const CoopConvConfig& c : {q8_phases(16, 32, 32, 8, 1), q8_phases(16, 32, 32, 16, 1), q8_phases(16, 32, 32, 8, 2),
                                  q8_phases(8, 32, 32, 4, 1), q8_phases(8, 32, 32, 8, 1),
                                  q8_phases(8, 32, 32, 4, 2)})  // (the last: the emulated plans')
    for (auto [c0, skip, c_out] : {std::tuple<int64_t, int64_t, int64_t>{96, 32, 64}, {48, 48, 32}, {96, 64, 112}, {112, 48, 96}}) {
      if (!sweep.take()) continue;
      INFO(c.describe() << ", X0 " << c0 << " channels, X1 " << skip << ", " << c_out << " out");
      const PhaseCase p = q8_phase_case(c0, skip, c_out, c, false, caps);
      CHECK(q8_dispatches_with(p.plan, {{"PHASES", "1"}}) == 1);
      check_sizes(coop_device(), p.b, p.plan, {{38, 30}, {66, 98}, {130, 132}}, 92, 3e-2);
      const std::vector<HostTensor> inputs = random_inputs(p.b, 66, 98, 93);
      const std::vector<float> first = run_on(coop_device(), p.plan, inputs).at(0).f32;
      for (int r = 0; r < 2; ++r) CHECK(run_on(coop_device(), p.plan, inputs).at(0).f32 == first);
    }
  sweep.report();
}

TEST_CASE("the int8 heuristic plan runs OIDN's up+concat convs after the first by output phase (PHASES)", "[kernels][q8-plan]") {
  // dec_conv2a-4a read int8 tensors, so they take conv2d_coopmat_q8 by output phase (the cost
  // model counts 4 taps for the upsampled channels); dec_conv1a reads the fp16 image and stays on
  // conv2d_coopmat_up2.
  for (int channels : {3, 9}) {
    INFO(channels << " channels");
    const plan::Plan plan = oidn_heuristic_plan(channels, true);
    std::vector<std::string> by_phase;
    for (const auto& d : plan.dispatches)
      if (define(plan.pipelines[d.pipeline], "PHASES") == "1") by_phase.push_back(d.name);
    REQUIRE(by_phase.size() == 3);
    for (size_t i = 0; i < 3; ++i) CHECK_THAT(by_phase[i], Catch::Contains("dec_conv" + std::to_string(4 - i) + "a"));
    CHECK(q8_dispatches_with(plan, {{"PHASES", "1"}, {"TILE_H", "16"}, {"TILE_W", "32"}, {"SG_M", "16"}}) == 3);
  }
}

TEST_CASE("an up2 conv writing int8 takes 8x1 subgroups in the heuristic plan, one writing fp16 4x2", "[kernels][q8-plan]") {
  // choose_coop_up2_config: OIDN's dec_conv1a (one phase, the image in slot planes) ran faster on
  // 8x1 subgroups where it writes NHWC_Q8 (the H100's tuner took 8x1 in every int8 plan) and
  // keeps 4x2 where it writes fp16 (the tuned fp16 plans kept it).
  for (int channels : {3, 9}) {
    for (bool int8 : {false, true}) {
      INFO(channels << " channels, " << (int8 ? "int8" : "fp16"));
      const plan::Plan plan = oidn_heuristic_plan(channels, int8);
      int found = 0;
      for (const auto& d : plan.dispatches) {
        if (d.name.find("dec_conv1a") == std::string::npos) continue;
        const plan::Pipeline& p = plan.pipelines[d.pipeline];
        REQUIRE(define(p, "ONE_PHASE") == "1");
        CHECK(define(p, "Y_Q8") == (int8 ? "1" : ""));
        CHECK(define(p, "SG_M") == (int8 ? "8" : "4"));
        CHECK(define(p, "SG_N") == (int8 ? "1" : "2"));
        ++found;
      }
      CHECK(found == 1);
    }
  }
}
