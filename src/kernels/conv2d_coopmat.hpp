// The cooperative-matrix convolution (shaders/conv2d_coopmat.comp): its configuration space,
// the weight layout each configuration reads, and what a device must report to run it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/conv2d_layout.hpp"

namespace denox::kernels {

// A cooperative-matrix shape with fp16 A and B (subgroup scope), as the device reports it
// (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR): M x N x K and the accumulator type.
struct CoopMatrixShape {
  uint32_t m = 0, n = 0, k = 0;
  bool acc_f16 = false;  // C/result fp16 (else fp32)
  bool operator==(const CoopMatrixShape&) const = default;
};

// One point of conv2d_coopmat.comp's configuration space (its macros).
struct CoopConvConfig {
  int64_t tile_h = 16, tile_w = 16;  // output pixels per workgroup (tile_w a multiple of 16)
  int64_t nt = 64;                   // output channels per workgroup
  int64_t ck = 16;                   // input channels per shared-memory chunk (multiple of 16)
  int64_t sg_m = 4, sg_n = 2;        // subgroups along M (pixels) and N (channels)
  int64_t cm_n = 16;                 // coop shape 16 x cm_n x 16 (cm_n 16 or 8)
  bool acc_f16 = true;               // fp16 accumulators (else fp32)
  bool b_global = false;             // B fragments from the weights buffer, patch double-buffered
  // conv2d_coopmat_up2.comp: a 3x3 conv of a nearest-2x upsample (+ concat), decomposed by
  // output phase (tile_h x tile_w output pixels; tile_h even, tile_w a multiple of 32).
  bool up2 = false;
  // With up2: one output phase per workgroup (ONE_PHASE in the shader): tile_h x tile_w pixels of
  // the low-resolution grid (tile_w a multiple of 16). A concatenated skip of at most 12
  // channels is staged as planes of slots, a wider one in row steps (up2_skip_rows).
  bool one_phase = false;
  // With one_phase: the epilogue stages and stores the accumulators nt / epi_passes channels at a
  // time (EPI_PASSES in the shader; 1, 2 or 4), so the staging (a 16x16 tile's would be 37 KB)
  // does not set the shared memory size: on the H100 two workgroups share an SM only below ~30 KB.
  int64_t epi_passes = 1;
  // conv2d_coopmat_tapsum.comp: the taps in N instead of K (a 1x1 GEMM over the patch pixels,
  // then a sum of taps per output pixel), for convs with kh * kw * c_out <= nt <= 64 (the last
  // 3-channel conv of a denoiser) and no fused pool, concat or upsample. sg_n is 1.
  bool tap_sum = false;
  // conv2d_coopmat_q8.comp: the int8 precision (NHWC_Q8 tensors, 16x16x32 int8 fragments, int32
  // accumulators; conv2d_coopmat_q8.hpp). ck 32 or 64; no one_phase, tap_sum or epi_passes; up2
  // there means its PHASES mode (an upsampled X0 by output phase, a full-resolution tile).
  bool q8 = false;
  // A_DIRECT: no patch in shared memory, each lane loads its A fragments' elements from the NHWC
  // input itself (src/kernels/README.md). conv2d_coopmat: plain convs of one NHWC input (no
  // concat, upsample or head; a pool or tail may follow), the A-reuse tile geometry;
  // conv2d_coopmat_up2: one phase, the X0 chunks of an fp16 NHWC X0, tiles 16 wide. Both: ck a
  // multiple of 32 and a device whose fragment element order was checked (CoopTarget::a_rows).
  bool a_direct = false;

  bool operator==(const CoopConvConfig&) const = default;

  int64_t subgroups() const { return sg_m * sg_n; }
  int64_t m_frags() const { return tile_h * tile_w / 16; }
  // Structural validity (divisibility) for a kernel of kh x kw; false names nothing.
  bool valid() const;
  // Shared memory the shader declares for a kh x kw kernel (bytes; up2: with a concat; a
  // one-phase up2 conv whose skip takes row steps may declare more: up2_skip_fits checks that).
  int64_t shared_bytes(int64_t kh, int64_t kw) const;
  CoopMatrixShape shape() const { return {16, static_cast<uint32_t>(cm_n), 16, acc_f16}; }
  std::string describe() const;  // "16x16 nt64 ck16 sg4x2 16x16x16 f16acc" (+ " bglobal" / " up2" / " up2 1ph [ep2]" / " tapsum")
  // The shader family that runs it.
  const char* family() const {
    return q8 ? "conv2d_coopmat_q8" : up2 ? "conv2d_coopmat_up2" : tap_sum ? "conv2d_coopmat_tapsum" : "conv2d_coopmat";
  }
};

// What the coop lowering may use on the target device.
struct CoopTarget {
  std::vector<CoopMatrixShape> shapes;  // fp16 shapes the device reports; empty: none
  uint32_t subgroup_size = 0;
  uint32_t max_shared_bytes = 16384;
  bool prefer_f16_accumulate = true;
  // The device reports int8 x int8 -> int32 16x16x32 (subgroup scope) and shaderInt8 is enabled:
  // conv2d_coopmat_q8 may run on the tensor cores (else only emulated, LoweringTarget::coop_emulate).
  bool int8 = false;
  // The device's fp16 16x16 A fragments hold, in lane 4 g + t, rows g and g + 8 at K words t and
  // t + 4, in the order conv2d_coopmat's A_DIRECT fills them (the device context checks it on the
  // device: coop_layout_check.hpp; the emulation always may).
  bool a_rows = false;
  bool supports(const CoopMatrixShape& s) const;
};

// The fp16 subgroup shapes the H100 reports (16x16x16, 16x8x16, 16x8x8, each with fp16 and
// fp32 accumulators): what emulated plans (COOP_EMULATE) and plans built off the device use.
std::vector<CoopMatrixShape> h100_coop_shapes();

// Whether conv2d_coopmat can run this convolution at all (stride 1, dilation 1, kernel at most
// 7x7; fp16 plan decided by the caller).
bool coop_conv_applicable(const Conv2dShape& shape);

// The heuristic's sense of a layer's size: the conv's output pixels at the extent select ranks
// at (1920x1088 for heuristic plans, the tuning extent in tuned compiles). 0: not known (the
// picks then go by channels alone). Below kSmallConvPixels (OIDN's 1/8-resolution layers at
// 1920x1088: 32640 pixels; 1/4 has 130560) a layer fills too few workgroups for the large tiles
// that win above it; below kTinyConvPixels (1/16: 8160) A_DIRECT's tiles lose too.
inline constexpr int64_t kSmallConvPixels = 65536;
inline constexpr int64_t kTinyConvPixels = 16384;
inline bool small_conv(int64_t pixels) { return pixels > 0 && pixels < kSmallConvPixels; }
inline bool tiny_conv(int64_t pixels) { return pixels > 0 && pixels < kTinyConvPixels; }

// The configuration for `shape` on `target` (heuristic, from H100 measurements in
// bench/RESULTS.md), or nullopt when no candidate fits the device (shape, shared memory).
// `even_tile_h`: the epilogue pools 2x2 (POOL=1). `plain`: no fused concat or upsample either,
// so conv2d_coopmat_tapsum may take it. `pixels`: as for kSmallConvPixels.
std::optional<CoopConvConfig> choose_coop_config(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h,
                                                 bool plain = false, int64_t pixels = 0);

// Whether `config` runs `shape` on `target` (device shape, subgroup size, shared memory, pool).
bool coop_config_fits(const CoopConvConfig& config, const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h);

// The shared memory COOP_EMULATE adds for an A_DIRECT configuration (its fragments in shared
// memory: conv2d_coopmat_config.glsl, conv2d_coopmat_up2_config.glsl), in bytes; 0 for any other.
int64_t a_direct_emulation_bytes(const CoopConvConfig& config, int64_t kh);

// A conv2d_coopmat TAIL (ConvFusion::tail): a 3x3 stride-1 padding-1 conv of `cout` <= 4
// output channels computed in the epilogue of the conv before it as a tap-sum over `t_nt`
// columns (9 * cout rounded up to 16) from the tile's first `t_k` channels (the first conv's
// output channels rounded up to 16).
struct CoopTail {
  int64_t cout = 0, t_nt = 0, t_k = 0;
  CoopTail() = default;
  CoopTail(int64_t tail_cout, int64_t main_cout);
};
// Whether the tail conv's shape can be a TAIL at all (3x3, stride and dilation 1, c_out <= 4).
bool coop_tail_shape_ok(const Conv2dShape& tail);
// Whether plain conv2d_coopmat `config` can run `shape` with `tail` in its epilogue on `target`:
// one channel tile (nt >= c_out), tile_h >= 2, no B_GLOBAL, the epilogue's shared memory fits.
bool coop_tail_fits(const CoopConvConfig& config, const Conv2dShape& shape, const CoopTail& tail, const CoopTarget& target);
// The shared memory of `config` with `tail` in its epilogue (bytes).
int64_t coop_tail_shared_bytes(const CoopConvConfig& config, const Conv2dShape& shape, const CoopTail& tail);
// The heuristic's configuration for a conv with that tail, or nullopt.
std::optional<CoopConvConfig> choose_coop_tail_config(const Conv2dShape& shape, const CoopTail& tail, const CoopTarget& target);
// A conv2d_coopmat HEAD (ConvFusion::head): the conv before this one, when it reads an image of
// at most 4 channels, computed per workgroup into the staged patch (conv2d_coopmat_head.glsl).
// Whether the head conv's shape can be a HEAD (3x3, stride and dilation 1, c_in <= 4) of a conv
// of shape `conv` (whose input channels it computes; more than 12, so no NARROW).
bool coop_head_shape_ok(const Conv2dShape& head, const Conv2dShape& conv);
// Shared memory of plain conv2d_coopmat `config` with a head (bytes): the patch at a row pitch of
// one more pixel, the image slots and a chunk's head weights or the chunk's conv weights, the
// epilogue's staging, the head's biases.
int64_t coop_head_shared_bytes(const CoopConvConfig& config, const Conv2dShape& shape);
// Whether `config` can run `shape` with a head on `target`: plain conv2d_coopmat (no up2,
// tap-sum or B_GLOBAL), 16-channel chunks, the shared memory above fits.
bool coop_head_fits(const CoopConvConfig& config, const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h);
// The heuristic's configuration for a conv with a head, or nullopt.
std::optional<CoopConvConfig> choose_coop_head_config(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h);

// The up2 configuration (conv2d_coopmat_up2) for a 3x3 conv of an upsampled input, or nullopt.
// `skip_channels`: the channels concatenated after the upsampled ones (0: none). `q8_output`: the
// conv writes NHWC_Q8 (the int8 precision's variant), which prefers another subgroup grid.
std::optional<CoopConvConfig> choose_coop_up2_config(const Conv2dShape& shape, const CoopTarget& target, int64_t skip_channels,
                                                     bool q8_output = false);

// The heuristic's A_DIRECT configuration (CoopTarget::a_rows) for a plain 3x3 conv of one NHWC
// fp16 input (no concat, upsample or head; `even_tile_h`: a fused pool; `tail`: a fused tail),
// or nullopt where the measurements favour the patch-staging configurations above. Where it
// returns one, the other choose_* functions' pick stays the fallback for the layout variants
// A_DIRECT cannot read (implementations.cpp). `pixels`: as for kSmallConvPixels.
std::optional<CoopConvConfig> choose_coop_a_direct_config(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h,
                                                          const std::optional<CoopTail>& tail = std::nullopt, int64_t pixels = 0);
// The same for a one-phase up2 conv with an fp16 NHWC X0, writing fp16 or int8 (`skip_channels` as
// for choose_coop_up2_config).
std::optional<CoopConvConfig> choose_coop_up2_a_direct_config(const Conv2dShape& shape, const CoopTarget& target, int64_t skip_channels);

// Whether a one-phase up2 configuration stages a skip of `skip_channels` channels in row steps
// (SKIP_ROWS in conv2d_coopmat_up2.comp: more than 12 channels) rather than as planes of slots.
bool up2_skip_rows(const CoopConvConfig& config, int64_t skip_channels);
// Whether a configuration can take a conv whose concatenated skip has `skip_channels` channels
// (0: no concat) on `target`: any but a one-phase one whose skip row steps exceed its shared memory.
bool up2_skip_fits(const CoopConvConfig& config, int64_t skip_channels, const CoopTarget& target);
// The shared memory (bytes) of an up2 configuration with a skip of `skip_channels` channels.
int64_t up2_shared_bytes(const CoopConvConfig& config, int64_t skip_channels);

// conv2d_coopmat's tap packing for narrow inputs (its NARROW macro): 2 for c_in <= 4, 1 for
// c_in <= 8, 2 for c_in <= 12 (3 planes of 4 channels), else 0; 0 too where the shader does not
// take it (up2, tap_sum, b_global, ck other than 16, or a conv with a fused concat or upsample:
// `plain` false).
int64_t coop_narrow(const Conv2dShape& shape, const CoopConvConfig& config, bool plain);

// ONNX weights W[c_out][c_in][kh][kw] -> [co_tile][chunk][kh*kw][ck][nt], zero outside c_in /
// c_out: one (co_tile, chunk) block is contiguous and row (tap, k) holds nt output channels.
// With b_global (B fragments loaded from the buffer) each tap's block is [nt][ck] instead.
// With `narrow` (coop_narrow's value) the chunks are planes of 8 / narrow channels, each
// [ky][ks][16][nt] instead: row (ky, ks, k) is slot k / 8 of K step ks, whose channel and tap
// conv2d_coopmat.comp's NARROW comment gives (zero where no tap or channel).
std::vector<float> pack_coop_weights(std::span<const float> w, const Conv2dShape& shape, const CoopConvConfig& config,
                                     int64_t narrow = 0);

// conv2d_coopmat_tapsum's weights: [chunk][ck][nt], row k of chunk c input channel c * ck + k,
// column (ky * kw + kx) * c_out + co; zero past c_in and past kh * kw * c_out.
std::vector<float> pack_coop_tapsum_weights(std::span<const float> w, const Conv2dShape& shape, const CoopConvConfig& config);

// conv2d_coopmat_up2's weights for a 3x3 conv whose first `c0` input channels are upsampled:
// per co_tile, ceil(c0 / ck) chunks of [phase (py, px)][2x2 tap][ck][nt] (each phase tap the sum
// of the 3x3 taps that read the same low-resolution pixel), then ceil((c_in - c0) / ck) chunks
// of [3x3 tap][ck][nt]; zero outside c_in / c_out. With one_phase and a skip of at most 12
// channels the skip is ceil(skip / 4) planes of [ky][16][nt] instead: row k of K step ky of
// plane p is slot k / 8, pixel k % 8 / 4, skip channel 4 p + k % 4, i.e. tap kx = 2 * (k / 8) +
// k % 8 / 4 (zero for kx = 3).
std::vector<float> pack_coop_up2_weights(std::span<const float> w, const Conv2dShape& shape, int64_t c0, const CoopConvConfig& config);

// The weight of 2x2 tap `tap` (dy * 2 + dx) of output phase `ph` (py * 2 + px) in that
// decomposition, summed in Acc from the 3x3 kernel `k3` (row-major): output row 2Y + py reads
// low-resolution rows {Y - 1, Y} (py = 0; kernel rows {0}, {1, 2}) or {Y, Y + 1} (py = 1; rows
// {0, 1}, {2}), and likewise columns. Shared by the fp16 packing and the int8 X0's quantization.
template <typename Acc>
Acc up2_phase_weight(const float* k3, int64_t ph, int64_t tap) {
  auto reads = [](int64_t p, int64_t d, int64_t k) { return p == 0 ? (d == 0 ? k == 0 : k >= 1) : (d == 0 ? k <= 1 : k == 2); };
  Acc sum = 0;
  for (int64_t ky = 0; ky < 3; ++ky)
    for (int64_t kx = 0; kx < 3; ++kx)
      if (reads(ph >> 1, tap >> 1, ky) && reads(ph & 1, tap & 1, kx)) sum += k3[ky * 3 + kx];
  return sum;
}

}  // namespace denox::kernels
