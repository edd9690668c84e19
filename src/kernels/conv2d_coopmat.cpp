#include "kernels/conv2d_coopmat.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace denox::kernels {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

bool CoopConvConfig::valid() const {
  if (tile_h < 1 || tile_w < 16 || tile_w % 16 != 0 || ck < 16 || ck % 16 != 0) return false;
  if (cm_n != 16 && cm_n != 8) return false;
  if (sg_m < 1 || sg_n < 1 || nt < cm_n || nt % (cm_n * sg_n) != 0) return false;
  return m_frags() % sg_m == 0;
}

int64_t CoopConvConfig::shared_bytes(int64_t kh, int64_t kw) const {
  const int64_t halo = (tile_h + kh - 1) * (tile_w + kw - 1);
  const int64_t stage = b_global ? 2 * halo * (ck + 8) : halo * (ck + 8) + kh * kw * ck * (nt + 8);
  const int64_t out = nt * (tile_h * tile_w + 8);
  return 2 * std::max(stage, out);
}

std::string CoopConvConfig::describe() const {
  return std::to_string(tile_h) + "x" + std::to_string(tile_w) + " nt" + std::to_string(nt) + " ck" + std::to_string(ck) + " sg" +
         std::to_string(sg_m) + "x" + std::to_string(sg_n) + " 16x" + std::to_string(cm_n) + "x16 " + (acc_f16 ? "f16acc" : "f32acc") +
         (b_global ? " bglobal" : "");
}

bool CoopTarget::supports(const CoopMatrixShape& s) const { return std::find(shapes.begin(), shapes.end(), s) != shapes.end(); }

bool coop_conv_applicable(const Conv2dShape& s) {
  return s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1 && s.kh >= 1 && s.kw >= 1 && s.kh <= 7 && s.kw <= 7 && s.c_in >= 1 &&
         s.c_out >= 1;
}

bool coop_config_fits(const CoopConvConfig& c, const Conv2dShape& s, const CoopTarget& target, bool even_tile_h) {
  if (!c.valid() || !coop_conv_applicable(s) || !target.supports(c.shape())) return false;
  if (target.subgroup_size == 0 || c.subgroups() * target.subgroup_size > 1024) return false;
  if (even_tile_h && c.tile_h % 2 != 0) return false;
  return c.shared_bytes(s.kh, s.kw) <= target.max_shared_bytes;
}

std::optional<CoopConvConfig> choose_coop_config(const Conv2dShape& s, const CoopTarget& target, bool even_tile_h) {
  if (!coop_conv_applicable(s)) return std::nullopt;
  // From the H100 sweep of bench/conv_layers.cpp (bench/RESULTS.md): all output channels in one
  // workgroup up to 128 (rounded to the coop N), else tiles of 64; 8 subgroups; wide, short
  // pixel tiles (4x32, 8x32) beat 16x16 (more workgroups in flight, shorter halo rows); narrow
  // layers prefer the 16x8x16 shape. Then smaller tiles where shared memory is short, and the
  // other coop N / accumulator where the device lacks the preferred one.
  std::vector<CoopConvConfig> candidates;
  for (bool acc_f16 : {target.prefer_f16_accumulate, !target.prefer_f16_accumulate}) {
    for (int64_t cm_n : {int64_t{16}, int64_t{8}}) {
      CoopConvConfig c;
      c.acc_f16 = acc_f16;
      c.cm_n = cm_n;
      c.nt = s.c_out <= 8 ? 8 : s.c_out <= 128 ? round_up(s.c_out, 16) : 64;
      if (c.nt == 8 && cm_n == 16) continue;
      const int64_t n_frags = c.nt / 16;
      c.sg_n = n_frags % 2 == 0 && n_frags >= 4 ? 2 : 1;  // 64, 96, 128: 2 along N
      std::vector<std::pair<int64_t, int64_t>> tiles;
      if (c.nt <= 32) {
        tiles = {{4, 32}, {8, 16}};
        if (cm_n == 16 && target.supports({16, 8, 16, acc_f16})) c.cm_n = 8;  // narrow N: 16x8x16 first
      } else if (c.nt <= 64) {
        tiles = {{4, 64}, {8, 32}, {8, 16}};
      } else {
        tiles = {{4, 32}, {8, 16}};
      }
      for (auto t : {std::pair<int64_t, int64_t>{4, 16}, {2, 16}}) tiles.push_back(t);
      for (auto [th, tw] : tiles) {
        c.tile_h = th, c.tile_w = tw;
        c.sg_m = std::min<int64_t>(8 / c.sg_n, c.m_frags());
        candidates.push_back(c);
      }
    }
  }
  for (const CoopConvConfig& c : candidates)
    if (coop_config_fits(c, s, target, even_tile_h)) return c;
  return std::nullopt;
}

std::vector<float> pack_coop_weights(std::span<const float> w, const Conv2dShape& s, const CoopConvConfig& c) {
  const int64_t kk = s.kh * s.kw;
  if (static_cast<int64_t>(w.size()) != s.c_out * s.c_in * kk)
    fail(ErrorCode::Internal, "convolution weights have " + std::to_string(w.size()) + " values, expected " +
                                  std::to_string(s.c_out * s.c_in * kk));
  const int64_t co_tiles = (s.c_out + c.nt - 1) / c.nt, chunks = (s.c_in + c.ck - 1) / c.ck;
  std::vector<float> packed(static_cast<size_t>(co_tiles * chunks * kk * c.ck * c.nt), 0.0f);
  for (int64_t co = 0; co < s.c_out; ++co) {
    const int64_t tile = co / c.nt, j = co % c.nt;
    for (int64_t ci = 0; ci < s.c_in; ++ci) {
      const int64_t chunk = ci / c.ck, k = ci % c.ck;
      for (int64_t tap = 0; tap < kk; ++tap) {
        const int64_t dst = (((tile * chunks + chunk) * kk + tap) * c.ck + k) * c.nt + j;
        packed[static_cast<size_t>(dst)] = w[static_cast<size_t>((co * s.c_in + ci) * kk + tap)];
      }
    }
  }
  return packed;
}

}  // namespace denox::kernels
