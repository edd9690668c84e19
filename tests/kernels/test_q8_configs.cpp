// Every configuration the tuner may give a plain int8 conv (q8_configs' full set), with and
// without a fused pool, on the GPU's int8 cooperative matrices against the fp32 CPU reference:
// a tuned plan can hold any of them (issue 4: "every configuration the benchmarks use is checked
// on the H100"). [q8]: skipped with a warning where the device has no int8 fragments.
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/lower_portable.hpp"
#include "q8_support.hpp"
#include "kernels/implementations.hpp"

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

}  // namespace

TEST_CASE("every int8 configuration the tuner offers a plain conv, with and without a pool, on the GPU", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& caps = coop_device().caps();
  for (bool pool : {false, true}) {
    const GraphBuilder b = configs_graph(pool);
    LoweringTarget target = q8_target(b, false, caps);
    const std::vector<CoopConvConfig> all = q8_configs(Conv2dShape{64, 80, 3, 3}, target.coop, pool, false, true);
    CHECK(all.size() >= 10);
    for (const CoopConvConfig& c : all) {
      INFO((pool ? "with a pool: " : "") << c.describe());
      target.conv_configs["conv1"] = c;
      // Picked by hand (select may keep conv1 in fp16: one 80-channel tile): conv0 in fp16
      // writing NHWC_Q8, conv1 in int8 writing fp16 NHWC, conv2 in fp16, copied to NCHW.
      const std::string conv1 = pool ? "conv1+r1+pool1" : "conv1+r1";
      bool c0 = false, c1 = false, c2 = false;
      const plan::Plan plan = hand_picked(b, target, 4, [&](const Implementation& i) {
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
      check_sizes(coop_device(), b, plan, {{38, 30}, {67, 99}}, 74, 3e-2);
    }
  }
}

