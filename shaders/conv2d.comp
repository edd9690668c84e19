#version 450
// 2D convolution, NCHW, group 1, any kernel / stride / dilation / padding, with fused bias and
// activation. A direct convolution tiled like a GEMM on plain FMA units (no cooperative
// matrices): each workgroup computes TILE_H x TILE_W output pixels x COUT_TILE output channels
// of one image; each invocation holds TP pixels x TC channels of accumulators in registers.
// Input channels are consumed in chunks of CK: the chunk's input patch (the pixel tile plus its
// halo) and its weights are staged in shared memory once and then reused by every tap and
// every invocation, so global memory is read about once per chunk instead of once per tap.
//
// Fusions (src/kernels/lowering_ops.hpp, ConvFusion; the same set as conv2d_coopmat):
//   CONCAT=1     input channels [c0, c_in) come from a second tensor X1 (a channel Concat);
//   UPSAMPLE0=1  X0 is read at (y/2, x/2) (a nearest 2x Resize before the conv or the concat);
//   POOL=1       a 2x2/2 max-pool after the activation: the tile's outputs are staged in shared
//                memory and only the pooled tensor is written;
//   a zero Pad before the conv or on X1, and a crop (Slice) after it, need no macro: they are
//   push constants (wider padding and read bounds; padding shifted by the crop's start).
//
// Macros (all required except HAS_BIAS / ACT / STORAGE_F16 / CONCAT / UPSAMPLE0 / POOL):
//   KH KW SH SW DH DW   kernel, stride, dilation
//   TILE_W              output columns per workgroup; divides PIX_THREADS (32)
//   TP                  pixels per invocation (TILE_H = TP * 32 / TILE_W)
//   TC                  output channels per invocation (COUT_TILE = 8 * TC)
//   CK                  input channels per chunk
//   HAS_BIAS            1: binding 3 holds the bias
//   ACT                 fused activation (common.glsl)
// Bindings: X0, [X1 if CONCAT], Y, packed weights, [bias].
// Packed weights (src/kernels/conv2d_layout.hpp): [co_tile][chunk][CK][KH*KW][COUT_TILE],
// zero-filled for channels past Cin / Cout, so a chunk's block is contiguous.
// Push constants: c_in h w c_out oh ow pad_top pad_left act_a act_b c0 h0 w0 out_h out_w h1 w1
// bh1 bw1 (act_a/b: float bits). h, w: the region of the conv's input (as the GEMM sees it,
// after concat / upsample) that holds data, zero elsewhere; c0 h0 w0: X0's channels and stored
// extents; oh ow: the conv output computed; out_h out_w: Y's extents; h1 w1: X1's stored
// extents, bh1 bw1: the part of it that holds data.
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
#ifndef CONCAT
#define CONCAT 0
#endif
#ifndef UPSAMPLE0
#define UPSAMPLE0 0
#endif
#ifndef POOL
#define POOL 0
#endif
#if POOL && ((TILE_H % 2) != 0 || (TILE_W % 2) != 0)
#error "conv2d: POOL needs an even tile"
#endif
#define IN_FLOATS (CK * HALO + W_CHUNK)
#if POOL
#define OUT_FLOATS (COUT_TILE * TILE_H * TILE_W)
#else
#define OUT_FLOATS 0
#endif
#define B_X1 1
#define B_Y (1 + CONCAT)
#define B_W (2 + CONCAT)
#define B_BIAS (3 + CONCAT)

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer X0Buf { STYPE x0[]; };
#if CONCAT
layout(set = 0, binding = B_X1) readonly buffer X1Buf { STYPE x1[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer YBuf { STYPE y[]; };
layout(set = 0, binding = B_W) readonly buffer WBuf { STYPE wts[]; };
#if HAS_BIAS
layout(set = 0, binding = B_BIAS) readonly buffer BBuf { STYPE bias[]; };
#endif

layout(push_constant) uniform Push {
  uint c_in, h, w, c_out, oh, ow;
  int pad_top, pad_left;
  uint act_a, act_b;
  uint c0, h0, w0, out_h, out_w, h1, w1, bh1, bw1;
} pc;

// The input patch at 0, the weight chunk at CK * HALO; with POOL the activated outputs of the
// tile are staged over both after the last chunk.
shared float smem[IN_FLOATS > OUT_FLOATS ? IN_FLOATS : OUT_FLOATS];
#define S_W (CK * HALO)

// One value of the conv's input as the GEMM sees it; (iy, ix) inside [0, h) x [0, w), ci < c_in.
float load_x(uint n, uint ci, uint iy, uint ix) {
#if CONCAT
  if (ci >= pc.c0) {
    if (iy >= pc.bh1 || ix >= pc.bw1) return 0.0;  // a folded Pad's zeros
    return float(x1[((n * (pc.c_in - pc.c0) + (ci - pc.c0)) * pc.h1 + iy) * pc.w1 + ix]);
  }
#endif
#if UPSAMPLE0
  return float(x0[((n * pc.c0 + ci) * pc.h0 + min(iy >> 1, pc.h0 - 1)) * pc.w0 + min(ix >> 1, pc.w0 - 1)]);
#else
  return float(x0[((n * pc.c0 + ci) * pc.h0 + iy) * pc.w0 + ix]);
#endif
}

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
      if (ci < pc.c_in && iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w)) v = load_x(n, ci, uint(iy), uint(ix));
      smem[e] = v;
    }
    const uint w_chunk = w_base + chunk * W_CHUNK;
    for (uint e = t; e < W_CHUNK; e += WG_SIZE) smem[S_W + e] = float(wts[w_chunk + e]);
    barrier();

    for (uint c = 0; c < CK; ++c) {
      for (uint ky = 0; ky < KH; ++ky) {
        for (uint kx = 0; kx < KW; ++kx) {
          const uint wo = (c * KK + ky * KW + kx) * COUT_TILE + cg * TC;
          float wv[TC];
          for (int i = 0; i < TC; ++i) wv[i] = smem[S_W + wo + i];
          const uint io = c * HALO + (py0 * SH + ky * DH) * HALO_W + px * SW + kx * DW;
          for (int j = 0; j < TP; ++j) {
            const float a = smem[io + j * (ROWS_PER_STEP * SH * HALO_W)];
            for (int i = 0; i < TC; ++i) acc[j][i] = fma(a, wv[i], acc[j][i]);
          }
        }
      }
    }
  }

  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
#if !POOL
  const uint ox = uint(ox0) + px;
  if (ox >= pc.out_w) return;
  for (int i = 0; i < TC; ++i) {
    const uint co = ct * COUT_TILE + cg * TC + i;
    if (co >= pc.c_out) break;
#if HAS_BIAS
    const float b = float(bias[co]);
#else
    const float b = 0.0;
#endif
    const uint y_plane = (n * pc.c_out + co) * pc.out_h;
    for (int j = 0; j < TP; ++j) {
      const uint oy = uint(oy0) + py0 + j * ROWS_PER_STEP;
      if (oy < pc.out_h) y[(y_plane + oy) * pc.out_w + ox] = STYPE(activate(acc[j][i] + b, act_a, act_b));
    }
  }
#else
  // Stage the activated tile ([channel][row][column]), then one pooled pixel per item: the max
  // of its 2x2 window (NaN propagates; taps past the conv output, ceil mode's partial windows,
  // are skipped).
  barrier();  // every invocation is done reading the last chunk
  for (int i = 0; i < TC; ++i) {
    const uint co = ct * COUT_TILE + cg * TC + i;
#if HAS_BIAS
    const float b = co < pc.c_out ? float(bias[co]) : 0.0;
#else
    const float b = 0.0;
#endif
    for (int j = 0; j < TP; ++j)
      smem[((cg * TC + i) * TILE_H + py0 + j * ROWS_PER_STEP) * TILE_W + px] = activate(acc[j][i] + b, act_a, act_b);
  }
  barrier();
  for (uint e = t; e < COUT_TILE * (TILE_H / 2) * (TILE_W / 2); e += WG_SIZE) {
    const uint c = e / ((TILE_H / 2) * (TILE_W / 2)), q = e % ((TILE_H / 2) * (TILE_W / 2));
    const uint pr = q / (TILE_W / 2), pcl = q % (TILE_W / 2);
    const uint co = ct * COUT_TILE + c;
    const uint py = uint(oy0) / 2 + pr, pxo = uint(ox0) / 2 + pcl;
    if (co >= pc.c_out || py >= pc.out_h || pxo >= pc.out_w) continue;
    float r = uintBitsToFloat(0xff800000u);
    for (uint k = 0; k < 4; ++k) {
      if (2 * py + k / 2 >= pc.oh || 2 * pxo + k % 2 >= pc.ow) continue;
      const float v = smem[(c * TILE_H + 2 * pr + k / 2) * TILE_W + 2 * pcl + k % 2];
      if (v > r || isnan(v)) r = v;
    }
    y[((n * pc.c_out + co) * pc.out_h + py) * pc.out_w + pxo] = STYPE(r);
  }
#endif
}
