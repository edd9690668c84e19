#version 450
// The int8 precision's layout conversions: a float tensor (NCHW or, with F_HWC, NHWC; the
// plan's storage type) to its NHWC_Q8 form (TO_Q8=1: code = clamp(roundEven(x / s) + ZP,
// -128, 127), conv2d_coopmat_q8's rounding) or back (TO_Q8=0: x = s * (code - ZP)).
// One item is 16 channels of one pixel: one 16-byte access on the int8 side.
//
// Macros: TO_Q8, F_HWC, ZP (the tensor's zero point).
// Bindings: 0 source, 1 destination.
// Push constants: count (items: N * H * W * C / 16), row (items per row of groups: grid_rows),
//   c (channels, a multiple of 16), plane (H * W), factor (float bits: 1 / s for TO_Q8, else s).
// Dispatch: PlanBuilder::grid_rows(count, 256).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define ACT 0
#include "common.glsl"
#include "quant.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

#if TO_Q8
layout(set = 0, binding = 0) readonly buffer FBuf { STYPE f[]; };
layout(set = 0, binding = 1) writeonly buffer QBuf { uvec4 q[]; };
#else
layout(set = 0, binding = 0) readonly buffer QBuf { uvec4 q[]; };
layout(set = 0, binding = 1) writeonly buffer FBuf { STYPE f[]; };
#endif

layout(push_constant) uniform Push {
  uint count, row, c, plane, factor;
} pc;

// Element index of channel ch of pixel p (n * plane + y * w + x) in the float tensor.
uint f_index(uint p, uint ch) {
#if F_HWC
  return p * pc.c + ch;
#else
  return ((p / pc.plane) * pc.c + ch) * pc.plane + p % pc.plane;
#endif
}

void main() {
  const uint item = gl_GlobalInvocationID.x + gl_WorkGroupID.y * pc.row;
  if (item >= pc.count) return;
  const uint groups = pc.c / 16, p = item / groups, c0 = (item % groups) * 16;
  const float factor = uintBitsToFloat(pc.factor);
#if TO_Q8
  uvec4 v;
  [[unroll]] for (uint k = 0; k < 4; ++k) {
    vec4 x;
    [[unroll]] for (uint b = 0; b < 4; ++b) x[b] = float(f[f_index(p, c0 + 4 * k + b)]);
    v[k] = q8_pack4(x * factor, ZP);
  }
  q[item] = v;
#else
  const uvec4 v = q[item];
  [[unroll]] for (uint k = 0; k < 16; ++k)
    f[f_index(p, c0 + k)] = STYPE(factor * float(q8_code(v[k / 4], k % 4) - ZP));
#endif
}
