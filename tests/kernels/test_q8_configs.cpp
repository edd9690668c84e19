// Every configuration the tuner may give an int8 conv (q8_configs' full set): plain, with a fused
// pool, with a tail. A tuned plan can hold any of them (issue 4: "every configuration the
// benchmarks use is checked on the H100").
//  - [q8-plan]: each lowers into a plan whose int8 dispatch has that configuration (H100-like
//    target, host only).
//  - [q8]: the same plans on the GPU's int8 cooperative matrices against the fp32 CPU reference
//    (skipped with a warning where the device has no int8 fragments).
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lower_portable.hpp"
#include "q8_support.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

// x (16) -> conv0 16->64 (fp16, writing NHWC_Q8) -> conv1 64->80 (3 chunks, 3 channel tiles of
// 32; + pool) -> conv2 80->16, each with a ReLU but the last (16 outputs: no tail for conv1).
GraphBuilder configs_graph(bool pool) {
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  const TensorId c0 = b.activation("r0", b.conv("conv0", x, 64, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 71), ActivationAttrs{});
  TensorId c1 = b.activation("r1", b.conv("conv1", c0, 80, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 72), ActivationAttrs{});
  if (pool) {
    PoolAttrs p;
    p.kernel = {2, 2};
    p.stride = {2, 2};
    c1 = b.pool("pool1", c1, p, {0, 0, 0, 0}, false);
  }
  b.output(b.conv("conv2", c1, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 73));
  return b;
}

// x (16) -> conv0 16->64 (fp16, writing NHWC_Q8) -> conv1 64->32 (ReLU) -> conv_tail 32->3: conv1
// in int8 with conv_tail in its epilogue (TAIL) and the ring pass.
GraphBuilder tail_graph() {
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  const TensorId c0 = b.activation("r0", b.conv("conv0", x, 64, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 75), ActivationAttrs{});
  const TensorId c1 = b.activation("r1", b.conv("conv1", c0, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 76), ActivationAttrs{});
  b.output(b.conv("conv_tail", c1, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 77));
  return b;
}

// conv1 of configs_graph(pool) in int8 on configuration `c`, picked by hand (select may keep it
// in fp16: one 80-channel tile): conv0 in fp16 writing NHWC_Q8, conv1 in int8 writing fp16
// NHWC, conv2 in fp16, copied to NCHW.
plan::Plan plain_plan(const GraphBuilder& b, LoweringTarget target, const CoopConvConfig& c, bool pool) {
  target.conv_configs["conv1"] = c;
  const std::string conv1 = pool ? "conv1+r1+pool1" : "conv1+r1";
  bool c0 = false, c1 = false, c2 = false;
  plan::Plan plan = hand_picked(b, target, 4, [&](const Implementation& i) {
    const std::string n = i.name(), w = i.layout_words();
    return (n == "conv0+r0" && i.family == "conv2d_coopmat" && w == " q8(y)" && !std::exchange(c0, true)) ||
           (n == conv1 && i.family == "conv2d_coopmat_q8" && w == " nhwc(y) q8(x0)" && !std::exchange(c1, true)) ||
           (n == "conv2" && i.family == "conv2d_coopmat" && w == " nhwc(x0,y)" && !std::exchange(c2, true)) ||
           (i.kind == Implementation::Kind::Convert && i.tensor_name == "conv2_out" && i.pattern == "NHWC->NCHW");
  });
  const std::string th = std::to_string(c.tile_h), tw = std::to_string(c.tile_w), nt = std::to_string(c.nt),
                    ck = std::to_string(c.ck), sm = std::to_string(c.sg_m), sn = std::to_string(c.sg_n);
  CHECK(q8_dispatches_with(plan, {{"TILE_H", th.c_str()}, {"TILE_W", tw.c_str()}, {"NT", nt.c_str()}, {"CK", ck.c_str()},
                                  {"SG_M", sm.c_str()}, {"SG_N", sn.c_str()}, {"POOL", pool ? "1" : "0"}}) == 1);
  return plan;
}

// conv1 of tail_graph() on configuration `c` with the tail in its epilogue (select takes it).
plan::Plan tail_plan(const GraphBuilder& b, LoweringTarget target, const CoopConvConfig& c) {
  target.conv_configs["conv1"] = c;
  plan::Plan plan = compile(b.g, plan::Precision::F16, target);
  const std::string th = std::to_string(c.tile_h), tw = std::to_string(c.tile_w), sm = std::to_string(c.sg_m);
  CHECK(q8_dispatches_with(plan, {{"TILE_H", th.c_str()}, {"TILE_W", tw.c_str()}, {"SG_M", sm.c_str()}, {"TAIL", "1"}}) == 1);
  return plan;
}

// The tuner's configurations for those convs on `target`.
std::vector<CoopConvConfig> plain_configs(const LoweringTarget& target, bool pool) {
  return q8_configs(Conv2dShape{64, 80, 3, 3}, target.coop, pool, false, true);
}
std::vector<CoopConvConfig> tail_configs(const LoweringTarget& target) {
  const CoopTail tail(3, 32);
  return q8_configs(Conv2dShape{64, 32, 3, 3}, target.coop, false, false, true, &tail);
}

}  // namespace

TEST_CASE("every int8 configuration the tuner offers lowers into a plan that has it (plain, pool, tail)", "[kernels][q8-plan]") {
  for (bool pool : {false, true}) {
    const GraphBuilder b = configs_graph(pool);
    const LoweringTarget target = h100_int8_target(b.g, random_inputs(b, 26, 34, 100));
    const std::vector<CoopConvConfig> all = plain_configs(target, pool);
    CHECK(all.size() >= 10);
    for (const CoopConvConfig& c : all) {
      INFO((pool ? "with a pool: " : "") << c.describe());
      plain_plan(b, target, c, pool);
    }
  }
  const GraphBuilder b = tail_graph();
  const LoweringTarget target = h100_int8_target(b.g, random_inputs(b, 26, 34, 100));
  const std::vector<CoopConvConfig> all = tail_configs(target);
  CHECK(all.size() >= 4);
  for (const CoopConvConfig& c : all) {
    INFO("with a tail: " << c.describe());
    tail_plan(b, target, c);
  }
}

TEST_CASE("every int8 configuration the tuner offers (plain, pool, tail) on the GPU against the CPU reference", "[kernels][q8][sweep]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  ShardedSweep sweep("int8 configuration sweep");
  for (bool pool : {false, true}) {
    const GraphBuilder b = configs_graph(pool);
    const LoweringTarget target = q8_target(b, false, caps);
    for (const CoopConvConfig& c : plain_configs(target, pool)) {
      if (!sweep.take()) continue;
      INFO((pool ? "with a pool: " : "") << c.describe());
      check_sizes(coop_device(), b, plain_plan(b, target, c, pool), {{38, 30}, {67, 99}}, 74, 3e-2);
    }
  }
  const GraphBuilder b = tail_graph();
  const LoweringTarget target = q8_target(b, false, caps);
  for (const CoopConvConfig& c : tail_configs(target)) {
    if (!sweep.take()) continue;
    INFO("with a tail: " << c.describe());
    check_sizes(coop_device(), b, tail_plan(b, target, c), {{37, 29}, {66, 98}}, 78, 3e-2);
  }
  sweep.report();
}

TEST_CASE("the int8 heuristic's first configuration follows the layer's size, pool, tail and channel tile", "[kernels][q8-plan]") {
  // q8_configs' two heuristic rules (twenty-fourth session): a pool on a 32-channel tile takes
  // 16x32 on 16 x 1 subgroups; a plain conv strictly below kTinyConvPixels (where the heuristic
  // ranks) 8x16 on 4 x 1. Neither with a tail or 16-channel tiles; an unknown size (0) is not tiny.
  const GraphBuilder b = tail_graph();
  const CoopTarget t = h100_int8_target(b.g, random_inputs(b, 26, 34, 100)).coop;
  auto first = [&](const Conv2dShape& s, bool pool, int64_t pixels, const CoopTail* tail = nullptr) {
    const std::vector<CoopConvConfig> c = q8_configs(s, t, pool, false, false, tail, pixels);
    REQUIRE(c.size() == 1);
    INFO(c.front().describe());
    return c.front();
  };
  auto is = [](const CoopConvConfig& c, int64_t th, int64_t tw, int64_t sg_m) {
    return c.tile_h == th && c.tile_w == tw && c.sg_m == sg_m && c.sg_n == 1 && c.nt == 32;
  };
  const Conv2dShape s{32, 32, 3, 3};
  CHECK(is(first(s, false, kTinyConvPixels - 1), 8, 16, 4));
  CHECK(is(first(s, false, kTinyConvPixels), 16, 32, 8));
  CHECK(is(first(s, false, 0), 16, 32, 8));
  CHECK(is(first(s, true, kTinyConvPixels - 1), 16, 32, 16));
  CHECK(is(first(s, true, 0), 16, 32, 16));
  const CoopTail tail(3, 32);
  CHECK(!is(first(Conv2dShape{64, 32, 3, 3}, false, kTinyConvPixels - 1, &tail), 8, 16, 4));
  const Conv2dShape narrow{32, 16, 3, 3};
  CHECK(first(narrow, true, 0).sg_m != 16);
  const CoopConvConfig narrow_tiny = first(narrow, false, kTinyConvPixels - 1);
  CHECK(!(narrow_tiny.tile_h == 8 && narrow_tiny.tile_w == 16));
}

// Registered apart (tests/kernels/CMakeLists.txt) to run on Mesa 25's lavapipe: the tuner's
// int8 configurations as a device with int8 fragments and this one's shared memory and subgroup
// size would get them, emulated. Mesa 22.3's llvmpipe computes garbage with 7 or more accumulator
// fragments a subgroup (q8_configs' emulated plans stay below), Mesa 25's computes them right.
TEST_CASE("every int8 configuration the tuner offers (plain, pool, tail) that fits the device, emulated, against the CPU reference", "[.][q8-emulate-mesa25]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps) || llvmpipe_before_mesa25(caps)) return;
  int checked = 0, many_fragments = 0;  // (configurations with 7 or more accumulator fragments a subgroup)
  auto count = [&](const CoopConvConfig& c) {
    ++checked;
    many_fragments += (c.m_frags() / c.sg_m) * (c.nt / 16 / c.sg_n) >= 7;
  };
  auto with_int8 = [](LoweringTarget t) {
    t.coop.int8 = true;
    return t;
  };
  for (bool pool : {false, true}) {
    const GraphBuilder b = configs_graph(pool);
    const LoweringTarget target = q8_target(b, true, caps);
    for (const CoopConvConfig& c : plain_configs(with_int8(target), pool)) {
      INFO((pool ? "with a pool: " : "") << c.describe());
      check_sizes(device(), b, plain_plan(b, target, c, pool), {{38, 30}, {67, 99}}, 74, 3e-2);
      count(c);
    }
  }
  const GraphBuilder b = tail_graph();
  const LoweringTarget target = q8_target(b, true, caps);
  for (const CoopConvConfig& c : tail_configs(with_int8(target))) {
    INFO("with a tail: " << c.describe());
    check_sizes(device(), b, tail_plan(b, target, c), {{37, 29}, {66, 98}}, 78, 3e-2);
    count(c);
  }
  INFO(checked << " configurations, " << many_fragments << " with 7 or more accumulator fragments a subgroup");
  CHECK(checked >= 8);
  CHECK(many_fragments >= 3);  // what Mesa 22.3's llvmpipe gets wrong (9 of 20 on lavapipe today)
  CHECK(device().validation_errors() == 0);
}
