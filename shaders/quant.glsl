// The int8 precision's rounding (kernels/quant.hpp): code = clamp(roundEven(x / s) + z, -128, 127),
// four codes to a 32-bit word (the first in the low byte). `scaled` is x / s already.
uint q8_pack4(vec4 scaled, int zero_point) {
  const ivec4 q = clamp(ivec4(roundEven(scaled)) + zero_point, -128, 127);
  return (uint(q.x) & 255u) | ((uint(q.y) & 255u) << 8) | ((uint(q.z) & 255u) << 16) | ((uint(q.w) & 255u) << 24);
}
// Code `b` (0..3) of a word, sign-extended.
int q8_code(uint word, uint b) { return bitfieldExtract(int(word), int(8u * b), 8); }
