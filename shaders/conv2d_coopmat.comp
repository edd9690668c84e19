#version 450
// 2D convolution (stride 1, dilation 1, group 1) as an implicit GEMM on cooperative matrices
// (GL_KHR_cooperative_matrix), fp16 storage only. GEMM view: M = output pixels, N = output
// channels, K = input channels x taps. No im2col anywhere: for each chunk of CK input channels
// the workgroup stages the input patch it needs (its pixel tile plus the KH-1 / KW-1 halo) in
// shared memory, pixel-major with the chunk's channels contiguous (HWC), so that the A
// fragment of tap (ky, kx) is a plain strided coopMatLoad at a shifted start: the patch is read
// from global memory once per chunk and reused by all KH*KW taps. The chunk's weights (repacked
// at plan time to [co_tile][chunk][tap][CK][NT], zero-padded past Cin and Cout) are staged next
// to it. A chunk is loaded and stored in one step after the barrier that ends the previous
// chunk's multiplies: holding the next chunk in registers during the multiplies (the earlier
// design) cost ~16 registers per invocation and was 2-8% slower in every layer on the H100
// (bench/RESULTS.md, 2026-11-25 night); the load latency is exposed either way with one
// workgroup per SM, and the multiplies are a third of a chunk's time.
// The accumulators go back through shared memory (fp16; channel-major for an NCHW output,
// pixel-major for an HWC one) so that the epilogue (bias, activation, optional 2x2 max-pool)
// writes the output with contiguous stores.
//
// Layouts: each tensor is NCHW or, with X0_HWC / X1_HWC / Y_HWC, NHWC (channels innermost). An
// HWC input whose channel count is a multiple of 8 is staged with one 16-byte load of 8
// channels of a pixel per item and stored untransposed (the shared patch is pixel-major
// already); an NCHW input with rows of a multiple of 4 pixels as 4 channels x 4 pixels per item
// (8-byte loads, transposed into the patch). Each chunk takes the fastest path its source
// allows (a chunk of a concat reads X0 or X1 or, if c0 is no multiple of CK, both); anything
// else takes the scalar path. An HWC output is written 8 channels of a pixel per 16-byte store.
//
// Fused prologue: CONCAT=1 reads input channels [c0, c_in) from a second tensor (a Concat along
// channels feeding the conv costs no pass and no memory); UPSAMPLE0=1 reads the first tensor
// at (y/2, x/2) (a nearest 2x Resize feeding it). Channel counts need not be multiples of 16:
// the weights are zero-padded, and activation loads past the last channel are masked to 0
// (never read: the memory past a tensor may hold anything, NaN included).
// Fused epilogue: POOL=1 applies a 2x2/2 max-pool (floor or ceil mode: taps past the conv
// output are skipped) and writes only the pooled tensor.
// Narrow inputs (NARROW, e.g. a 3-channel image): a 16-channel chunk per tap would be mostly
// zeros (K = 9 x 16 for 27 real values, and a 48-byte patch pixel for 6 bytes). Instead each
// patch pixel gets an 8-half slot and the A fragments are loaded with a row stride of one slot
// (16 bytes: the smallest stride coopMatLoad allows for 16 halves a row), so that the 16 halves
// of a row span two consecutive slots, i.e. neighbouring taps of one kernel row. NARROW=2: a
// slot holds pixels x and x+1 (4 channels each), so a row is taps kx .. kx+2 (x+1 twice: its
// second copy has zero weights) and a 3x3 conv takes 3 K steps instead of 9; NARROW=1: a slot
// is one pixel's 8 channels, a row two taps, 6 K steps. The rows of a fragment overlap in
// shared memory, which costs nothing: 8 consecutive slots are 128 bytes, one bank-conflict-free
// load phase. Wider inputs take one chunk per 8 / NARROW channels (a plane of slots): a
// 9-channel image (color + albedo + normal) is 3 planes of NARROW=2, 9 K steps as a 16-channel
// chunk would be, but staging 8-byte slots instead of 48-byte pixels.
//
// Folded without a macro (push constants only): a zero Pad before the conv or on X1 (wider
// padding, tighter read bounds) and a crop after it (the padding shifted by the crop's start).
//
// Macros (all required unless marked):
//   KH KW              kernel size (stride and dilation 1)
//   TILE_H TILE_W      output pixels per workgroup; TILE_W a multiple of 16 (one A fragment
//                      is 16 consecutive pixels of one output row); TILE_H even with POOL
//   NT                 output channels per workgroup (a multiple of CM_N * SG_N)
//   CK                 input channels per chunk (a multiple of 16 = the coop K)
//   SG_M SG_N          subgroups per workgroup along M and N (SG_M divides the M fragments)
//   SUBGROUP_SIZE      the device's subgroup size (workgroup = SG_M * SG_N * SUBGROUP_SIZE)
//   CM_N               coop-matrix N: 16 (16x16x16) or 8 (16x8x16); M = K = 16
//   ACC_F16            1: fp16 accumulators, 0: fp32
//   HAS_BIAS ACT       (optional) bias binding, fused activation (common.glsl)
//   CONCAT UPSAMPLE0 POOL (optional, default 0) fusions above
//   B_GLOBAL           (optional) 1: B fragments loaded from the weights buffer (cached; packed
//                      column-major per tap) instead of shared memory; the freed space
//                      double-buffers the patch
//   PROFILE_SKIP_MMA / PROFILE_SKIP_FETCH (optional, benchmarks only: wrong results) 1: leave
//                      out the fragment loads and multiplies / the global-memory loads, to see
//                      what each part of the loop costs (bench/conv_layers.cpp, DENOX_BENCH_PROFILE)
//   X0_HWC X1_HWC Y_HWC (optional, default 0) 1: that tensor is NHWC (see Layouts above)
//   HWC_ONLY           (optional, default 0) 1: every chunk takes the NHWC path (X0 and X1 NHWC,
//                      channel counts multiples of 8): the other staging paths are left out
//   NARROW             (optional, default 0) taps packed into K for inputs of at most 12 channels
//                      (below): 2 for c_in <= 4, 1 for c_in <= 8, 2 in planes of 4 for c_in <= 12;
//                      not with CONCAT, UPSAMPLE0 or
//                      B_GLOBAL. The weights are packed to match (pack_coop_weights).
//   TAIL               (optional, default 0) 1: the next convolution (few output channels, 3x3,
//                      padding 1) as a tap-sum in the epilogue, Y being its output (NCHW); its
//                      macros T_COUT T_NT T_K T_HAS_BIAS T_ACT, bindings and push constants in
//                      conv2d_coopmat_tail.glsl. Needs NT >= c_out (one channel tile).
//   TILES_REVERSED     (optional, default 0) 1: the workgroups take their tiles last to first
//                      (tile_order.glsl: L2 reuse; the lowering sets it with TAIL)
//   HEAD               (optional, default 0) 1: X0 is an image of at most 4 channels and the conv
//                      before this one (3x3, padding 1) is computed into the staged patch per
//                      chunk (conv2d_coopmat_head.glsl: macros H_K H_HAS_BIAS H_ACT, bindings and
//                      push constants); the patch rows are HALO_W + 1 pixels apart. CK 16; not
//                      with NARROW, CONCAT, UPSAMPLE0, B_GLOBAL or TAIL.
//   Y_Q8 Y_ZP          (optional, with Y_HWC) 1: Y is NHWC_Q8 (the int8 precision's tensor,
//                      conv2d_coopmat_q8.comp) of zero point Y_ZP: the NHWC epilogue stores codes;
//                      a last push constant y_inv_scale (float bits: 1 / Y's scale)
//   PROFILE_SKIP_STORE (optional, benchmarks only: wrong results) 1: the NHWC epilogue computes
//                      but does not store
//   A_REUSE BIAS_ONCE  (optional, default 1) experiment switches of two optimizations (at their
//                      definitions here and in coopmat_ops.glsl); 0 turns them off
//   A_DIRECT           (optional, default 0) 1: no patch in shared memory; each lane loads its A
//                      fragments' elements from X0 itself (below). HWC_ONLY without CONCAT,
//                      UPSAMPLE0, NARROW, HEAD or B_GLOBAL; CK a multiple of 32; the A_REUSE
//                      geometry; 32-lane subgroups (or COOP_EMULATE)
// Bindings: X0, [X1 if CONCAT], Y, packed weights, [bias]; with TAIL then the tail's packed
//   weights, [its bias], the ring's partial sums; with HEAD the head's packed weights, [its bias].
// Push constants: c_in h w c_out oh ow pad_top pad_left act_a act_b c0 h0 w0 out_h out_w h1 w1
//   bh1 bw1 (c_in; h, w: the region of the conv's input as the GEMM sees it, after concat /
//   upsample, that holds data; c0 h0 w0: the channels and stored extents of X0; oh ow: the conv
//   output computed; out_h out_w: Y's extents; h1 w1: X1's stored extents, bh1 bw1: the part
//   of it that holds data). The same layout as conv2d.comp's. TAIL adds t_out_h t_out_w (Y's
//   extents), t_crop_top t_crop_left (the crop after the tail), t_act_a t_act_b. HEAD adds h_c h_h
//   h_w h_pad_top h_pad_left h_act_a h_act_b (conv2d_coopmat_head.glsl).
// Dispatch: (ceil(OW / TILE_W), ceil(OH / TILE_H), N * ceil(Cout / NT)).
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
#include "tile_order.glsl"
#ifndef STORAGE_F16
#error "conv2d_coopmat needs STORAGE_F16 (fp16 plans only)"
#endif

#include "conv2d_coopmat_config.glsl"

#define B_X1 1
#define B_Y (1 + CONCAT)
#define B_W (2 + CONCAT)
#define B_BIAS (3 + CONCAT)
#define B_W2 (3 + CONCAT + HAS_BIAS)
#define B_BIAS2 (B_W2 + 1)
#define B_P (B_W2 + 1 + T_HAS_BIAS)
#define B_HW (3 + HAS_BIAS)
#define B_HB (B_HW + 1)

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

// Each tensor also viewed as 4-pixel (and, for the upsampled input, 2-pixel) vectors: the fast
// paths below use them when the rows are multiples of 4 pixels (every OIDN size is).
layout(set = 0, binding = 0) readonly buffer X0Buf { float16_t x0[]; };
layout(set = 0, binding = 0) readonly buffer X0Vec4 { f16vec4 x0v4[]; };
layout(set = 0, binding = 0) readonly buffer X0Vec2 { f16vec2 x0v2[]; };
layout(set = 0, binding = 0) readonly buffer X0U4 { uvec4 x0u4[]; };
#if CONCAT
layout(set = 0, binding = B_X1) readonly buffer X1Buf { float16_t x1[]; };
layout(set = 0, binding = B_X1) readonly buffer X1Vec4 { f16vec4 x1v4[]; };
layout(set = 0, binding = B_X1) readonly buffer X1U4 { uvec4 x1u4[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer YBuf { float16_t y[]; };
layout(set = 0, binding = B_Y) writeonly buffer YVec4 { f16vec4 yv4[]; };
layout(set = 0, binding = B_Y) writeonly buffer YU4 { uvec4 yu4[]; };
layout(set = 0, binding = B_W) readonly buffer WBuf { f16vec4 wts[]; };
#if HAS_BIAS
layout(set = 0, binding = B_BIAS) readonly buffer BBuf { float16_t bias[]; };
#endif

layout(push_constant) uniform Push {
  uint c_in, h, w, c_out, oh, ow;
  int pad_top, pad_left;
  uint act_a, act_b;
  uint c0, h0, w0, out_h, out_w, h1, w1, bh1, bw1;
#if TAIL
  uint t_out_h, t_out_w;
  int t_crop_top, t_crop_left;
  uint t_act_a, t_act_b;
#endif
#if HEAD
  uint h_c, h_h, h_w;
  int h_pad_top, h_pad_left;
  uint h_act_a, h_act_b;
#endif
#if Y_Q8
  uint y_inv_scale;
#endif
} pc;

shared f16vec4 smem[SMEM_VEC4];

#include "coopmat_ops.glsl"

#include "conv2d_coopmat_stage.glsl"
#if HEAD
#include "conv2d_coopmat_head.glsl"
#endif

#if A_DIRECT
#define AD_X_H pc.h
#define AD_X_W pc.w
#define AD_X_C pc.c_in
#define ad_x8 load_x8
#define AD_PREDICATED 1
#define AD_KH KH
#define AD_KW KW
#define AD_B_AT(ky, kx, k) (X_VEC4 * 4 + (((ky) * KW + (kx)) * CK + (k)) * NTS)
#include "conv2d_coopmat_adirect.glsl"
// A chunk's staging: its weights only.
void stage_weights(uint chunk, uint t, uint w_base) {
  fetch_weights(chunk, t, w_base);
  stash_weights(t, 0);
}
#define STAGE_CHUNK(ch) stage_weights(ch, t, w_base)
#else
#define STAGE_CHUNK(ch) stage_chunk(ch, t, n, iy0, ix0, w_base, widths4, 0)
#endif

// Tile row r and 16-pixel column segment cs of fragment i of subgroup row sg_m.
void frag_pos(uint sg_m, uint i, out uint r, out uint cs) {
#if A_REUSE_ON
  r = (sg_m / FRAGS_W) * FM + i, cs = sg_m % FRAGS_W;
#else
  const uint f = sg_m * FM + i;
  r = f / FRAGS_W, cs = f % FRAGS_W;
#endif
}

#if TAIL
#include "conv2d_coopmat_tail.glsl"
#endif

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint sg = gl_SubgroupID;
  const uint sg_m = sg % SG_M, sg_n = sg / SG_M;

  const uint co_tiles = (pc.c_out + NT - 1) / NT;
  const uint ct = TILE_WG.z % co_tiles, n = TILE_WG.z / co_tiles;
  const int oy0 = int(TILE_WG.y * TILE_H), ox0 = int(TILE_WG.x * TILE_W);
  const int iy0 = oy0 - pc.pad_top, ix0 = ox0 - pc.pad_left;
#if NARROW
  const uint chunks = (pc.c_in + CHUNK_C - 1) / CHUNK_C;
#else
  const uint chunks = (pc.c_in + CK - 1) / CK;
#endif
  const uint w_base = ct * chunks * W_ITEMS;

  ACC_DECL;
#if A_DIRECT
  // The tile's whole patch inside X0 and every chunk full: its loads need no checks.
  const bool ad_inside = iy0 >= 0 && ix0 >= 0 && iy0 + (TILE_H + KH - 1) <= int(pc.h) && ix0 + (TILE_W + KW - 1) <= int(pc.w) &&
                         pc.c_in % CK == 0;
#endif

  // The NCHW fast path needs rows of a multiple of 4 pixels (then a 4-pixel group is either
  // wholly inside a row or wholly outside): the bounds and the stored widths; uniform per dispatch.
  uint widths = pc.w;
#if !UPSAMPLE0
  widths |= pc.w0;
#endif
#if CONCAT
  widths |= pc.w1 | pc.bw1;
#endif
  const bool widths4 = (widths & 3u) == 0u;
  const bool fast_out = (pc.out_w & 3u) == 0u;
#if HEAD
  head_fetch(t, n, iy0, ix0);
  fetch_weights(0, t, w_base);
  head_stash(t, 0);
#else
  STAGE_CHUNK(0);
#endif
#if TAIL && !TAIL_LATE_CONSTS
  tail_stage_consts(t);
#endif
  barrier();
  for (uint chunk = 0; chunk < chunks; ++chunk) {
    const bool more = chunk + 1 < chunks;
#if B_GLOBAL
    const uint xb = (chunk & 1u) * STAGE_VEC4;  // this chunk's patch buffer (f16vec4 units)
    const uint wg = (w_base + chunk * W_ITEMS) * 4;  // this chunk's weights (halves)
    // The other buffer was last read by chunk - 1, which every subgroup finished before the
    // barrier ending that iteration: stage the next chunk there now (the other subgroups'
    // multiplies cover this one's load latency), then one barrier.
    if (more) stage_chunk(chunk + 1, t, n, iy0, ix0, w_base, widths4, STAGE_VEC4 - xb);
#else
    const uint xb = 0;
#endif
#if HEAD
    // conv2d_coopmat_head.glsl, steps 2 and 3: the patch from the slots, then the conv weights.
    head_gemm(chunk, sg);
    barrier();
    head_zero_outside(t, iy0, ix0);
    stash_weights(t, 0);
    barrier();
#endif
#if !PROFILE_SKIP_MMA && NARROW
    // K step (ky, ks): taps KX_STEP * ks .. of kernel row ky, read as two consecutive slots per
    // A row (row stride one slot); weights rows (ky * KSX + ks) * 16 .. (pack_coop_weights).
    LOOP_UNROLL for (uint ky = 0; ky < KH; ++ky) {
      LOOP_UNROLL for (uint ks = 0; ks < KSX; ++ks) {
        A_DECL;
        LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
          uint r, cs;
          frag_pos(sg_m, i, r, cs);
          A_LOAD(i, ((r + ky) * SLOT_W + cs * CM_M + KX_STEP * ks) * 8);
        }
        LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
          const uint n0 = (sg_n * FN + j) * CM_N;
          B_LOAD(X_VEC4 * 4 + ((ky * KSX + ks) * CM_K) * NTS + n0);
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
        }
      }
    }
#elif !PROFILE_SKIP_MMA && A_DIRECT
    uint r0, cs0;
    frag_pos(sg_m, 0, r0, cs0);
#include "conv2d_coopmat_adirect_chunk.glsl"
#elif !PROFILE_SKIP_MMA && A_REUSE_ON
    uint r0, cs0;
    frag_pos(sg_m, 0, r0, cs0);
    LOOP_UNROLL for (uint kx = 0; kx < KW; ++kx) {
      LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
        BS_DECL(KH * FN);
        LOOP_UNROLL for (uint ky = 0; ky < KH; ++ky) {
          LOOP_UNROLL for (uint j = 0; j < FN; ++j)
            BS_LOAD(ky * FN + j, X_VEC4 * 4 + ((ky * KW + kx) * CK + kc * CM_K) * NTS + (sg_n * FN + j) * CM_N);
        }
        LOOP_UNROLL for (uint p = 0; p < FM + KH - 1; ++p) {
          A_DECL;  // a[0] only: patch row r0 + p, columns cs0*16 + kx ..
          A_LOAD(0, xb * 4 + ((r0 + p) * PATCH_W + cs0 * CM_M + kx) * CKS + kc * CM_K);
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            if (p >= i && p - i < KH) {
              LOOP_UNROLL for (uint j = 0; j < FN; ++j) MUL_ADD_AB(i, j, 0, (p - i) * FN + j);
            }
          }
        }
      }
    }
#elif !PROFILE_SKIP_MMA
    LOOP_UNROLL for (uint tap = 0; tap < KK; ++tap) {
      const uint ky = tap / KW, kx = tap % KW;
      LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
        // A fragment i, row m: patch pixel (r + ky, cs*16 + m + kx), columns: 16 channels.
        // B fragment j: rows (tap, 16 channels), columns n0 .. n0 + CM_N. Offsets in halves.
        A_DECL;
        LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
          uint r, cs;
          frag_pos(sg_m, i, r, cs);
          A_LOAD(i, xb * 4 + ((r + ky) * PATCH_W + cs * CM_M + kx) * CKS + kc * CM_K);
        }
        LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
          const uint n0 = (sg_n * FN + j) * CM_N;
#if B_GLOBAL
          B_LOAD(wg + (tap * NT + n0) * CK + kc * CM_K);  // column-major taps (pack_coop_weights)
#else
          B_LOAD(X_VEC4 * 4 + (tap * CK + kc * CM_K) * NTS + n0);
#endif
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
        }
      }
    }
#endif
    barrier();  // every subgroup is done reading this chunk
#if !B_GLOBAL
    if (more) {
#if HEAD
      fetch_weights(chunk + 1, t, w_base);  // stored in step 3: its latency overlaps step 2
      head_stash(t, chunk + 1);
#else
      STAGE_CHUNK(chunk + 1);
#endif
      barrier();
    }
#endif
  }

#if TAIL && TAIL_PROFILE >= 3
  return;
#endif
#if TAIL_LATE_CONSTS
  tail_stage_consts(t);  // over the weights stage, which every subgroup finished reading
  barrier();
#endif
#if TAIL
  {  // the tail's input: bias and activation on the accumulators (conv2d_coopmat_tail.glsl)
    const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
    LOOP_UNROLL for (uint j = 0; j < FN; ++j) LOOP_UNROLL for (uint i = 0; i < FM; ++i) TAIL_ACTIVATE_ACC(i, j, act_a, act_b);
  }
#endif
  // Accumulators -> shared: element (pixel m, channel j) at j * MS + m (NCHW output) or at
  // m * NTS + j (HWC output; TAIL: m * YS + j, this subgroup's rows).
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
    uint r, cs;
    frag_pos(sg_m, i, r, cs);
    const uint m0 = (r * FRAGS_W + cs) * CM_M;
    LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
      const uint n0 = (sg_n * FN + j) * CM_N;
#if TAIL
      ACC_STORE_ROWS_S(i, j, m0 * YS + n0, YS);
#elif Y_HWC
      ACC_STORE_ROWS(i, j, m0 * NTS + n0);
#else
      ACC_STORE(i, j, n0 * MS + m0);
#endif
    }
  }
#if TAIL
#if TAIL_PROFILE < 2
  tail_own_rows(sg_m, oy0, ox0);
#endif
  barrier();  // the tap sums read the neighbouring subgroups' rows
#if TAIL_PROFILE < 1
  tail_sums(t, n, oy0, ox0);
#endif
#else
  barrier();

  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
#if Y_HWC && !POOL
  // 8 channels of one pixel per item (channel groups fastest: a warp writes whole pixels).
  EPI8_T b8[8];  // this invocation's biases when G8_FIXED (coopmat_ops.glsl)
  if (G8_FIXED) bias8(ct * NT + 8 * (t % (NT / 8)), b8);
  for (uint e = t; e < M_TILE * (NT / 8); e += WG_SIZE) {
    const uint g8 = e % (NT / 8), m = e / (NT / 8);
    const uint co = ct * NT + 8 * g8;
    const uint oy = uint(oy0) + m / TILE_W, ox = uint(ox0) + m % TILE_W;
    if (co >= pc.c_out || oy >= pc.out_h || ox >= pc.out_w) continue;
    float v[8];
    if (!G8_FIXED) bias8(co, b8);
    activated8(m * NTS + 8 * g8, b8, act_a, act_b, v);
    if (PROFILE_SKIP_STORE == 0 || v[0] == -12345.0) store8(((n * pc.out_h + oy) * pc.out_w + ox) * pc.c_out + co, v);
  }
#elif Y_HWC
  // One pooled pixel's 8 channels per item: the max of the activated 2x2 window (NaN propagates).
  EPI8_T b8[8];  // this invocation's biases when G8_FIXED (coopmat_ops.glsl)
  if (G8_FIXED) bias8(ct * NT + 8 * (t % (NT / 8)), b8);
  for (uint e = t; e < (M_TILE / 4) * (NT / 8); e += WG_SIZE) {
    const uint g8 = e % (NT / 8), q = e / (NT / 8);
    const uint pr = q / (TILE_W / 2), pcl = q % (TILE_W / 2);
    const uint co = ct * NT + 8 * g8;
    const uint py = uint(oy0) / 2 + pr, pxo = uint(ox0) / 2 + pcl;
    if (co >= pc.c_out || py >= pc.out_h || pxo >= pc.out_w) continue;
    if (!G8_FIXED) bias8(co, b8);
    float r[8];
    [[unroll]] for (uint c = 0; c < 8; ++c) r[c] = uintBitsToFloat(0xff800000u);
    [[unroll]] for (uint k = 0; k < 4; ++k) {
      // Window taps past the conv output (ceil_mode's partial windows) are skipped.
      if (2 * py + k / 2 >= pc.oh || 2 * pxo + k % 2 >= pc.ow) continue;
      const uint m = (2 * pr + k / 2) * TILE_W + 2 * pcl + k % 2;
      float v[8];
      activated8(m * NTS + 8 * g8, b8, act_a, act_b, v);
      [[unroll]] for (uint c = 0; c < 8; ++c)
        if (v[c] > r[c] || isnan(v[c])) r[c] = v[c];
    }
    store8(((n * pc.out_h + py) * pc.out_w + pxo) * pc.c_out + co, r);
  }
#elif !POOL
  // 4 consecutive pixels of one channel per item (TILE_W is a multiple of 4).
  for (uint e = t; e < NT * (M_TILE / 4); e += WG_SIZE) {
    const uint j = e / (M_TILE / 4), m = (e % (M_TILE / 4)) * 4;
    const uint co = ct * NT + j;
    const uint oy = uint(oy0) + m / TILE_W, ox = uint(ox0) + m % TILE_W;
    if (co >= pc.c_out || oy >= pc.out_h) continue;
#if HAS_BIAS
    const float b = float(bias[co]);
#else
    const float b = 0.0;
#endif
    const f16vec4 v = smem[(j * MS + m) / 4];
    const uint base = ((n * pc.c_out + co) * pc.out_h + oy) * pc.out_w;
    if (fast_out) {
      // ox is a multiple of 4 and so is out_w: the 4 pixels are all inside or all outside.
      if (ox < pc.out_w)
        yv4[(base + ox) >> 2] = f16vec4(activate(float(v[0]) + b, act_a, act_b), activate(float(v[1]) + b, act_a, act_b),
                                        activate(float(v[2]) + b, act_a, act_b), activate(float(v[3]) + b, act_a, act_b));
    } else {
      [[unroll]] for (uint k = 0; k < 4; ++k)
        if (ox + k < pc.out_w) y[base + ox + k] = float16_t(activate(float(v[k]) + b, act_a, act_b));
    }
  }
#else
  // One pooled pixel per item: the max of the activated 2x2 window (NaN propagates).
  for (uint e = t; e < NT * (M_TILE / 4); e += WG_SIZE) {
    const uint j = e / (M_TILE / 4), q = e % (M_TILE / 4);
    const uint pr = q / (TILE_W / 2), pcl = q % (TILE_W / 2);
    const uint co = ct * NT + j;
    const uint py = uint(oy0) / 2 + pr, pxo = uint(ox0) / 2 + pcl;
    if (co >= pc.c_out || py >= pc.out_h || pxo >= pc.out_w) continue;
#if HAS_BIAS
    const float b = float(bias[co]);
#else
    const float b = 0.0;
#endif
    float r = uintBitsToFloat(0xff800000u);
    [[unroll]] for (uint k = 0; k < 4; ++k) {
      // Window taps past the conv output (ceil_mode's partial windows) are skipped.
      if (2 * py + k / 2 >= pc.oh || 2 * pxo + k % 2 >= pc.ow) continue;
      const uint m = (2 * pr + k / 2) * TILE_W + 2 * pcl + k % 2;
      const uint idx = j * MS + m;
      const float v = activate(float(smem[idx / 4][idx % 4]) + b, act_a, act_b);
      if (v > r || isnan(v)) r = v;
    }
    y[((n * pc.c_out + co) * pc.out_h + py) * pc.out_w + pxo] = float16_t(r);
  }
#endif
#endif  // TAIL
}
