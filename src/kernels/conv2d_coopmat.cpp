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
  // From the H100's exhaustive tuning over 4..32 subgroups (bench/RESULTS.md, 2026-11-24): all
  // output channels in one workgroup up to 128 (rounded to the coop N), else tiles of 64; the
  // largest pixel tile that fits on as many subgroups as it has fragments (the big 8-subgroup
  // configurations need ~150 registers per invocation, one workgroup per SM, so more subgroups
  // per tile are more warps in flight). Then smaller tiles on 8 subgroups where shared memory
  // or the workgroup size is short, and the other coop N / accumulator where the device lacks
  // the preferred one.
  struct Pick {
    int64_t tile_h, tile_w, sg_m, sg_n, cm_n;
  };
  const int64_t nt = s.c_out <= 8 ? 8 : s.c_out <= 128 ? round_up(s.c_out, 16) : 64;
  std::vector<Pick> picks;
  if (nt == 8) picks = {{8, 32, 16, 1, 8}};
  else if (nt <= 32) picks = {{8, 64, 32, 1, 16}, {8, 64, 16, 1, 16}};
  else if (nt == 48) picks = {{8, 32, 8, 2, 8}};
  else if (nt == 64) picks = {{4, 64, 8, 2, 16}, {8, 32, 8, 2, 16}};
  else if ((nt / 16) % 2 == 0) picks = {{4, 32, 8, 2, 16}};  // 96, 128
  else picks = {{8, 16, 8, 1, 16}};                           // 80, 112
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{4, 32}, {8, 16}, {4, 16}, {2, 16}})
    picks.push_back({th, tw, std::min<int64_t>(8, th * tw / 16), 1, nt == 8 ? 8 : 16});
  for (bool acc_f16 : {target.prefer_f16_accumulate, !target.prefer_f16_accumulate}) {
    for (const Pick& p : picks) {
      for (int64_t cm_n : {p.cm_n, p.cm_n == 16 ? int64_t{8} : int64_t{16}}) {
        CoopConvConfig c;
        c.tile_h = p.tile_h, c.tile_w = p.tile_w, c.sg_m = p.sg_m, c.sg_n = p.sg_n;
        c.nt = nt, c.cm_n = cm_n, c.acc_f16 = acc_f16;
        if (c.nt == 8 && cm_n == 16) continue;
        if (coop_config_fits(c, s, target, even_tile_h)) return c;
      }
    }
  }
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
