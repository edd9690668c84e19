// The cooperative-matrix convolutions' weight packing and configuration choice, on the host
// ([coop-plan], no device): the packed blocks each configuration reads, checked against the
// direct convolution, and the configurations the heuristic picks for a device's shapes and
// shared memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/implementations.hpp"

using namespace denox;
using namespace denox::kernels;
using namespace denox::testing;

TEST_CASE("coop weight packing: co_tile x chunk x tap x ck x nt blocks with zeros past Cin and Cout", "[kernels][coop-plan]") {
  const Conv2dShape s{19, 37, 3, 3};
  CoopConvConfig c;
  c.nt = 32, c.ck = 16;
  const std::vector<float> w = random_values(static_cast<size_t>(37 * 19 * 9), 3);
  const std::vector<float> packed = pack_coop_weights(w, s, c);
  const int64_t co_tiles = 2, chunks = 2;
  REQUIRE(packed.size() == static_cast<size_t>(co_tiles * chunks * 9 * 16 * 32));
  size_t nonzero = 0;
  for (int64_t tile = 0; tile < co_tiles; ++tile)
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t tap = 0; tap < 9; ++tap)
        for (int64_t k = 0; k < 16; ++k)
          for (int64_t j = 0; j < 32; ++j) {
            const int64_t co = tile * 32 + j, ci = chunk * 16 + k;
            const float got = packed[static_cast<size_t>((((tile * chunks + chunk) * 9 + tap) * 16 + k) * 32 + j)];
            const float want = co < 37 && ci < 19 ? w[static_cast<size_t>((co * 19 + ci) * 9 + tap)] : 0.0f;
            REQUIRE(got == want);
            nonzero += got != 0.0f;
          }
  CHECK(nonzero == w.size());

  // B read from the buffer (b_global): each tap's block column-major, [nt][ck].
  c.b_global = true;
  const std::vector<float> cols = pack_coop_weights(w, s, c);
  REQUIRE(cols.size() == packed.size());
  for (int64_t block = 0; block < co_tiles * chunks * 9; ++block)
    for (int64_t k = 0; k < 16; ++k)
      for (int64_t j = 0; j < 32; ++j)
        REQUIRE(cols[static_cast<size_t>((block * 32 + j) * 16 + k)] == packed[static_cast<size_t>((block * 16 + k) * 32 + j)]);
}

TEST_CASE("coop narrow packing: taps packed into K (8-half slots read two per A row) give the direct conv", "[kernels][coop-plan]") {
  struct Narrow {
    int64_t c_in, kh, kw, narrow;
  };
  // (9 to 12 channels: planes of 4, one chunk each.)
  for (const Narrow& n : {Narrow{3, 3, 3, 2}, Narrow{4, 3, 3, 2}, Narrow{1, 1, 1, 2}, Narrow{2, 3, 5, 2}, Narrow{6, 3, 3, 1},
                          Narrow{8, 1, 1, 1}, Narrow{5, 2, 7, 1}, Narrow{9, 3, 3, 2}, Narrow{12, 3, 3, 2}, Narrow{11, 1, 5, 2}}) {
    const Conv2dShape s{n.c_in, 11, n.kh, n.kw};
    CoopConvConfig c;
    c.nt = 16;
    INFO("c_in " << n.c_in << ", " << n.kh << "x" << n.kw);
    REQUIRE(coop_narrow(s, c, true) == n.narrow);
    CHECK(coop_narrow(s, c, false) == 0);
    const std::vector<float> w = random_values(static_cast<size_t>(11 * n.c_in * n.kh * n.kw), 5);
    const std::vector<float> packed = pack_coop_weights(w, s, c, n.narrow);
    const int64_t step = n.narrow == 2 ? 3 : 2, ksx = (n.kw + step - 1) / step, per_pixel = 8 / n.narrow;
    const int64_t planes = (n.c_in + per_pixel - 1) / per_pixel;
    REQUIRE(packed.size() == static_cast<size_t>(planes * n.kh * ksx * 16 * 16));
    // One output pixel (patch column 0) over patch rows of kw + 4 pixels x 16 channels, every
    // value random (also past the kernel and past c_in: their weights must be zero).
    const int64_t cols = n.kw + 4;
    const std::vector<float> x = random_values(static_cast<size_t>(n.kh * cols * 16), 6);
    auto at = [&](int64_t ky, int64_t px, int64_t ci) { return x[static_cast<size_t>((ky * cols + px) * 16 + ci)]; };
    for (int64_t co = 0; co < 16; ++co) {
      double direct = 0, packed_sum = 0;
      if (co < 11)
        for (int64_t ci = 0; ci < n.c_in; ++ci)
          for (int64_t ky = 0; ky < n.kh; ++ky)
            for (int64_t kx = 0; kx < n.kw; ++kx) direct += w[static_cast<size_t>(((co * n.c_in + ci) * n.kh + ky) * n.kw + kx)] * at(ky, kx, ci);
      // As the shader multiplies: A row = slots (step * ks) and (step * ks + 1) of patch row ky
      // of plane p; slot sx holds pixel sx (and, narrow 2, pixel sx + 1), the plane's per_pixel
      // channels each.
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t ky = 0; ky < n.kh; ++ky)
          for (int64_t ks = 0; ks < ksx; ++ks)
            for (int64_t k = 0; k < 16; ++k) {
              const int64_t sx = step * ks + k / 8, q = k % 8 / per_pixel, ci = p * per_pixel + k % per_pixel;
              packed_sum += at(ky, sx + q, ci) * packed[static_cast<size_t>((((p * n.kh + ky) * ksx + ks) * 16 + k) * 16 + co)];
            }
      REQUIRE(packed_sum == Approx(direct).margin(1e-5));
    }
  }
}

namespace {

// Output (co, oy, ox) of a 3x3 padding-1 conv with ONNX weights w[c_out][c_in][3][3], summed over
// input channels [first, end) of `in(ci, y, x)` (0 outside the image): the packing tests' reference.
template <class In>
double direct_conv3x3(const std::vector<float>& w, int64_t c_in, int64_t co, int64_t first, int64_t end, int64_t oy, int64_t ox, In in) {
  double sum = 0;
  for (int64_t ci = first; ci < end; ++ci)
    for (int64_t t = 0; t < 9; ++t) sum += w[static_cast<size_t>((co * c_in + ci) * 9 + t)] * in(ci, oy + t / 3 - 1, ox + t % 3 - 1);
  return sum;
}

}  // namespace

TEST_CASE("up2 weight packing: the 4 output phases of conv3x3(upsample2x) as 2x2 convs give the direct result", "[kernels][coop-plan]") {
  // Upsampled X0 (c0 = 19 channels, 5x6 low resolution), full-resolution skip X1 (5 channels),
  // 3x3 padding 1 to 21 outputs: every output pixel computed directly and from the packed
  // phase weights (two channel tiles, two X0 chunks, one X1 chunk) must agree.
  const Conv2dShape s{24, 21, 3, 3};
  const int64_t c0 = 19, lh = 5, lw = 6, h = 2 * lh, w = 2 * lw;
  CoopConvConfig c;
  c.up2 = true, c.nt = 16, c.ck = 16, c.tile_h = 4, c.tile_w = 32, c.sg_m = 4, c.sg_n = 1;
  const std::vector<float> wts = random_values(static_cast<size_t>(21 * 24 * 9), 5);
  const std::vector<float> x0 = random_values(static_cast<size_t>(c0 * lh * lw), 6);
  const std::vector<float> x1 = random_values(static_cast<size_t>((24 - c0) * h * w), 7);
  const std::vector<float> packed = pack_coop_up2_weights(wts, s, c0, c);
  const int64_t cu = 2, cs = 1, tile = cu * 16 * 16 * 16 + cs * 9 * 16 * 16;
  REQUIRE(packed.size() == static_cast<size_t>(2 * tile));
  auto in = [&](int64_t ci, int64_t y, int64_t x) -> double {  // the conv's input, 0 outside
    if (y < 0 || y >= h || x < 0 || x >= w) return 0.0;
    return ci < c0 ? x0[static_cast<size_t>((ci * lh + y / 2) * lw + x / 2)] : x1[static_cast<size_t>(((ci - c0) * h + y) * w + x)];
  };
  auto low = [&](int64_t ci, int64_t y, int64_t x) -> double {
    return y < 0 || y >= lh || x < 0 || x >= lw ? 0.0 : x0[static_cast<size_t>((ci * lh + y) * lw + x)];
  };
  double worst = 0;
  for (int64_t co = 0; co < 21; ++co)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        const double direct = direct_conv3x3(wts, 24, co, 0, 24, oy, ox, in);
        double phased = 0;
        const int64_t py = oy % 2, px = ox % 2, ph = py * 2 + px, base = (co / 16) * tile, j = co % 16;
        for (int64_t ci = 0; ci < c0; ++ci)
          for (int64_t t = 0; t < 4; ++t) {
            const float wp = packed[static_cast<size_t>(base + (ci / 16) * 4096 + ((ph * 4 + t) * 16 + ci % 16) * 16 + j)];
            phased += wp * low(ci, oy / 2 - 1 + py + t / 2, ox / 2 - 1 + px + t % 2);
          }
        for (int64_t ci = c0; ci < 24; ++ci)
          for (int64_t t = 0; t < 9; ++t)
            phased += packed[static_cast<size_t>(base + cu * 4096 + (t * 16 + (ci - c0)) * 16 + j)] * in(ci, oy + t / 3 - 1, ox + t % 3 - 1);
        worst = std::max(worst, std::abs(direct - phased));
      }
  CHECK(worst < 1e-4);
  // Padding: channels past c_in / c_out are zero.
  for (int64_t j = 21 % 16; j < 16; ++j) CHECK(packed[static_cast<size_t>(tile + j)] == 0.0f);
  CHECK(packed[static_cast<size_t>(cu * 4096 + (0 * 16 + 5) * 16)] == 0.0f);  // X1 channel 5 does not exist
  // One phase per workgroup with a skip of more than 12 channels: row steps (SKIP_ROWS) read
  // the same [3x3 tap][ck][nt] skip blocks, the X0 chunks the same phase blocks.
  CoopConvConfig one = c;
  one.one_phase = true, one.tile_w = 16;
  REQUIRE(one.valid());
  const Conv2dShape wide{c0 + 13, 21, 3, 3};
  const std::vector<float> wide_wts = random_values(static_cast<size_t>(21 * (c0 + 13) * 9), 10);
  CHECK(up2_skip_rows(one, 13));
  CHECK_FALSE(up2_skip_rows(one, 12));
  CHECK_FALSE(up2_skip_rows(c, 13));
  CHECK(pack_coop_up2_weights(wide_wts, wide, c0, one) == pack_coop_up2_weights(wide_wts, wide, c0, c));
}

TEST_CASE("one-phase up2 packing: the skip planes' [ky][16][nt] rows (two 2-pixel slots per row) give the direct 3x3 conv",
          "[kernels][coop-plan]") {
  const Conv2dShape s{28, 21, 3, 3};  // 19 upsampled channels + a 9-channel skip (3 planes)
  const int64_t c0 = 19, h = 6, w = 8, planes = 3;
  CoopConvConfig c;
  c.up2 = true, c.one_phase = true, c.nt = 16, c.ck = 16, c.tile_h = 4, c.tile_w = 16, c.sg_m = 4, c.sg_n = 1;
  REQUIRE(c.valid());
  {  // Epilogue passes: one phase only, whole coop-N fragments per pass.
    CoopConvConfig e = c;
    e.epi_passes = 2;
    CHECK_FALSE(e.valid());  // nt 16 is one 16-wide fragment
    e.cm_n = 8;
    CHECK(e.valid());
    CHECK(e.describe().find(" ep2") != std::string::npos);
    e.nt = 64, e.cm_n = 16, e.tile_h = 16;
    const int64_t two = e.shared_bytes(3, 3);
    e.epi_passes = 1;
    CHECK(e.shared_bytes(3, 3) == 36864);  // the 256 x 72-half staging sets the size
    CHECK(two == 23088);                   // the stage buffer does
    e.epi_passes = 3;
    CHECK_FALSE(e.valid());
    e.epi_passes = 2, e.one_phase = false, e.tile_w = 32;
    CHECK_FALSE(e.valid());
  }
  CHECK_FALSE(up2_skip_rows(c, 9));  // at most 12 channels: planes of slots
  const std::vector<float> wts = random_values(static_cast<size_t>(21 * 28 * 9), 8);
  const std::vector<float> x1 = random_values(static_cast<size_t>(9 * h * w), 9);
  const std::vector<float> packed = pack_coop_up2_weights(wts, s, c0, c);
  const int64_t cu = 2, tile = cu * 16 * 16 * 16 + planes * 3 * 16 * 16;
  REQUIRE(packed.size() == static_cast<size_t>(2 * tile));
  auto skip = [&](int64_t ci, int64_t y, int64_t x) -> double {
    return y < 0 || y >= h || x < 0 || x >= w ? 0.0 : x1[static_cast<size_t>((ci * h + y) * w + x)];
  };
  double worst = 0;
  for (int64_t co = 0; co < 21; ++co)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        const double direct = direct_conv3x3(wts, 28, co, c0, 28, oy, ox, [&](int64_t ci, int64_t y, int64_t x) { return skip(ci - c0, y, x); });
        double slots = 0;
        // Row k of K step ky of plane p: slot k / 8 (columns ox - 1 + 2 (k / 8) and + 1), pixel
        // k % 8 / 4, channel 4 p + k % 4 (the 12th channel and the 4th column, kx = 3, read real
        // data here).
        const int64_t j = co % 16;
        for (int64_t p = 0; p < planes; ++p)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t k = 0; k < 16; ++k) {
              const int64_t kx = 2 * (k / 8) + k % 8 / 4, ci = 4 * p + k % 4;
              const double v = ci < 9 ? skip(ci, oy + ky - 1, ox + kx - 1) : 1.0;
              slots += packed[static_cast<size_t>((co / 16) * tile + cu * 4096 + p * 768 + (ky * 16 + k) * 16 + j)] * v;
            }
        worst = std::max(worst, std::abs(direct - slots));
      }
  CHECK(worst < 1e-4);
}

TEST_CASE("coop pruned lists: every id names a template of its space", "[kernels][coop-plan]") {
  // The lists are matched by id, so a typo, or a template the space has lost, would silently
  // take a configuration away from every tuned compile.
  CHECK(coop_pruned_ids_unknown() == std::vector<std::string>{});
}

TEST_CASE("coop configs: valid, within shared memory, only device-reported shapes chosen", "[kernels][coop-plan]") {
  const CoopTarget full = h100_like();
  for (int64_t c_in : {3, 9, 32, 67, 160})
    for (int64_t c_out : {3, 32, 48, 64, 80, 112, 200}) {
      const Conv2dShape s{c_in, c_out, 3, 3};
      for (bool pool : {false, true}) {
        const auto c = choose_coop_config(s, full, pool);
        REQUIRE(c);
        CHECK(c->valid());
        CHECK(coop_config_fits(*c, s, full, pool));
        CHECK(c->shared_bytes(3, 3) <= 49152);
        CHECK(c->subgroups() * 32 <= 1024);
        if (pool) CHECK(c->tile_h % 2 == 0);
      }
    }
  // The phase-decomposed family: 3x3 only, never with a pool, within shared memory.
  for (int64_t c_out : {3, 32, 64, 96, 112, 200}) {
    const Conv2dShape s{c_out + 3, c_out, 3, 3};
    const auto c = choose_coop_up2_config(s, full, 3);
    REQUIRE(c);
    CHECK(c->up2);
    CHECK(c->valid());
    CHECK(coop_config_fits(*c, s, full, false));
    CHECK_FALSE(coop_config_fits(*c, s, full, true));
    CHECK(c->shared_bytes(3, 3) <= 49152);
    CHECK(std::string(c->family()) == "conv2d_coopmat_up2");
  }
  CHECK_FALSE(choose_coop_up2_config({64, 64, 1, 1}, full, 0));
  // One phase per workgroup up to 64 output channels, whatever the skip.
  CHECK(choose_coop_up2_config({67, 64, 3, 3}, full, 3)->one_phase);
  for (int64_t skip : {9, 32}) {  // dec_conv1a with the 9-channel input as its skip: planes; dec_conv2a: rows (~24 KB)
    const auto c = choose_coop_up2_config({64 + skip, 64, 3, 3}, full, skip);
    REQUIRE(c);
    CHECK(c->one_phase);
    CHECK(c->epi_passes == 2);
    CHECK(c->sg_m == (skip > 12 ? 8 : 4));
    CHECK(up2_skip_rows(*c, skip) == (skip > 12));
    CHECK(up2_skip_fits(*c, skip, full));
    CoopTarget small = full;
    small.max_shared_bytes = 23500;  // the row steps need 23808 bytes
    CHECK(up2_skip_fits(*c, 9, small));
    CHECK_FALSE(up2_skip_fits(*c, 32, small));
  }
  // dec_conv1a's heuristic: 16x16 with a two-pass epilogue, within ~30 KB (two workgroups per SM
  // on the H100): the shader's declared size, as the driver reported it.
  CHECK(choose_coop_up2_config({67, 64, 3, 3}, full, 3)->epi_passes == 2);
  CHECK(choose_coop_up2_config({67, 64, 3, 3}, full, 3)->shared_bytes(3, 3) == 23088);
  CHECK(choose_coop_up2_config({64, 64, 3, 3}, full, 0)->one_phase);
  // More than 64 channels: all phases, 16x32 pixels in 32-channel tiles on 16 subgroups of one
  // column, 40 KB (OIDN balanced's dec_conv3a: 112 + 48 -> 96, dec_conv4a: 96 + 64 -> 112). With
  // less shared memory the earlier picks that fit (96: 8x32 in 48-channel tiles; 112: its 4x64
  // tile of 64 channels needs 43 KB, so 8x32 in 32-channel tiles); with 16x8x16 fragments only,
  // the same tile on them.
  CoopTarget below_40k = full;
  below_40k.max_shared_bytes = 40000;
  CoopTarget cm8_only = full;
  cm8_only.shapes = {{16, 8, 16, false}};
  for (auto [c_out, skip, fallback] : {std::tuple<int64_t, int64_t, const char*>{96, 48, "8x32 nt48 ck16 sg8x1 16x16x16 f16acc up2"},
                                       {112, 64, "8x32 nt32 ck16 sg8x2 16x16x16 f16acc up2"}}) {
    const Conv2dShape s{160, c_out, 3, 3};
    const auto c = choose_coop_up2_config(s, full, skip);
    REQUIRE(c);
    CHECK_FALSE(c->one_phase);
    CHECK(c->describe() == "16x32 nt32 ck16 sg16x1 16x16x16 f16acc up2");
    CHECK(c->shared_bytes(3, 3) == 40960);
    // The tuner's pruned list has the tile too (with coop N 8 there: the exhaustive data put it
    // a hair ahead; the heuristic's own pick is always tried as well).
    const std::vector<CoopConvConfig> pruned = coop_up2_configs_pruned(s, full);
    CHECK(std::any_of(pruned.begin(), pruned.end(), [](const CoopConvConfig& p) {
      return p.tile_h == 16 && p.tile_w == 32 && p.nt == 32 && p.sg_m == 16 && p.sg_n == 1 && !p.one_phase;
    }));
    const auto smaller = choose_coop_up2_config(s, below_40k, skip);
    REQUIRE(smaller);
    CHECK(smaller->describe() == fallback);
    const auto cm8 = choose_coop_up2_config(s, cm8_only, skip);
    REQUIRE(cm8);
    CHECK(cm8->describe() == "16x32 nt32 ck16 sg16x1 16x8x16 f32acc up2");
  }
  // Only 16x8x16 with fp32 accumulators: every choice uses it.
  CoopTarget narrow = full;
  narrow.shapes = {{16, 8, 16, false}};
  for (int64_t c_out : {3, 32, 112}) {
    const auto c = choose_coop_config({64, c_out, 3, 3}, narrow, false);
    REQUIRE(c);
    CHECK(c->cm_n == 8);
    CHECK_FALSE(c->acc_f16);
  }
  // Shapes the shader cannot use (16x8x8 only), strides, dilations: nothing.
  CoopTarget odd = full;
  odd.shapes = {{16, 8, 8, true}};
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3}, odd, false));
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3, 2, 2}, full, false));
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3, 1, 1, 2, 2}, full, false));
  // Too little shared memory for any tile.
  CoopTarget tiny = full;
  tiny.max_shared_bytes = 4096;
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3}, tiny, false));
}
