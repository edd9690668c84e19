// IEEE binary16 <-> float: how the host packs fp16 weights and tensors and reads fp16 results
// (the plan builder, .npy files, ONNX initializers, the tests, the benchmarks and the probes
// share it). src/vkhost keeps its own pair (to_half / from_half): it stands for an engine and
// uses only the public API.
#pragma once

#include <bit>
#include <cstdint>

namespace denox {

// IEEE binary16 bits of f, rounded to nearest even (overflow to infinity, NaN kept NaN).
inline uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t exponent = (bits >> 23) & 0xffu, mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));  // inf, NaN
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // too large: infinity
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit 1 into place, rounding to
    // nearest even on the bits shifted out.
    if (e < -10) return sign;
    const uint32_t m = mantissa | 0x800000u;
    const int shift = 14 - e;
    uint32_t half = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // a carry may round up to infinity: correct
  return static_cast<uint16_t>(sign | half);
}

// The float value of IEEE binary16 bits h: exact, subnormals, infinities and NaN payloads included.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal half: normalize into a float exponent
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace denox
