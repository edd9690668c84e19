#include <catch2/catch.hpp>
#include <cstdio>
#include "q8_support.hpp"
#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "kernels/conv2d_coopmat.hpp"
using namespace denox; using namespace denox::testing; using namespace denox::kernels;
TEST_CASE("tmp exp", "[tmpexp]") {
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced, true, 16);
  auto t = h100_int8_target(g, {random_tensor({1, 16, 40, 48}, 5)});
  for (int k = 0; k < 2; ++k) {
    if (k) { CoopConvConfig c; c.q8 = true; c.up2 = true; c.tile_h = 16; c.tile_w = 32; c.nt = 32; c.ck = 32; c.sg_m = 16; c.sg_n = 1; t.conv_configs["/dec_conv1a/Conv"] = c; }
    const plan::Plan p = build_portable_plan(g, plan::Precision::F16, t);
    for (const auto& d : p.dispatches) std::printf("%d %s | %s\n", k, d.name.c_str(), p.pipelines[d.pipeline].family.c_str());
  }
}
