// conv2d_coopmat_q8's PHASES mode (included by conv2d_coopmat_q8.comp where PHASES=1): a 3x3
// conv of a nearest-2x upsampled X0 concatenated with a full-resolution X1, by output phase.
// Output pixel (2Y + py, 2X + px) reads X0 only at low-resolution rows Y + py - 1 + a and columns
// X + px - 1 + b, a, b in {0, 1}: per phase a 2x2 conv of X0 whose weights are sums of the 3x3
// ones (kernels::up2_phase_weight), so X0's channels take 4 taps instead of 9 and are staged at
// low resolution, as conv2d_coopmat_up2 does in fp16. X1's channels take the 9 taps on the
// full-resolution patch as without PHASES (its rows split by column parity), their A fragments
// taking every other pixel: a subgroup's fragments all belong to one phase (16 pixels of one row
// parity and one column parity), so its accumulators mix no phases and the epilogue stores their
// rows two pixels apart.
// Chunks never mix the sources: X0's channels in ceil(c0 / CK) chunks (zero past c0), then X1's.

// PHASES: X0's chunks (chunk < n0: X0's channels, zero past c0) with their 16 blocks of phase
// weights, then X1's (its channels from c0 in chunks of their own) with 9 taps, as fetch().
void fetch_phases(uint chunk, uint n0, uint t, uint w_base) {
  const uint g = (t % VPP) * 16;
  const bool x0c = chunk < n0;
  const uint ci = x0c ? chunk * CK + g : (chunk - n0) * CK + g;  // within the chunk's source
  LOOP_UNROLL for (uint i = 0; i < PATCH_PER_T; ++i) {
    uvec4 v = uvec4(0u);
    if (x0c) {
      if (ci < pc.c0) v = base0[i] >= 0 ? x0v[uint(base0[i]) + ci / 16] : base0[i] == -1 ? uvec4(zp_word(X0_ZP)) : uvec4(0u);
    } else if (pc.c0 + ci < pc.c_in) {
      v = base1[i] >= 0 ? x1v[uint(base1[i]) + ci / 16] : base1[i] == -1 ? uvec4(zp_word(X1_ZP)) : uvec4(0u);
    }
    px[i] = v;
  }
  const uint items = x0c ? W0_ITEMS : W_ITEMS, first = w_base + (x0c ? chunk * W0_ITEMS : n0 * W0_ITEMS + (chunk - n0) * W_ITEMS);
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < items) pw[i] = wv[first + e];
  }
}

// Each row of X1's patch is stored as its even columns, then its odd ones (HALO_W is even), so a
// fragment's every-other-pixel rows are consecutive slots: on the H100 dec_conv2a 0.154 -> 0.148
// ms, dec_conv3a 0.083 -> 0.078 against rows two slots apart (2-way bank conflicts in the
// fragment loads; bench/RESULTS.md, 2026-11-27 fourth session).
#define X1_HALF (HALO_W / 2)
uint x1_slot(uint p) {
  const uint col = p % HALO_W;
  return p - col + (col & 1u) * X1_HALF + (col >> 1);
}

void stash_phases(uint t, bool x0c) {
  const uint patch_items = x0c ? PATCH0_ITEMS : PATCH_ITEMS, w_items = x0c ? W0_ITEMS : W_ITEMS, w_at = x0c ? PATCH0_V : PATCH_V;
  LOOP_UNROLL for (uint i = 0; i < PATCH_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < patch_items) smem[(x0c ? e / VPP : x1_slot(e / VPP)) * A_STRIDE + e % VPP] = px[i];
  }
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < w_items) smem[w_at + (e / VPP) * A_STRIDE + e % VPP] = pw[i];
  }
}

// One 32-channel K step: A fragment i from shared vector a_at[i] (its rows A_ROWS vectors apart),
// B fragment j from B_AT (an expression of col0, its first column; rows A_STRIDE apart,
// column-major), into acc.
#if COOP_EMULATE
#define K_STEP(A_AT, A_ROWS, B_AT)                                                                                  \
  LOOP_UNROLL for (uint j = 0; j < FN; ++j) {                                                                       \
    const uint col0 = (sn * FN + j) * 16, b_at = B_AT;                                                              \
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) {                                                                     \
      LOOP_UNROLL for (uint k = 0; k < EMU_PAIRS; ++k) {                                                            \
        const uint p = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, r = p / 8, c = 2 * (p % 8);                     \
        int s0 = acc[i * FN + j][2 * k], s1 = acc[i * FN + j][2 * k + 1];                                           \
        for (uint q = 0; q < 32; ++q) {                                                                             \
          const int av = smem_byte((A_AT[i] + r * (A_ROWS)) * 16 + q);                                              \
          s0 += av * smem_byte((b_at + c * A_STRIDE) * 16 + q), s1 += av * smem_byte((b_at + (c + 1) * A_STRIDE) * 16 + q); \
        }                                                                                                           \
        acc[i * FN + j][2 * k] = s0, acc[i * FN + j][2 * k + 1] = s1;                                               \
      }                                                                                                             \
    }                                                                                                               \
  }
#else
#define K_STEP(A_AT, A_ROWS, B_AT)                                                                                  \
  {                                                                                                                 \
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> a[FM];                                                 \
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) coopMatLoad(a[i], smem, A_AT[i], A_ROWS, gl_CooperativeMatrixLayoutRowMajor); \
    LOOP_UNROLL for (uint j = 0; j < FN; ++j) {                                                                     \
      const uint col0 = (sn * FN + j) * 16;                                                                         \
      coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> b;                                                   \
      coopMatLoad(b, smem, B_AT, A_STRIDE, gl_CooperativeMatrixLayoutColumnMajor);                                  \
      LOOP_UNROLL for (uint i = 0; i < FM; ++i) acc[i * FN + j] = coopMatMulAdd(a[i], b, acc[i * FN + j]);          \
    }                                                                                                               \
  }
#endif
