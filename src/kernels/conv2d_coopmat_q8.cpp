#include "kernels/conv2d_coopmat_q8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/half.hpp"
#include "kernels/plan_builder.hpp"

namespace denox::kernels {

bool q8_config_valid(const CoopConvConfig& c) {
  if (c.one_phase || c.tap_sum || c.epi_passes != 1 || c.a_direct) return false;  // (A_DIRECT: the fp16 shaders only)
  if (c.tile_h < 1 || c.tile_w < 16 || c.tile_w % 16 != 0 || (c.ck != 32 && c.ck != 64)) return false;
  if (c.sg_m < 1 || c.sg_n < 1 || c.nt < 16 || c.nt % (16 * c.sg_n) != 0) return false;
  if (c.up2 && (c.tile_w % 32 != 0 || c.tile_h % 2 != 0 || c.sg_m % 4 != 0 || c.b_global)) return false;
  return c.m_frags() % c.sg_m == 0;
}

int64_t q8_shared_bytes(const CoopConvConfig& c, int64_t kh, int64_t kw) {
  // In 16-byte vectors (the shader's SMEM_V): the patch and the staged weights, each row padded
  // by one vector, or the fp16 accumulators (pixel rows of nt halves, padded likewise). up2: also
  // X0's stage, the low-resolution patch and 16 phase blocks of weights.
  const int64_t row = c.ck / 16 + 1;
  const int64_t stage = (c.tile_h + kh - 1) * (c.tile_w + kw - 1) * row + (c.b_global ? 0 : kh * kw * c.nt * row);
  const int64_t stage0 = c.up2 ? (c.tile_h / 2 + 2) * (c.tile_w / 2 + 2) * row + 16 * c.nt * row : 0;
  const int64_t out = c.tile_h * c.tile_w * (c.nt / 8 + 1);
  return 16 * std::max({stage, stage0, out});
}

bool q8_config_fits(const CoopConvConfig& c, const Conv2dShape& s, const CoopTarget& target, bool even_tile_h, bool emulate) {
  if (!c.q8 || !q8_config_valid(c) || !coop_conv_applicable(s) || (!target.int8 && !emulate)) return false;
  if (target.subgroup_size == 0 || c.subgroups() * target.subgroup_size > 1024) return false;
  // The emulation's lanes hold accumulator pairs: 128 pairs a fragment, whole per lane.
  if (emulate && (target.subgroup_size > 128 || 128 % target.subgroup_size != 0)) return false;
  if (even_tile_h && c.tile_h % 2 != 0) return false;
  if (c.up2 && (s.kh != 3 || s.kw != 3 || even_tile_h)) return false;  // (PHASES: no fused pool)
  return q8_shared_bytes(c, s.kh, s.kw) <= target.max_shared_bytes;
}

int64_t q8_tail_shared_bytes(const CoopConvConfig& c, const Conv2dShape& s, const CoopTail& tail) {
  const int64_t row = c.ck / 16 + 1;
  const int64_t stage = (c.tile_h + s.kh - 1) * (c.tile_w + s.kw - 1) * row + (c.b_global ? 0 : s.kh * s.kw * c.nt * row);
  const int64_t rows = c.tile_h * c.tile_w * (std::max(c.nt, tail.t_nt) + 8) / 8;
  return 16 * std::max(stage, rows) + 2 * tail.t_k * (tail.t_nt + 8);
}

bool q8_tail_fits(const CoopConvConfig& c, const Conv2dShape& s, const CoopTail& tail, const CoopTarget& target, bool emulate) {
  if (!q8_config_fits(c, s, target, false, emulate) || c.up2 || c.b_global || c.sg_n != 1 || c.nt < s.c_out || c.tile_h < 2) return false;
  if (tail.cout < 1 || tail.t_k > c.nt || tail.t_nt > 64) return false;
  return q8_tail_shared_bytes(c, s, tail) <= target.max_shared_bytes;
}

namespace {

CoopConvConfig q8_config(int64_t tile_h, int64_t tile_w, int64_t nt, int64_t ck, int64_t sg_m, int64_t sg_n, bool b_global) {
  CoopConvConfig c;
  c.q8 = true;
  c.tile_h = tile_h, c.tile_w = tile_w, c.nt = nt, c.ck = ck, c.sg_m = sg_m, c.sg_n = sg_n, c.b_global = b_global;
  c.cm_n = 16, c.acc_f16 = false;
  return c;
}

// A weight in units of its channel's scale as an int8 code (symmetric: -127..127).
int8_t weight_code(double scaled) { return static_cast<int8_t>(std::clamp(std::nearbyint(scaled), -127.0, 127.0)); }

// The largest |phase weight| (up2_phase_weight) of output channel n over X0's channels [0, c0).
double max_phase_weight(std::span<const float> w, const Conv2dShape& s, int64_t n, int64_t c0) {
  double m = 0.0;
  for (int64_t k = 0; k < c0; ++k)
    for (int64_t ph = 0; ph < 4; ++ph)
      for (int64_t tap = 0; tap < 4; ++tap)
        m = std::max(m, std::abs(up2_phase_weight<double>(&w[static_cast<size_t>((n * s.c_in + k) * 9)], ph, tap)));
  return m;
}

}  // namespace

std::vector<CoopConvConfig> q8_configs(const Conv2dShape& s, const CoopTarget& target, bool even_tile_h, bool emulate, bool all,
                                       const CoopTail* tail, int64_t pixels) {
  auto fits = [&](const CoopConvConfig& c) {
    return tail ? q8_tail_fits(c, s, *tail, target, emulate) : q8_config_fits(c, s, target, even_tile_h, emulate);
  };
  // The heuristic: bench/int8_probe's winner on every OIDN layer it measured on the H100
  // (16x32 pixels, nt32, ck32, 8 subgroups of 4x2 fragments, B staged: bench/RESULTS.md,
  // 2026-11-26 third session), then smaller tiles for devices with less shared memory.
  const int64_t nt = s.c_out <= 16 ? 16 : 32;
  // A wider channel tile first where it pads c_out less than tiles of 32 (48 channels: one tile
  // of 48), or no more (64, 112: tiles of 64), on 16x16 pixels (the 16x32 tile's stage would not
  // fit 48 KB with more than 32 channels of weights): 64 on 8 x 2 subgroups of 2 x 2 fragments,
  // 48 on 8 x 1 subgroups of 2 x 3. On the H100: dec_conv2a 0.186 -> 0.170 ms, dec_conv2b 0.116
  // -> 0.112, dec_conv4a 0.049 -> 0.044, enc_conv2 (48) 0.077 -> 0.067; where 64 or 48 pad more
  // (80, 96 channels) they lost (bench/RESULTS.md, 2026-11-27 second session).
  auto padded = [&](int64_t tile) { return (s.c_out + tile - 1) / tile * tile; };
  const int64_t wide = s.c_out <= 32                                          ? 0
                       : padded(48) < std::min(padded(32), padded(64)) ? 48
                       : padded(64) <= padded(32)                        ? 64
                                                                         : 0;
  // The emulation (COOP_EMULATE, tests on llvmpipe): Debian 12's llvmpipe (Mesa 22.3, 8-wide
  // subgroups) writes garbage (inf or rel L2 ~1.9) where a subgroup holds 7 or more accumulator
  // fragments (FM x FN: 224+ ints a lane) and the workgroup loops over more than one chunk; 6
  // fragments, or one chunk, come out right (2026-11-27 fifth session). Mesa 25's llvmpipe and
  // the H100 run such configurations right (tests [q8-emulate-mesa25] and [q8]; int8.md). So
  // emulated plans take one B fragment per subgroup and 4 fragments: the same staging, packing
  // and epilogue, right on either llvmpipe.
  if (emulate && !all)
    for (const CoopConvConfig& c : {q8_config(8, 32, nt, 32, 4, nt / 16, false), q8_config(8, 16, nt, 32, 2, nt / 16, false)})
      if (fits(c)) return {c};
  // A tail takes one subgroup column, so several B fragments: emulated, only where one chunk
  // covers the input channels.
  if (emulate && tail && s.c_in > 32) return {};
  std::vector<CoopConvConfig> order;
  // 64-channel tiles without a pool on 4 x 2 subgroups of 4 x 2 fragments (256 bytes of shared-
  // memory fragments a multiply, 8 x 2's 2 x 2 load 427): on the H200 dec_conv2b 0.1080 ->
  // 0.1021 ms, dec_conv4b 0.0376 -> 0.0371; with a pool (enc_conv3) 0.0312 -> 0.0317, one
  // reading near the noise, so pooled convs keep 8 x 2 (bench/RESULTS.md, 2026-11-29 nineteenth
  // session). Timed on plain 3x3 convs only; a fused concat or upsample (OIDN's take PHASES or
  // the fp16 up2 conv instead) gets it untimed, and the tuner times both.
  if (wide == 64 && !even_tile_h) order.push_back(q8_config(16, 16, 64, 32, 4, 2, false));
  if (wide == 64) order.push_back(q8_config(16, 16, 64, 32, 8, 2, false));
  if (wide == 48) order.push_back(q8_config(16, 16, 48, 32, 8, 1, false));
  // With a pool, 32-channel tiles of 16x32 pixels on 16 x 1 subgroups (97 registers, not 131):
  // on the H100 as fast as 8 x 1 on every pooled layer or faster (enc_conv4 0.0214 -> 0.0196 ms,
  // 2026-11-27 fifth session), and in the network on the H200 (tuned plans, twenty-third session's
  // int8 data) OIDN small's enc_conv2 took it at every size, 0.0251 -> 0.0225, 0.0424 -> 0.0400
  // and 0.1522 -> 0.1447 ms at 1280x720, 1920x1088 and 3840x2160, and balanced's enc_conv4 at
  // 1920x1088 and 3840x2160 (0.0208 -> 0.0177). Same-call A/B of the heuristic plans: 0-0.3%
  // faster (bench/RESULTS.md, 2026-11-29 twenty-fourth session). Without a pool 16 x 1 lost
  // (dec_conv3b, dec_conv2b, dec_conv1b's tail).
  if (even_tile_h && wide == 0 && nt == 32) order.push_back(q8_config(16, 32, nt, 32, 16, 1, false));
  // Tiny plain layers (OIDN's 1/16, enc_conv5a/5b: 8160 pixels at 1920x1088) on 8x16 pixels, 4
  // subgroups of 2 x 2 fragments: 16x32 tiles leave most SMs idle there. The H200's tuned plans
  // took it for balanced's at 1280x720 and small's at 1920x1088 and 3840x2160 (balanced's at
  // 1920x1088 took 8x32 on 8 x 1, small's at 1280x720 2x16 on one subgroup). Same-call A/B of
  // the heuristic plans: 0.9% (balanced) and 1.2% (small) faster at 1280x720, 0.3-0.4% at
  // 1920x1088, 0.06-0.09% at 3840x2160, though balanced's dec_conv3b, which then no longer
  // shares a pipeline with them, starts cold (+2.4-2.9 us; twenty-fourth session). A wider rule
  // that also moved the 1/8 layers lost at 3840x2160 (twenty-third session).
  if (tiny_conv(pixels) && !even_tile_h && !tail && wide == 0 && nt == 32) order.push_back(q8_config(8, 16, nt, 32, 4, 1, false));
  for (const CoopConvConfig& c : {q8_config(16, 32, nt, 32, 8, 1, false), q8_config(8, 32, nt, 32, 4, 1, false),
                                  q8_config(16, 16, nt, 32, 4, 1, false), q8_config(8, 16, nt, 32, 2, 1, false),
                                  q8_config(2, 16, 16, 32, 1, 1, false)})
    order.push_back(c);
  if (all) {  // the tuner's alternatives: wider channel tiles, longer chunks, B from the buffer
    for (const CoopConvConfig& c :
         {q8_config(16, 32, 64, 32, 8, 2, false), q8_config(16, 32, 32, 32, 4, 2, false), q8_config(16, 32, 32, 32, 8, 1, true),
          q8_config(16, 32, 64, 64, 8, 2, true), q8_config(8, 32, 64, 64, 4, 2, false), q8_config(16, 16, 64, 64, 4, 2, false),
          q8_config(32, 32, 32, 32, 8, 1, true), q8_config(16, 16, 64, 32, 8, 2, false), q8_config(16, 16, nt, 32, 8, 1, false),
          q8_config(8, 32, nt, 32, 8, 1, false), q8_config(16, 16, 48, 32, 8, 1, false),
          // 16 subgroups of 2 fragments: enc_conv4 (64 -> 80 + pool, 1/8 resolution) 0.0214 ->
          // 0.0196 ms on the H100, where fewer registers a subgroup (97, not 131) matter; slower on
          // the larger layers (bench/RESULTS.md, 2026-11-27 fifth session).
          q8_config(16, 32, nt, 32, 16, 1, false),
          // 8x16 pixels on 4 subgroups of 2 x 2 fragments (staged B, ~22 KB: two workgroups an SM):
          // dec_conv4b (1/8 resolution) 0.0367 -> 0.0347 ms on the H100; 20-60% slower on the
          // larger layers (bench/RESULTS.md, 2026-11-27 sixth session).
          q8_config(8, 16, nt, 32, 4, 1, false), q8_config(16, 16, 64, 32, 4, 2, false)})
      order.push_back(c);
  }
  std::vector<CoopConvConfig> out;
  for (const CoopConvConfig& c : order) {
    if (!fits(c) || std::find(out.begin(), out.end(), c) != out.end()) continue;
    out.push_back(c);
    if (!all) break;
  }
  return out;
}

std::vector<CoopConvConfig> q8_phase_configs(const Conv2dShape& s, const CoopTarget& target, bool emulate, bool all) {
  auto phases = [](CoopConvConfig c) {
    c.up2 = true;
    return c;
  };
  auto fits = [&](const CoopConvConfig& c) { return q8_config_fits(c, s, target, false, emulate); };
  // X0's stage holds 16 blocks of phase weights: 32 output channels of them fit 48 KB beside
  // the patch, 64 do not. On the H100 (OIDN balanced at 1920x1088, bench/RESULTS.md, 2026-11-27
  // fourth session) 16x32 pixels on 16 subgroups of one column ran dec_conv2a in 0.148 ms against
  // the plain int8 conv's best 0.167, dec_conv3a 0.078 (0.085), dec_conv4a 0.040 (0.043); 8 x 1
  // subgroups were as fast before X1's parity split and 1-3% slower after it, 8x32 tiles and 8 x 2
  // subgroups slower. Emulated (q8_configs says why): one B fragment per subgroup.
  if (emulate && !all) {
    const CoopConvConfig c = phases(q8_config(8, 32, 32, 32, 4, 2, false));
    return fits(c) ? std::vector<CoopConvConfig>{c} : std::vector<CoopConvConfig>{};
  }
  std::vector<CoopConvConfig> order = {phases(q8_config(16, 32, 32, 32, 16, 1, false)), phases(q8_config(16, 32, 32, 32, 8, 1, false))};
  if (all)
    for (const CoopConvConfig& c : {q8_config(16, 32, 32, 32, 8, 2, false), q8_config(8, 32, 32, 32, 4, 1, false),
                                    q8_config(8, 32, 32, 32, 8, 1, false)})
      order.push_back(phases(c));
  std::vector<CoopConvConfig> out;
  for (const CoopConvConfig& c : order) {
    if (!fits(c)) continue;
    out.push_back(c);
    if (!all) break;
  }
  return out;
}

Q8ConvConstants quantize_q8_conv(std::span<const float> w, std::span<const float> bias, const Conv2dShape& s, int64_t c0,
                                 const TensorQuant& x0, const TensorQuant& x1, const CoopConvConfig& c) {
  const int64_t kk = s.kh * s.kw, co_tiles = (s.c_out + c.nt - 1) / c.nt, chunks = (s.c_in + c.ck - 1) / c.ck;
  auto ratio = [&](int64_t k) { return k < c0 ? 1.0 : static_cast<double>(x1.scale) / x0.scale; };
  auto weight = [&](int64_t n, int64_t k, int64_t tap) { return static_cast<double>(w[static_cast<size_t>((n * s.c_in + k) * kk + tap)]); };
  std::vector<double> sw(static_cast<size_t>(s.c_out), 1.0);
  double max_sw = 0.0;
  for (int64_t n = 0; n < s.c_out; ++n) {
    double m = 0.0;
    for (int64_t k = 0; k < s.c_in; ++k)
      for (int64_t tap = 0; tap < kk; ++tap) m = std::max(m, std::abs(weight(n, k, tap) * ratio(k)));
    sw[static_cast<size_t>(n)] = m > 0.0 && std::isfinite(m) ? m / 127.0 : 1.0;
    max_sw = std::max(max_sw, sw[static_cast<size_t>(n)]);
  }
  Q8ConvConstants out;
  out.prescale = static_cast<float>(x0.scale * max_sw);
  out.packed.assign(static_cast<size_t>(co_tiles * chunks * kk * c.nt * c.ck), 0);
  out.acc_start.assign(static_cast<size_t>(co_tiles * c.nt * 16), 0);
  out.epilogue.assign(static_cast<size_t>(co_tiles * c.nt * 2), 0.0f);
  for (int64_t n = 0; n < s.c_out; ++n) {
    const int64_t ct = n / c.nt, nn = n % c.nt;
    const double inv = 1.0 / sw[static_cast<size_t>(n)];
    int64_t correction = 0;
    for (int64_t k = 0; k < s.c_in; ++k) {
      const int64_t z = k < c0 ? x0.zero_point : x1.zero_point, ch = k / c.ck, kc = k % c.ck;
      for (int64_t tap = 0; tap < kk; ++tap) {
        const int8_t q = weight_code(weight(n, k, tap) * ratio(k) * inv);
        correction -= static_cast<int64_t>(q) * z;
        std::memcpy(&out.packed[static_cast<size_t>((((ct * chunks + ch) * kk + tap) * c.nt + nn) * c.ck + kc)], &q, 1);
      }
    }
    for (int64_t row = 0; row < 16; ++row)
      out.acc_start[static_cast<size_t>((ct * (c.nt / 16) + nn / 16) * 256 + row * 16 + nn % 16)] = static_cast<int32_t>(correction);
    out.epilogue[static_cast<size_t>(2 * n)] = static_cast<float>(sw[static_cast<size_t>(n)] / max_sw);
    out.epilogue[static_cast<size_t>(2 * n + 1)] = bias.empty() ? 0.0f : bias[static_cast<size_t>(n)];
  }
  return out;
}

std::optional<std::vector<float>> fold_q8_epilogue(Q8ConvConstants& k, int64_t c_out) {
  // Channel n's start in `row` of its 16x16 block: acc_start's [co_tile][nt / 16][16][16] is
  // [n / 16][16][16] (nt is a multiple of 16).
  auto start_at = [](int64_t n, int64_t row) { return static_cast<size_t>((n / 16) * 256 + row * 16 + n % 16); };
  std::vector<float> factors(static_cast<size_t>(c_out));
  std::vector<int64_t> moved(static_cast<size_t>(c_out));
  for (int64_t n = 0; n < c_out; ++n) {
    const double f = k.epilogue[static_cast<size_t>(2 * n)], bias = k.epilogue[static_cast<size_t>(2 * n + 1)];
    const double units = std::nearbyint(bias / (static_cast<double>(k.prescale) * f));
    const int64_t start = k.acc_start[start_at(n, 0)];
    if (!(f >= 1e-3) || !std::isfinite(units) || std::abs(units + static_cast<double>(start)) > 1e9) return std::nullopt;
    factors[static_cast<size_t>(n)] = static_cast<float>(f);
    moved[static_cast<size_t>(n)] = static_cast<int64_t>(units);
  }
  for (int64_t n = 0; n < c_out; ++n) {
    for (int64_t row = 0; row < 16; ++row) k.acc_start[start_at(n, row)] += static_cast<int32_t>(moved[static_cast<size_t>(n)]);
    k.epilogue[static_cast<size_t>(2 * n)] = 1.0f, k.epilogue[static_cast<size_t>(2 * n + 1)] = 0.0f;
  }
  return factors;
}

Q8ConvConstants quantize_q8_phases(std::span<const float> w, std::span<const float> bias, const Conv2dShape& s, int64_t c0,
                                   const TensorQuant& x0, const TensorQuant& x1, const CoopConvConfig& c) {
  if (!c.q8 || !c.up2 || s.kh != 3 || s.kw != 3 || c0 < 1 || c0 >= s.c_in)
    fail(ErrorCode::Internal, "conv2d_coopmat_q8 by phases needs an up2 configuration, a 3x3 kernel and both sources");
  const int64_t co_tiles = (s.c_out + c.nt - 1) / c.nt, n0 = (c0 + c.ck - 1) / c.ck, n1 = (s.c_in - c0 + c.ck - 1) / c.ck;
  const int64_t x0_chunk = 16 * c.nt * c.ck, x1_chunk = 9 * c.nt * c.ck, tile_bytes = n0 * x0_chunk + n1 * x1_chunk;
  // X1's channels are read as codes of X1's scale: folded into their weights (quantize_q8_conv).
  const double ratio = static_cast<double>(x1.scale) / x0.scale;
  auto x0_weight = [&](int64_t n, int64_t k, int64_t ph, int64_t tap) {
    return up2_phase_weight<double>(&w[static_cast<size_t>((n * s.c_in + k) * 9)], ph, tap);
  };
  auto x1_weight = [&](int64_t n, int64_t k, int64_t tap) { return static_cast<double>(w[static_cast<size_t>((n * s.c_in + k) * 9 + tap)]) * ratio; };
  std::vector<double> sw(static_cast<size_t>(s.c_out), 1.0);
  double max_sw = 0.0;
  for (int64_t n = 0; n < s.c_out; ++n) {
    double m = max_phase_weight(w, s, n, c0);
    for (int64_t k = c0; k < s.c_in; ++k)
      for (int64_t tap = 0; tap < 9; ++tap) m = std::max(m, std::abs(x1_weight(n, k, tap)));
    sw[static_cast<size_t>(n)] = m > 0.0 && std::isfinite(m) ? m / 127.0 : 1.0;
    max_sw = std::max(max_sw, sw[static_cast<size_t>(n)]);
  }
  Q8ConvConstants out;
  out.prescale = static_cast<float>(x0.scale * max_sw);
  out.packed.assign(static_cast<size_t>(co_tiles * tile_bytes), 0);
  out.acc_start.assign(static_cast<size_t>(4 * co_tiles * c.nt * 16), 0);
  out.epilogue.assign(static_cast<size_t>(co_tiles * c.nt * 2), 0.0f);
  for (int64_t n = 0; n < s.c_out; ++n) {
    const int64_t ct = n / c.nt, nn = n % c.nt;
    const double inv = 1.0 / sw[static_cast<size_t>(n)];
    // X1's correction, the same for every phase.
    int64_t x1_correction = 0;
    for (int64_t k = c0; k < s.c_in; ++k)
      for (int64_t tap = 0; tap < 9; ++tap) {
        const int8_t q = weight_code(x1_weight(n, k, tap) * inv);
        x1_correction -= static_cast<int64_t>(q) * x1.zero_point;
        const int64_t kc = k - c0, at = ct * tile_bytes + n0 * x0_chunk + (kc / c.ck) * x1_chunk + (tap * c.nt + nn) * c.ck + kc % c.ck;
        std::memcpy(&out.packed[static_cast<size_t>(at)], &q, 1);
      }
    for (int64_t ph = 0; ph < 4; ++ph) {
      int64_t correction = x1_correction;
      for (int64_t k = 0; k < c0; ++k)
        for (int64_t tap = 0; tap < 4; ++tap) {
          const int8_t q = weight_code(x0_weight(n, k, ph, tap) * inv);
          correction -= static_cast<int64_t>(q) * x0.zero_point;
          const int64_t at = ct * tile_bytes + (k / c.ck) * x0_chunk + ((ph * 4 + tap) * c.nt + nn) * c.ck + k % c.ck;
          std::memcpy(&out.packed[static_cast<size_t>(at)], &q, 1);
        }
      for (int64_t row = 0; row < 16; ++row)
        out.acc_start[static_cast<size_t>(((ph * co_tiles + ct) * (c.nt / 16) + nn / 16) * 256 + row * 16 + nn % 16)] =
            static_cast<int32_t>(correction);
    }
    out.epilogue[static_cast<size_t>(2 * n)] = static_cast<float>(sw[static_cast<size_t>(n)] / max_sw);
    out.epilogue[static_cast<size_t>(2 * n + 1)] = bias.empty() ? 0.0f : bias[static_cast<size_t>(n)];
  }
  return out;
}

bool up2_q8_fits(const CoopConvConfig& c, const CoopTarget& target, bool emulate) {
  if (!c.up2 || !c.one_phase || c.cm_n != 16 || c.q8 || c.a_direct || (!target.int8 && !emulate)) return false;
  if (emulate && (target.subgroup_size == 0 || 256 % target.subgroup_size != 0)) return false;
  // Emulated, one B fragment per subgroup: with more, and more than one X0 chunk, Debian 12's
  // llvmpipe (Mesa 22.3) computes garbage, as for conv2d_coopmat_q8 (q8_configs says more).
  if (emulate && c.nt != 16 * c.sg_n) return false;
  // The int8 X0 stage: the (tile + 1)^2 patch and 4 taps x nt weight rows, 48 bytes each; the
  // rest (skip stage, epilogue staging) as the fp16 configuration declares it.
  const int64_t q8_stage = 48 * ((c.tile_h + 1) * (c.tile_w + 1) + 4 * c.nt);
  return std::max(q8_stage, c.shared_bytes(3, 3)) <= target.max_shared_bytes;
}

Q8ConvConstants quantize_q8_up2(std::span<const float> w, std::span<const float> bias, const Conv2dShape& s, int64_t c0,
                                const TensorQuant& x0, const CoopConvConfig& c) {
  if (!c.up2 || !c.one_phase || c.cm_n != 16 || s.kh != 3 || s.kw != 3 || c0 < 1 || c0 > s.c_in || c0 % 16 != 0)
    fail(ErrorCode::Internal, "conv2d_coopmat_up2 with an int8 X0 needs a one-phase 16-column configuration, a 3x3 kernel and c0 % 16 == 0");
  const int64_t co_tiles = (s.c_out + c.nt - 1) / c.nt, chunks = (c0 + 31) / 32;
  auto phase_weight = [&](int64_t n, int64_t k, int64_t ph, int64_t tap) {
    return up2_phase_weight<double>(&w[static_cast<size_t>((n * s.c_in + k) * 9)], ph, tap);
  };
  std::vector<double> sw(static_cast<size_t>(s.c_out), 1.0);
  double max_sw = 0.0;
  for (int64_t n = 0; n < s.c_out; ++n) {
    const double m = max_phase_weight(w, s, n, c0);
    sw[static_cast<size_t>(n)] = m > 0.0 && std::isfinite(m) ? m / 127.0 : 0.0;
    max_sw = std::max(max_sw, sw[static_cast<size_t>(n)]);
  }
  if (!(max_sw > 0.0)) max_sw = 1.0;
  // A channel whose X0 weights are (nearly) zero keeps a scale of 1/1000 of the largest, so
  // that its skip weights, divided by its factor, stay far inside fp16's range.
  for (double& v : sw) v = std::max(v, 1e-3 * max_sw);

  // The skip's fp16 blocks: pack_coop_up2_weights' layout, read from its tiles after the fp16 X0
  // chunks (which are not used).
  std::vector<float> scaled(w.begin(), w.end());
  for (int64_t n = 0; n < s.c_out; ++n)
    for (int64_t k = c0; k < s.c_in; ++k)
      for (int64_t tap = 0; tap < 9; ++tap) scaled[static_cast<size_t>((n * s.c_in + k) * 9 + tap)] *= static_cast<float>(max_sw / sw[static_cast<size_t>(n)]);
  const std::vector<float> fp16 = pack_coop_up2_weights(scaled, s, c0, c);
  const int64_t fp16_tile = static_cast<int64_t>(fp16.size()) / co_tiles, fp16_up = (c0 + c.ck - 1) / c.ck * 16 * c.ck * c.nt;
  const int64_t skip_halves = fp16_tile - fp16_up, q8_bytes = chunks * 16 * c.nt * 32, tile_bytes = q8_bytes + 2 * skip_halves;

  Q8ConvConstants out;
  out.prescale = static_cast<float>(x0.scale * max_sw);
  out.packed.assign(static_cast<size_t>(co_tiles * tile_bytes), 0);
  out.acc_start.assign(static_cast<size_t>(co_tiles * 4 * c.nt * 16), 0);
  out.epilogue.assign(static_cast<size_t>(co_tiles * c.nt * 2), 0.0f);
  for (int64_t ct = 0; ct < co_tiles; ++ct)
    for (int64_t i = 0; i < skip_halves; ++i) {
      const uint16_t h = float_to_half(fp16[static_cast<size_t>(ct * fp16_tile + fp16_up + i)]);
      std::memcpy(&out.packed[static_cast<size_t>(ct * tile_bytes + q8_bytes + 2 * i)], &h, 2);
    }
  for (int64_t n = 0; n < s.c_out; ++n) {
    const int64_t ct = n / c.nt, nn = n % c.nt;
    const double inv = 1.0 / sw[static_cast<size_t>(n)];
    for (int64_t ph = 0; ph < 4; ++ph) {
      int64_t correction = 0;
      for (int64_t k = 0; k < c0; ++k)
        for (int64_t tap = 0; tap < 4; ++tap) {
          const int8_t q = weight_code(phase_weight(n, k, ph, tap) * inv);
          correction -= static_cast<int64_t>(q) * x0.zero_point;
          const int64_t at = ct * tile_bytes + ((((k / 32) * 4 + ph) * 4 + tap) * c.nt + nn) * 32 + k % 32;
          std::memcpy(&out.packed[static_cast<size_t>(at)], &q, 1);
        }
      for (int64_t row = 0; row < 16; ++row)
        out.acc_start[static_cast<size_t>(((ct * 4 + ph) * (c.nt / 16) + nn / 16) * 256 + row * 16 + nn % 16)] = static_cast<int32_t>(correction);
    }
    out.epilogue[static_cast<size_t>(2 * n)] = static_cast<float>(sw[static_cast<size_t>(n)] / max_sw);
    out.epilogue[static_cast<size_t>(2 * n + 1)] = bias.empty() ? 0.0f : bias[static_cast<size_t>(n)];
  }
  return out;
}

}  // namespace denox::kernels
