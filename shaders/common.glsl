// Included by every kernel of the portable set (src/kernels/README.md has the contract).
//
// Storage type: denox's own tensors and weights are fp32, or fp16 with STORAGE_F16. Loads
// convert to float and all arithmetic is fp32; stores round back to the storage type.
#ifdef STORAGE_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define STYPE float16_t
#define STYPE4 f16vec4
#else
#define STYPE float
#define STYPE4 vec4
#endif

// Fused / standalone activations (ACT macro):
//   0 none, 1 Relu, 2 LeakyRelu(a = alpha), 3 Sigmoid, 4 Tanh, 5 Clip(a = min, b = max).
// Written so that a NaN input gives NaN (comparisons with NaN are false), like the CPU
// reference. Sigmoid and Tanh are formed from exp(-|v|) so that large |v| cannot overflow into
// inf/inf.
#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_LEAKY_RELU 2
#define ACT_SIGMOID 3
#define ACT_TANH 4
#define ACT_CLIP 5

// The activation `code` (a compile-time constant at every call: the branches fold away).
// conv2d_coopmat's TAIL epilogue applies a second activation (T_ACT) besides the conv's own.
float activate_as(int code, float v, float a, float b) {
  if (code == ACT_RELU) return v < 0.0 ? 0.0 : v;
  if (code == ACT_LEAKY_RELU) return v < 0.0 ? a * v : v;
  if (code == ACT_SIGMOID) {
    float e = exp(-abs(v));  // in (0, 1]: no overflow
    return isnan(v) ? v : (v >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e));
  }
  if (code == ACT_TANH) {
    // Near 0 the built-in is accurate (1 - e would cancel); far from 0 some implementations
    // of the built-in overflow, so the exp(-2|v|) form takes over there.
    if (abs(v) < 1.0) return tanh(v);
    float e = exp(-2.0 * abs(v));
    float t = (1.0 - e) / (1.0 + e);
    return isnan(v) ? v : (v >= 0.0 ? t : -t);
  }
  if (code == ACT_CLIP) {
    // numpy.clip order, as the reference: max(v, min) first, then min(., max).
    float r = v < a ? a : v;
    return r > b ? b : r;
  }
  return v;
}

// The shader's own activation (its ACT macro; none where a family has no ACT).
#ifdef ACT
#define ACT_CODE_ ACT
#else
#define ACT_CODE_ ACT_NONE
#endif
float activate(float v, float a, float b) { return activate_as(ACT_CODE_, v, a, b); }
