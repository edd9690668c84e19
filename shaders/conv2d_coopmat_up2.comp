#version 450
// A 3x3 convolution (stride 1, padding 1) of a nearest-2x-upsampled tensor X0, optionally
// concatenated along channels with a full-resolution tensor X1, as an implicit GEMM on
// cooperative matrices, decomposed by output phase so that the upsampled channels cost 4 taps
// instead of 9.
//
// Why: output pixel (2Y+py, 2X+px) of conv3x3(upsample2x(X0)) reads upsampled rows 2Y+py-1 ..
// 2Y+py+1, i.e. low-resolution rows {Y-1, Y} for py = 0 (kernel rows {0}, {1,2}) and {Y, Y+1}
// for py = 1 (kernel rows {0,1}, {2}); likewise for columns. So each of the 4 output phases
// (py, px) is a 2x2 convolution of X0 itself with weights that are sums of the 3x3 taps
// (packed at plan time, pack_coop_up2_weights): 2.25x fewer multiplies on those channels, and
// the patch staged in shared memory is a low-resolution one (4x fewer pixels). The skip
// channels of X1 keep their 9 taps.
//
// GEMM view: M = the workgroup's TILE_H x TILE_W output pixels ordered phase-major (phase, then
// low-resolution row, then column), so a 16-row A fragment is 16 consecutive low-resolution
// pixels of one phase: a strided coopMatLoad from the low-resolution patch. Each subgroup's
// fragments lie in one phase (FR_PH % FM == 0), so its B fragments are that phase's weights.
// For X1 chunks the full-resolution patch is stored with its columns de-interleaved by parity
// (even columns, then odd ones), so that the 16 pixels of one phase are again consecutive rows.
// Chunks: first ceil(c0 / CK) chunks of X0 (weights [phase][2x2 tap][CK][NT]), then
// ceil((c_in - c0) / CK) chunks of X1 ([3x3 tap][CK][NT]); each chunk's block is contiguous.
// Pipelining, staging, padding, masking and layouts as in conv2d_coopmat.comp (which says why).
//
// ONE_PHASE=1: a workgroup computes one output phase (py, px) only (gl_WorkGroupID.x % 4), i.e.
// TILE_H x TILE_W pixels of the low-resolution grid, output pixels (2Y + py, 2X + px). Why: with
// all 4 phases in a workgroup every X0 chunk stages the 4 phases' weights (16 taps x CK x NT,
// 32 KB for NT 64) for TILE_H x TILE_W / 4 low-resolution pixels, and that staging bounds the
// kernel on the H100; one phase stages 4 taps' weights for 4x the low-resolution pixels.
// The skip X1 is then read at 2 TILE_W + 1 full-resolution columns of 2 TILE_H + 1 rows. A
// skip of at most 12 channels (OIDN's 3-channel image or 9-channel image + albedo + normal) is
// staged in planes of 4 channels, one chunk each: slots of two neighbouring same-row pixels
// (columns 2j + px - 1 and 2j + px, 4 channels each), A rows two consecutive slots at a
// one-slot stride (conv2d_coopmat.comp's NARROW), so one K step per kernel row covers the 3
// taps (the 4th position has zero weights); a plane's weights are packed [ky][16][NT]
// (pack_coop_up2_weights).
// SKIP_ROWS=1 (a wider skip): each CK-channel skip chunk is staged in 3 row steps, step ky
// holding the TILE_H full-resolution rows that kernel row ky reads (every other row), columns
// de-interleaved by parity as above, so that a tap's 16 A rows are 16 consecutive pixels. Why
// rows: the whole 2 TILE_H + 1 row patch of a 16x16 tile (35 KB) would put the kernel above
// the ~30 KB at which two workgroups share an SM; a row step is 17 KB + 3 taps' weights. The
// pixels are not padded to CKS (rows of 32 bytes: 2-way bank conflicts on these A loads) for
// the same reason. Weights [3x3 tap][CK][NT] per chunk, as without ONE_PHASE. Why not rows for
// 9 channels: on the H100 dec_conv1a with the 9-channel skip took 0.69 ms in row steps (as
// without ONE_PHASE); planes stage half the bytes (bench/RESULTS.md, 2026-11-26 skip rows).
//
// X0_Q8=1 (with ONE_PHASE, an NHWC or NHWC_Q8 output and CM_N 16; the opt-in int8 precision,
// src/kernels/int8.md): X0 is NHWC_Q8 (codes with zero point X0_ZP) and its chunks of
// 32 channels multiply on 16x16x32 int8 fragments into int32 accumulators, which start at the
// phase's zero-point correction (binding ACC0: [co_tile][phase][NT/16][16][16]); after the last
// X0 chunk they become the fp16/fp32 accumulators times `prescale` and the skip's fp16 chunks
// add to them with weights divided by the channel's factor, and the epilogue applies factor and
// bias per channel (EPI_FACTOR, binding EPI: vec2 per channel). Why: the upsampled channels are
// most of an OIDN decoder conv's multiplies, and the skip (the 9-channel image of dec_conv1a)
// cannot be NHWC_Q8. An int8 patch pixel or weight row takes 48 bytes (QS: 32 codes and 16 of
// padding, so fragment rows fall in distinct banks), weights column-major ([tap][n][32] per
// phase, the int8 B layout the tensor cores load fast; conv2d_coopmat_q8.comp says why).
// Macros: TILE_H TILE_W (output pixels per workgroup; TILE_H even, TILE_W a multiple of 32; with
//   ONE_PHASE low-resolution pixels of one phase, TILE_W a multiple of 16), ONE_PHASE (optional),
//   SKIP_ROWS (optional, with ONE_PHASE and CONCAT: the lowering sets it for skips of more than
//   12 channels), A_DIRECT (optional, with ONE_PHASE, an fp16 NHWC X0, CK a multiple of 32 and
//   TILE_W 16: the X0 chunks' A fragments built by the lanes from X0, below), TILES_REVERSED
//   (optional: the tiles last to first, tile_order.glsl; no lowering sets it yet: the variant
//   harness measures it),
//   NT CK SG_M SG_N SUBGROUP_SIZE CM_N ACC_F16 HAS_BIAS ACT as in conv2d_coopmat.comp,
//   CONCAT (optional, default 0): X1 present; X0_HWC X1_HWC Y_HWC (optional, default 0) 1: that
//   tensor is NHWC (with a channel count that is a multiple of 8: the lowering checks). Each
//   chunk kind compiles only the staging paths its tensor's layout can take (16-byte NHWC, or the
//   NCHW vector and scalar ones), and the register array is sized for those.
// Bindings and push constants: conv2d_coopmat.comp's (pad_top / pad_left are 1 and ignored;
// the lowering checks h = 2 h0, w = 2 w0 and output extents = input extents).
// Dispatch: (ceil(OW / TILE_W), ceil(OH / TILE_H), N * ceil(Cout / NT)); with ONE_PHASE
// (ceil(w0 / TILE_W) * 4, ceil(h0 / TILE_H), N * ceil(Cout / NT)).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#ifndef COOP_EMULATE
#define COOP_EMULATE 0
#endif
#if !COOP_EMULATE
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#if defined(X0_Q8) && X0_Q8
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#endif
#endif
#include "common.glsl"
#include "tile_order.glsl"
#ifndef STORAGE_F16
#error "conv2d_coopmat_up2 needs STORAGE_F16 (fp16 plans only)"
#endif

#include "conv2d_coopmat_up2_config.glsl"

#define B_X1 1
#define B_Y (1 + CONCAT)
#define B_W (2 + CONCAT)
#define B_BIAS (3 + CONCAT)

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer X0Buf { float16_t x0[]; };
layout(set = 0, binding = 0) readonly buffer X0Vec4 { f16vec4 x0v4[]; };
layout(set = 0, binding = 0) readonly buffer X0U4 { uvec4 x0u4[]; };
#if CONCAT
layout(set = 0, binding = B_X1) readonly buffer X1Buf { float16_t x1[]; };
layout(set = 0, binding = B_X1) readonly buffer X1Vec4 { f16vec4 x1v4[]; };
layout(set = 0, binding = B_X1) readonly buffer X1U4 { uvec4 x1u4[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer YBuf { float16_t y[]; };
layout(set = 0, binding = B_Y) writeonly buffer YVec4 { f16vec4 yv4[]; };
layout(set = 0, binding = B_Y) writeonly buffer YU4 { uvec4 yu4[]; };
layout(set = 0, binding = B_W) readonly buffer WBufU4 { uvec4 wtsu4[]; };
#if HAS_BIAS
layout(set = 0, binding = B_BIAS) readonly buffer BBuf { float16_t bias[]; };
#endif
#if X0_Q8
layout(set = 0, binding = B_BIAS) readonly buffer EpiBuf { vec2 epi[]; };      // factor, bias
layout(set = 0, binding = B_BIAS + 1) readonly buffer Acc0Buf { int acc0[]; };  // zero-point corrections
#endif

layout(push_constant) uniform Push {
  uint c_in, h, w, c_out, oh, ow;
  int pad_top, pad_left;
  uint act_a, act_b;
  uint c0, h0, w0, out_h, out_w, h1, w1, bh1, bw1;
#if Y_Q8
  uint y_inv_scale;  // Y_Q8 (conv2d_coopmat.comp): 1 / Y's scale, float bits
#endif
#if X0_Q8
  uint prescale;  // the int32 accumulators' multiplier into the float ones (float bits)
#endif
} pc;

shared f16vec4 smem[SMEM_VEC4];

#include "coopmat_ops.glsl"

#if X0_Q8
// The int8 X0 chunks' fragment operations (X0_Q8 above), with the tensor cores or emulated as
// coopmat_ops.glsl emulates the fp16 ones (lane l holds elements l + k SUBGROUP_SIZE, row e / 16,
// column e % 16; a "load" records where its fragment starts). Offsets in f16vec4 units.
#if COOP_EMULATE
// Byte `at` of the shared array (reinterpreting its halves' bits: packFloat2x16 is a bitcast).
int smem_code(uint at) {
  const uint h = at >> 1;
  const uint bits = packFloat2x16(f16vec2(smem[h >> 2][h & 3u], float16_t(0.0)));
  return bitfieldExtract(int(bits), int(8 * (at & 1u)), 8);
}
#define ACCI_DECL int acci[FM * FN][EMU_ELEMS]
#define ACCI_START(f, at0) LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) acci[f][k_] = acc0[(at0) + gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE]
#define QA_DECL uint qa[FM]
#define QA_LOAD(i, off) qa[i] = (off)
#define QB_LOAD(off) const uint qb = (off)
#define QMUL_ADD(i, j)                                                                            \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                            \
    const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / 16, c_ = e_ % 16;     \
    int s_ = acci[(i) * FN + (j)][k_];                                                            \
    for (uint q_ = 0; q_ < 32; ++q_) s_ += smem_code((qa[i] + r_ * QS) * 8 + q_) * smem_code((qb + c_ * QS) * 8 + q_); \
    acci[(i) * FN + (j)][k_] = s_;                                                                \
  }
#define ACCI_TO_ACC(f, scale) LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) acc[f][k_] = EMU_ROUND(float(acci[f][k_]) * (scale))
#else
#define ACCI_MAT coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define ACCI_DECL ACCI_MAT acci[FM * FN]
#define ACCI_START(f, at0) coopMatLoad(acci[f], acc0, (at0), 16, gl_CooperativeMatrixLayoutRowMajor)
#define QA_DECL coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> qa[FM]
#define QA_LOAD(i, off) coopMatLoad(qa[i], smem, (off), QS, gl_CooperativeMatrixLayoutRowMajor)
#define QB_LOAD(off)                                            \
  coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> qb; \
  coopMatLoad(qb, smem, (off), QS, gl_CooperativeMatrixLayoutColumnMajor)
#define QMUL_ADD(i, j) acci[(i) * FN + (j)] = coopMatMulAdd(qa[i], qb, acci[(i) * FN + (j)])
#define ACCI_TO_ACC(f, scale) \
  acc[f] = ACC_MAT(coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acci[f]) * (scale))
#endif
#endif

#include "conv2d_coopmat_up2_stage.glsl"

#if A_DIRECT
// A_DIRECT (one-phase X0 chunks): no low-resolution patch in shared memory; each lane builds its
// A fragments from 16-byte loads of X0 (conv2d_coopmat_adirect.glsl; conv2d_coopmat.comp says
// why), a phase's 2x2 taps walked as a 2x2 kernel over the patch at the phase's offset.
#define AD_X_H pc.h0
#define AD_X_W pc.w0
#define AD_X_C pc.c0
uvec4 ad_x8(uint n, uint c, uint y, uint x) { return x0u4[(((n * pc.h0 + y) * pc.w0 + x) * pc.c0 + c) >> 3]; }
#define AD_PREDICATED 0
#define AD_KH 2
#define AD_KW 2
#define AD_B_AT(ky, kx, k) (((ky) * 2 + (kx)) * CK + (k)) * NTS  // the phase's tap (ky, kx)
#include "conv2d_coopmat_adirect.glsl"
#endif

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint sg = gl_SubgroupID;
  const uint sg_m = sg % SG_M, sg_n = sg / SG_M;

  const uint co_tiles = (pc.c_out + NT - 1) / NT;
#if ONE_PHASE
  // The workgroup's phase (py, px) is the fastest-varying part of x: the 4 workgroups of one
  // tile, which read the same low-resolution patch, run back to back and share it through L2
  // (with the phase in z, X0 came from DRAM once per phase). (oy0, ox0) on the low-resolution grid.
  // (Reversed, x = 4 tx + ph walks the tiles last to first and each tile's phases 3 to 0.)
  const uint ph = TILE_WG.x & 3u, tx = TILE_WG.x >> 2;
  const uint ct = TILE_WG.z % co_tiles, n = TILE_WG.z / co_tiles;
  const int oy0 = int(TILE_WG.y * TILE_H), ox0 = int(tx * TILE_W);
#else
  const uint ct = TILE_WG.z % co_tiles, n = TILE_WG.z / co_tiles;
  // This subgroup's fragments are in one phase (py, px).
  const uint ph = (sg_m * FM) / FR_PH;
  const int oy0 = int(TILE_WG.y * TILE_H), ox0 = int(TILE_WG.x * TILE_W);
#endif
  const uint py = ph >> 1, px = ph & 1u;
#if A_DIRECT
  // The phase's low-resolution patch origin in X0 (chunk_at's), this subgroup's first fragment row
  // (TILE_W 16: a fragment is a tile row), and whether the whole patch lies inside X0 with every
  // chunk full: then the loads need no checks.
  const int iy0 = oy0 + int(py) - 1, ix0 = ox0 + int(px) - 1;
  const uint r0 = sg_m * FM, cs0 = 0;
  const bool ad_inside = iy0 >= 0 && ix0 >= 0 && iy0 + (TILE_H + 1) <= int(pc.h0) && ix0 + (TILE_W + 1) <= int(pc.w0) && pc.c0 % CK == 0;
#endif
  const uint cu = (pc.c0 + CKU - 1) / CKU, cs = (pc.c_in - pc.c0 + SKIP_CK - 1) / SKIP_CK;
  const uint chunks = cu + SKIP_STEPS * cs;
  const uint w_tile = ct * (cu * WU_BLOCK + cs * WS_BLOCK);

  ACC_DECL;
#if X0_Q8
  // The int8 accumulators start at this phase's zero-point correction of their 16 channels.
  ACCI_DECL;
  LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
    const uint at0 = ((ct * 4 + ph) * (NT / 16) + sg_n * FN + j) * 256;
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) ACCI_START(i * FN + j, at0);
  }
#endif

  // 4-pixel groups lie wholly inside or outside a row when the extents are multiples of 4.
  const bool fast_u = (pc.w0 & 3u) == 0u;
#if CONCAT
  const bool fast_s = ((pc.w | pc.w1 | pc.bw1) & 3u) == 0u;
#else
  const bool fast_s = false;
#endif
  const bool fast_out = (pc.out_w & 3u) == 0u;

  Chunk cur = chunk_at(0, n, cu, w_tile, oy0, ox0, ph, fast_u, fast_s);
#if X0_BASES
  x0_bases(cur.s, t);  // chunk 0 is an X0 chunk (cu >= 1: the lowering's c0 >= 1)
#endif
  fetch(cur, t);
  stash(cur, t);
  barrier();
  for (uint chunk = 0; chunk < chunks; ++chunk) {
    const bool more = chunk + 1 < chunks;
    const Chunk next = chunk_at(chunk + 1, n, cu, w_tile, oy0, ox0, ph, fast_u, fast_s);
    if (more) fetch(next, t);  // in flight during the multiplies
    if (chunk < cu) {
#if X0_Q8
      // Tap (dy, dx): patch pixel (r + dy, c + dx), 32 codes each (one K step); B column-major.
      LOOP_UNROLL for (uint tap = 0; tap < 4; ++tap) {
        const uint dy = tap >> 1, dx = tap & 1u;
        QA_DECL;
        LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
          const uint f = sg_m * FM + i, r = f / FRAGS_W, c16 = f % FRAGS_W;
          QA_LOAD(i, ((r + dy) * LHALO_W + c16 * 16 + dx) * QS);
        }
        LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
          QB_LOAD(LX_VEC4 + (tap * NT + (sg_n * FN + j) * 16) * QS);
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) QMUL_ADD(i, j);
        }
      }
      if (chunk + 1 == cu) {  // the skip's fp16 chunks continue in the float accumulators
        const float prescale = uintBitsToFloat(pc.prescale);
        LOOP_UNROLL for (uint f = 0; f < FM * FN; ++f) ACCI_TO_ACC(f, prescale);
      }
#elif A_DIRECT
#include "conv2d_coopmat_adirect_chunk.glsl"
#elif ONE_PHASE
      // Tap (dy, dx) of the phase: patch pixel (r + dy, c + dx) (the patch starts at the
      // phase's offset); B: the staged 4 taps.
      LOOP_UNROLL for (uint tap = 0; tap < 4; ++tap) {
        const uint dy = tap >> 1, dx = tap & 1u;
        LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
          A_DECL;
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            const uint f = sg_m * FM + i, r = f / FRAGS_W, c16 = f % FRAGS_W;
            A_LOAD(i, ((r + dy) * LHALO_W + c16 * CM_M + dx) * CKS + kc * CM_K);
          }
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
            const uint n0 = (sg_n * FN + j) * CM_N;
            B_LOAD(LX_VEC4 * 4 + (tap * CK + kc * CM_K) * NTS + n0);
            LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
          }
        }
      }
#else
      LOOP_UNROLL for (uint tap = 0; tap < 4; ++tap) {
        const uint dy = tap >> 1, dx = tap & 1u;
        LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
          // A fragment i: low-resolution pixels (r + py + dy, cs*16 + px + dx + m) of the patch.
          A_DECL;
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            const uint fi = (sg_m * FM + i) % FR_PH, r = fi / FRAGS_W, c16 = fi % FRAGS_W;
            A_LOAD(i, ((r + py + dy) * LHALO_W + c16 * CM_M + px + dx) * CKS + kc * CM_K);
          }
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
            const uint n0 = (sg_n * FN + j) * CM_N;
            B_LOAD(LX_VEC4 * 4 + ((ph * 4 + tap) * CK + kc * CM_K) * NTS + n0);
            LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
          }
        }
      }
#endif
    } else {
#if SKIP_ROWS
      // Row step ky (chunk_at): patch row r is the A rows' full-resolution row; tap kx reads
      // column 2 c + kx: de-interleaved half kx & 1, index c + kx / 2. Rows at a stride of CK.
      LOOP_UNROLL for (uint kx = 0; kx < 3; ++kx) {
        LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
          A_DECL;
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            const uint f = sg_m * FM + i, r = f / FRAGS_W, c16 = f % FRAGS_W;
            A_LOAD_STRIDE(i, (r * SPW + (kx & 1u) * FHALF + c16 * CM_M + (kx >> 1)) * CK + kc * CM_K, CK);
          }
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
            const uint n0 = (sg_n * FN + j) * CM_N;
            B_LOAD(SX_VEC4 * 4 + (kx * CK + kc * CM_K) * NTS + n0);
            LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
          }
        }
      }
#elif CONCAT && ONE_PHASE
      // K step ky: slot row 2r + ky, slots c .. c + 1 per A row (one-slot stride).
      LOOP_UNROLL for (uint ky = 0; ky < 3; ++ky) {
        A_DECL;
        LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
          const uint f = sg_m * FM + i, r = f / FRAGS_W, c16 = f % FRAGS_W;
          A_LOAD_STRIDE(i, ((2 * r + ky) * SLOT_W + c16 * CM_M) * 8, 8);
        }
        LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
          const uint n0 = (sg_n * FN + j) * CM_N;
          B_LOAD(SX_VEC4 * 4 + ky * CM_K * NTS + n0);
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
        }
      }
#elif CONCAT
      LOOP_UNROLL for (uint tap = 0; tap < 9; ++tap) {
        const uint ky = tap / 3, kx = tap % 3, sx = px + kx;
        LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; ++kc) {
          // Full-resolution row 2r + py + ky, column 2 (c16*16 + m) + px + kx: in the
          // de-interleaved patch, half (sx & 1), index c16*16 + m + sx / 2.
          A_DECL;
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            const uint fi = (sg_m * FM + i) % FR_PH, r = fi / FRAGS_W, c16 = fi % FRAGS_W;
            A_LOAD(i, ((2 * r + py + ky) * FHALO_W + (sx & 1u) * FHALF + c16 * CM_M + (sx >> 1)) * CKS + kc * CM_K);
          }
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
            const uint n0 = (sg_n * FN + j) * CM_N;
            B_LOAD(FX_VEC4 * 4 + (tap * CK + kc * CM_K) * NTS + n0);
            LOOP_UNROLL for (uint i = 0; i < FM; ++i) MUL_ADD(i, j);
          }
        }
      }
#endif
    }
    barrier();  // every subgroup is done reading this chunk
    if (more) {
      stash(next, t);
      barrier();
    }
  }

  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
#if ONE_PHASE
  // EPI_PASSES passes, pass q staging and storing channels [q NTP, (q + 1) NTP) of the tile:
  // pixel-major at m * NTPS + (j - q NTP) for an NHWC output, channel-major at (j - q NTP) * MS
  // + m for an NCHW one. m = r * TILE_W + c is output pixel (2 (oy0 + r) + py, 2 (ox0 + c) + px).
#if Y_HWC
  EPI8_T b8[8];  // this invocation's biases when G8_FIXED_P
#endif
  LOOP_UNROLL for (uint q = 0; q < EPI_PASSES; ++q) {
    if (q > 0) barrier();  // the previous pass has read the staging
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
      const uint m0 = (sg_m * FM + i) * CM_M;
      LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
        const uint n0 = (sg_n * FN + j) * CM_N;  // subgroup-uniform: the branch is too
        if (n0 / NTP == q) {
#if Y_HWC
          ACC_STORE_ROWS_S(i, j, m0 * NTPS + n0 - q * NTP, NTPS);
#else
          ACC_STORE(i, j, (n0 - q * NTP) * MS + m0);
#endif
        }
      }
    }
    barrier();
#if Y_HWC
    // 8 channels of one output pixel per item (channel groups fastest).
    if (G8_FIXED_P) bias8(ct * NT + q * NTP + 8 * (t % (NTP / 8)), b8);
    for (uint e = t; e < M_TILE * (NTP / 8); e += WG_SIZE) {
      const uint g8 = e % (NTP / 8), m = e / (NTP / 8);
      const uint co = ct * NT + q * NTP + 8 * g8;
      const uint oy = 2 * (uint(oy0) + m / TILE_W) + py, ox = 2 * (uint(ox0) + m % TILE_W) + px;
      if (co >= pc.c_out || oy >= pc.out_h || ox >= pc.out_w) continue;
      float v[8];
      if (!G8_FIXED_P) bias8(co, b8);
      activated8(m * NTPS + 8 * g8, b8, act_a, act_b, v);
      store8(((n * pc.out_h + oy) * pc.out_w + ox) * pc.c_out + co, v);
    }
#else
    // One value per item (every other pixel of a row belongs to this phase: no vector stores).
    for (uint e = t; e < NTP * M_TILE; e += WG_SIZE) {
      const uint m = e % M_TILE, jj = e / M_TILE;
      const uint co = ct * NT + q * NTP + jj;
      const uint oy = 2 * (uint(oy0) + m / TILE_W) + py, ox = 2 * (uint(ox0) + m % TILE_W) + px;
      if (co >= pc.c_out || oy >= pc.out_h || ox >= pc.out_w) continue;
#if HAS_BIAS
      const float b = float(bias[co]);
#else
      const float b = 0.0;
#endif
      const uint idx = jj * MS + m;
      y[((n * pc.c_out + co) * pc.out_h + oy) * pc.out_w + ox] = float16_t(activate(float(smem[idx >> 2][idx & 3u]) + b, act_a, act_b));
    }
#endif
  }
#else
  // Accumulators -> shared: element (m, channel j) at j * MS + m (NCHW output) or m * NTS + j
  // (HWC output), m phase-major.
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
    const uint m0 = (sg_m * FM + i) * CM_M;
    LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
      const uint n0 = (sg_n * FN + j) * CM_N;
#if Y_HWC
      ACC_STORE_ROWS(i, j, m0 * NTS + n0);
#else
      ACC_STORE(i, j, n0 * MS + m0);
#endif
    }
  }
  barrier();

#if Y_HWC
  // 8 channels of one output pixel per item (channel groups fastest): pixel (row, col) is
  // low-resolution pixel (row / 2, col / 2) of phase (row & 1, col & 1).
  EPI8_T b8[8];  // this invocation's biases when G8_FIXED (coopmat_ops.glsl)
  if (G8_FIXED) bias8(ct * NT + 8 * (t % (NT / 8)), b8);
  for (uint e = t; e < M_TILE * (NT / 8); e += WG_SIZE) {
    const uint g8 = e % (NT / 8), q = e / (NT / 8), row = q / TILE_W, col = q % TILE_W;
    const uint co = ct * NT + 8 * g8;
    const uint oy = uint(oy0) + row, ox = uint(ox0) + col;
    if (co >= pc.c_out || oy >= pc.out_h || ox >= pc.out_w) continue;
    const uint m = (((row & 1u) * 2 + (col & 1u)) * LH + (row >> 1)) * LW + (col >> 1);
    float v[8];
    if (!G8_FIXED) bias8(co, b8);
    activated8(m * NTS + 8 * g8, b8, act_a, act_b, v);
    store8(((n * pc.out_h + oy) * pc.out_w + ox) * pc.c_out + co, v);
  }
#else
  // 4 consecutive output pixels of one row and channel per item: low-resolution columns 2g,
  // 2g + 1 of phases (py, 0) and (py, 1).
  for (uint e = t; e < NT * TILE_H * (TILE_W / 4); e += WG_SIZE) {
    const uint g = e % (TILE_W / 4), row = (e / (TILE_W / 4)) % TILE_H, j = e / (TILE_H * (TILE_W / 4));
    const uint co = ct * NT + j;
    const uint oy = uint(oy0) + row, ox = uint(ox0) + 4 * g;
    if (co >= pc.c_out || oy >= pc.out_h || ox >= pc.out_w) continue;
#if HAS_BIAS
    const float b = float(bias[co]);
#else
    const float b = 0.0;
#endif
    const uint oy_p = row & 1u, ly = row >> 1;
    float v[4];
    [[unroll]] for (uint k = 0; k < 4; ++k) {
      const uint idx = j * MS + ((oy_p * 2 + (k & 1u)) * LH + ly) * LW + 2 * g + (k >> 1);
      v[k] = activate(float(smem[idx >> 2][idx & 3u]) + b, act_a, act_b);
    }
    const uint base = ((n * pc.c_out + co) * pc.out_h + oy) * pc.out_w;
    if (fast_out) {
      yv4[(base + ox) >> 2] = f16vec4(v[0], v[1], v[2], v[3]);
    } else {
      [[unroll]] for (uint k = 0; k < 4; ++k)
        if (ox + k < pc.out_w) y[base + ox + k] = float16_t(v[k]);
    }
  }
#endif
#endif  // ONE_PHASE
}
