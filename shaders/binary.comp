#version 450
// Elementwise Add / Sub / Mul / Div with numpy broadcasting on up to 4D: each input is read
// through strides that are 0 on its broadcast axes. One invocation per output element.
//
// Macros: OP (0 add, 1 sub, 2 mul, 3 div).
// Bindings: 0 A, 1 B, 2 Y (contiguous, extents e0..e3).
// Push constants: e1, e2, e3, a_s0..a_s3, b_s0..b_s3 (element strides).
// Dispatch: (ceil(e3 / 32), ceil(e2 / 8), e0 * e1).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer ABuf { STYPE a[]; };
layout(set = 0, binding = 1) readonly buffer BBuf { STYPE b[]; };
layout(set = 0, binding = 2) writeonly buffer YBuf { STYPE y[]; };

layout(push_constant) uniform Push {
  uint e1, e2, e3;
  uint a_s0, a_s1, a_s2, a_s3;
  uint b_s0, b_s1, b_s2, b_s3;
} pc;

void main() {
  const uint i3 = gl_GlobalInvocationID.x, i2 = gl_GlobalInvocationID.y;
  if (i3 >= pc.e3 || i2 >= pc.e2) return;
  const uint i1 = gl_WorkGroupID.z % pc.e1, i0 = gl_WorkGroupID.z / pc.e1;
  const float p = float(a[i0 * pc.a_s0 + i1 * pc.a_s1 + i2 * pc.a_s2 + i3 * pc.a_s3]);
  const float q = float(b[i0 * pc.b_s0 + i1 * pc.b_s1 + i2 * pc.b_s2 + i3 * pc.b_s3]);
#if OP == 0
  const float r = p + q;
#elif OP == 1
  const float r = p - q;
#elif OP == 2
  const float r = p * q;
#else
  const float r = p / q;
#endif
  y[((i0 * pc.e1 + i1) * pc.e2 + i2) * pc.e3 + i3] = STYPE(r);
}
