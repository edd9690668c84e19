// The opt-in int8 precision's numbers: a tensor's scale and zero point, and the rule that maps
// floats to codes. A tensor kept NHWC_Q8 (tensor_layout.hpp) stores code q for real value
// s * (q - z). Scales come from calibration (the percentile of the tensor's values on sample
// inputs); the zero point is -128 for a tensor that is never negative (every ReLU output of a
// denoiser: the codes then span [0, 255 s]) and 0 otherwise (symmetric, [-127 s, 127 s]).
// Code z is exact zero, which is what padding reads.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

namespace denox::kernels {

struct TensorQuant {
  float scale = 1.0f;
  int32_t zero_point = 0;  // -128 or 0
  bool operator==(const TensorQuant&) const = default;
};

// The calibrated tensors of a graph, by tensor name. Only these may be kept NHWC_Q8.
using QuantTable = std::map<std::string, TensorQuant>;

// The quantization of a tensor whose values lie in [lo, hi] (lo <= 0 for a signed tensor): the
// zero point follows the sign of lo, the scale spreads |range| over the codes. Never a zero or
// non-finite scale.
inline TensorQuant quant_for_range(float lo, float hi) {
  TensorQuant q;
  const bool unsigned_range = !(lo < 0.0f);
  q.zero_point = unsigned_range ? -128 : 0;
  const float span = unsigned_range ? hi / 255.0f : std::max(-lo, hi) / 127.0f;
  q.scale = std::isfinite(span) && span > 1e-8f ? span : 1e-8f;
  return q;
}

// The real value of a code (the shaders round the other way: shaders/quant.glsl).
inline float dequantize(int32_t code, const TensorQuant& q) { return q.scale * static_cast<float>(code - q.zero_point); }

// "q8:<entries>:<hash>": the table in a few words, for cache keys.
std::string quant_table_key(const QuantTable& table);

}  // namespace denox::kernels
