#version 450
// 2D convolution, NCHW, group 1, any kernel / stride / dilation / padding, with fused bias and
// activation. A direct convolution tiled like a GEMM on plain FMA units (no cooperative
// matrices): each workgroup computes TILE_H x TILE_W output pixels x COUT_TILE output channels
// of one image; each invocation holds TP pixels x TC channels of accumulators in registers.
// Input channels are consumed in chunks of CK: the chunk's input patch (the pixel tile plus its
// halo) and its weights are staged in shared memory once and then reused by every tap and
// every invocation, so global memory is read about once per chunk instead of once per tap.
//
// Macros (all required except HAS_BIAS / ACT / STORAGE_F16):
//   KH KW SH SW DH DW   kernel, stride, dilation
//   TILE_W              output columns per workgroup; divides PIX_THREADS (32)
//   TP                  pixels per invocation (TILE_H = TP * 32 / TILE_W)
//   TC                  output channels per invocation (COUT_TILE = 8 * TC)
//   CK                  input channels per chunk
//   HAS_BIAS            1: binding 3 holds the bias
//   ACT                 fused activation (common.glsl)
// Bindings: 0 X (N, Cin, H, W), 1 Y (N, Cout, OH, OW), 2 packed weights, 3 bias (Cout).
// Packed weights (src/kernels/conv2d_layout.hpp): [co_tile][chunk][CK][KH*KW][COUT_TILE],
// zero-filled for channels past Cin / Cout, so a chunk's block is contiguous.
// Push constants: c_in, h, w, c_out, oh, ow, pad_top, pad_left, act_a, act_b (float bits).
// Dispatch: (ceil(OW / TILE_W), ceil(OH / TILE_H), N * ceil(Cout / COUT_TILE)).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define PIX_THREADS 32
#define CHANNEL_GROUPS 8
#define WG_SIZE (PIX_THREADS * CHANNEL_GROUPS)
#define COUT_TILE (CHANNEL_GROUPS * TC)
#define ROWS_PER_STEP (PIX_THREADS / TILE_W)
#define TILE_H (TP * ROWS_PER_STEP)
#define KK (KH * KW)
#define HALO_H ((TILE_H - 1) * SH + (KH - 1) * DH + 1)
#define HALO_W ((TILE_W - 1) * SW + (KW - 1) * DW + 1)
#define HALO (HALO_H * HALO_W)
#define W_CHUNK (CK * KK * COUT_TILE)

#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuf { STYPE x[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { STYPE y[]; };
layout(set = 0, binding = 2) readonly buffer WBuf { STYPE wts[]; };
#if HAS_BIAS
layout(set = 0, binding = 3) readonly buffer BBuf { STYPE bias[]; };
#endif

layout(push_constant) uniform Push {
  uint c_in, h, w, c_out, oh, ow;
  int pad_top, pad_left;
  uint act_a, act_b;
} pc;

shared float s_in[CK * HALO];
shared float s_w[W_CHUNK];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint pt = t % PIX_THREADS, cg = t / PIX_THREADS;
  // This invocation's pixels: column px, rows py0 + j * ROWS_PER_STEP (j < TP). Neighbouring
  // invocations take neighbouring columns, so shared reads and global stores are contiguous.
  const uint px = pt % TILE_W, py0 = pt / TILE_W;

  const uint co_tiles = (pc.c_out + COUT_TILE - 1) / COUT_TILE;
  const uint ct = gl_WorkGroupID.z % co_tiles, n = gl_WorkGroupID.z / co_tiles;
  const int oy0 = int(gl_WorkGroupID.y * TILE_H), ox0 = int(gl_WorkGroupID.x * TILE_W);
  const int iy0 = oy0 * SH - pc.pad_top, ix0 = ox0 * SW - pc.pad_left;

  const uint chunks = (pc.c_in + CK - 1) / CK;
  const uint w_base = ct * chunks * W_CHUNK;
  const uint x_base = n * pc.c_in * pc.h * pc.w;

  float acc[TP][TC];
  for (int j = 0; j < TP; ++j)
    for (int i = 0; i < TC; ++i) acc[j][i] = 0.0;

  for (uint chunk = 0; chunk < chunks; ++chunk) {
    barrier();  // every invocation is done reading the previous chunk
    // The input patch: zero outside the image (padding) and past the last input channel.
    for (uint e = t; e < CK * HALO; e += WG_SIZE) {
      const uint c = e / HALO, r = e % HALO;
      const int iy = iy0 + int(r / HALO_W), ix = ix0 + int(r % HALO_W);
      const uint ci = chunk * CK + c;
      float v = 0.0;
      if (ci < pc.c_in && iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w)) {
        v = float(x[x_base + (ci * pc.h + uint(iy)) * pc.w + uint(ix)]);
      }
      s_in[e] = v;
    }
    const uint w_chunk = w_base + chunk * W_CHUNK;
    for (uint e = t; e < W_CHUNK; e += WG_SIZE) s_w[e] = float(wts[w_chunk + e]);
    barrier();

    for (uint c = 0; c < CK; ++c) {
      for (uint ky = 0; ky < KH; ++ky) {
        for (uint kx = 0; kx < KW; ++kx) {
          const uint wo = (c * KK + ky * KW + kx) * COUT_TILE + cg * TC;
          float wv[TC];
          for (int i = 0; i < TC; ++i) wv[i] = s_w[wo + i];
          const uint io = c * HALO + (py0 * SH + ky * DH) * HALO_W + px * SW + kx * DW;
          for (int j = 0; j < TP; ++j) {
            const float a = s_in[io + j * (ROWS_PER_STEP * SH * HALO_W)];
            for (int i = 0; i < TC; ++i) acc[j][i] = fma(a, wv[i], acc[j][i]);
          }
        }
      }
    }
  }

  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
  const uint ox = uint(ox0) + px;
  if (ox >= pc.ow) return;
  for (int i = 0; i < TC; ++i) {
    const uint co = ct * COUT_TILE + cg * TC + i;
    if (co >= pc.c_out) break;
#if HAS_BIAS
    const float b = float(bias[co]);
#else
    const float b = 0.0;
#endif
    const uint y_plane = (n * pc.c_out + co) * pc.oh;
    for (int j = 0; j < TP; ++j) {
      const uint oy = uint(oy0) + py0 + j * ROWS_PER_STEP;
      if (oy < pc.oh) y[(y_plane + oy) * pc.ow + ox] = STYPE(activate(acc[j][i] + b, act_a, act_b));
    }
  }
}
