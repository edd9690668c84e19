#version 450
// Nearest-neighbour upsampling by integer factors on H and W (ONNX Resize, mode nearest); one
// invocation per output element. The source index of output position o along an axis follows
// the ONNX coordinate transform and nearest rounding, clamped to [0, in - 1]:
//   ALIGN_CORNERS 0: every other transform is affine with slope 1/S, so the source index is
//     o / S + D0 + (o % S >= T ? 1 : 0); the host derives D0 and T per axis from the modes
//     (floor division: D0 = 0, T = S).
//   ALIGN_CORNERS 1: src = o * (in - 1) / (out - 1) in exact integer arithmetic, rounded by
//     NEAREST (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil).
//
// Macros: SCALE_H SCALE_W, ALIGN_CORNERS, NEAREST, D0_H T_H D0_W T_W.
// Bindings: 0 X (N, C, H, W), 1 Y (N, C, OH, OW).
// Push constants: h, w, oh, ow.
// Dispatch: (ceil(OW / 32), ceil(OH / 8), N * C).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

#ifndef ALIGN_CORNERS
#define ALIGN_CORNERS 0
#endif

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuf { STYPE x[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { STYPE y[]; };

layout(push_constant) uniform Push { uint h, w, oh, ow; } pc;

int source_index(uint o, uint in_extent, uint out_extent, int S, int D0, int T) {
#if ALIGN_CORNERS
  int s = 0;
  if (out_extent > 1) {
    const uint num = o * (in_extent - 1), den = out_extent - 1;
    const uint q = num / den, rem = num % den;
#if NEAREST == 0
    s = int(q + (2 * rem > den ? 1u : 0u));
#elif NEAREST == 1
    s = int(q + (2 * rem >= den ? 1u : 0u));
#elif NEAREST == 2
    s = int(q);
#else
    s = int(q + (rem != 0 ? 1u : 0u));
#endif
  }
#else
  const int s = int(o) / S + D0 + (int(o) % S >= T ? 1 : 0);
#endif
  return clamp(s, 0, int(in_extent) - 1);
}

void main() {
  const uint ox = gl_GlobalInvocationID.x, oy = gl_GlobalInvocationID.y, plane = gl_WorkGroupID.z;
  if (ox >= pc.ow || oy >= pc.oh) return;
#if ALIGN_CORNERS
  const int sy = source_index(oy, pc.h, pc.oh, SCALE_H, 0, 0);
  const int sx = source_index(ox, pc.w, pc.ow, SCALE_W, 0, 0);
#else
  const int sy = source_index(oy, pc.h, pc.oh, SCALE_H, D0_H, T_H);
  const int sx = source_index(ox, pc.w, pc.ow, SCALE_W, D0_W, T_W);
#endif
  y[(plane * pc.oh + oy) * pc.ow + ox] = x[(plane * pc.h + uint(sy)) * pc.w + uint(sx)];
}
