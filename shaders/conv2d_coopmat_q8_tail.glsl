// conv2d_coopmat_q8.comp's TAIL epilogue: the next convolution (few output channels, 3x3,
// padding 1; a denoiser's last conv) computed from the tile the int8 conv just produced, as
// conv2d_coopmat_tail.glsl does for the fp16 conv (its header explains the tap-sum):
//
//   Z[p][tap * T_COUT + co] = sum over ci of Y[p][ci] * W2[co][ci][tap]     (a 1x1 GEMM, T_NT columns)
//   out[q][co] = bias2[co] + sum over taps of Z[q + (ky - 1, kx - 1)][tap * T_COUT + co]
//
// The int8 conv's accumulators are int32 and its factor and bias are per channel, which the
// fragments cannot apply in registers, so each subgroup first stages its accumulators as fp16
// (times prescale) in its own pixel rows, as the plain epilogue does, then activates those rows
// in shared memory (activated8: factor, bias, ACT) and zeroes pixels outside the conv's output
// (the tail's padding). With T_FOLD (an ACT that commutes with a positive factor) the bias is in
// the accumulators' start and the factors in W2 (fold_q8_epilogue), the rows are staged
// activated from the fragments, and only edge tiles zero their outside pixels. Z = Y W2 follows on fp16 fragments with fp32 accumulators, written over
// the same rows, all without waiting for the other subgroups (SG_N is 1: a subgroup's rows are
// whole pixels). After one workgroup barrier conv_tail_sums.glsl sums the taps.
//
// Included by conv2d_coopmat_q8.comp with TAIL=1, after activated8. Shared memory is uvec4:
// a row of YS halves is OS vectors; W2 ([T_K][T_NT], pack_coop_tapsum_weights) sits at T_W2_V.

layout(set = 0, binding = B_W2) readonly buffer W2Buf { uvec4 w2[]; };  // 8 halves
#if T_HAS_BIAS
layout(set = 0, binding = B_BIAS2) readonly buffer B2Buf { float16_t bias2[]; };
#endif
layout(set = 0, binding = B_P) writeonly buffer PBuf { float partials[]; };

// Z's halves [4 at, 4 at + 4) for the tap sums: half of one 16-byte vector.
f16vec4 tail_z4(uint at) {
  const uvec4 v = smem[at >> 1];
  const uvec2 w = (at & 1u) == 0u ? v.xy : v.zw;
  return f16vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}
#include "conv_tail_sums.glsl"

// W2 into its shared memory, before the first chunk's barriers.
void tail_stage_w2(uint t) {
  for (uint e = t; e < T_K * T_NT / 8; e += WG_SIZE) smem[T_W2_V + (e / (T_NT / 8)) * (T_NTS / 8) + e % (T_NT / 8)] = w2[e];
}

// Tile pixel m0 of subgroup sm's fragment i (16 pixels of one tile row: frag_pos) and its row
// and column.
void tail_frag(uint sm, uint i, out uint m0, out uint r, out uint cx) {
  frag_pos(sm, i, r, cx);
  m0 = r * TILE_W + cx;
}

#if COOP_EMULATE
float smem_half(uint at) { return unpackHalf2x16(smem[at >> 3][(at >> 1) & 3u])[at & 1u]; }
#endif

// This subgroup's rows (its accumulators already staged as fp16 at m * OS): activated, zero
// where the pixel is outside the conv's output, then Z = Y W2 written over them. sm: the subgroup.
void tail_own_rows(uint sm, int oy0, int ox0) {
  // The staging's coopMatStore may have put an element with another lane than the one reading it.
  subgroupMemoryBarrierShared();
  subgroupBarrier();
#if T_FOLD
  // The rows hold act(accumulator * prescale) already (the bias is in the accumulators' start,
  // the factor in W2's rows): only pixels outside the conv's output become 0, on edge tiles.
  if (uint(oy0) + TILE_H > pc.oh || uint(ox0) + TILE_W > pc.ow) {
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
      uint m0, r, cx;
      tail_frag(sm, i, m0, r, cx);
      for (uint e = gl_SubgroupInvocationID; e < 16 * (NT / 8); e += SUBGROUP_SIZE) {
        const uint k = e / (NT / 8), g8 = e % (NT / 8);
        if (uint(oy0) + r >= pc.oh || uint(ox0) + cx + k >= pc.ow) smem[(m0 + k) * OS + g8] = uvec4(0u);
      }
    }
  }
#else
  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
  // A subgroup's items: lane l's all have channel group l % (NT / 8) where the subgroup size is a
  // multiple of NT / 8 (its factors and biases loaded once, as G8_FIXED does for a workgroup).
  const bool lane_g8_fixed = (SUBGROUP_SIZE % (NT / 8)) == 0;
  vec2 ep[8];
  if (lane_g8_fixed) epi8(8 * (gl_SubgroupInvocationID % (NT / 8)), ep);  // one channel tile: co = 8 g8
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
    uint m0, r, cx;
    tail_frag(sm, i, m0, r, cx);
    for (uint e = gl_SubgroupInvocationID; e < 16 * (NT / 8); e += SUBGROUP_SIZE) {
      const uint k = e / (NT / 8), g8 = e % (NT / 8);
      uvec4 packed = uvec4(0u);
      if (uint(oy0) + r < pc.oh && uint(ox0) + cx + k < pc.ow) {
        float v[8];
        if (!lane_g8_fixed) epi8(8 * g8, ep);
        activated8(m0 + k, g8, ep, act_a, act_b, v);
        [[unroll]] for (uint c = 0; c < 8; ++c)
          if (8 * g8 + c >= pc.c_out) v[c] = 0.0;
        packed = uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])), packHalf2x16(vec2(v[4], v[5])),
                       packHalf2x16(vec2(v[6], v[7])));
      }
      smem[(m0 + k) * OS + g8] = packed;
    }
  }
#endif
  subgroupMemoryBarrierShared();
  subgroupBarrier();
#if !COOP_EMULATE
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> z[FM * T_FN];
  [[unroll]] for (uint i = 0; i < FM * T_FN; ++i) z[i] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  [[unroll]] for (uint kc = 0; kc < T_K / 16; ++kc) {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b2[T_FN];
    [[unroll]] for (uint j = 0; j < T_FN; ++j)
      coopMatLoad(b2[j], smem, T_W2_V + (kc * 16 * T_NTS + j * 16) / 8, T_NTS / 8, gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (uint i = 0; i < FM; ++i) {
      uint m0, r, cx;
      tail_frag(sm, i, m0, r, cx);
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
      coopMatLoad(a, smem, m0 * OS + kc * 2, OS, gl_CooperativeMatrixLayoutRowMajor);
      [[unroll]] for (uint j = 0; j < T_FN; ++j) z[i * T_FN + j] = coopMatMulAdd(a, b2[j], z[i * T_FN + j]);
    }
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();  // every lane is done reading the rows Z replaces
  [[unroll]] for (uint i = 0; i < FM; ++i) {
    uint m0, r, cx;
    tail_frag(sm, i, m0, r, cx);
    [[unroll]] for (uint j = 0; j < T_FN; ++j)
      coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(z[i * T_FN + j]), smem, m0 * OS + j * 2, OS,
                   gl_CooperativeMatrixLayoutRowMajor);
  }
#else
  // The same by plain arithmetic, one fragment at a time (its rows are all it reads): lane l
  // holds the column pairs p = l + k * SUBGROUP_SIZE (row p / 8, columns 2 (p % 8) and
  // 2 (p % 8) + 1), so each lane writes whole 32-bit words.
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
    uint m0, r, cx;
    tail_frag(sm, i, m0, r, cx);
    vec2 z[T_FN][EMU_PAIRS];
    LOOP_UNROLL for (uint j = 0; j < T_FN; ++j)
      LOOP_UNROLL for (uint k = 0; k < EMU_PAIRS; ++k) {
        const uint p = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, row = p / 8, c = j * 16 + 2 * (p % 8);
        vec2 s = vec2(0.0);
        for (uint q = 0; q < T_K; ++q) {
          const float a = smem_half((m0 + row) * YS + q);
          s += a * vec2(smem_half(T_W2_V * 8 + q * T_NTS + c), smem_half(T_W2_V * 8 + q * T_NTS + c + 1));
        }
        z[j][k] = s;
      }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    LOOP_UNROLL for (uint j = 0; j < T_FN; ++j)
      LOOP_UNROLL for (uint k = 0; k < EMU_PAIRS; ++k) {
        const uint p = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, word = ((m0 + p / 8) * YS + j * 16 + 2 * (p % 8)) / 2;
        smem[word >> 2][word & 3u] = packHalf2x16(z[j][k]);
      }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  }
#endif
}
