// The int8 convolution (shaders/conv2d_coopmat_q8.comp), the opt-in int8 precision's: its
// configuration space, the weights' quantization and packing, and what a device must report.
// Configurations are CoopConvConfig with q8 set (tile, nt, ck, subgroups, b_global).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/conv2d_coopmat.hpp"
#include "kernels/quant.hpp"

namespace denox::kernels {

// Structural validity of a q8 configuration: ck 32 or 64, tile_w a multiple of 16, nt of 16 *
// sg_n, the A fragments divisible among sg_m, none of the fp16 family's one-phase / tap-sum
// options. With up2 (PHASES in the shader: a 3x3 conv of an upsampled X0 concatenated with X1,
// X0's channels by output phase; conv2d_coopmat_q8_phases.glsl): tile_w a multiple of 32, an even
// tile_h, sg_m a multiple of 4 (a subgroup's fragments are one phase's), no B_GLOBAL.
bool q8_config_valid(const CoopConvConfig& c);
// Shared memory conv2d_coopmat_q8.comp declares for a kh x kw kernel (bytes).
int64_t q8_shared_bytes(const CoopConvConfig& c, int64_t kh, int64_t kw);
// Whether `c` runs `shape` on `target` (int8 fragments on the device or `emulate`, subgroups,
// shared memory, an even tile for a fused pool; stride and dilation 1).
bool q8_config_fits(const CoopConvConfig& c, const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h, bool emulate);
// Shared memory conv2d_coopmat_q8.comp declares with `tail` in its epilogue (TAIL=1; bytes):
// the stage or the tile's rows (wide enough for the conv's channels and for Z), then W2.
int64_t q8_tail_shared_bytes(const CoopConvConfig& c, const Conv2dShape& shape, const CoopTail& tail);
// Whether q8 configuration `c` can run `shape` with `tail` in its epilogue: q8_config_fits,
// one channel tile and one subgroup column, tile_h >= 2, no B_GLOBAL, the shared memory above.
bool q8_tail_fits(const CoopConvConfig& c, const Conv2dShape& shape, const CoopTail& tail, const CoopTarget& target, bool emulate);
// The configurations to try for `shape` (with `tail` in the epilogue, when given), the
// heuristic's first (`all`: the tuner's set, else only the heuristic's). Empty when none fits.
// `pixels`: the conv's output pixels where the heuristic ranks (kSmallConvPixels), 0 if unknown.
std::vector<CoopConvConfig> q8_configs(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h, bool emulate, bool all,
                                       const CoopTail* tail = nullptr, int64_t pixels = 0);
// The up2 (PHASES) configurations to try for a 3x3 conv of an upsampled input concatenated with
// a full-resolution one (`all`: the tuner's set, else the heuristic's first), as q8_configs.
std::vector<CoopConvConfig> q8_phase_configs(const Conv2dShape& shape, const CoopTarget& target, bool emulate, bool all);

// One conv's constants for conv2d_coopmat_q8 (its bindings 2+CONCAT .. 4+CONCAT).
struct Q8ConvConstants {
  std::vector<uint8_t> packed;     // [co_tile][chunk][tap][nt][ck] int8 codes, zero past c_in / c_out
  std::vector<float> epilogue;     // per output channel (co_tiles * nt): factor, bias
  std::vector<int32_t> acc_start;  // [co_tile][nt / 16][16][16]: -sum_k qw[n][k] z(k), rows alike
  float prescale = 1.0f;           // the accumulator's multiplier before its fp16 staging
};

// Quantizes ONNX weights W[c_out][c_in][kh][kw] (and bias, empty: none) for inputs whose first
// c0 channels come from a tensor quantized as x0 and the rest from one quantized as x1. The
// sources' scales are folded into the weights (both are read as codes), each output channel
// gets the scale of its largest folded weight (127 codes), and the zero points' correction
// goes into the accumulators' start value, so that
//   y[n] = factor[n] * (prescale * (acc_start[n] + sum_k qw[n][k] q[k])) + bias[n]
// is the conv of the dequantized inputs with the quantized weights.
Q8ConvConstants quantize_q8_conv(std::span<const float> w, std::span<const float> bias, const Conv2dShape& shape, int64_t c0,
                                 const TensorQuant& x0, const TensorQuant& x1, const CoopConvConfig& config);
// The same for an up2 (PHASES) configuration: X0's channels [0, c0) as 4 taps per output phase
// (their weights summed as kernels::up2_phase_weight does), X1's as 9. Packed per channel tile:
// ceil(c0 / ck) chunks of [phase][tap][nt][ck], then ceil((c_in - c0) / ck) chunks of
// [tap][nt][ck]. Each phase has its own zero-point correction: acc_start is
// [phase][co_tile][nt / 16][16][16].
Q8ConvConstants quantize_q8_phases(std::span<const float> w, std::span<const float> bias, const Conv2dShape& shape, int64_t c0,
                                   const TensorQuant& x0, const TensorQuant& x1, const CoopConvConfig& config);

// For a conv with a TAIL whose activation commutes with a positive factor (none, ReLU,
// LeakyReLU): moves each channel's bias into its accumulator start (rounded to the
// accumulator's unit, bias / (prescale * factor); half a unit at most, far below the int8
// inputs' error), so that act(prescale * acc) = act(y) / factor, the tail's rows need no
// per-channel pass, and the factors go into the tail's weights (T_FOLD, conv2d_coopmat_q8.comp).
// Returns the factors per output channel, or nothing (k unchanged) where a factor is below
// 1e-3 (its folded tail weights would lose fp16 precision) or a start would leave int32.
std::optional<std::vector<float>> fold_q8_epilogue(Q8ConvConstants& k, int64_t c_out);

// conv2d_coopmat_up2 with an int8 X0 (X0_Q8; a one-phase configuration with cm_n 16): the
// phase weights of X0's channels [0, c0) quantized per output channel as quantize_q8_conv does,
// packed [co_tile][chunk of 32][phase][tap][nt][32], each tile followed by its skip weights as
// pack_coop_up2_weights packs them (fp16 bytes) divided by the channel's factor, so that
//   y[n] = factor[n] * (prescale * (acc_start[phase][n] + sum qw q) + sum w_skip[n] / factor[n] x1) + bias[n].
// acc_start is [co_tile][phase][nt / 16][16][16].
Q8ConvConstants quantize_q8_up2(std::span<const float> w, std::span<const float> bias, const Conv2dShape& shape, int64_t c0,
                                const TensorQuant& x0, const CoopConvConfig& config);
// Whether an up2 configuration may read an NHWC_Q8 X0 (X0_Q8): one phase, cm_n 16, an int8
// fragment target (or the emulation), and its staging within the shared memory.
bool up2_q8_fits(const CoopConvConfig& c, const CoopTarget& target, bool emulate);

}  // namespace denox::kernels
