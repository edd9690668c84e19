#version 450
// Strided 4D copy: dst[dst_off + sum_k i_k * dst_s_k] = src[src_off + sum_k i_k * src_s_k] for
// every index i of the extents (e0, e1, e2, e3). One family serves every pure data movement:
//   concat   one dispatch per input, writing a slice of the output along the concat axis;
//   slice    src_off = the starts, src strides = steps x element strides (may be negative);
//   copy     a graph output that is a graph input or a constant gets its own tensor.
// Lower-rank tensors are viewed as 4D with leading extents of 1.
//
// Bindings: 0 src, 1 dst.
// Push constants: e1, e2, e3, src_off, src_s0..src_s3, dst_off, dst_s0..dst_s3 (offsets and
// strides in elements, signed).
// Dispatch: (ceil(e3 / 32), ceil(e2 / 8), e0 * e1).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer SrcBuf { STYPE src[]; };
layout(set = 0, binding = 1) writeonly buffer DstBuf { STYPE dst[]; };

layout(push_constant) uniform Push {
  uint e1, e2, e3;
  int src_off, src_s0, src_s1, src_s2, src_s3;
  int dst_off, dst_s0, dst_s1, dst_s2, dst_s3;
} pc;

void main() {
  const uint i3 = gl_GlobalInvocationID.x, i2 = gl_GlobalInvocationID.y;
  if (i3 >= pc.e3 || i2 >= pc.e2) return;
  const int i1 = int(gl_WorkGroupID.z % pc.e1), i0 = int(gl_WorkGroupID.z / pc.e1);
  const int s = pc.src_off + i0 * pc.src_s0 + i1 * pc.src_s1 + int(i2) * pc.src_s2 + int(i3) * pc.src_s3;
  const int d = pc.dst_off + i0 * pc.dst_s0 + i1 * pc.dst_s1 + int(i2) * pc.dst_s2 + int(i3) * pc.dst_s3;
  dst[d] = src[s];
}
