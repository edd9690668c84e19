// The opt-in int8 precision (src/kernels/int8.md): calibration, the int8 convolution
// (shaders/conv2d_coopmat_q8.comp) and the quantizing conversions (shaders/quantize.comp).
//  - [q8-plan]: calibration and weight quantization on the host, no device.
//  - [q8-emulate]: int8 plans with COOP_EMULATE=1 (plain arithmetic in place of the int8
//    fragments) on any device, lavapipe included, against the fp32 CPU reference at odd sizes.
//  - [q8]: the same plans on the device's int8 cooperative matrices (skipped with a warning
//    where there are none).
// The convs by output phase are test_q8_phases.cpp's; the shared helpers q8_support.hpp's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "../runtime/gpu_test_support.hpp"
#include "compiler/calibrate/calibrate.hpp"
#include "coop_support.hpp"
#include "q8_support.hpp"
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

TEST_CASE("int8 X0 of an up2 conv (X0_Q8) with a 3-, 9- and 16-channel fp16 skip, fp16 or int8 output, emulated", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  for (int64_t skip : {3, 9, 16})  // (3: OIDN small's dec_conv1a, whose heuristic int8 plan takes X0_Q8)
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

// A [sweep] (DENOX_TEST_SHARD): under GPU-AV its 12 combinations take longer than one device call.
TEST_CASE("int8 X0 of up2 convs (X0_Q8) on the GPU's int8 cooperative matrices", "[kernels][q8][sweep]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  ShardedSweep sweep("int8 X0_Q8 sweep");
  for (int64_t skip : {3, 9, 16})
    for (bool y_q8 : {false, true})
      for (int64_t c_out : {32, 64}) {
        if (!sweep.take()) continue;
        INFO("skip of " << skip << " channels, " << (y_q8 ? "NHWC_Q8" : "NHWC") << " output, " << c_out << " output channels");
        const GraphBuilder b = up2_q8_x0_graph(skip, y_q8, c_out);
        const plan::Plan plan = up2_q8_x0_plan(b, q8_target(b, false, caps), skip % 8 == 0, y_q8);
        CHECK(x0_q8_pipelines(plan) == 1);
        check_sizes(coop_device(), b, plan, {{18, 30}, {66, 98}}, 71, 2e-2);
      }
  sweep.report();
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
  // Tails take their tiles last to first (tile_order.glsl): the ring pass must still find each
  // tile's partial sums, which these sizes (several tiles each way) check.
  CHECK(q8_dispatches_with(plan, {{"TAIL", "1"}, {"TILES_REVERSED", "1"}}) == 2);
  CHECK(q8_dispatches_with(plan, {{"T_FOLD", "1"}}) == 1);
  CHECK(families(plan).at("conv_tail_ring") == 2);
  CHECK(!families(plan).count("conv2d_coopmat_tapsum"));
  check_sizes(device(), b, plan, {{37, 29}, {22, 45}}, 97, 3e-2);
  CHECK(device().validation_errors() == 0);
}

namespace {

// The outputs of `plan` with every coop conv's tiles last to first and first to last
// (tile_order.glsl): the same bits (a workgroup computes the same tile either way; the tails'
// partial slots go by tile). `families`: coop conv families the plan must have.
void check_tile_orders_agree(const plan::Plan& plan, const std::vector<HostTensor>& inputs, const std::vector<std::string>& families) {
  for (const std::string& f : families) {
    INFO(f);
    CHECK(std::any_of(plan.pipelines.begin(), plan.pipelines.end(), [&](const plan::Pipeline& p) { return p.family == f; }));
  }
  const std::vector<std::string> coop = {"conv2d_coopmat", "conv2d_coopmat_q8", "conv2d_coopmat_up2"};
  plan::Plan reversed = plan, forward = plan;
  add_coop_defines(reversed, {{"TILES_REVERSED", "1"}}, coop);
  add_coop_defines(forward, {{"TILES_REVERSED", "0"}}, coop);
  const std::vector<HostTensor> a = run_on(device(), reversed, inputs), f = run_on(device(), forward, inputs);
  REQUIRE(a.size() == f.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].f32 == f[i].f32);
}

}  // namespace

TEST_CASE("coop convs give the same bits with their tiles in either order (TILES_REVERSED), emulated", "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  {
    INFO("int8 tails (the lowering reverses them) and an fp16 conv writing NHWC_Q8");
    const GraphBuilder b = q8_tail_graph();
    const plan::Plan plan = compile(b.g, plan::Precision::F16, q8_target(b, true, caps));
    CHECK(q8_dispatches_with(plan, {{"TAIL", "1"}, {"TILES_REVERSED", "1"}}) == 2);
    // 22x45: 2 x 2 tiles of 16x32, so the order matters to the ring pass's partial slots.
    check_tile_orders_agree(plan, random_inputs(b, 22, 45, 53), {"conv2d_coopmat", "conv2d_coopmat_q8"});
  }
  {
    INFO("an up2 conv reading int8 (ONE_PHASE: x is 4 tiles' phases)");
    const GraphBuilder b = up2_q8_x0_graph(9, false, 32);
    const plan::Plan plan = up2_q8_x0_plan(b, q8_target(b, true, caps), false, false);
    check_tile_orders_agree(plan, random_inputs(b, 34, 46, 57), {"conv2d_coopmat_up2"});
  }
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
// tiles (q8_configs: 4 x 2 subgroups of 4 x 2 fragments for 64 channels without a pool, one
// column of 3 for 48), over one to four 32-channel chunks: x (16) -> conv0 16->64 (fp16, writing
// NHWC_Q8) -> conv1 64->64 -> conv2 64->48 -> conv3 48->112 -> conv4 112->32 -> conv5 32->3,
// each with a ReLU but the last.
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

TEST_CASE("the int8 heuristic plan runs pooled convs on 32-channel tiles on 16 x 1 subgroups, plain ones on 8 x 1", "[kernels][q8-plan]") {
  // q8_configs: with a pool, 16x32 nt32 on 16 subgroups ran as fast or faster (the H200's tuned
  // plans took it for OIDN small's enc_conv2..4 and balanced's enc_conv4); without a pool 8 x 1
  // stays. Balanced's 48- and 64-channel pooled convs keep their wider tiles.
  using Size = modelgen::OidnUnetOptions::Size;
  for (Size size : {Size::Small, Size::Balanced}) {
    const bool small = size == Size::Small;
    INFO((small ? "small" : "balanced"));
    const plan::Plan plan = oidn_heuristic_plan(3, true, size);
    int pooled16 = 0, plain8 = 0;
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines[d.pipeline];
      if (p.family != "conv2d_coopmat_q8" || define(p, "NT") != "32" || define(p, "TILE_H") != "16" || define(p, "TILE_W") != "32" ||
          define(p, "PHASES") == "1" || define(p, "TAIL") == "1")
        continue;
      INFO(d.name);
      if (define(p, "POOL") == "1") {
        CHECK(define(p, "SG_M") == "16");
        ++pooled16;
      } else {
        CHECK(define(p, "SG_M") == "8");
        ++plain8;
      }
    }
    CHECK(pooled16 == (small ? 3 : 1));  // small: enc_conv2, 3, 4; balanced: enc_conv4 (80 channels)
    CHECK(plain8 >= 1);
    if (!small) {  // balanced's enc_conv2 (48 channels) and enc_conv3 (64) keep their wider tiles
      int wider = 0;
      for (const auto& d : plan.dispatches)
        for (const auto& [conv, nt] : {std::pair<const char*, const char*>{"/enc_conv2/", "48"}, {"/enc_conv3/", "64"}})
          if (d.name.find(conv) != std::string::npos) {
            CHECK(define(plan.pipelines[d.pipeline], "NT") == nt);
            ++wider;
          }
      CHECK(wider == 2);
    }
  }
}

TEST_CASE("the int8 heuristic plan runs the 1/16-resolution convs on 8x16 tiles on 4 x 1 subgroups", "[kernels][q8-plan]") {
  // q8_configs' tiny-layer rule: OIDN's enc_conv5a/5b (8160 pixels where the heuristic ranks,
  // 1920x1088) on 8x16 pixels; the 1/8 layers (dec_conv4b: 32640 pixels) keep their tiles.
  using Size = modelgen::OidnUnetOptions::Size;
  for (Size size : {Size::Small, Size::Balanced}) {
    INFO((size == Size::Small ? "small" : "balanced"));
    const plan::Plan plan = oidn_heuristic_plan(3, true, size);
    int tiny = 0;
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines[d.pipeline];
      const bool at_16th = d.name.find("/enc_conv5") != std::string::npos;
      INFO(d.name);
      if (p.family != "conv2d_coopmat_q8" || (!at_16th && d.name.find("/dec_conv4b/") == std::string::npos)) continue;
      const bool small_tile = define(p, "TILE_H") == "8" && define(p, "TILE_W") == "16" && define(p, "SG_M") == "4" && define(p, "SG_N") == "1";
      CHECK(small_tile == at_16th);
      tiny += at_16th;
    }
    CHECK(tiny == 2);
  }
}

TEST_CASE("the int8 heuristic plan reads dec_conv1a's upsampled input as int8 only with at most 32 output channels", "[kernels][q8-plan]") {
  // The cost model's X0_Q8 factors (cost_model.cpp): on the H100 OIDN small's dec_conv1a (32 + 3
  // -> 32 channels) ran 0.167-0.172 ms with an int8 X0 against 0.198 in fp16 at 1920x1088, and
  // the tuner kept balanced's (64 + 3 -> 64) in fp16. With one factor for both, the small
  // network's heuristic plan read it in fp16.
  using Size = modelgen::OidnUnetOptions::Size;
  for (Size size : {Size::Small, Size::Balanced}) {
    const bool small = size == Size::Small;
    INFO((small ? "small" : "balanced"));  // (the macro streams its argument)
    const plan::Plan plan = oidn_heuristic_plan(3, true, size);
    int up2 = 0;
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines[d.pipeline];
      if (p.family != "conv2d_coopmat_up2") continue;
      ++up2;
      CHECK_THAT(d.name, Catch::Contains("dec_conv1a"));
      CHECK(define(p, "X0_Q8") == (small ? "1" : ""));
    }
    CHECK(up2 == 1);
  }
}
