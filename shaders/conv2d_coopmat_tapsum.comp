#version 450
// 2D convolution (stride 1, dilation 1, group 1) with few output channels (KH * KW * C_out <= 64,
// e.g. the 3-channel last conv of a denoiser) on cooperative matrices, fp16 storage only.
//
// conv2d_coopmat's GEMM (M = output pixels, N = output channels, K = taps x input channels)
// has N = 8 for such a conv: 3 of 8 columns do work, and every A fragment of the staged patch is
// loaded KH * KW times for one small multiply each. Here the taps go into N instead ("tap-sum"):
//   Z[p][tap * C_out + co] = sum over ci of X[p][ci] * W[co][ci][tap]
// is a 1x1 GEMM over the patch pixels p (M = patch pixels, N = KH * KW * C_out padded to NT,
// K = input channels): each patch pixel's A row is loaded once, the weights are one K x NT
// block. Then each output pixel sums its taps from shared memory:
//   Y[y][x][co] = bias[co] + sum over (ky, kx) of Z[(y + ky, x + kx)][(ky * KW + kx) * C_out + co].
// Zero input outside the image gives Z = 0 there, so the zero padding needs no care. The patch
// is flattened: A fragment f is patch pixels 16f .. 16f + 15 in row-major patch order,
// whatever rows they span (a 1x1 GEMM has no tap shifts), and the fragments are dealt to the
// subgroups round robin.
//
// Per chunk of CK input channels: the patch (HWC in shared memory, padded rows as in
// conv2d_coopmat) and the chunk's K x NT weights are staged, then multiplied; the accumulators
// of all chunks go to shared memory (Z, fp16) once, over the stage buffer, column-major: the
// epilogue's lanes (consecutive output pixels of a row) then read consecutive halves of one
// column, free of bank conflicts (pixel-major, rows NT + 8 halves apart, made them 4-way: the
// first version's epilogue was slower than conv2d_coopmat's whole conv on the H100).
// Fused: bias, activation; a zero Pad before the conv and a crop after it fold into the push
// constants as in conv2d_coopmat (no pool, concat or upsample: the lowering keeps those on
// conv2d_coopmat).
//
// Macros (all required unless marked):
//   KH KW            kernel size (stride and dilation 1)
//   COUT             output channels (KH * KW * COUT <= NT)
//   TILE_H TILE_W    output pixels per workgroup
//   NT               GEMM N: KH * KW * COUT rounded up to a multiple of CM_N (at most 64)
//   CK               input channels per chunk (16 or 32)
//   SG_M             subgroups per workgroup; SUBGROUP_SIZE the device's subgroup size
//   CM_N             coop-matrix N: 16 (16x16x16) or 8 (16x8x16); M = K = 16
//   ACC_F16          1: fp16 accumulators, 0: fp32
//   HAS_BIAS ACT     (optional) bias binding, fused activation (common.glsl)
//   X0_HWC Y_HWC     (optional, default 0) 1: that tensor is NHWC (X0's channel count is then a
//                    multiple of 8: 16-byte loads; else one scalar load per channel)
//   COOP_EMULATE     (optional) plain arithmetic instead of cooperative matrices (tests)
// Bindings: X0, Y, packed weights ([chunk][CK][NT], pack_coop_tapsum_weights), [bias].
// Push constants: conv2d_coopmat's (c_in h w c_out oh ow pad_top pad_left act_a act_b c0 h0 w0
//   out_h out_w h1 w1 bh1 bw1; the last four unused).
// Dispatch: (ceil(OW / TILE_W), ceil(OH / TILE_H), N).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#ifndef COOP_EMULATE
#define COOP_EMULATE 0
#endif
#if !COOP_EMULATE
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#endif
#include "common.glsl"
#ifndef STORAGE_F16
#error "conv2d_coopmat_tapsum needs STORAGE_F16 (fp16 plans only)"
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif
#ifndef X0_HWC
#define X0_HWC 0
#endif
#ifndef Y_HWC
#define Y_HWC 0
#endif
#if ACC_F16
#define ACC_T float16_t
#else
#define ACC_T float
#endif
#if KH * KW * COUT > NT || (NT % CM_N) != 0 || (CK % 16) != 0
#error "conv2d_coopmat_tapsum: inconsistent macros"
#endif

#define CM_M 16
#define CM_K 16
#define B_GLOBAL 0
#define WG_SIZE (SG_M * SUBGROUP_SIZE)
#define HALO_H (TILE_H + KH - 1)
#define HALO_W (TILE_W + KW - 1)
#define HALO (HALO_H * HALO_W)
#define PF ((HALO + CM_M - 1) / CM_M)  // A fragments of the patch
#define PP (PF * CM_M)                 // patch rows staged (the last fragment's tail is zero)
#define FM ((PF + SG_M - 1) / SG_M)    // fragments per subgroup (its last may be past PF)
#define FN (NT / CM_N)
#define M_TILE (TILE_H * TILE_W)
// Row strides in halves, padded by 8 so that the 8 rows of a fragment-load phase fall into
// distinct banks (conv2d_coopmat.comp says why).
#define CKS (CK + 8)
#define NTS (NT + 8)
#define A_STRIDE CKS
#define MS (PP + 8)  // Z's column stride (padded like the others)
#define X_VEC4 (PP * CKS / 4)
#define W_VEC4 (CK * NTS / 4)
#define Z_VEC4 (NT * MS / 4)
#define SMEM_VEC4 ((X_VEC4 + W_VEC4) > Z_VEC4 ? (X_VEC4 + W_VEC4) : Z_VEC4)
// Staging items: 8 channels of one patch pixel (rows past the halo are stored as zeros); 4
// consecutive weights of one K row.
#define X_ITEMS (PP * (CK / 8))
#define X_PER_T ((X_ITEMS + WG_SIZE - 1) / WG_SIZE)
#define W_ITEMS (CK * NT / 4)
#define W_PER_T ((W_ITEMS + WG_SIZE - 1) / WG_SIZE)

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer X0Buf { float16_t x0[]; };
layout(set = 0, binding = 0) readonly buffer X0U4 { uvec4 x0u4[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { float16_t y[]; };
layout(set = 0, binding = 1) writeonly buffer YU4 { uvec4 yu4[]; };  // (coopmat_ops.glsl's NHWC helpers, unused)
layout(set = 0, binding = 2) readonly buffer WBuf { f16vec4 wts[]; };
#if HAS_BIAS
layout(set = 0, binding = 3) readonly buffer BBuf { float16_t bias[]; };
#endif

layout(push_constant) uniform Push {
  uint c_in, h, w, c_out, oh, ow;
  int pad_top, pad_left;
  uint act_a, act_b;
  uint c0, h0, w0, out_h, out_w, h1, w1, bh1, bw1;
} pc;

shared f16vec4 smem[SMEM_VEC4];

#include "coopmat_ops.glsl"

f16vec4 stage_x[2 * X_PER_T];
f16vec4 stage_w[W_PER_T];

// Channels ci .. ci + 7 of input pixel (iy, ix) of image n, zero outside the image and past c_in.
void fetch8(uint n, uint ci, int iy, int ix, uint i) {
  stage_x[2 * i] = stage_x[2 * i + 1] = f16vec4(0.0);
  if (ci >= pc.c_in || iy < 0 || iy >= int(pc.h) || ix < 0 || ix >= int(pc.w)) return;
#if X0_HWC
  // c_in is a multiple of 8 (the lowering's NHWC rule): one aligned 16-byte load.
  const uvec4 u = x0u4[(((n * pc.h0 + uint(iy)) * pc.w0 + uint(ix)) * pc.c0 + ci) >> 3];
  stage_x[2 * i] = f16vec4(unpackFloat2x16(u.x), unpackFloat2x16(u.y));
  stage_x[2 * i + 1] = f16vec4(unpackFloat2x16(u.z), unpackFloat2x16(u.w));
#else
  float16_t v[8];
  [[unroll]] for (uint k = 0; k < 8; ++k)
    v[k] = ci + k < pc.c_in ? x0[((n * pc.c0 + ci + k) * pc.h0 + uint(iy)) * pc.w0 + uint(ix)] : float16_t(0.0);
  stage_x[2 * i] = f16vec4(v[0], v[1], v[2], v[3]);
  stage_x[2 * i + 1] = f16vec4(v[4], v[5], v[6], v[7]);
#endif
}

// Loads chunk `chunk` (patch and weights) into registers, then stores it into the stage buffer.
void stage_chunk(uint chunk, uint t, uint n, int iy0, int ix0) {
  // Item e: 8-channel group e % (CK / 8) (fastest: a warp reads whole runs of pixels) of patch
  // row e / (CK / 8).
  LOOP_UNROLL for (uint i = 0; i < X_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    const uint g = e % (CK / 8), p = e / (CK / 8);
    if (e < X_ITEMS && p < HALO) {
      fetch8(n, chunk * CK + 8 * g, iy0 + int(p / HALO_W), ix0 + int(p % HALO_W), i);
    } else {
      stage_x[2 * i] = stage_x[2 * i + 1] = f16vec4(0.0);
    }
  }
  const uint wb = chunk * W_ITEMS;
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < W_ITEMS) stage_w[i] = wts[wb + e];
  }
  LOOP_UNROLL for (uint i = 0; i < X_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < X_ITEMS) {
      const uint g = e % (CK / 8), p = e / (CK / 8);
      smem[p * (CKS / 4) + 2 * g] = stage_x[2 * i];
      smem[p * (CKS / 4) + 2 * g + 1] = stage_x[2 * i + 1];
    }
  }
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < W_ITEMS) smem[X_VEC4 + (e / (NT / 4)) * (NTS / 4) + e % (NT / 4)] = stage_w[i];
  }
}

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint sg = gl_SubgroupID;
  const uint n = gl_WorkGroupID.z;
  const int oy0 = int(gl_WorkGroupID.y * TILE_H), ox0 = int(gl_WorkGroupID.x * TILE_W);
  const int iy0 = oy0 - pc.pad_top, ix0 = ox0 - pc.pad_left;
  const uint chunks = (pc.c_in + CK - 1) / CK;

  ACC_DECL;
  stage_chunk(0, t, n, iy0, ix0);
  barrier();
  for (uint chunk = 0; chunk < chunks; ++chunk) {
    LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
      BS_DECL(FN);
      LOOP_UNROLL for (uint j = 0; j < FN; ++j) BS_LOAD(j, X_VEC4 * 4 + kc * CM_K * NTS + j * CM_N);
      LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
        const uint f = sg + i * SG_M;  // uniform per subgroup
        if (f < PF) {
          A_DECL;
          A_LOAD(0, f * CM_M * CKS + kc * CM_K);
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) MUL_ADD_AB(i, j, 0, j);
        }
      }
    }
    barrier();  // every subgroup is done reading this chunk
    if (chunk + 1 < chunks) {
      stage_chunk(chunk + 1, t, n, iy0, ix0);
      barrier();
    }
  }

  // Z (the accumulators) over the stage buffer: element (patch pixel p, column c) at c * MS + p.
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
    const uint f = sg + i * SG_M;
    if (f < PF) {
      LOOP_UNROLL for (uint j = 0; j < FN; ++j) ACC_STORE(i, j, j * CM_N * MS + f * CM_M);
    }
  }
  barrier();

  // One (channel, pixel) per item, pixels fastest: a warp writes runs of one output row (NCHW).
  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
  for (uint e = t; e < COUT * M_TILE; e += WG_SIZE) {
    const uint co = e / M_TILE, m = e % M_TILE;
    const uint r = m / TILE_W, c = m % TILE_W;
    const uint oy = uint(oy0) + r, ox = uint(ox0) + c;
    if (oy >= pc.out_h || ox >= pc.out_w) continue;
#if HAS_BIAS
    float s = float(bias[co]);
#else
    float s = 0.0;
#endif
    [[unroll]] for (uint ky = 0; ky < KH; ++ky)
      [[unroll]] for (uint kx = 0; kx < KW; ++kx) {
        const uint idx = ((ky * KW + kx) * COUT + co) * MS + (r + ky) * HALO_W + c + kx;
        s += float(smem[idx >> 2][idx & 3]);
      }
    const float16_t v = float16_t(activate(s, act_a, act_b));
#if Y_HWC
    y[((n * pc.out_h + oy) * pc.out_w + ox) * COUT + co] = v;
#else
    y[((n * COUT + co) * pc.out_h + oy) * pc.out_w + ox] = v;
#endif
  }
}
