// conv2d_coopmat.comp's TAIL epilogue: the next convolution, when it has few output channels
// (a denoiser's last conv, 32 -> 3, 3x3, padding 1), computed from the tile this workgroup just
// produced, so that the intermediate tensor (full resolution, 32 channels in OIDN) is never
// written nor read back. The tail is a tap-sum (conv2d_coopmat_tapsum.comp's idea):
//
//   Z[p][tap * T_COUT + co] = sum over ci of Y[p][ci] * W2[co][ci][tap]     (a 1x1 GEMM, T_NT columns)
//   out[q][co] = bias2[co] + sum over taps of Z[q + (ky - 1, kx - 1)][tap * T_COUT + co]
//
// Y is the activated tile (TILE_H x TILE_W pixels, channels [0, T_K)), zero outside the
// conv's output, so the tail's zero padding costs nothing. An output q whose 3x3 neighbourhood
// lies in the tile is complete here and stored (bias2, T_ACT, crop); the others (the ring,
// conv_tail_ring.glsl) also take contributions from neighbouring tiles: their partial sums go
// to the partials buffer and conv_tail_ring.comp, the next dispatch, adds them up.
//
// Included by conv2d_coopmat.comp with TAIL=1 after frag_pos. Macros:
//   T_COUT     the tail's output channels (at most 4; 9 * T_COUT <= T_NT)
//   T_NT       Z's columns (a multiple of 16, at most 64)
//   T_K        the tail's input channels rounded up to 16 (<= NT: the tile holds them all)
//   T_HAS_BIAS T_ACT  the tail's bias binding and activation (common.glsl's codes)
// SG_N is 1, so a subgroup's accumulators are whole pixels (all NT channels): it applies the
// bias and activation to them in registers, stores them as its own rows of the pixel-major tile
// (M_TILE x YS halves, YS = max(NT, T_NT) + 8), multiplies those rows by W2 and writes Z over
// the same rows (Z[p][c] at p * YS + c), all without waiting for the other subgroups; one workgroup
// barrier then precedes the tap sums, which read the neighbours' rows. W2 (T_K x T_NTS) and
// the conv's bias (NT halves) sit in shared memory of their own after everything else (TAIL_C),
// staged with the first chunk (with A_DIRECT: after the tile's rows, over the dead weights stage,
// staged after the chunk loop: TAIL_LATE_CONSTS, conv2d_coopmat_config.glsl). (A first version
// with a barrier between each step, W2 loaded after the main loop and the bias added in a pass
// over shared memory cost 0.13 ms on the H100's dec_conv1b: bench/RESULTS.md, 2026-11-25
// afternoon.)

// TAIL_WG_SYNC (tests only, default 0): workgroup barriers where tail_own_rows synchronizes
// its subgroup. Within one subgroup, subgroupMemoryBarrierShared + subgroupBarrier order the
// rows' stores, the loads and Z's stores (the Vulkan memory model, subgroup scope), and no
// other subgroup touches those rows. GPU-AV's shared-memory race check counts only workgroup
// barriers, and a coop-matrix store to an element touched since the last one as a race, so it
// reports this tail wherever it can instrument it (bench/RESULTS.md, thirty-ninth session); a
// variant with this macro shows that nothing else is reported. (Every subgroup calls
// tail_own_rows, so barrier() is allowed there.)
#ifndef TAIL_WG_SYNC
#define TAIL_WG_SYNC 0
#endif
#if TAIL_WG_SYNC
#define TAIL_SUBGROUP_SYNC() barrier()
#else
#define TAIL_SUBGROUP_SYNC() \
  subgroupMemoryBarrierShared(); \
  subgroupBarrier()
#endif

#define T_NTS (T_NT + 8)
#define T_FN (T_NT / CM_N)
#define T_W2_OFF (TAIL_C_OFF * 4)          // halves
#define T_BIAS_OFF (T_W2_OFF + T_K * T_NTS)  // halves
#if (T_NT % 16) != 0 || 9 * T_COUT > T_NT || T_COUT > 4 || T_K > NT || (T_K % 16) != 0 || TILE_H < 2 || SG_N != 1
#error "conv2d_coopmat TAIL: inconsistent macros"
#endif

layout(set = 0, binding = B_W2) readonly buffer W2Buf { f16vec4 w2[]; };
#if T_HAS_BIAS
layout(set = 0, binding = B_BIAS2) readonly buffer B2Buf { float16_t bias2[]; };
#endif
layout(set = 0, binding = B_P) writeonly buffer PBuf { float partials[]; };

// The tap sums: conv_tail_sums.glsl, reading Z through tail_z4.
f16vec4 tail_z4(uint at) { return smem[at]; }
#include "conv_tail_sums.glsl"

// W2 ([T_K][T_NT], pack_coop_tapsum_weights) and the conv's bias (zero past c_out) into their
// shared memory; before the first chunk's barrier (TAIL_LATE_CONSTS: after the last one's).
void tail_stage_consts(uint t) {
  for (uint e = t; e < T_K * T_NT / 4; e += WG_SIZE) smem[(T_W2_OFF + (e / (T_NT / 4)) * T_NTS) / 4 + e % (T_NT / 4)] = w2[e];
  for (uint co = t; co < NT; co += WG_SIZE) {
#if HAS_BIAS
    const float16_t b = co < pc.c_out ? bias[co] : float16_t(0.0);
#else
    const float16_t b = float16_t(0.0);
#endif
    const uint at = T_BIAS_OFF + co;
    smem[at >> 2][at & 3] = b;
  }
}

#if !COOP_EMULATE
// Accumulator (i, j) += the bias of its columns (a stride-0 load: every row the bias row),
// then the activation element-wise (the same for every position, so the element order the
// implementation chooses does not matter).
#define TAIL_ACTIVATE_ACC(i, j, act_a, act_b)                                                                  \
  {                                                                                                              \
    coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator> bh_;                               \
    coopMatLoad(bh_, smem, (T_BIAS_OFF + (j) * CM_N) / 4, 0, gl_CooperativeMatrixLayoutRowMajor);               \
    acc[(i) * FN + (j)] = acc[(i) * FN + (j)] + ACC_MAT(bh_);                                                   \
    for (int k_ = 0; k_ < acc[(i) * FN + (j)].length(); ++k_)                                                   \
      acc[(i) * FN + (j)][k_] = ACC_T(activate(float(acc[(i) * FN + (j)][k_]), act_a, act_b));                 \
  }
#else
#define TAIL_ACTIVATE_ACC(i, j, act_a, act_b)                                                                  \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                                          \
    const uint c_ = (gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE) % CM_N;                                       \
    const float v_ = EMU_ROUND(acc[(i) * FN + (j)][k_] + float(smem_h(T_BIAS_OFF + (j) * CM_N + c_)));          \
    acc[(i) * FN + (j)][k_] = EMU_ROUND(activate(v_, act_a, act_b));                                            \
  }
#endif

// This subgroup's rows: zero where the pixel is outside the conv's output (edge tiles only),
// then Z = Y W2 for them, written over them. sg_m: the subgroup (SG_N = 1).
void tail_own_rows(uint sg_m, int oy0, int ox0) {
  // The rows' coopMatStore may have put an element with another lane than the one zeroing it.
  TAIL_SUBGROUP_SYNC();
  if (uint(oy0) + TILE_H > pc.oh || uint(ox0) + TILE_W > pc.ow) {  // uniform: the tile crosses the edge
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
      uint r, cs;
      frag_pos(sg_m, i, r, cs);
      const uint m0 = (r * FRAGS_W + cs) * CM_M;
      for (uint e = gl_SubgroupInvocationID; e < CM_M * (NT / 4); e += SUBGROUP_SIZE) {
        const uint k = e / (NT / 4);
        if (uint(oy0) + r >= pc.oh || uint(ox0) + cs * CM_M + k >= pc.ow) smem[((m0 + k) * YS) / 4 + e % (NT / 4)] = f16vec4(0.0);
      }
    }
  }
  TAIL_SUBGROUP_SYNC();
#if !COOP_EMULATE
  coopmat<ACC_T, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator> z[FM * T_FN];
  [[unroll]] for (uint i = 0; i < FM * T_FN; ++i) z[i] = coopmat<ACC_T, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>(0.0);
  [[unroll]] for (uint kc = 0; kc < T_K / CM_K; ++kc) {
    coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB> b2[T_FN];
    [[unroll]] for (uint j = 0; j < T_FN; ++j)
      coopMatLoad(b2[j], smem, (T_W2_OFF + kc * CM_K * T_NTS + j * CM_N) / 4, T_NTS / 4, gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (uint i = 0; i < FM; ++i) {
      uint r, cs;
      frag_pos(sg_m, i, r, cs);
      coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA> a;
      coopMatLoad(a, smem, ((r * FRAGS_W + cs) * CM_M * YS + kc * CM_K) / 4, YS / 4, gl_CooperativeMatrixLayoutRowMajor);
      [[unroll]] for (uint j = 0; j < T_FN; ++j) z[i * T_FN + j] = coopMatMulAdd(a, b2[j], z[i * T_FN + j]);
    }
  }
  TAIL_SUBGROUP_SYNC();  // every lane is done reading the rows Z replaces
  [[unroll]] for (uint i = 0; i < FM; ++i) {
    uint r, cs;
    frag_pos(sg_m, i, r, cs);
    [[unroll]] for (uint j = 0; j < T_FN; ++j)
      coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>(z[i * T_FN + j]), smem,
                   ((r * FRAGS_W + cs) * CM_M * YS + j * CM_N) / 4, YS / 4, gl_CooperativeMatrixLayoutRowMajor);
  }
#else
  // The same with plain arithmetic (COOP_EMULATE, coopmat_ops.glsl): lane l holds elements
  // l + k * SUBGROUP_SIZE of each fragment, rounded per step like the fp16 accumulators.
  float z[FM * T_FN][EMU_ELEMS];
  LOOP_UNROLL for (uint i = 0; i < FM * T_FN; ++i) LOOP_UNROLL for (uint k = 0; k < EMU_ELEMS; ++k) z[i][k] = 0.0;
  LOOP_UNROLL for (uint kc = 0; kc < T_K / CM_K; ++kc) {
    LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
      uint r, cs;
      frag_pos(sg_m, i, r, cs);
      const uint m0 = (r * FRAGS_W + cs) * CM_M;
      LOOP_UNROLL for (uint j = 0; j < T_FN; ++j) {
        LOOP_UNROLL for (uint k = 0; k < EMU_ELEMS; ++k) {
          const uint e = gl_SubgroupInvocationID + k * SUBGROUP_SIZE, rr = e / CM_N, c = e % CM_N;
          float s = z[i * T_FN + j][k];
          for (uint q = 0; q < CM_K; ++q)
            s = EMU_ROUND(s + float(smem_h((m0 + rr) * YS + kc * CM_K + q)) * float(smem_h(T_W2_OFF + (kc * CM_K + q) * T_NTS + j * CM_N + c)));
          z[i * T_FN + j][k] = s;
        }
      }
    }
  }
  TAIL_SUBGROUP_SYNC();
  LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
    uint r, cs;
    frag_pos(sg_m, i, r, cs);
    const uint m0 = (r * FRAGS_W + cs) * CM_M;
    LOOP_UNROLL for (uint j = 0; j < T_FN; ++j)
      LOOP_UNROLL for (uint k = 0; k < EMU_ELEMS; ++k) {
        const uint e = gl_SubgroupInvocationID + k * SUBGROUP_SIZE;
        const uint o = (m0 + e / CM_N) * YS + j * CM_N + e % CM_N;
        smem[o >> 2][o & 3] = float16_t(z[i * T_FN + j][k]);
      }
  }
#endif
}

