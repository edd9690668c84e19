#version 450
// Max / average pooling over H and W of an NCHW tensor; one invocation per output element.
// Output extents come from the graph (floor or ceil_mode): windows are placed from them and
// taps outside the input are skipped. Max ignores padding; average divides by the taps inside
// the input, or with COUNT_INCLUDE_PAD by the taps inside [-pad_begin, in + pad_end), like the
// CPU reference. NaN propagates through max.
//
// Macros: KH KW SH SW DH DW, POOL_MAX (1 max, 0 average), COUNT_INCLUDE_PAD (average only).
// Bindings: 0 X (N, C, H, W), 1 Y (N, C, OH, OW).
// Push constants: h, w, oh, ow, pad_top, pad_left, pad_bottom, pad_right.
// Dispatch: (ceil(OW / 32), ceil(OH / 8), N * C).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

#ifndef COUNT_INCLUDE_PAD
#define COUNT_INCLUDE_PAD 0
#endif

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuf { STYPE x[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { STYPE y[]; };

layout(push_constant) uniform Push {
  uint h, w, oh, ow;
  int pad_top, pad_left, pad_bottom, pad_right;
} pc;

// Taps k < K of window start `s` (dilation d) whose position lies in [lo, hi).
uint taps_inside(int s, int d, int K, int lo, int hi) {
  uint n = 0;
  for (int k = 0; k < K; ++k) {
    const int p = s + k * d;
    n += (p >= lo && p < hi) ? 1u : 0u;
  }
  return n;
}

void main() {
  const uint ox = gl_GlobalInvocationID.x, oy = gl_GlobalInvocationID.y, plane = gl_WorkGroupID.z;
  if (ox >= pc.ow || oy >= pc.oh) return;
  const int y0 = int(oy) * SH - pc.pad_top, x0 = int(ox) * SW - pc.pad_left;
  const uint base = plane * pc.h * pc.w;
#if POOL_MAX
  float r = uintBitsToFloat(0xff800000u);  // -inf
#else
  float r = 0.0;
  uint count = 0;
#endif
  for (int ky = 0; ky < KH; ++ky) {
    const int iy = y0 + ky * DH;
    if (iy < 0 || iy >= int(pc.h)) continue;
    for (int kx = 0; kx < KW; ++kx) {
      const int ix = x0 + kx * DW;
      if (ix < 0 || ix >= int(pc.w)) continue;
      const float v = float(x[base + uint(iy) * pc.w + uint(ix)]);
#if POOL_MAX
      if (v > r || isnan(v)) r = v;  // once NaN, nothing compares greater: NaN stays
#else
      r += v;
      ++count;
#endif
    }
  }
#if !POOL_MAX
#if COUNT_INCLUDE_PAD
  count = taps_inside(y0, DH, KH, -pc.pad_top, int(pc.h) + pc.pad_bottom) *
          taps_inside(x0, DW, KW, -pc.pad_left, int(pc.w) + pc.pad_right);
#endif
  r /= float(count);
#endif
  y[(plane * pc.oh + oy) * pc.ow + ox] = STYPE(r);
}
