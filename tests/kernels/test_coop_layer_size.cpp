// The heuristic's coop picks by layer size (kSmallConvPixels): each conv's output pixels at the
// extent select ranks at (1920x1088 for heuristic plans) move small layers onto smaller tiles,
// and only where that size is known; without it the picks go by channels as before.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/cost_model/cost_model.hpp"
#include "coop_support.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/implementations.hpp"

using namespace denox;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

// OIDN's layer sizes at 1920x1088: 1/4, 1/8 and 1/16 resolution.
constexpr int64_t kQuarter = 272 * 480, kEighth = 136 * 240, kSixteenth = 68 * 120;

std::string tile(const std::optional<CoopConvConfig>& c) {
  if (!c) return "none";
  return std::to_string(c->tile_h) + "x" + std::to_string(c->tile_w) + " nt" + std::to_string(c->nt) + " sg" +
         std::to_string(c->sg_m) + "x" + std::to_string(c->sg_n) + (c->a_direct ? " adirect" : "");
}

}  // namespace

TEST_CASE("choose_coop_config and the A_DIRECT pick take a layer's size into account where it is known", "[kernels][coop-plan]") {
  CoopTarget t = h100_like();
  t.a_rows = true;
  // Every pick fits the shape and the pool.
  for (int64_t pixels : {int64_t{0}, kSixteenth, kEighth, kQuarter})
    for (int64_t c_in : {9, 32, 64, 96})
      for (int64_t c_out : {32, 48, 64, 80, 96, 112})
        for (bool pool : {false, true}) {
          const Conv2dShape s{c_in, c_out, 3, 3};
          INFO(pixels << " px, " << c_in << " -> " << c_out << (pool ? " pool" : ""));
          const auto c = choose_coop_config(s, t, pool, true, pixels);
          REQUIRE(c);
          CHECK(coop_config_fits(*c, s, t, pool));
          if (const auto a = choose_coop_a_direct_config(s, t, pool, std::nullopt, pixels)) CHECK(coop_config_fits(*a, s, t, pool));
        }

  // Small layers (1/8 and 1/16): 32 and 64 channels in one 8x16 tile on 4 x 2 subgroups, pool
  // or not (where A_DIRECT does not come first).
  for (int64_t pixels : {kEighth, kSixteenth}) {
    CHECK(tile(choose_coop_config({32, 32, 3, 3}, t, false, true, pixels)) == "8x16 nt32 sg4x2");
    CHECK(tile(choose_coop_config({32, 32, 3, 3}, t, true, true, pixels)) == "8x16 nt32 sg4x2");
    CHECK(tile(choose_coop_config({64, 64, 3, 3}, t, false, false, pixels)) == "8x16 nt64 sg4x2");  // (dec_conv4a's concat)
  }
  // 96 channels in 32-channel tiles at 1/16 only; at 1/8 the channel-count pick (8x16 nt96 on 4 x 2).
  CHECK(tile(choose_coop_config({80, 96, 3, 3}, t, false, true, kSixteenth)) == "16x16 nt32 sg8x1");
  CHECK(tile(choose_coop_config({96, 96, 3, 3}, t, false, true, kSixteenth)) == "16x16 nt32 sg8x1");
  CHECK(tile(choose_coop_config({96, 96, 3, 3}, t, false, true, kEighth)) == "8x16 nt96 sg4x2");
  // 80 and 112 channels, and narrow inputs, keep the channel-count picks at every size.
  for (int64_t pixels : {int64_t{0}, kSixteenth, kEighth}) {
    CHECK(tile(choose_coop_config({64, 80, 3, 3}, t, true, true, pixels)) == "8x16 nt80 sg8x1");
    CHECK(tile(choose_coop_config({112, 112, 3, 3}, t, false, true, pixels)) == "8x16 nt112 sg8x1");
    CHECK(tile(choose_coop_config({4, 32, 3, 3}, t, false, true, pixels)) == "2x32 nt32 sg4x1");  // (NARROW)
  }
  // The thresholds themselves.
  CHECK(tile(choose_coop_config({32, 32, 3, 3}, t, false, true, kSmallConvPixels - 1)) == "8x16 nt32 sg4x2");
  CHECK(tile(choose_coop_config({32, 32, 3, 3}, t, false, true, kSmallConvPixels)) == "8x64 nt32 sg16x1");
  CHECK(tile(choose_coop_config({96, 96, 3, 3}, t, false, true, kTinyConvPixels - 1)) == "16x16 nt32 sg8x1");
  CHECK(tile(choose_coop_config({96, 96, 3, 3}, t, false, true, kTinyConvPixels)) == "8x16 nt96 sg4x2");
  CHECK_FALSE(choose_coop_a_direct_config({64, 64, 3, 3}, t, false, std::nullopt, kTinyConvPixels - 1));
  CHECK(tile(choose_coop_a_direct_config({64, 64, 3, 3}, t, false, std::nullopt, kTinyConvPixels)) == "16x16 nt32 sg4x1 adirect");
  CHECK_FALSE(choose_coop_a_direct_config({96, 96, 3, 3}, t, false, std::nullopt, kSmallConvPixels - 1));
  CHECK(tile(choose_coop_a_direct_config({96, 96, 3, 3}, t, false, std::nullopt, kSmallConvPixels)) == "16x16 nt32 sg4x1 adirect");
  // Large or unknown: as before (32 channels on 8x64 pixels, 16 subgroups).
  for (int64_t pixels : {int64_t{0}, kQuarter})
    CHECK(tile(choose_coop_config({32, 32, 3, 3}, t, false, true, pixels)) == "8x64 nt32 sg16x1");

  // A_DIRECT: down to 1/8, not on tiny layers; 96 channels only where the layer is known to be
  // large.
  const std::string a_direct = "16x16 nt32 sg4x1 adirect";
  for (int64_t pixels : {int64_t{0}, kEighth, kQuarter}) {
    CHECK(tile(choose_coop_a_direct_config({64, 64, 3, 3}, t, false, std::nullopt, pixels)) == a_direct);
    CHECK(tile(choose_coop_a_direct_config({32, 32, 3, 3}, t, true, std::nullopt, pixels)) == a_direct);
  }
  CHECK_FALSE(choose_coop_a_direct_config({64, 64, 3, 3}, t, false, std::nullopt, kSixteenth));
  CHECK_FALSE(choose_coop_a_direct_config({32, 32, 3, 3}, t, true, std::nullopt, kSixteenth));
  CHECK(tile(choose_coop_a_direct_config({96, 96, 3, 3}, t, false, std::nullopt, kQuarter)) == a_direct);
  for (int64_t pixels : {int64_t{0}, kEighth, kSixteenth}) CHECK_FALSE(choose_coop_a_direct_config({96, 96, 3, 3}, t, false, std::nullopt, pixels));
  CHECK_FALSE(choose_coop_a_direct_config({64, 80, 3, 3}, t, false, std::nullopt, kQuarter));  // (not whole 32-channel tiles)
  CHECK_FALSE(choose_coop_a_direct_config({96, 96, 3, 3}, t, true, std::nullopt, kQuarter));   // (a pool: at most 48)
}

TEST_CASE("the heuristic leaves up2 out on small layers of at most 64 channels only where it knows their size",
          "[kernels][coop-plan]") {
  using Size = modelgen::OidnUnetOptions::Size;
  LoweringTarget target;
  target.coop = h100_like();
  // Whether one of `conv`'s implementations is an up2 one.
  auto up2_for = [&](const compiler::Graph& g, ConfigSpace space, const std::optional<std::vector<int64_t>>& values,
                     const std::string& conv) {
    const std::vector<Implementation> impls = enumerate_implementations(g, plan::Precision::F16, target, space, values);
    return std::any_of(impls.begin(), impls.end(), [&](const Implementation& i) {
      return i.family == "conv2d_coopmat_up2" && i.name().find(conv) != std::string::npos;
    });
  };
  // OIDN small's dec_conv4a (64 channels, 1/8) and dec_conv3a (1/4).
  const compiler::Graph small = oidn(Size::Small);
  const auto at_1080p = autotune::values_at_extent(small, 1920, 1088);
  REQUIRE(at_1080p);
  CHECK(up2_for(small, ConfigSpace::Heuristic, std::nullopt, "dec_conv4a"));
  CHECK_FALSE(up2_for(small, ConfigSpace::Heuristic, at_1080p, "dec_conv4a"));
  CHECK(up2_for(small, ConfigSpace::Heuristic, at_1080p, "dec_conv3a"));
  // Tuning measures both families at every size.
  CHECK(up2_for(small, ConfigSpace::Pruned, at_1080p, "dec_conv4a"));
  // At 3840x2160 dec_conv4a has 130560 pixels: up2 is offered again.
  CHECK(up2_for(small, ConfigSpace::Heuristic, autotune::values_at_extent(small, 3840, 2160), "dec_conv4a"));
  // Balanced's dec_conv4a (112 channels) keeps up2.
  const compiler::Graph balanced = oidn(Size::Balanced);
  CHECK(up2_for(balanced, ConfigSpace::Heuristic, autotune::values_at_extent(balanced, 1920, 1088), "dec_conv4a"));
}
