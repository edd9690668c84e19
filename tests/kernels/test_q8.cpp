// The opt-in int8 precision (src/kernels/README.md, "int8"): calibration, the int8 convolution
// (shaders/conv2d_coopmat_q8.comp) and the quantizing conversions (shaders/quantize.comp).
//  - [q8-plan]: calibration and weight quantization on the host, no device.
//  - [q8-emulate]: int8 plans with COOP_EMULATE=1 (plain arithmetic in place of the int8
//    fragments) on any device, lavapipe included, against the fp32 CPU reference at odd sizes.
//  - [q8]: the same plans on the device's int8 cooperative matrices (skipped with a warning
//    where there are none).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>

#include "../runtime/gpu_test_support.hpp"
#include "compiler/calibrate/calibrate.hpp"
#include "coop_support.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/implementations.hpp"
#include "kernels/shader_compiler.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/lowering_target.hpp"
#include "runtime/reference/reference_executor.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

// A small U-Net step with every fusion conv2d_coopmat_q8 takes: conv+relu, conv+relu+pool, a
// conv whose output goes negative (no activation: a signed tensor), upsample+concat+conv+relu,
// and a last conv of 3 channels (fp16: no NHWC_Q8 output of 3 channels). H and W are even
// (pool and upsample meet again) but no tile's multiple.
GraphBuilder unet_step() {
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  const auto h = b.H, w = b.W;
  const TensorId c0 = b.activation("r0", b.conv("conv0", x, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 11), ActivationAttrs{});
  const TensorId c1 = b.activation("r1", b.conv("conv1", c0, 48, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 12), ActivationAttrs{});
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  const TensorId p1 = b.pool("pool1", c1, pool, {0, 0, 0, 0}, false);
  const TensorId c2 = b.conv("conv2", p1, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 13);  // signed
  const TensorId c3 = b.activation("r3", b.conv("conv3", c2, 32, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 14), ActivationAttrs{});
  const TensorId up = b.op("up", "Resize", UpsampleAttrs{}, {c3}, {b.c(1), b.c(32), h, w});
  const TensorId cat = b.op("cat", "Concat", ConcatAttrs{}, {up, c0}, {b.c(1), b.c(64), h, w});
  const TensorId c4 = b.activation("r4", b.conv("conv4", cat, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 15), ActivationAttrs{});
  b.output(b.conv("conv5", c4, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 16));
  return b;
}

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
                       const std::function<bool(const Implementation&)>& pick, ConfigSpace space = ConfigSpace::Heuristic) {
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

}  // namespace

TEST_CASE("int8 calibration: unsigned ranges for ReLU outputs, signed for the rest, every computed tensor", "[kernels][q8-plan]") {
  GraphBuilder b = unet_step();
  const QuantTable table = autotune::calibrate_int8(b.g, {random_inputs(b, 26, 34, 1)});
  REQUIRE(table.count("r0_out"));
  CHECK(table.at("r0_out").zero_point == -128);
  CHECK(table.at("conv2_out").zero_point == 0);
  CHECK(table.at("x").zero_point == -128);  // the (non-negative) graph input too
  for (const auto& [name, q] : table) CHECK((q.scale > 0.0f && std::isfinite(q.scale)));
  CHECK_THROWS_WITH(autotune::calibrate_int8(b.g, {}), Catch::Contains("at least one sample"));
  std::vector<HostTensor> nan_input = random_inputs(b, 8, 8, 2);
  nan_input[0].f32[5] = std::nanf("");
  CHECK_THROWS_WITH(autotune::calibrate_int8(b.g, {nan_input}), Catch::Contains("NaN"));
}

TEST_CASE("int8 weight quantization: folded scales, zero-point correction and factors give the dequantized conv", "[kernels][q8-plan]") {
  // One output pixel of a 1x1 conv with a concat: 16 channels from X0, 16 from X1, at other
  // scales and zero points, computed as the shader does from the packed constants.
  const Conv2dShape s{32, 16, 1, 1};
  std::vector<float> w(32 * 16), bias(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i)) * 0.3f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.5f;
  const TensorQuant x0{0.02f, -128}, x1{0.005f, 0};
  CoopConvConfig c;
  c.q8 = true, c.tile_h = 2, c.tile_w = 16, c.nt = 16, c.ck = 32, c.sg_m = 1, c.sg_n = 1;
  const Q8ConvConstants k = quantize_q8_conv(w, bias, s, 16, x0, x1, c);
  REQUIRE(k.packed.size() == 16 * 32);
  std::vector<int32_t> q(32);
  for (int i = 0; i < 32; ++i) q[static_cast<size_t>(i)] = (i * 37) % 256 - 128;
  for (int n = 0; n < 16; ++n) {
    int64_t acc = k.acc_start[static_cast<size_t>(n)];  // row 0 of fragment 0
    double direct = bias[static_cast<size_t>(n)];
    for (int ci = 0; ci < 32; ++ci) {
      acc += static_cast<int64_t>(static_cast<int8_t>(k.packed[static_cast<size_t>(n * 32 + ci)])) * q[static_cast<size_t>(ci)];
      direct += w[static_cast<size_t>(n * 32 + ci)] * dequantize(q[static_cast<size_t>(ci)], ci < 16 ? x0 : x1);
    }
    const double got = k.epilogue[2 * static_cast<size_t>(n)] * (k.prescale * static_cast<double>(acc)) + k.epilogue[2 * static_cast<size_t>(n) + 1];
    INFO("channel " << n << ": " << got << " vs " << direct);
    CHECK(std::abs(got - direct) <= 0.02 * (1.0 + std::abs(direct)));  // weights at 8 bits
  }
}

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

TEST_CASE("int8 plans emulated (COOP_EMULATE) against the fp32 CPU reference at odd sizes with every fusion", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  GraphBuilder b = unet_step();
  LoweringTarget target = q8_target(b, true, caps);
  plan::Plan plan = compile(b.g, plan::Precision::F16, target);
  // conv1+pool, conv2, conv3 and up+cat+conv4 in int8; conv0 stays fp16 (quantizing x would
  // cost a dispatch) and writes NHWC_Q8 from its epilogue (Y_Q8); conv4 writes fp16 NHWC for
  // the fp16 tap-sum conv5: no conversion dispatch anywhere.
  const auto f = families(plan);
  CHECK(f.at("conv2d_coopmat_q8") == 4);
  CHECK(!f.count("quantize"));
  int y_q8 = 0;
  for (const auto& d : plan.dispatches)
    for (const auto& [k, v] : plan.pipelines[d.pipeline].defines) y_q8 += k == "Y_Q8" && v == "1";
  CHECK(y_q8 == 4);  // conv0 (fp16), conv1, conv2, conv3
  check_sizes(device(), b, plan, {{38, 30}, {22, 50}}, 7, 3e-2);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 plans take a configuration named for a conv, and only its int8 variant does, emulated", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  GraphBuilder b = unet_step();
  LoweringTarget target = q8_target(b, true, caps);
  // conv2 (48 -> 32, two chunks) on 8x16 pixels, 2 x 2 subgroups (one B fragment each, as the
  // emulation needs): not the emulated heuristic's 8x32 on 4 x 2.
  CoopConvConfig named;
  named.q8 = true, named.acc_f16 = false, named.cm_n = 16;
  named.tile_h = 8, named.tile_w = 16, named.nt = 32, named.ck = 32, named.sg_m = 2, named.sg_n = 2;
  REQUIRE(q8_config_valid(named));
  target.conv_configs["conv2"] = named;
  const plan::Plan plan = compile(b.g, plan::Precision::F16, target);
  CHECK(q8_dispatches_with(plan, {{"TILE_H", "8"}, {"TILE_W", "16"}, {"SG_M", "2"}, {"SG_N", "2"}}) == 1);
  CHECK(families(plan).at("conv2d_coopmat_q8") == 4);
  // The fp16 implementations of conv2 never carry it (they would fail to lower as int8 convs):
  // an fp16 plan with the same named configuration, on a target that claims int8 fragments (as
  // the H100 does; else the configuration would not fit the device at all), lowers.
  LoweringTarget fp16_only = target;
  fp16_only.int8.reset();
  fp16_only.coop.int8 = true;
  CHECK_NOTHROW(compile(b.g, plan::Precision::F16, fp16_only));
  check_sizes(device(), b, plan, {{38, 30}, {22, 50}}, 7, 3e-2);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 conversions: a graph input quantized and an output dequantized around an int8 conv, emulated", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  // x (16 channels, NCHW) -> quantize -> conv+relu (int8 in and out) -> dequantize -> NCHW output:
  // the implementations picked by hand, since select would rather run the conv in fp16.
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  b.output(b.activation("r0", b.conv("conv0", x, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 21), ActivationAttrs{}));
  const plan::Plan plan = hand_picked(b, q8_target(b, true, caps), 3, [](const Implementation& i) {
    const bool conv = i.name() == "conv0+r0" && i.family == "conv2d_coopmat_q8" && i.layout_words() == " q8(x0,y)";
    const bool quantize = i.kind == Implementation::Kind::Convert && i.family == "quantize" &&
                          ((i.tensor_name == "x" && i.pattern == "NCHW->NHWC_Q8") || (i.tensor_name == "r0_out" && i.pattern == "NHWC_Q8->NCHW"));
    return conv || quantize;
  });
  CHECK(families(plan).at("quantize") == 2);
  check_sizes(device(), b, plan, {{17, 29}, {40, 9}}, 31, 2e-2);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 boundaries: an up2 conv writing NHWC_Q8 from its epilogue, an NHWC tensor quantized, emulated", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  // x -> pool (pool2d) -> upsample + concat with x -> conv1 on conv2d_coopmat_up2 (fp16, Y_Q8) -> conv2
  // int8 writing fp16 NHWC -> quantize NHWC->NHWC_Q8 -> conv3 int8 writing fp16 NHWC -> copy to
  // NCHW: picked by hand, as select would take other paths.
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  const TensorId low = b.pool("pool", x, pool, {0, 0, 0, 0}, false);
  const TensorId up = b.op("up", "Resize", UpsampleAttrs{}, {low}, {b.c(1), b.c(16), b.H, b.W});
  const TensorId cat = b.op("cat", "Concat", ConcatAttrs{}, {up, x}, {b.c(1), b.c(32), b.H, b.W});
  const TensorId c1 = b.activation("r1", b.conv("conv1", cat, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 41), ActivationAttrs{});
  const TensorId c2 = b.activation("r2", b.conv("conv2", c1, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 42), ActivationAttrs{});
  b.output(b.activation("r3", b.conv("conv3", c2, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 43), ActivationAttrs{}));
  const plan::Plan plan = hand_picked(b, q8_target(b, true, caps), 6, [](const Implementation& i) {
    const std::string n = i.name(), w = i.layout_words();
    const bool convert = i.kind == Implementation::Kind::Convert;
    return (n == "pool" && i.kind == Implementation::Kind::Op) ||
           (n == "up+cat+conv1+r1" && i.family == "conv2d_coopmat_up2" && w == " q8(y)") ||
           (n == "conv2+r2" && i.family == "conv2d_coopmat_q8" && w == " nhwc(y) q8(x0)") ||
           (convert && i.tensor_name == "r2_out" && i.pattern == "NHWC->NHWC_Q8") ||
           (n == "conv3+r3" && i.family == "conv2d_coopmat_q8" && w == " nhwc(y) q8(x0)") ||
           (convert && i.tensor_name == "r3_out" && i.pattern == "NHWC->NCHW");
  });
  CHECK(families(plan).at("quantize") == 1);
  check_sizes(device(), b, plan, {{18, 30}, {40, 14}}, 51, 2e-2);  // (even: pool and upsample meet again)
  CHECK(device().validation_errors() == 0);
}

namespace {

// x (`skip` channels) -> pool -> conv_a (fp16, writing NHWC_Q8) -> upsample + concat with x ->
// conv1 on conv2d_coopmat_up2 with an int8 X0 (X0_Q8; the skip x stays fp16: planes of slots
// for at most 12 channels, row steps above; NHWC, copied from the NCHW input, where it can be)
// writing fp16 NHWC, or NHWC_Q8 for conv2 (int8, writing fp16 NHWC) -> copy to NCHW. X0 has
// 64 channels: two int8 chunks.
GraphBuilder up2_q8_x0_graph(int64_t skip, bool y_q8, int64_t c_out) {
  GraphBuilder b;
  const TensorId x = b.input("x", skip);
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  const TensorId low = b.pool("pool", x, pool, {0, 0, 0, 0}, false);
  const TensorId a = b.activation("ra", b.conv("conva", low, 64, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 61), ActivationAttrs{});
  const TensorId up = b.op("up", "Resize", UpsampleAttrs{}, {a}, {b.c(1), b.c(64), b.H, b.W});
  const TensorId cat = b.op("cat", "Concat", ConcatAttrs{}, {up, x}, {b.c(1), b.c(64 + skip), b.H, b.W});
  const TensorId c1 = b.activation("r1", b.conv("conv1", cat, c_out, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 62), ActivationAttrs{});
  b.output(y_q8 ? b.activation("r2", b.conv("conv2", c1, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 63), ActivationAttrs{}) : c1);
  return b;
}

plan::Plan up2_q8_x0_plan(const GraphBuilder& b, const LoweringTarget& target, bool nhwc_skip, bool y_q8) {
  // (An NCHW and an "NHWC" variant of a conv may end alike, e.g. conv_a: NCHW x0, NHWC_Q8 y.)
  bool conva = false, conv1 = false, conv2 = false;
  return hand_picked(b, target, 4 + (nhwc_skip ? 1 : 0) + (y_q8 ? 1 : 0), [&](const Implementation& i) {
    const std::string n = i.name(), w = i.layout_words();
    const std::string y = y_q8 ? "" : "y";
    const bool conv1_layout = w == (nhwc_skip ? " nhwc(x1" + std::string(y_q8 ? ")" : ",y)") : std::string(y_q8 ? "" : " nhwc(y)")) +
                                       (y_q8 ? " q8(x0,y)" : " q8(x0)");
    const bool convert = i.kind == Implementation::Kind::Convert;
    return (n == "pool" && i.kind == Implementation::Kind::Op) ||
           (nhwc_skip && convert && i.tensor_name == "x" && i.pattern == "NCHW->NHWC") ||
           (n == "conva+ra" && i.family == "conv2d_coopmat" && w == " q8(y)" && !std::exchange(conva, true)) ||
           (n == "up+cat+conv1+r1" && i.family == "conv2d_coopmat_up2" && conv1_layout && !std::exchange(conv1, true)) ||
           (y_q8 && n == "conv2+r2" && i.family == "conv2d_coopmat_q8" && w == " nhwc(y) q8(x0)" && !std::exchange(conv2, true)) ||
           (convert && i.tensor_name == (y_q8 ? "r2_out" : "r1_out") && i.pattern == "NHWC->NCHW");
  }, ConfigSpace::Pruned);  // (the first configuration of each that has an int8 X0 variant)
}

int x0_q8_pipelines(const plan::Plan& plan) {
  int n = 0;
  for (const auto& p : plan.pipelines)
    for (const auto& [k, v] : p.defines) n += k == "X0_Q8" && v == "1";
  return n;
}

}  // namespace

TEST_CASE("int8 X0 of an up2 conv (X0_Q8) with a 9- and a 16-channel fp16 skip, fp16 or int8 output, emulated", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  for (int64_t skip : {9, 16})
    for (bool y_q8 : {false, true}) {
      INFO("skip of " << skip << " channels, " << (y_q8 ? "NHWC_Q8" : "NHWC") << " output");
      // 32 output channels: one B fragment per subgroup, as emulated plans take (up2_q8_fits).
      const GraphBuilder b = up2_q8_x0_graph(skip, y_q8, 32);
      const plan::Plan plan = up2_q8_x0_plan(b, q8_target(b, true, caps), skip % 8 == 0, y_q8);
      CHECK(x0_q8_pipelines(plan) == 1);
      check_sizes(device(), b, plan, {{18, 30}, {34, 46}}, 71, 2e-2);
    }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 X0 of up2 convs (X0_Q8) on the GPU's int8 cooperative matrices", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  for (int64_t skip : {9, 16})
    for (bool y_q8 : {false, true})
      for (int64_t c_out : {32, 64}) {
        INFO("skip of " << skip << " channels, " << (y_q8 ? "NHWC_Q8" : "NHWC") << " output, " << c_out << " output channels");
        const GraphBuilder b = up2_q8_x0_graph(skip, y_q8, c_out);
        const plan::Plan plan = up2_q8_x0_plan(b, q8_target(b, false, caps), skip % 8 == 0, y_q8);
        CHECK(x0_q8_pipelines(plan) == 1);
        check_sizes(coop_device(), b, plan, {{18, 30}, {66, 98}}, 71, 2e-2);
      }
}

namespace {

// Two int8 convs with the next conv in their epilogue (conv2d_coopmat_q8 TAIL + conv_tail_ring):
// x (16 channels) -> conv0+relu (fp16, writing NHWC_Q8) -> conv1 32->32 + relu -> 3x3 32->3 with
// a bias and a 2-Slice crop (OIDN's last conv), and conv0 -> 1x1 32->16 + tanh -> 3x3 16->2
// without bias, with a sigmoid (a 16-channel tile). Every int8 conv reads one 32-channel chunk
// (the emulation's limit for a tail: q8_configs says why). The ReLU conv's factors fold into its
// tail's weights (T_FOLD); the tanh conv's cannot (tanh does not commute with a factor), so
// both epilogue paths run.
GraphBuilder q8_tail_graph() {
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
  const TensorId c0 = b.activation("r0", b.conv("conv0", x, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 91), ActivationAttrs{});
  const TensorId c1 = b.activation("r1", b.conv("conv1", c0, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 92), ActivationAttrs{});
  b.crop_output(b.conv("conv_tail", c1, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 93), 3, 1, 2, b.add(h, b.c(-3)), w,
                b.add(h, b.c(-3)), b.add(w, b.c(-5)));
  ActivationAttrs tanh_act;
  tanh_act.kind = Activation::Tanh;
  const TensorId c2 = b.activation("r2", b.conv("conv2", c0, 16, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 94), tanh_act);
  ActivationAttrs sigmoid;
  sigmoid.kind = Activation::Sigmoid;
  b.output(b.activation("sig", b.conv("conv_tail2", c2, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 95), sigmoid));
  return b;
}


}  // namespace

TEST_CASE("int8 convs with the next conv in their epilogue (TAIL), emulated, against the fp32 CPU reference", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  const GraphBuilder b = q8_tail_graph();
  const plan::Plan plan = compile(b.g, plan::Precision::F16, q8_target(b, true, caps));
  CHECK(q8_dispatches_with(plan, {{"TAIL", "1"}}) == 2);
  CHECK(q8_dispatches_with(plan, {{"T_FOLD", "1"}}) == 1);
  CHECK(families(plan).at("conv_tail_ring") == 2);
  CHECK(!families(plan).count("conv2d_coopmat_tapsum"));
  check_sizes(device(), b, plan, {{37, 29}, {22, 45}}, 97, 3e-2);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 convs with a tail on the GPU's int8 cooperative matrices", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  const GraphBuilder b = q8_tail_graph();
  const plan::Plan plan = compile(b.g, plan::Precision::F16, q8_target(b, false, caps));
  CHECK(q8_dispatches_with(plan, {{"TAIL", "1"}}) == 2);
  CHECK(q8_dispatches_with(plan, {{"T_FOLD", "1"}}) == 1);
  check_sizes(coop_device(), b, plan, {{37, 29}, {66, 98}, {131, 130}}, 97, 3e-2);
}

namespace {

// int8 convs with 64, 48 and 112 output channels, which the heuristic gives 64- and 48-channel
// tiles (q8_configs: 2 x 2 subgroups' fragments of 64 channels, one column of 3 for 48), over one
// to four 32-channel chunks: x (16) -> conv0 16->64 (fp16, writing NHWC_Q8) -> conv1 64->64 ->
// conv2 64->48 -> conv3 48->112 -> conv4 112->32 -> conv5 32->3, each with a ReLU but the last.
GraphBuilder q8_wide_graph() {
  GraphBuilder b;
  TensorId t = b.input("x", 16);
  const std::pair<const char*, int64_t> layers[] = {{"conv0", 64}, {"conv1", 64}, {"conv2", 48}, {"conv3", 112}, {"conv4", 32}};
  uint64_t seed = 41;
  for (const auto& [name, c_out] : layers)
    t = b.activation(std::string(name) + "_relu", b.conv(name, t, c_out, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, seed++), ActivationAttrs{});
  b.output(b.conv("conv5", t, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, seed));
  return b;
}

}  // namespace

TEST_CASE("int8 convs with 64- and 48-channel tiles on the GPU's int8 cooperative matrices", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  const GraphBuilder b = q8_wide_graph();
  const plan::Plan plan = compile(b.g, plan::Precision::F16, q8_target(b, false, caps));
  CHECK(q8_dispatches_with(plan, {{"NT", "64"}}) == 2);  // conv1 and conv3
  CHECK(q8_dispatches_with(plan, {{"NT", "48"}}) == 1);  // conv2
  check_sizes(coop_device(), b, plan, {{37, 29}, {66, 98}, {131, 130}}, 43, 3e-2);
}

TEST_CASE("int8 plans on the GPU's int8 cooperative matrices against the fp32 CPU reference", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  GraphBuilder b = unet_step();
  const LoweringTarget target = q8_target(b, false, caps);
  const plan::Plan plan = compile(b.g, plan::Precision::F16, target);
  CHECK(families(plan).at("conv2d_coopmat_q8") == 4);
  CHECK(q8_dispatches_with(plan, {{"TAIL", "1"}}) == 1);  // up+cat+conv4 (two chunks) with conv5 in its epilogue
  check_sizes(coop_device(), b, plan, {{38, 30}, {66, 98}, {128, 130}}, 9, 3e-2);
}

namespace {

// The heuristic plan of OIDN balanced (pad/crop) with `channels` input channels on an H100-like
// target, int8 (calibrated on one random image) or fp16.
plan::Plan oidn_heuristic_plan(int channels, bool int8) {
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced, true, channels);
  LoweringTarget target;
  target.coop = h100_like();
  target.coop.int8 = true;
  if (int8) target.int8 = std::make_shared<QuantTable>(autotune::calibrate_int8(g, {{random_tensor({1, channels, 40, 48}, 5)}}));
  return build_portable_plan(g, plan::Precision::F16, target);
}

}  // namespace

TEST_CASE("the int8 heuristic plan runs a 3-channel enc_conv0 in enc_conv1's HEAD, as the H100 measured fastest", "[kernels][q8-plan]") {
  // The cost model's narrow-conv term (cost_model.cpp): without it the int8 heuristic plan of
  // OIDN balanced ran enc_conv0 apart, 0.095 + 0.156 ms against the HEAD's 0.232. A 9-channel
  // image cannot be a HEAD's: that plan keeps enc_conv0 apart, in NARROW planes.
  for (int channels : {3, 9}) {
    INFO(channels << " channels");
    const plan::Plan plan = oidn_heuristic_plan(channels, true);
    int heads = 0, narrow = 0;
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines[d.pipeline];
      if (define(p, "HEAD") == "1") {
        ++heads;
        CHECK_THAT(d.name, Catch::Contains("enc_conv0") && Catch::Contains("enc_conv1"));
      }
      narrow += !define(p, "NARROW").empty() && define(p, "NARROW") != "0";
    }
    CHECK(heads == (channels == 3 ? 1 : 0));
    CHECK(narrow == (channels == 3 ? 0 : 1));
    CHECK(families(plan).at("conv2d_coopmat_q8") >= 10);  // the other convs stay int8
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

TEST_CASE("int8 up+concat convs by output phase (PHASES) on the GPU's int8 cooperative matrices", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  // Every configuration q8_phase_configs offers, on OIDN-like channel counts: dec_conv2a's 96 + 32
  // -> 64 (two channel tiles), 48 + 48 -> 32 (half-empty chunks).
  for (const CoopConvConfig& c : {q8_phases(16, 32, 32, 8, 1), q8_phases(16, 32, 32, 16, 1), q8_phases(16, 32, 32, 8, 2),
                                  q8_phases(8, 32, 32, 4, 1), q8_phases(8, 32, 32, 8, 1)})
    for (auto [c0, skip, c_out] : {std::tuple<int64_t, int64_t, int64_t>{96, 32, 64}, {48, 48, 32}}) {
      INFO(c.describe() << ", X0 " << c0 << " channels, X1 " << skip << ", " << c_out << " out");
      const PhaseCase p = q8_phase_case(c0, skip, c_out, c, false, caps);
      CHECK(q8_dispatches_with(p.plan, {{"PHASES", "1"}}) == 1);
      check_sizes(coop_device(), p.b, p.plan, {{38, 30}, {66, 98}, {130, 132}}, 92, 3e-2);
    }
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
