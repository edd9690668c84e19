#version 450
// 2D convolution (stride 1, dilation 1, group 1) as an implicit GEMM on int8 cooperative
// matrices (16x16x32, int32 accumulators): the opt-in int8 precision's convolution
// (src/kernels/int8.md). Its tensors are NHWC_Q8: NHWC, one signed byte per element,
// a channel count that is a multiple of 16, and per tensor a scale s and a zero point z (the
// real value of code q is s * (q - z); z is -128 for a tensor that is never negative, 0
// otherwise, and code z is exact 0: the padding value). Per output channel the weights are
// int8 with their own scale (conv2d_coopmat_q8.cpp quantizes them at plan time).
//
// The data flow is conv2d_coopmat.comp's, which bench/int8_probe measured against its fp16 twin
// on the H100 (0.53-0.78x the time; bench/RESULTS.md, 2026-11-26 third session): per chunk of CK
// input channels the workgroup stages its input patch (the tile plus the KH-1 / KW-1 halo,
// pixel-major, CK bytes a pixel padded by 16 so fragment rows do not conflict) and the chunk's
// weights (column-major B: row (tap, n) holds CK consecutive k, the only int8 B layout the
// tensor cores load fast from shared memory) in shared memory, then multiplies KH*KW taps x
// CK/32 K steps. The accumulators start at the zero points' correction (-sum_k w[n][k] * z_k,
// a per-channel constant loaded as a 16x16 fragment) so they end as the exact centred sum;
// they go back through shared memory as fp16 after a multiply by `prescale` (without the
// correction they could reach 100x the output's range, too large for fp16's 11 bits), and the
// epilogue applies the per-channel factor and bias, the activation, an optional 2x2 max-pool and
// the output's scale, and stores 8 channels of a pixel per store.
//
// Fused prologue (as conv2d_coopmat): CONCAT=1 reads channels [c0, c_in) from X1 (the two
// sources' scales are folded into the weights: both read as codes); UPSAMPLE0=1 reads X0 at
// (y/2, x/2); zero padding and a folded Pad or crop through the push constants.
//
// Macros: KH KW TILE_H TILE_W (a multiple of 16) NT (a multiple of 16 * SG_N) CK (32 or 64)
//   SG_M SG_N SUBGROUP_SIZE; HAS_BIAS is always folded (no macro); ACT (common.glsl);
//   CONCAT UPSAMPLE0 POOL (optional, default 0); X0_ZP X1_ZP (the sources' zero points);
//   Y_Q8 (1: Y is NHWC_Q8 with zero point Y_ZP; 0: Y is NHWC fp16); B_GLOBAL (optional: B
//   fragments from the weights buffer, only the patch staged); TAIL (optional: the next conv
//   in the epilogue, below; T_COUT T_NT T_K T_HAS_BIAS T_ACT as conv2d_coopmat_tail.glsl);
//   PHASES (optional: an upsampled X0 concatenated with X1 by output phase,
//   conv2d_coopmat_q8_phases.glsl; its weights and accumulator starts per phase);
//   TILES_REVERSED (optional: the tiles last to first, tile_order.glsl; set with TAIL);
//   Q8_A_REUSE (default 1: the A-fragment reuse below where the tile allows; 0 switches it off
//   for measurements); COOP_EMULATE (1: plain arithmetic instead of cooperative matrices, for
//   tests on devices without them).
// Bindings: X0, [X1 if CONCAT], Y, packed weights, epilogue (vec2 per output channel: factor,
//   bias), accumulator start ([co_tile][NT/16][16][16] int32); with TAIL then the tail's packed
//   weights, [its bias], the ring's partial sums.
// Push constants: conv2d_coopmat's (c_in h w c_out oh ow pad_top pad_left act_a act_b c0 h0 w0
//   out_h out_w h1 w1 bh1 bw1) then prescale and inv_sy (float bits; inv_sy = 1 / Y's scale);
//   with TAIL then t_out_h t_out_w t_crop_top t_crop_left t_act_a t_act_b.
//
// TAIL=1: conv2d_coopmat's TAIL epilogue (src/kernels/README.md) for the int8 conv. The conv's
// activated tile is never written: each subgroup (one subgroup column, so its rows are whole
// pixels) stages its accumulators as fp16, applies factor, bias and activation to its own rows
// in shared memory (zero outside the conv's output: the tail's padding), multiplies them by the
// tail's weights W2 (fp16 fragments, fp32 accumulators) and writes Z over them; after one
// workgroup barrier conv_tail_sums.glsl sums the taps, and conv_tail_ring.comp the tile borders.
// Y is then the tail's NCHW fp16 output.
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
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"
#include "quant.glsl"
#include "tile_order.glsl"

#include "conv2d_coopmat_q8_config.glsl"

#define B_X1 1
#define B_Y (1 + CONCAT)
#define B_W (2 + CONCAT)
#define B_EPI (3 + CONCAT)
#define B_ACC0 (4 + CONCAT)
#define B_W2 (5 + CONCAT)
#define B_BIAS2 (B_W2 + 1)
#define B_P (B_W2 + 1 + T_HAS_BIAS)

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer X0Buf { uvec4 x0v[]; };  // 16 channels of a pixel
#if CONCAT
layout(set = 0, binding = B_X1) readonly buffer X1Buf { uvec4 x1v[]; };
#endif
#if TAIL
layout(set = 0, binding = B_Y) writeonly buffer YBuf { float16_t y[]; };  // the tail's NCHW output
#elif Y_Q8
layout(set = 0, binding = B_Y) writeonly buffer YBuf { uvec2 yv[]; };  // 8 int8 channels
#else
layout(set = 0, binding = B_Y) writeonly buffer YBuf { uvec4 yv[]; };  // 8 fp16 channels
#endif
layout(set = 0, binding = B_W) readonly buffer WBuf { uvec4 wv[]; };
layout(set = 0, binding = B_EPI) readonly buffer EpiBuf { vec2 epi[]; };
layout(set = 0, binding = B_ACC0) readonly buffer Acc0Buf { int acc0[]; };

layout(push_constant) uniform Push {
  uint c_in, h, w, c_out, oh, ow;
  int pad_top, pad_left;
  uint act_a, act_b;
  uint c0, h0, w0, out_h, out_w, h1, w1, bh1, bw1;
  uint prescale, inv_sy;
#if TAIL
  uint t_out_h, t_out_w;
  int t_crop_top, t_crop_left;
  uint t_act_a, t_act_b;
#endif
} pc;

shared uvec4 smem[SMEM_V];

#if COOP_EMULATE
// The tensor-core operations by plain arithmetic. Lane l holds the accumulator pairs p = l +
// k * SUBGROUP_SIZE (row p / 8, columns 2 (p % 8) and 2 (p % 8) + 1), so each lane writes whole
// 32-bit words of the fp16 staging (no two lanes share a word). A "load" records where its
// fragment starts; the multiply reads the bytes directly.
#define LOOP_UNROLL [[dont_unroll]]
#define EMU_PAIRS (128 / SUBGROUP_SIZE)
int byte_at(uvec4 v, uint b) { return q8_code(v[b >> 2], b & 3u); }
int smem_byte(uint at) { return byte_at(smem[at >> 4], at & 15u); }
int wts_byte(uint at) { return byte_at(wv[at >> 4], at & 15u); }
#define ACC_DECL int acc[FM * FN][2 * EMU_PAIRS]
#else
#define LOOP_UNROLL [[unroll]]
#define ACC_MAT coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define ACC_DECL ACC_MAT acc[FM * FN]
#endif

// Tile row r and first column cx of fragment i (16 pixels of one tile row) of subgroup row sm.
void frag_pos(uint sm, uint i, out uint r, out uint cx) {
#if A_REUSE_ON
  r = (sm / FRAGS_W) * FM + i, cx = (sm % FRAGS_W) * 16;
#else
  const uint f = sm * FM + i;
  r = f / FRAGS_W, cx = (f % FRAGS_W) * 16;
#endif
}

// Where B fragment (tap, output columns col0 .., 32-channel step s) of chunk `chunk` starts, in
// 16-byte vectors, the stride of its columns (B is column-major) and the array it is in (B_SRC;
// B_BYTE reads one of its bytes, emulated).
#if B_GLOBAL
#define B_STRIDE VPP
#define B_SRC wv
#define B_BYTE wts_byte
uint b_frag_at(uint ct, uint chunks, uint chunk, uint tap, uint col0, uint s) {
  return ((ct * chunks + chunk) * KK * NT + tap * NT + col0) * VPP + s * 2;
}
#else
#define B_STRIDE A_STRIDE
#define B_SRC smem
#define B_BYTE smem_byte
uint b_frag_at(uint ct, uint chunks, uint chunk, uint tap, uint col0, uint s) { return PATCH_V + (tap * NT + col0) * A_STRIDE + s * 2; }
#endif

#if COOP_EMULATE && !PHASES
// One emulated 16x16x32 multiply-add into accumulator pairs c: A rows from the patch at a_at,
// B columns at b_at (shared memory, or the weights buffer with B_GLOBAL).
void emu_mul_add(inout int c[2 * EMU_PAIRS], uint a_at, uint b_at) {
  LOOP_UNROLL for (uint k = 0; k < EMU_PAIRS; ++k) {
    const uint p = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, r = p / 8, col = 2 * (p % 8);
    int s0 = c[2 * k], s1 = c[2 * k + 1];
    for (uint q = 0; q < 32; ++q) {
      const int av = smem_byte((a_at + r * A_STRIDE) * 16 + q);
      s0 += av * B_BYTE((b_at + col * B_STRIDE) * 16 + q), s1 += av * B_BYTE((b_at + (col + 1) * B_STRIDE) * 16 + q);
    }
    c[2 * k] = s0, c[2 * k + 1] = s1;
  }
}
#endif

uvec4 px[PATCH_PER_T];
#if !B_GLOBAL
uvec4 pw[W_PER_T];
#endif

uint zp_word(int z) { return (uint(z) & 255u) * 0x01010101u; }

// Where each of this invocation's patch items reads, the same for every chunk: the vector index
// of its pixel's first 16 channels in X0 (and in X1), -1 outside the source (its zero point),
// -2 past the patch. An item's 16-channel group within a chunk is t % VPP for all its items
// (WG_SIZE is a multiple of VPP), so a chunk adds one uniform offset. Computed once, not per
// chunk: on the H100 dec_conv3a (5 chunks) 0.090 -> 0.085 ms (bench/RESULTS.md, 2026-11-27
// second session).
#if (WG_SIZE % VPP) != 0
#error "conv2d_coopmat_q8: the workgroup size must be a multiple of CK / 16 (fetch's channel groups)"
#endif
int base0[PATCH_PER_T];
#if CONCAT
int base1[PATCH_PER_T];
#endif
void fetch_bases(uint t, uint n, int iy0, int ix0) {
#if PHASES
  // X0's items over the low-resolution patch (rows from the tile's first row / 2 - 1: padding 1),
  // X1's over the full-resolution one.
  const int ly0 = (iy0 + 1) / 2 - 1, lx0 = (ix0 + 1) / 2 - 1;
  LOOP_UNROLL for (uint i = 0; i < PATCH_PER_T; ++i) {
    const uint e = t + i * WG_SIZE, p = e / VPP;
    const int ly = ly0 + int(p / PH0_W), lx = lx0 + int(p % PH0_W);
    const bool inside0 = ly >= 0 && ly < int(pc.h0) && lx >= 0 && lx < int(pc.w0);
    base0[i] = e >= PATCH0_ITEMS ? -2 : inside0 ? int(((n * pc.h0 + uint(ly)) * pc.w0 + uint(lx)) * (pc.c0 / 16)) : -1;
    const int iy = iy0 + int(p / HALO_W), ix = ix0 + int(p % HALO_W);
    const bool inside = iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w);
    base1[i] = e >= PATCH_ITEMS                                      ? -2
               : inside && uint(iy) < pc.bh1 && uint(ix) < pc.bw1 ? int(((n * pc.h1 + uint(iy)) * pc.w1 + uint(ix)) * ((pc.c_in - pc.c0) / 16))
                                                                   : -1;
  }
#else
  LOOP_UNROLL for (uint i = 0; i < PATCH_PER_T; ++i) {
    const uint e = t + i * WG_SIZE, p = e / VPP;
    const int iy = iy0 + int(p / HALO_W), ix = ix0 + int(p % HALO_W);
    const bool inside = iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w);
#if UPSAMPLE0
    const uint sy = min(uint(iy) >> 1, pc.h0 - 1), sx = min(uint(ix) >> 1, pc.w0 - 1);
#else
    const uint sy = uint(iy), sx = uint(ix);
#endif
    base0[i] = e >= PATCH_ITEMS ? -2 : inside ? int(((n * pc.h0 + sy) * pc.w0 + sx) * (pc.c0 / 16)) : -1;
#if CONCAT
    base1[i] = e >= PATCH_ITEMS                                      ? -2
               : inside && uint(iy) < pc.bh1 && uint(ix) < pc.bw1 ? int(((n * pc.h1 + uint(iy)) * pc.w1 + uint(ix)) * ((pc.c_in - pc.c0) / 16))
                                                                   : -1;
#endif
  }
#endif  // PHASES
}

// Chunk `chunk` (input channels chunk * CK ..) of the patch, 16 channels of a pixel per item,
// and unless B_GLOBAL its weights, into registers: every global load issued before any store.
// Outside the input (padding) a source's zero point, past c_in zeros (their weights are zero).
void fetch(uint chunk, uint t, uint w_base) {
  const uint ci = chunk * CK + (t % VPP) * 16;  // this invocation's channel group, every item
  LOOP_UNROLL for (uint i = 0; i < PATCH_PER_T; ++i) {
    uvec4 v = uvec4(0u);
    if (ci < pc.c_in) {
#if CONCAT
      if (ci >= pc.c0)
        v = base1[i] >= 0 ? x1v[uint(base1[i]) + (ci - pc.c0) / 16] : base1[i] == -1 ? uvec4(zp_word(X1_ZP)) : uvec4(0u);
      else
#endif
        v = base0[i] >= 0 ? x0v[uint(base0[i]) + ci / 16] : base0[i] == -1 ? uvec4(zp_word(X0_ZP)) : uvec4(0u);
    }
    px[i] = v;
  }
#if !B_GLOBAL
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < W_ITEMS) pw[i] = wv[w_base + chunk * W_ITEMS + e];
  }
#endif
}

// ... and from the registers into shared memory.
void stash(uint t) {
  LOOP_UNROLL for (uint i = 0; i < PATCH_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < PATCH_ITEMS) smem[(e / VPP) * A_STRIDE + e % VPP] = px[i];
  }
#if !B_GLOBAL
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < W_ITEMS) smem[PATCH_V + (e / VPP) * A_STRIDE + e % VPP] = pw[i];
  }
#endif
}

#if !TAIL
// 8 output values -> Y (element index `at` of channel co..co+7 of a pixel): codes of Y's scale
// and zero point, or fp16.
void store8(uint at, const float v[8]) {
#if Y_Q8
  const float inv = uintBitsToFloat(pc.inv_sy);
  yv[at >> 3] = uvec2(q8_pack4(vec4(v[0], v[1], v[2], v[3]) * inv, Y_ZP), q8_pack4(vec4(v[4], v[5], v[6], v[7]) * inv, Y_ZP));
#else
  yv[at >> 3] = uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])), packHalf2x16(vec2(v[4], v[5])),
                      packHalf2x16(vec2(v[6], v[7])));
#endif
}
#endif

// Factor and bias of channels co..co+7. The epilogue loops load them once per invocation where
// an invocation's items all have the same channel group (G8_FIXED: the loop's step, WG_SIZE, is
// a multiple of NT / 8), not once per item: on the H100 the per-item loads cost dec_conv1b's
// tail 0.023 ms (bench/RESULTS.md, 2026-11-27 second session).
#define G8_FIXED ((WG_SIZE % (NT / 8)) == 0)
void epi8(uint co, out vec2 e[8]) {
  [[unroll]] for (uint c = 0; c < 8; ++c) e[c] = epi[co + c];
}

// The activated values of tile pixel m's channel group g8 (from the fp16 staging), e: its epi8.
void activated8(uint m, uint g8, const vec2 e[8], float act_a, float act_b, out float v[8]) {
  const uvec4 raw = smem[m * OS + g8];
  [[unroll]] for (uint k = 0; k < 4; ++k) {
    const vec2 pair = unpackHalf2x16(raw[k]);
    v[2 * k] = activate(pair.x * e[2 * k].x + e[2 * k].y, act_a, act_b);
    v[2 * k + 1] = activate(pair.y * e[2 * k + 1].x + e[2 * k + 1].y, act_a, act_b);
  }
}

#if TAIL
#include "conv2d_coopmat_q8_tail.glsl"
#endif
#if PHASES
#include "conv2d_coopmat_q8_phases.glsl"
#endif

void main() {
  const uint t = gl_LocalInvocationID.x, sg = gl_SubgroupID;
  const uint sm = sg % SG_M, sn = sg / SG_M;
  const uint co_tiles = (pc.c_out + NT - 1) / NT;
  const uint n = TILE_WG.z / co_tiles, ct = TILE_WG.z % co_tiles;
  const int oy0 = int(TILE_WG.y * TILE_H), ox0 = int(TILE_WG.x * TILE_W);
  const int iy0 = oy0 - pc.pad_top, ix0 = ox0 - pc.pad_left;
#if PHASES
  // X0's chunks, then X1's, each source from a chunk of its own; per channel tile the X0
  // chunks' 16 phase blocks, then the X1 chunks' 9 taps.
  const uint n0 = (pc.c0 + CK - 1) / CK, chunks = n0 + (pc.c_in - pc.c0 + CK - 1) / CK;
  const uint w_base = ct * (n0 * W0_ITEMS + (chunks - n0) * W_ITEMS);
  // A subgroup's fragments are one output phase's (SG_M a multiple of 4): fragment f is phase
  // f / NF_PH, within it row rr of that phase's rows (tile row 2 rr + py) and 16 pixels of a
  // 32-column segment (columns 2 i + px).
#define NF_PH (TILE_H * FRAGS_W / 4)
#define SEGS (TILE_W / 32)
  const uint ph = (sm * FM) / NF_PH, py = ph >> 1, pxp = ph & 1;
  const uint acc_phase = ph * co_tiles * NT * 16;  // acc_start is [phase][co_tile][NT / 16][16][16]
#else
  const uint chunks = (pc.c_in + CK - 1) / CK;
  const uint w_base = ct * chunks * W_ITEMS;
  const uint acc_phase = 0;
#endif

  // The accumulators start at the zero points' correction of their 16 channels (PHASES: of
  // their phase).
  ACC_DECL;
  LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
    const uint a0 = acc_phase + (ct * (NT / 16) + sn * FN + j) * 256;
#if COOP_EMULATE
    LOOP_UNROLL for (uint k = 0; k < EMU_PAIRS; ++k) {
      const uint p = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, at = a0 + (p / 8) * 16 + 2 * (p % 8);
      LOOP_UNROLL for (uint i = 0; i < FM; ++i) acc[i * FN + j][2 * k] = acc0[at], acc[i * FN + j][2 * k + 1] = acc0[at + 1];
    }
#else
    ACC_MAT start;
    coopMatLoad(start, acc0, a0, 16, gl_CooperativeMatrixLayoutRowMajor);
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) acc[i * FN + j] = start;
#endif
  }

#if TAIL
  tail_stage_w2(t);  // ordered before the tail by the chunks' barriers
#endif
  fetch_bases(t, n, iy0, ix0);
#if PHASES
  for (uint chunk = 0; chunk < chunks; ++chunk) {
    fetch_phases(chunk, n0, t, w_base);
    barrier();  // the previous chunk's fragment loads are done
    stash_phases(t, chunk < n0);
    barrier();
    if (chunk < n0) {
      // X0: tap (a, b) of phase (py, px) reads low-resolution row rr + py + a - 1 (patch row
      // rr + py + a), column 16 seg + i + px + b - 1; its weights are block 4 ph + 2 a + b.
      LOOP_UNROLL for (uint tap = 0; tap < 4; ++tap) {
        LOOP_UNROLL for (uint s = 0; s < CK / 32; ++s) {
          uint a_at[FM];
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            const uint q = (sm * FM + i) % NF_PH, rr = q / SEGS, seg = q % SEGS;
            a_at[i] = ((rr + py + tap / 2) * PH0_W + 16 * seg + pxp + tap % 2) * A_STRIDE + s * 2;
          }
          K_STEP(a_at, A_STRIDE, PATCH0_V + ((4 * ph + tap) * NT + col0) * A_STRIDE + s * 2);
        }
      }
    } else {
      // X1 (full resolution): tap (ky, kx) of fragment row r = 2 rr + py reads patch row r + ky,
      // columns 32 seg + px + kx + 2 i: every other pixel, consecutive in its parity's half.
      LOOP_UNROLL for (uint tap = 0; tap < KK; ++tap) {
        LOOP_UNROLL for (uint s = 0; s < CK / 32; ++s) {
          uint a_at[FM];
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            const uint q = (sm * FM + i) % NF_PH, rr = q / SEGS, seg = q % SEGS;
            const uint c = pxp + tap % KW;  // the first column: its parity's half of the row (x1_slot)
            a_at[i] = ((2 * rr + py + tap / KW) * HALO_W + (c & 1u) * X1_HALF + 16 * seg + (c >> 1)) * A_STRIDE + s * 2;
          }
          K_STEP(a_at, A_STRIDE, PATCH_V + (tap * NT + col0) * A_STRIDE + s * 2);
        }
      }
    }
  }
#else
  for (uint chunk = 0; chunk < chunks; ++chunk) {
    fetch(chunk, t, w_base);
    barrier();  // the previous chunk's fragment loads are done
    stash(t);
    barrier();
#if A_REUSE_ON
    uint r0, cx0;
    frag_pos(sm, 0, r0, cx0);
    LOOP_UNROLL for (uint kx = 0; kx < KW; ++kx) {
      LOOP_UNROLL for (uint s = 0; s < CK / 32; ++s) {
        // Kernel column kx's B fragments (KH x FN), held while the column's A fragments pass.
        uint b_at[KH * FN];
        LOOP_UNROLL for (uint ky = 0; ky < KH; ++ky) {
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) b_at[ky * FN + j] = b_frag_at(ct, chunks, chunk, ky * KW + kx, (sn * FN + j) * 16, s);
        }
#if !COOP_EMULATE
        coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> b[KH * FN];
        LOOP_UNROLL for (uint q = 0; q < KH * FN; ++q) coopMatLoad(b[q], B_SRC, b_at[q], B_STRIDE, gl_CooperativeMatrixLayoutColumnMajor);
#endif
        // Patch row r0 + p: kernel row p - i of fragment i.
        LOOP_UNROLL for (uint p = 0; p < FM + KH - 1; ++p) {
          const uint a_at = ((r0 + p) * HALO_W + cx0 + kx) * A_STRIDE + s * 2;
#if !COOP_EMULATE
          coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> a;
          coopMatLoad(a, smem, a_at, A_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
#endif
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            if (p >= i && p - i < KH) {
              LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
#if COOP_EMULATE
                emu_mul_add(acc[i * FN + j], a_at, b_at[(p - i) * FN + j]);
#else
                acc[i * FN + j] = coopMatMulAdd(a, b[(p - i) * FN + j], acc[i * FN + j]);
#endif
              }
            }
          }
        }
      }
    }
#else
    LOOP_UNROLL for (uint tap = 0; tap < KK; ++tap) {
      const uint ky = tap / KW, kx = tap % KW;
      LOOP_UNROLL for (uint s = 0; s < CK / 32; ++s) {
        // A fragment i: 16 pixels of patch row r + ky from column cx + kx, 32 channels (2 vectors).
        uint a_at[FM];
        LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
          uint r, cx;
          frag_pos(sm, i, r, cx);
          a_at[i] = ((r + ky) * HALO_W + cx + kx) * A_STRIDE + s * 2;
        }
#if !COOP_EMULATE
        coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> a[FM];
        LOOP_UNROLL for (uint i = 0; i < FM; ++i) coopMatLoad(a[i], smem, a_at[i], A_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
#endif
        LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
          const uint b_at = b_frag_at(ct, chunks, chunk, tap, (sn * FN + j) * 16, s);
#if COOP_EMULATE
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) emu_mul_add(acc[i * FN + j], a_at[i], b_at);
#else
          coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> b;
          coopMatLoad(b, B_SRC, b_at, B_STRIDE, gl_CooperativeMatrixLayoutColumnMajor);
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) acc[i * FN + j] = coopMatMulAdd(a[i], b, acc[i * FN + j]);
#endif
        }
      }
    }
#endif  // A_REUSE_ON
  }
#endif  // PHASES

  // Accumulators -> shared memory as fp16 times prescale, pixel-major (the patch is dead after
  // this barrier).
  barrier();
  const float prescale = uintBitsToFloat(pc.prescale);
#if T_FOLD
  const float fold_a = uintBitsToFloat(pc.act_a), fold_b = uintBitsToFloat(pc.act_b);
#endif
#if PHASES
#define M_ROWS 2u  // a fragment's rows are every other pixel of a tile row
#else
#define M_ROWS 1u
#endif
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
#if PHASES
    const uint q = (sm * FM + i) % NF_PH, m0 = (2 * (q / SEGS) + py) * TILE_W + 32 * (q % SEGS) + pxp;
#else
    uint r, cx;
    frag_pos(sm, i, r, cx);
    const uint m0 = r * TILE_W + cx;
#endif
    LOOP_UNROLL for (uint j = 0; j < FN; ++j) {
      const uint n0 = (sn * FN + j) * 16;
#if COOP_EMULATE
      LOOP_UNROLL for (uint k = 0; k < EMU_PAIRS; ++k) {
        const uint p = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, r = p / 8, c = 2 * (p % 8);
        const uint word = ((m0 + M_ROWS * r) * OS * 16 + (n0 + c) * 2) / 4;
        vec2 pair = vec2(float(acc[i * FN + j][2 * k]) * prescale, float(acc[i * FN + j][2 * k + 1]) * prescale);
#if T_FOLD
        pair = vec2(activate(pair.x, fold_a, fold_b), activate(pair.y, fold_a, fold_b));
#endif
        smem[word >> 2][word & 3u] = packHalf2x16(pair);
      }
#else
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> f32 =
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i * FN + j]) * prescale;
#if T_FOLD
      for (int k = 0; k < f32.length(); ++k) f32[k] = activate(f32[k], fold_a, fold_b);
#endif
      coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(f32), smem, m0 * OS + n0 / 8, M_ROWS * OS,
                   gl_CooperativeMatrixLayoutRowMajor);
#endif
    }
  }
#if TAIL
  tail_own_rows(sm, oy0, ox0);
  barrier();  // the tap sums read the neighbouring subgroups' rows
  tail_sums(t, n, oy0, ox0);
#else
  barrier();

  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
  vec2 ep[8];
  if (G8_FIXED) epi8(ct * NT + 8 * (t % (NT / 8)), ep);
#if !POOL
  // 8 channels of one pixel per item (channel groups fastest: a warp writes whole pixels).
  for (uint e = t; e < TILE_H * TILE_W * (NT / 8); e += WG_SIZE) {
    const uint g8 = e % (NT / 8), m = e / (NT / 8);
    const uint co = ct * NT + 8 * g8;
    const uint oy = uint(oy0) + m / TILE_W, ox = uint(ox0) + m % TILE_W;
    if (co >= pc.c_out || oy >= pc.out_h || ox >= pc.out_w) continue;
    float v[8];
    if (!G8_FIXED) epi8(co, ep);
    activated8(m, g8, ep, act_a, act_b, v);
    store8(((n * pc.out_h + oy) * pc.out_w + ox) * pc.c_out + co, v);
  }
#else
  // One pooled pixel's 8 channels per item: the max of the activated 2x2 window (window taps
  // past the conv output, ceil_mode's partial windows, are skipped).
  for (uint e = t; e < (TILE_H / 2) * (TILE_W / 2) * (NT / 8); e += WG_SIZE) {
    const uint g8 = e % (NT / 8), q = e / (NT / 8);
    const uint pr = q / (TILE_W / 2), pcl = q % (TILE_W / 2);
    const uint co = ct * NT + 8 * g8;
    const uint py = uint(oy0) / 2 + pr, pxo = uint(ox0) / 2 + pcl;
    if (co >= pc.c_out || py >= pc.out_h || pxo >= pc.out_w) continue;
    float r[8];
    [[unroll]] for (uint c = 0; c < 8; ++c) r[c] = uintBitsToFloat(0xff800000u);
    if (!G8_FIXED) epi8(co, ep);
    [[unroll]] for (uint k = 0; k < 4; ++k) {
      if (2 * py + k / 2 >= pc.oh || 2 * pxo + k % 2 >= pc.ow) continue;
      float v[8];
      activated8((2 * pr + k / 2) * TILE_W + 2 * pcl + k % 2, g8, ep, act_a, act_b, v);
      [[unroll]] for (uint c = 0; c < 8; ++c)
        if (v[c] > r[c] || isnan(v[c])) r[c] = v[c];
    }
    store8(((n * pc.out_h + py) * pc.out_w + pxo) * pc.c_out + co, r);
  }
#endif
#endif  // TAIL
}
