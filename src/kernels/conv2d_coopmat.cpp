#include "kernels/conv2d_coopmat.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"

#include <algorithm>
#include <functional>

#include "common/error.hpp"

namespace denox::kernels {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// A one-phase up2 conv stages a skip of at most this many channels as planes of 4-channel
// slots, a wider one in row steps (up2_skip_rows).
constexpr int64_t kSkipPlaneChannels = 12;

// One candidate of a heuristic's preference list.
struct Pick {
  int64_t tile_h, tile_w, sg_m, sg_n, nt, cm_n;
  bool one_phase = false;
  int64_t epi_passes = 1;
};

// The first pick that fits (and passes `also`, where given), with the preferred accumulator
// first, each pick with its coop N and then the other one (for devices without the preferred shape).
std::optional<CoopConvConfig> first_fitting(const std::vector<Pick>& picks, const Conv2dShape& s, const CoopTarget& target,
                                            bool even_tile_h, bool up2,
                                            const std::function<bool(const CoopConvConfig&)>& also = nullptr) {
  for (bool acc_f16 : {target.prefer_f16_accumulate, !target.prefer_f16_accumulate})
    for (const Pick& p : picks)
      for (int64_t cm_n : {p.cm_n, p.cm_n == 16 ? int64_t{8} : int64_t{16}}) {
        CoopConvConfig c;
        c.tile_h = p.tile_h, c.tile_w = p.tile_w, c.sg_m = p.sg_m, c.sg_n = p.sg_n;
        c.nt = p.nt, c.cm_n = cm_n, c.acc_f16 = acc_f16, c.up2 = up2, c.one_phase = p.one_phase, c.epi_passes = p.epi_passes;
        if (coop_config_fits(c, s, target, even_tile_h) && (!also || also(c))) return c;  // (nt 8 with coop N 16 is not valid())
      }
  return std::nullopt;
}

// `c` with the preferred accumulator, else with the other one (for devices without the
// preferred shape), where `fits` takes it.
std::optional<CoopConvConfig> with_accumulator(CoopConvConfig c, const CoopTarget& target,
                                               const std::function<bool(const CoopConvConfig&)>& fits) {
  for (bool acc_f16 : {target.prefer_f16_accumulate, !target.prefer_f16_accumulate}) {
    c.acc_f16 = acc_f16;
    if (fits(c)) return c;
  }
  return std::nullopt;
}

// conv2d_coopmat.comp's stage buffer in halves (without B_GLOBAL or NARROW, which stage less):
// the patch of one chunk and its weights (A_DIRECT: the weights).
int64_t plain_stage_halves(const CoopConvConfig& c, int64_t kh, int64_t kw) {
  if (c.a_direct) return kh * kw * c.ck * (c.nt + 8);  // the weights alone: no patch
  const int64_t halo = (c.tile_h + kh - 1) * (c.tile_w + kw - 1);
  return halo * (c.ck + 8) + kh * kw * c.ck * (c.nt + 8);
}

// A_DIRECT's weight row of input channel ci in its ck-channel chunk: within each 32 channels, K
// in the order the lanes fill their A fragments (conv2d_coopmat_adirect.glsl's ad_fetch):
// channel 8 t + 4 s + 2 q + b is row 16 s + 2 (t + 4 q) + b.
int64_t a_direct_k(int64_t ci, int64_t ck) {
  const int64_t r = ci % 32;
  return ci % ck - r + 16 * (r / 4 % 2) + 2 * (r / 8 + 4 * (r / 2 % 2)) + r % 2;
}

}  // namespace

bool CoopConvConfig::valid() const {
  if (q8) return q8_config_valid(*this);
  if (tile_h < 1 || tile_w < 16 || tile_w % 16 != 0 || ck < 16 || ck % 16 != 0) return false;
  if (cm_n != 16 && cm_n != 8) return false;
  if (sg_m < 1 || sg_n < 1 || nt < cm_n || nt % (cm_n * sg_n) != 0) return false;
  // Epilogue passes: one-phase up2 only, each pass whole coop-N fragments of whole 8-channel groups.
  if (epi_passes != 1 && (!up2 || !one_phase || (epi_passes != 2 && epi_passes != 4) || nt % (epi_passes * cm_n) != 0 ||
                          (nt / epi_passes) % 8 != 0))
    return false;
  if (tap_sum) return !up2 && !one_phase && !b_global && !a_direct && sg_n == 1 && nt <= 64 && (ck == 16 || ck == 32);
  if (m_frags() % sg_m != 0) return false;
  if (a_direct) {
    // One-phase up2 X0 chunks: 16-column tiles, so a subgroup's fragments are consecutive rows.
    if (up2) return one_phase && !b_global && ck % 32 == 0 && tile_w == 16;
    // The A-reuse geometry (conv2d_coopmat_config.glsl's A_REUSE_ON): FM >= 2 rows a subgroup.
    const int64_t fm = m_frags() / sg_m;
    return !one_phase && !b_global && ck % 32 == 0 && fm >= 2 && tile_h % fm == 0 && sg_m == (tile_h / fm) * (tile_w / 16);
  }
  if (!up2) return !one_phase;
  if (one_phase) return !b_global;
  // Phase-major fragments: each subgroup's must lie in one of the 4 phases.
  const int64_t per_phase = m_frags() / 4;
  return !b_global && tile_h % 2 == 0 && tile_w % 32 == 0 && per_phase % (m_frags() / sg_m) == 0;
}

int64_t CoopConvConfig::shared_bytes(int64_t kh, int64_t kw) const {
  if (q8) return q8_shared_bytes(*this, kh, kw);
  // The accumulators' staging for the epilogue: channel-major for an NCHW output, pixel-major
  // for an NHWC one; the larger of the two, so a configuration fits in either layout.
  const int64_t m = tile_h * tile_w, out = std::max(nt * (m + 8), m * (nt + 8));
  if (tap_sum) {  // conv2d_coopmat_tapsum.comp: patch rows + weights, or Z over them
    const int64_t rows = ((tile_h + kh - 1) * (tile_w + kw - 1) + 15) / 16 * 16;
    return 2 * std::max(rows * (ck + 8) + ck * (nt + 8), nt * (rows + 8));
  }
  if (up2 && one_phase) {  // ONE_PHASE: the low-resolution patch (not with A_DIRECT) and 4 taps; the skip's slots
    const int64_t low = (a_direct ? 0 : (tile_h + 1) * (tile_w + 1) * (ck + 8)) + 4 * ck * (nt + 8);
    const int64_t slots = (2 * tile_h + 1) * (tile_w + 1) * 8 + 3 * 16 * (nt + 8);
    const int64_t ntp = nt / epi_passes, out_pass = std::max(ntp * (m + 8), m * (ntp + 8));  // one epilogue pass
    return 2 * std::max({low, slots, out_pass});
  }
  if (up2) {  // conv2d_coopmat_up2.comp's SMEM_VEC4 with CONCAT=1 (kh = kw = 3)
    const int64_t low = (tile_h / 2 + 2) * (tile_w / 2 + 2) * (ck + 8) + 16 * ck * (nt + 8);
    const int64_t full = (tile_h + 2) * (tile_w + 2) * (ck + 8) + 9 * ck * (nt + 8);
    return 2 * std::max({low, full, out});
  }
  const int64_t halo = (tile_h + kh - 1) * (tile_w + kw - 1);
  const int64_t stage = b_global ? 2 * halo * (ck + 8) : plain_stage_halves(*this, kh, kw);
  return 2 * std::max(stage, out);
}

std::string CoopConvConfig::describe() const {
  const std::string tiles = std::to_string(tile_h) + "x" + std::to_string(tile_w) + " nt" + std::to_string(nt) + " ck" +
                            std::to_string(ck) + " sg" + std::to_string(sg_m) + "x" + std::to_string(sg_n);
  if (q8) return tiles + " 16x16x32 i32acc" + (b_global ? " bglobal" : "") + " q8" + (up2 ? " up2" : "");
  return tiles + " 16x" + std::to_string(cm_n) + "x16 " + (acc_f16 ? "f16acc" : "f32acc") + (b_global ? " bglobal" : "") +
         (up2 ? " up2" : "") + (one_phase ? " 1ph" : "") + (epi_passes > 1 ? " ep" + std::to_string(epi_passes) : "") +
         (tap_sum ? " tapsum" : "") + (a_direct ? " adirect" : "");
}

std::vector<CoopMatrixShape> h100_coop_shapes() {
  std::vector<CoopMatrixShape> shapes;
  for (bool f16 : {true, false})
    for (auto [n, k] : {std::pair<uint32_t, uint32_t>{16, 16}, {8, 16}, {8, 8}}) shapes.push_back({16, n, k, f16});
  return shapes;
}

bool CoopTarget::supports(const CoopMatrixShape& s) const { return std::find(shapes.begin(), shapes.end(), s) != shapes.end(); }

bool coop_conv_applicable(const Conv2dShape& s) {
  return s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1 && s.kh >= 1 && s.kw >= 1 && s.kh <= 7 && s.kw <= 7 && s.c_in >= 1 &&
         s.c_out >= 1;
}

bool coop_config_fits(const CoopConvConfig& c, const Conv2dShape& s, const CoopTarget& target, bool even_tile_h) {
  if (c.q8) return q8_config_fits(c, s, target, even_tile_h, false);
  if (!c.valid() || !coop_conv_applicable(s) || !target.supports(c.shape())) return false;
  if (target.subgroup_size == 0 || c.subgroups() * target.subgroup_size > 1024) return false;
  if (even_tile_h && c.tile_h % 2 != 0) return false;
  if (c.up2 && (s.kh != 3 || s.kw != 3 || even_tile_h)) return false;
  // A_DIRECT: a device whose element order was checked, the reuse geometry's KH >= 2, and an
  // input NHWC can hold (the lowering offers it to NHWC variants only; an up2 conv's X0 is NHWC
  // there, its skip counted apart).
  if (c.a_direct && (!target.a_rows || s.kh < 2 || (!c.up2 && s.c_in % 8 != 0))) return false;
  if (c.tap_sum && (even_tile_h || s.kh * s.kw * s.c_out > c.nt)) return false;
  return c.shared_bytes(s.kh, s.kw) <= target.max_shared_bytes;
}

int64_t a_direct_emulation_bytes(const CoopConvConfig& c, int64_t kh) {
  if (!c.a_direct) return 0;
  const int64_t rows = c.m_frags() / c.sg_m + (c.up2 ? 1 : kh - 1);  // AD_ROWS (an up2 phase: 2x2 taps)
  return c.subgroups() * 2 * rows * 16 * 16 * 2;
}

std::optional<CoopConvConfig> choose_coop_config(const Conv2dShape& s, const CoopTarget& target, bool even_tile_h, bool plain,
                                                 int64_t pixels) {
  if (!coop_conv_applicable(s)) return std::nullopt;
  // Up to 32 taps x output channels (OIDN's last conv, 32 -> 3) without a fused pool, concat or
  // upsample: conv2d_coopmat_tapsum, 8x32 pixels on 8 subgroups (H100, 2026-11-25: 0.115 ms
  // against conv2d_coopmat's best 0.126; 32-channel chunks and 4x64 tiles were much slower).
  if (plain && !even_tile_h && s.kh * s.kw * s.c_out <= 32) {
    for (bool acc_f16 : {target.prefer_f16_accumulate, !target.prefer_f16_accumulate})
      for (int64_t cm_n : {8, 16}) {
        CoopConvConfig c;
        c.tile_h = 8, c.tile_w = 32, c.ck = 16, c.sg_m = 8, c.sg_n = 1, c.cm_n = cm_n, c.acc_f16 = acc_f16, c.tap_sum = true;
        c.nt = (s.kh * s.kw * s.c_out + cm_n - 1) / cm_n * cm_n;
        if (coop_config_fits(c, s, target, even_tile_h)) return c;
      }
  }
  // From the H100's exhaustive tuning with NHWC tensors between the convs (bench/RESULTS.md,
  // 2026-11-25; the layer winners of OIDN balanced and small at 1920x1088): all output channels
  // in one workgroup up to 128 (rounded to the coop N), else tiles of 64. Full-resolution
  // layers of up to 32 channels: 8x64 pixels on 16 subgroups; 48 and 64 channels: 16x16 on 8x2
  // subgroups; 80 and 112: 8x16 on 8; 96 and 128: 8x16 on 4x2. (The big configurations need
  // ~90-150 registers per invocation, one workgroup per SM, so the pixel tile is spread over as
  // many subgroups as pays.) Then smaller tiles on 8 subgroups where shared memory or the
  // workgroup size is short, and the other coop N / accumulator where the device lacks the
  // preferred one.
  const int64_t nt = s.c_out <= 8 ? 8 : s.c_out <= 128 ? round_up(s.c_out, 16) : 64;
  std::vector<Pick> picks;
  if (nt == 8) picks = {{8, 16, 4, 1, nt, 8}, {16, 16, 8, 1, nt, 8}};  // dec_conv0: 0.135 vs 0.145 ms
  // Narrow inputs (NARROW: at most 8 channels, taps packed into K) first take two rows of 32
  // pixels on 4 subgroups (enc_conv0 on the H100, 2026-11-25: 0.089 ms, 8x16 0.096, 8x64 sg16x1
  // 0.106).
  else if (nt <= 32 && s.c_in <= 8)
    picks = {{2, 32, 4, 1, nt, 8}, {8, 16, 4, 1, nt, 16}, {8, 64, 16, 1, nt, 16}, {8, 64, 32, 1, nt, 16}};
  // 9 to 12 channels (NARROW planes: the 9-channel image of the path-tracer model): the tuner's
  // 8x16 on 4x2 subgroups (2026-11-26: 0.165 ms; 8x64 on 16 subgroups 0.202).
  else if (nt <= 32 && s.c_in <= 12)
    picks = {{8, 16, 4, 2, nt, 16}, {8, 16, 4, 1, nt, 16}, {8, 64, 16, 1, nt, 16}};
  else if (nt <= 32) picks = {{8, 64, 16, 1, nt, 16}, {8, 64, 32, 1, nt, 16}};
  else if (nt == 48) picks = {{16, 16, 8, 2, nt, 8}, {8, 32, 8, 2, nt, 8}};
  else if (nt == 64) picks = {{16, 16, 8, 2, nt, 16}, {4, 64, 8, 2, nt, 16}};
  else if ((nt / 16) % 2 == 0) picks = {{8, 16, 4, 2, nt, 16}, {4, 32, 8, 2, nt, 16}};  // 96, 128
  else picks = {{8, 16, 8, 1, nt, 16}};                                                   // 80, 112
  // Small layers (at the ranking extent, small_conv) from more than 12 channels: 32 and 64
  // channels in one 8x16 tile on 4 x 2 subgroups, which the H200's tuned plans of OIDN small
  // took at 1/8 and 1/16 (1920x1088). Where A_DIRECT runs, its pick comes first down to 1/8
  // (choose_coop_a_direct_config), so this runs small's enc_conv5a/5b and, once up2 is left out
  // there (implementations.cpp), its dec_conv4a with the upsample and concat in its reads.
  // Under kTinyConvPixels 96 channels in 32-channel tiles of 16x16 on 8 x 1 (balanced's
  // enc_conv5a/5b). 80 and 112 channels keep the picks above (within 2% of the best alone at
  // 1/8); nothing else was measured. Same-call A/B on the H200 (bench/RESULTS.md, 2026-11-29,
  // twenty-third session), ms at 1280x720 / 1920x1088 / 3840x2160, before -> after:
  //   small enc_conv5a (32 -> 32, 1/16), A_DIRECT -> 8x16: 0.0132 -> 0.0075, 0.0130 -> 0.0077,
  //   0.0132 -> 0.0080; small dec_conv4a (64, 1/8), one-phase up2 -> 8x16: 0.0210 -> 0.0123,
  //   0.0238 -> 0.0183, 0.0541 -> 0.0529; balanced enc_conv5b (96, 1/16), 8x16 nt96 -> 16x16
  //   nt32: 0.0164 -> 0.0133, 0.0166 -> 0.0129, but 0.0282 -> 0.0391 at 3840x2160, where the
  //   layer has 4x the pixels the heuristic ranked it at.
  if (small_conv(pixels) && s.c_in > 12) {
    if (nt == 32 || nt == 64) picks.insert(picks.begin(), {8, 16, 4, 2, nt, 16});
    else if (tiny_conv(pixels) && nt == 96) picks.insert(picks.begin(), {16, 16, 8, 1, 32, 16});
  }
  for (auto [th, tw] : {std::pair<int64_t, int64_t>{4, 32}, {8, 16}, {4, 16}, {2, 16}})
    picks.push_back({th, tw, std::min<int64_t>(8, th * tw / 16), 1, nt, nt == 8 ? 8 : 16});
  return first_fitting(picks, s, target, even_tile_h, false);
}

CoopTail::CoopTail(int64_t tail_cout, int64_t main_cout)
    : cout(tail_cout), t_nt(round_up(9 * tail_cout, 16)), t_k(round_up(main_cout, 16)) {}

bool coop_tail_shape_ok(const Conv2dShape& t) {
  return t.kh == 3 && t.kw == 3 && t.sh == 1 && t.sw == 1 && t.dh == 1 && t.dw == 1 && t.c_out >= 1 && t.c_out <= 4;
}

int64_t coop_tail_shared_bytes(const CoopConvConfig& c, const Conv2dShape& s, const CoopTail& tail) {
  // conv2d_coopmat.comp's SMEM_VEC4 with TAIL: the stage or the tile's rows (YS halves each),
  // then the tail's weights and the conv's bias; with A_DIRECT those follow the rows over the
  // dead stage (TAIL_LATE_CONSTS).
  const int64_t rows = c.tile_h * c.tile_w * (std::max(c.nt, tail.t_nt) + 8), consts = tail.t_k * (tail.t_nt + 8) + c.nt;
  const int64_t stage = plain_stage_halves(c, s.kh, s.kw);
  return 2 * (c.a_direct ? std::max(stage, rows + consts) : std::max(stage, rows) + consts);
}

bool coop_tail_fits(const CoopConvConfig& c, const Conv2dShape& s, const CoopTail& tail, const CoopTarget& target) {
  if (c.up2 || c.tap_sum || c.b_global || c.sg_n != 1 || c.nt < s.c_out || c.tile_h < 2 || tail.t_k > c.nt || tail.t_nt > 64 ||
      tail.cout < 1)
    return false;
  if (!coop_config_fits(c, s, target, false)) return false;
  return coop_tail_shared_bytes(c, s, tail) <= target.max_shared_bytes;
}

std::optional<CoopConvConfig> choose_coop_tail_config(const Conv2dShape& s, const CoopTail& tail, const CoopTarget& target) {
  if (!coop_conv_applicable(s)) return std::nullopt;
  // All channels in one tile, one subgroup column. OIDN's dec_conv1b (64 -> 32) with dec_conv0
  // as its tail on the H100 (bench/RESULTS.md, 2026-11-25 afternoon): 16x32 pixels on 16
  // subgroups 0.384 + 0.018 ms (ring pass), 8x64 on 16 0.385 + 0.023, 16x32 on 8 0.427, 8x32 on
  // 8 0.508; then smaller tiles where shared memory is short.
  const int64_t nt = round_up(s.c_out, 16);
  const std::vector<Pick> picks = {{16, 32, 16, 1, nt, 16}, {8, 64, 16, 1, nt, 16}, {8, 32, 8, 1, nt, 16}, {4, 32, 8, 1, nt, 16},
                                   {4, 16, 4, 1, nt, 16},   {2, 16, 2, 1, nt, 16}};
  return first_fitting(picks, s, target, false, false, [&](const CoopConvConfig& c) { return coop_tail_fits(c, s, tail, target); });
}

bool coop_head_shape_ok(const Conv2dShape& h, const Conv2dShape& conv) {
  return h.kh == 3 && h.kw == 3 && h.sh == 1 && h.sw == 1 && h.dh == 1 && h.dw == 1 && h.c_in >= 1 && h.c_in <= 4 &&
         h.c_out == conv.c_in && conv.c_in > 12;
}

int64_t coop_head_shared_bytes(const CoopConvConfig& c, const Conv2dShape& s) {
  // conv2d_coopmat.comp's SMEM_VEC4 with HEAD (halves): H_PX patch pixels of CK + 8, then R (the
  // H_SLOTS slots of 8 and one chunk's 48 head weight rows of 24, or the conv weights), the
  // epilogue staging over all of it, then the head's biases.
  const int64_t halo_h = c.tile_h + s.kh - 1, pitch = c.tile_w + s.kw;  // H_PP = HALO_W + 1
  const int64_t px = round_up(halo_h * pitch, 16), slots = px + 2 * pitch + 1;
  const int64_t r = std::max(s.kh * s.kw * c.ck * (c.nt + 8), slots * 8 + 48 * 24);
  const int64_t m = c.tile_h * c.tile_w, out = std::max(c.nt * (m + 8), m * (c.nt + 8));
  return 2 * (std::max(px * (c.ck + 8) + r, out) + round_up(s.c_in, 16));
}

bool coop_head_fits(const CoopConvConfig& c, const Conv2dShape& s, const CoopTarget& target, bool even_tile_h) {
  if (c.up2 || c.tap_sum || c.b_global || c.ck != 16 || !coop_config_fits(c, s, target, even_tile_h)) return false;
  return coop_head_shared_bytes(c, s) <= target.max_shared_bytes;
}

std::optional<CoopConvConfig> choose_coop_head_config(const Conv2dShape& s, const CoopTarget& target, bool even_tile_h) {
  if (!coop_conv_applicable(s)) return std::nullopt;
  // OIDN's enc_conv1 (32 -> 32, pool) ran fastest on 8x64 pixels on 16 subgroups without a head
  // (bench/RESULTS.md, 2026-11-25); with its head that tile needs 47.5 KB. Then smaller tiles.
  const int64_t nt = std::min<int64_t>(round_up(s.c_out, 16), 64);
  const std::vector<Pick> picks = {{8, 64, 16, 1, nt, 16}, {8, 32, 8, 1, nt, 16}, {4, 32, 8, 1, nt, 16}, {4, 16, 4, 1, nt, 16},
                                   {2, 16, 2, 1, nt, 16}};
  return first_fitting(picks, s, target, even_tile_h, false,
                       [&](const CoopConvConfig& c) { return coop_head_fits(c, s, target, even_tile_h); });
}

bool up2_skip_rows(const CoopConvConfig& c, int64_t skip_channels) { return c.up2 && c.one_phase && skip_channels > kSkipPlaneChannels; }

int64_t up2_shared_bytes(const CoopConvConfig& c, int64_t skip_channels) {
  if (!up2_skip_rows(c, skip_channels)) return c.shared_bytes(3, 3);
  // conv2d_coopmat_up2.comp's STAGE_S with SKIP_ROWS: tile_h rows of 2 tile_w + 1 unpadded pixels
  // and 3 taps' weights (shared_bytes counted the slots instead).
  const int64_t rows = c.tile_h * (2 * c.tile_w + 1) * c.ck + 3 * c.ck * (c.nt + 8);
  return std::max(2 * rows, c.shared_bytes(3, 3));
}

bool up2_skip_fits(const CoopConvConfig& c, int64_t skip_channels, const CoopTarget& target) {
  return !up2_skip_rows(c, skip_channels) || up2_shared_bytes(c, skip_channels) <= target.max_shared_bytes;
}

std::optional<CoopConvConfig> choose_coop_up2_config(const Conv2dShape& s, const CoopTarget& target, int64_t skip_channels,
                                                     bool q8_output) {
  if (!coop_conv_applicable(s) || s.kh != 3 || s.kw != 3) return std::nullopt;
  // From the H100's exhaustive tuning of this family (bench/RESULTS.md, 2026-11-24, "up2"):
  // up to 32 output channels 8x64 on 16 subgroups; 48 / 64 in one 8x32 tile, 96 as two
  // 48-channel tiles, on 8 subgroups of one column (the tuner's picks with NHWC tensors,
  // 2026-11-26: dec_conv2a 0.247 -> 0.234 ms, dec_conv3a 0.136 -> 0.132 against 8x2 subgroups);
  // wider ones in 64-channel 4x64 tiles (both now after a 16x32 tile, below). Then smaller tiles where
  // shared memory is short. A conv of up to 64 channels: one phase per workgroup, 16x16
  // low-resolution pixels with a two-pass epilogue (23-24 KB of shared memory: two workgroups
  // per SM), else 8x16 in one pass. Without a skip or with one of at most 12 channels in slot
  // planes (OIDN's dec_conv1a: the 3- or 9-channel image concatenated at full resolution) on
  // 4x2 subgroups (2026-11-25 evening: dec_conv1a 0.51 -> 0.40 ms); with a wider one in row
  // steps (dec_conv2a: pool1, 32 channels) on 8x1 (2026-11-26: 0.232 -> 0.221 ms; 4x2 0.228).
  // Writing an int8 (NHWC_Q8) output, a skip in slot planes runs faster on 8x1 too: the H100's
  // tuner took it in every int8 plan (3 channels at 1280x720 to 3840x2160, 9 at 1920x1088;
  // dec_conv1a 0.3838 against 0.3896 ms at 1920x1088 with 3; bench/RESULTS.md, 2026-11-27 fourth
  // session), while with an fp16 output it kept 4x2. (Without a skip: not measured, 4x2 stays.)
  const int64_t full = round_up(s.c_out, 16);
  std::vector<Pick> picks;
  if (full <= 64) {
    const bool rows = skip_channels > kSkipPlaneChannels;  // row steps (up2_skip_rows)
    const bool one_column = rows || (q8_output && skip_channels > 0);
    picks = {{16, 16, one_column ? 8 : 4, one_column ? 1 : 2, full, 16, true, 2}, {8, 16, 4, 2, full, 16, true}};
  }
  if (full <= 32) picks.push_back({8, 64, 16, 1, full, 16});
  else if (full <= 64) picks.push_back({8, 32, 8, 1, full, 16});
  // Above 64 channels, 32-channel tiles of 16x32 pixels on 16 subgroups of one column first (the
  // int8 phase conv's geometry, 40 KB): on the H200, against the picks below in the same calls,
  // dec_conv3a (96) 0.132 -> 0.117 ms, dec_conv4a (112) 0.067 -> 0.065 at 1920x1088 (0.068 ->
  // 0.059 and 0.046 -> 0.027 at 1280x720). Measured at 96 and 112 channels only. dec_conv2a (64)
  // was slower on it (0.215 -> 0.247), so convs of up to 64 channels keep the picks above
  // (bench/RESULTS.md, 2026-11-29 twentieth session).
  if (full > 64) {
    picks.push_back({16, 32, 16, 1, 32, 16});
    if (full == 96) picks.push_back({8, 32, 8, 1, 48, 16});
    else picks.push_back({4, 64, 8, 2, 64, 16});
  }
  for (int64_t nt : {std::min<int64_t>(full, 64), std::min<int64_t>(full, 32)})
    for (const Pick& p : {Pick{8, 32, 8, 2, nt, 16}, Pick{4, 64, 8, 2, nt, 16}, Pick{4, 32, 4, 2, nt, 16}, Pick{4, 32, 8, 1, nt, 16}})
      picks.push_back(p);
  return first_fitting(picks, s, target, false, true,
                       [&](const CoopConvConfig& c) { return up2_skip_fits(c, skip_channels, target); });
}

std::optional<CoopConvConfig> choose_coop_a_direct_config(const Conv2dShape& s, const CoopTarget& target, bool even_tile_h,
                                                          const std::optional<CoopTail>& tail, int64_t pixels) {
  if (!target.a_rows || !coop_conv_applicable(s) || s.kh != 3 || s.kw != 3 || s.c_in < 32 || s.c_in % 8 != 0) return std::nullopt;
  // From the H200's exhaustive stores of OIDN balanced and small at 1920x1088 (the twenty-first
  // session's; bench/RESULTS.md, 2026-11-29, twenty-second session), A_DIRECT's 16x16 pixels in
  // 32-channel tiles on 4 x 1 subgroups against the configurations choose_coop_config and
  // choose_coop_tail_config pick:
  // dec_conv1b with its tail 0.311 against 0.396 ms, dec_conv1b alone 0.272 against 0.348,
  // dec_conv2b (64 channels, 1/2 resolution) 0.145 against 0.165, enc_conv1 with its pool 0.153
  // against 0.197, enc_conv2 (32 -> 48, pool) 0.084 against 0.090. It loses where the layer is
  // small: 96 channels at 1/16 resolution 0.050 against 0.039 (and from 80 channels 0.036
  // against 0.021), where the same shape at 1/4 won 0.079 against 0.103; with a pool from 48 or
  // 64 channels 0.052 against 0.035 and 0.033 against 0.025. So: up to 64 output channels (48
  // with a pool), and 96 where the layer is known not to be small (dec_conv3b at 1/4: 0.0497 ->
  // 0.0417, 0.0993 -> 0.0777 and 0.369 -> 0.277 ms at 1280x720, 1920x1088 and 3840x2160 in the
  // twenty-third session's same-call A/B); not on tiny layers (tiny_conv: 1/16 at 1920x1088),
  // which choose_coop_config's 8x16 tiles run faster. At 1/8 A_DIRECT stays: in the network it
  // ran OIDN small's enc_conv4 and dec_conv4b as fast as 8x16 at 1920x1088 and faster at
  // 3840x2160 (0.0145 and 0.0385 against 0.0218 and 0.0522 ms), where alone it had looked 30-45%
  // slower. Where the size is not known (`pixels` 0), up to 64 channels: the wins at full and
  // half resolution outweigh the losses at 1/16. (Below 32 output channels nothing was
  // measured: a 3-channel conv keeps its tap-sum.)
  const bool wide_ok = pixels >= kSmallConvPixels && s.c_out % 32 == 0;
  if (tiny_conv(pixels) || s.c_out < 32 || s.c_out > (even_tile_h ? 48 : wide_ok ? 96 : 64) || (tail && s.c_out > 32))
    return std::nullopt;
  CoopConvConfig c;
  c.tile_h = 16, c.tile_w = 16, c.ck = 32, c.sg_m = 4, c.sg_n = 1, c.nt = 32, c.cm_n = 16, c.a_direct = true;
  return with_accumulator(c, target, [&](const CoopConvConfig& a) {
    return tail ? coop_tail_fits(a, s, *tail, target) : coop_config_fits(a, s, target, even_tile_h);
  });
}

std::optional<CoopConvConfig> choose_coop_up2_a_direct_config(const Conv2dShape& s, const CoopTarget& target, int64_t skip_channels) {
  if (!target.a_rows || !coop_conv_applicable(s) || s.kh != 3 || s.kw != 3) return std::nullopt;
  // One phase per workgroup, X0 read by the lanes themselves, a skip of at most 12 channels in
  // slot planes (OIDN's dec_conv1a; H200, exhaustive stores of 2026-11-29 at 1920x1088): 64
  // channels on 16x16 low-resolution pixels, two epilogue passes, 0.372 ms against the
  // heuristic's 16x16 on 4 x 2 subgroups 0.390; 32 channels on 8x16 in one pass, 0.159 against
  // 0.204. Taken at those two widths only, with a skip: nothing else was measured, and the
  // epilogue's pass count alone moves dec_conv1a's tile from 0.627 ms (one pass) to 0.372. Wider
  // skips (row steps: dec_conv2a-4a) ran 31-65% slower on A_DIRECT than on the heuristic's picks.
  const int64_t full = round_up(s.c_out, 16);
  if (skip_channels < 1 || skip_channels > kSkipPlaneChannels || (full != 32 && full != 64)) return std::nullopt;
  CoopConvConfig c;
  c.tile_h = full == 32 ? 8 : 16, c.tile_w = 16, c.ck = 32, c.sg_m = 4, c.sg_n = 1, c.nt = full, c.cm_n = 16;
  c.up2 = true, c.one_phase = true, c.epi_passes = full == 32 ? 1 : 2, c.a_direct = true;
  return with_accumulator(c, target, [&](const CoopConvConfig& a) {
    return coop_config_fits(a, s, target, false) && up2_skip_fits(a, skip_channels, target);
  });
}

int64_t coop_narrow(const Conv2dShape& s, const CoopConvConfig& c, bool plain) {
  if (!plain || c.up2 || c.tap_sum || c.b_global || c.ck != 16) return 0;
  // Up to 12 channels in planes of 4 (NARROW=2: 3 K steps a plane for 3x3, so a 9-channel image
  // takes the 9 K steps of a 16-channel chunk with a sixth of its staging).
  return s.c_in <= 4 ? 2 : s.c_in <= 8 ? 1 : s.c_in <= 12 ? 2 : 0;
}

namespace {

// The packers' input: ONNX weights W[c_out][c_in][kh][kw] of exactly this shape.
void require_weight_count(std::span<const float> w, const Conv2dShape& s) {
  const int64_t expected = s.c_out * s.c_in * s.kh * s.kw;
  if (static_cast<int64_t>(w.size()) != expected)
    fail(ErrorCode::Internal, "convolution weights have " + std::to_string(w.size()) + " values, expected " + std::to_string(expected));
}

// pack_coop_weights with narrow = 1 or 2: per co_tile and plane (8 / narrow input channels),
// K steps (ky, ks) of 16 rows; row k is slot k / 8 (the A row's first or second slot), which
// holds pixel q of the slot (narrow = 2: q = k % 8 / 4, 4 channels a pixel; narrow = 1: q = 0,
// 8 channels), i.e. tap kx = step * ks + slot + q, channel plane * 8 / narrow + k % (8 /
// narrow). With narrow = 2 the second slot's first pixel is the first slot's second one
// again: zero there, so each tap counts once.
std::vector<float> pack_narrow(std::span<const float> w, const Conv2dShape& s, const CoopConvConfig& c, int64_t narrow) {
  const int64_t step = narrow == 2 ? 3 : 2, ksx = (s.kw + step - 1) / step, per_pixel = 8 / narrow;
  const int64_t co_tiles = (s.c_out + c.nt - 1) / c.nt, planes = (s.c_in + per_pixel - 1) / per_pixel;
  std::vector<float> packed(static_cast<size_t>(co_tiles * planes * s.kh * ksx * 16 * c.nt), 0.0f);
  for (int64_t co = 0; co < s.c_out; ++co) {
    const int64_t tile = co / c.nt, j = co % c.nt;
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t ky = 0; ky < s.kh; ++ky)
        for (int64_t ks = 0; ks < ksx; ++ks)
          for (int64_t k = 0; k < 16; ++k) {
            const int64_t slot = k / 8, q = k % 8 / per_pixel, ci = p * per_pixel + k % per_pixel, kx = step * ks + slot + q;
            if ((narrow == 2 && slot == 1 && q == 0) || ci >= s.c_in || kx >= s.kw) continue;
            packed[static_cast<size_t>(((((tile * planes + p) * s.kh + ky) * ksx + ks) * 16 + k) * c.nt + j)] =
                w[static_cast<size_t>(((co * s.c_in + ci) * s.kh + ky) * s.kw + kx)];
          }
  }
  return packed;
}

}  // namespace

std::vector<float> pack_coop_weights(std::span<const float> w, const Conv2dShape& s, const CoopConvConfig& c, int64_t narrow) {
  const int64_t kk = s.kh * s.kw;
  require_weight_count(w, s);
  if (narrow == 1 || narrow == 2) return pack_narrow(w, s, c, narrow);
  const int64_t co_tiles = (s.c_out + c.nt - 1) / c.nt, chunks = (s.c_in + c.ck - 1) / c.ck;
  std::vector<float> packed(static_cast<size_t>(co_tiles * chunks * kk * c.ck * c.nt), 0.0f);
  for (int64_t co = 0; co < s.c_out; ++co) {
    const int64_t tile = co / c.nt, j = co % c.nt;
    for (int64_t ci = 0; ci < s.c_in; ++ci) {
      const int64_t chunk = ci / c.ck;
      const int64_t k = c.a_direct ? a_direct_k(ci, c.ck) : ci % c.ck;
      for (int64_t tap = 0; tap < kk; ++tap) {
        // B read from shared memory: row (tap, k) of nt channels; B read from the buffer
        // (b_global): column-major, column (tap, j) of ck channels, so that the two consecutive
        // k a fragment register holds are one aligned 4-byte load.
        const int64_t block = (tile * chunks + chunk) * kk + tap;
        const int64_t dst = c.b_global ? (block * c.nt + j) * c.ck + k : (block * c.ck + k) * c.nt + j;
        packed[static_cast<size_t>(dst)] = w[static_cast<size_t>((co * s.c_in + ci) * kk + tap)];
      }
    }
  }
  return packed;
}

std::vector<float> pack_coop_tapsum_weights(std::span<const float> w, const Conv2dShape& s, const CoopConvConfig& c) {
  const int64_t kk = s.kh * s.kw;
  require_weight_count(w, s);
  if (kk * s.c_out > c.nt)
    fail(ErrorCode::Internal, "conv2d_coopmat_tapsum packs at most nt = " + std::to_string(c.nt) + " taps x output channels, not " +
                                  std::to_string(kk * s.c_out));
  const int64_t chunks = (s.c_in + c.ck - 1) / c.ck;
  std::vector<float> packed(static_cast<size_t>(chunks * c.ck * c.nt), 0.0f);
  for (int64_t co = 0; co < s.c_out; ++co)
    for (int64_t ci = 0; ci < s.c_in; ++ci)
      for (int64_t tap = 0; tap < kk; ++tap)  // row ci (chunk-major: chunk * ck + k is ci), column tap * c_out + co
        packed[static_cast<size_t>(ci * c.nt + tap * s.c_out + co)] = w[static_cast<size_t>((co * s.c_in + ci) * kk + tap)];
  return packed;
}

std::vector<float> pack_coop_up2_weights(std::span<const float> w, const Conv2dShape& s, int64_t c0, const CoopConvConfig& c) {
  if (s.kh != 3 || s.kw != 3 || c0 < 1 || c0 > s.c_in)
    fail(ErrorCode::Internal, "conv2d_coopmat_up2 weights need a 3x3 kernel and 1 <= c0 <= c_in");
  require_weight_count(w, s);
  const bool slots = c.one_phase && !up2_skip_rows(c, s.c_in - c0);  // planes of 4 skip channels
  const int64_t skip_ck = slots ? 4 : c.ck;                            // skip channels per chunk
  const int64_t co_tiles = (s.c_out + c.nt - 1) / c.nt;
  const int64_t cu = (c0 + c.ck - 1) / c.ck, cs = (s.c_in - c0 + skip_ck - 1) / skip_ck;
  const int64_t up_block = 16 * c.ck * c.nt, skip_block = slots ? 3 * 16 * c.nt : 9 * c.ck * c.nt;
  const int64_t tile_size = cu * up_block + cs * skip_block;
  std::vector<float> packed(static_cast<size_t>(co_tiles * tile_size), 0.0f);
  for (int64_t co = 0; co < s.c_out; ++co) {
    const int64_t tile = co / c.nt, j = co % c.nt;
    for (int64_t ci = 0; ci < s.c_in; ++ci) {
      const float* k3 = &w[static_cast<size_t>((co * s.c_in + ci) * 9)];
      if (ci < c0) {
        const int64_t base = tile * tile_size + (ci / c.ck) * up_block, k = c.a_direct ? a_direct_k(ci, c.ck) : ci % c.ck;
        for (int64_t ph = 0; ph < 4; ++ph)
          for (int64_t tap = 0; tap < 4; ++tap)
            packed[static_cast<size_t>(base + ((ph * 4 + tap) * c.ck + k) * c.nt + j)] = up2_phase_weight<float>(k3, ph, tap);
      } else {
        const int64_t k = ci - c0;
        const int64_t base = tile * tile_size + cu * up_block + (k / skip_ck) * skip_block;
        if (slots) {  // row (kx / 2) * 8 + (kx % 2) * 4 + k % 4 of K step ky (the header says why)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx)
              packed[static_cast<size_t>(base + (ky * 16 + (kx / 2) * 8 + (kx % 2) * 4 + k % 4) * c.nt + j)] = k3[ky * 3 + kx];
        } else {
          for (int64_t tap = 0; tap < 9; ++tap) packed[static_cast<size_t>(base + (tap * c.ck + k % c.ck) * c.nt + j)] = k3[tap];
        }
      }
    }
  }
  return packed;
}

}  // namespace denox::kernels
