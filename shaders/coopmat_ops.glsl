// The cooperative-matrix operations of the conv2d_coopmat shader family, on the tensor cores
// or, with COOP_EMULATE=1, emulated by plain arithmetic (tests on devices without cooperative
// matrices). Included after the including shader has defined: CM_M CM_N CM_K, ACC_T, FM FN
// (fragments per subgroup along M and N), A_STRIDE (the A row stride in shared memory, halves), NTS
// (the B row stride), MS (the accumulator column stride), SUBGROUP_SIZE, B_GLOBAL, and declared
// `shared f16vec4 smem[]` (and the weights buffer `wts` of f16vec4 if B_GLOBAL).
// A_DECL / A_LOAD(i, off): the subgroup's A fragments and a load of fragment i from smem at
// `off` halves (rows A_STRIDE halves apart; A_LOAD_STRIDE(i, off, stride) with another stride,
// the same for every load after one A_DECL); B_LOAD(off): one B fragment `bm`; MUL_ADD(i, j): acc[i][j] += a[i] * bm;
// ACC_STORE(i, j, off): accumulator (i, j) to smem, column-major (element (m, n) at off + n*MS + m);
// ACC_STORE_ROWS(i, j, off): the same row-major (element (m, n) at off + m*NTS + n);
// ACC_STORE_ROWS_S(i, j, off, stride) with another row stride.
// With A_DIRECT (conv2d_coopmat.comp): AD_DECL declares the two K steps' A row fragments ad[s][p]
// that each lane fills itself (emulated: AD_FRAG(s, p), fragments in shared memory); ad_set
// writes element word w of a fragment from a 32-bit word of two halves (the element order: lane
// 4 g + t holds rows g (words 0, 1) and g + 8 (words 2, 3) at K words t (0, 2) and t + 4 (1, 3));
// AD_MUL_ADD(i, j, s, p, k): acc[i][j] += ad[s][p] * bs[k]; AD_SYNC(): the emulation's subgroup
// barrier around its fragments.
// With Y_HWC, activated8 / store8: the NHWC epilogue (below; needs `pc`, `bias` or with
// EPI_FACTOR `epi`, `yu4`).
#if !COOP_EMULATE
// The tensor-core path. Offsets are in halves; the shared array is f16vec4 (all offsets and
// strides used here are multiples of 4 halves).
#define LOOP_UNROLL [[unroll]]
#define ACC_MAT coopmat<ACC_T, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>
#define ACC_DECL                                       \
  ACC_MAT acc[FM * FN];                                \
  [[unroll]] for (uint i_ = 0; i_ < FM * FN; ++i_) acc[i_] = ACC_MAT(0.0)
#define A_DECL coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA> a[FM]
#define A_LOAD_STRIDE(i, off, stride) coopMatLoad(a[i], smem, (off) / 4, (stride) / 4, gl_CooperativeMatrixLayoutRowMajor)
#define A_LOAD(i, off) A_LOAD_STRIDE(i, off, A_STRIDE)
#if B_GLOBAL
// Column-major in the buffer (column n: CK consecutive k): see pack_coop_weights.
#define B_LOAD(off)                                                    \
  coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB> bm; \
  coopMatLoad(bm, wts, (off) / 4, CK / 4, gl_CooperativeMatrixLayoutColumnMajor)
#else
#define B_LOAD(off)                                                    \
  coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB> bm; \
  coopMatLoad(bm, smem, (off) / 4, NTS / 4, gl_CooperativeMatrixLayoutRowMajor)
#endif
#define MUL_ADD(i, j) acc[(i) * FN + (j)] = coopMatMulAdd(a[i], bm, acc[(i) * FN + (j)])
// BS_DECL(n) / BS_LOAD(k, off): n B fragments held at once (bs[k] from smem at `off` halves);
// MUL_ADD_AB(i, j, ia, k): acc[i][j] += a[ia] * bs[k].
#define BS_DECL(n) coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB> bs[n]
#define BS_LOAD(k, off) coopMatLoad(bs[k], smem, (off) / 4, NTS / 4, gl_CooperativeMatrixLayoutRowMajor)
#define MUL_ADD_AB(i, j, ia, k) acc[(i) * FN + (j)] = coopMatMulAdd(a[ia], bs[k], acc[(i) * FN + (j)])
#if A_DIRECT
#define AD_A_T coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA>
#define AD_DECL AD_A_T ad[2][AD_ROWS]
void ad_set(inout AD_A_T a, uint w, uint word) {
  const f16vec2 v = unpackFloat2x16(word);
  a[2 * w] = v.x;
  a[2 * w + 1] = v.y;
}
#define AD_MUL_ADD(i, j, s, p, k) acc[(i) * FN + (j)] = coopMatMulAdd(ad[s][p], bs[k], acc[(i) * FN + (j)])
#define AD_SYNC()
#endif
#define ACC_STORE(i, j, off)                                                                            \
  coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>(acc[(i) * FN + (j)]), \
               smem, (off) / 4, MS / 4, gl_CooperativeMatrixLayoutColumnMajor)
#define ACC_STORE_ROWS_S(i, j, off, stride)                                                             \
  coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>(acc[(i) * FN + (j)]), \
               smem, (off) / 4, (stride) / 4, gl_CooperativeMatrixLayoutRowMajor)
#define ACC_STORE_ROWS(i, j, off) ACC_STORE_ROWS_S(i, j, off, NTS)
#else
// COOP_EMULATE=1 (tests on devices without cooperative matrices, e.g. lavapipe): the same
// data flow with the matrix operations done by plain arithmetic. Lane l of a subgroup holds
// accumulator elements e = l + k * SUBGROUP_SIZE (row e / CM_N, column e % CM_N); a "load"
// only records where its fragment starts and the multiply reads shared memory directly. The
// staging, indexing, packing and epilogue code is the tensor-core path's own.
#define EMU_ELEMS (CM_M * CM_N / SUBGROUP_SIZE)
// Rolled loops: fully unrolled, the emulation is too large for a CPU driver's compiler.
#define LOOP_UNROLL [[dont_unroll]]
float16_t smem_h(uint idx) { return smem[idx >> 2][idx & 3]; }
#if B_GLOBAL
#define B_AT(idx) wts[(idx) >> 2][(idx) & 3]
#define B_OFF(q, c) ((c) * CK + (q))  // column-major
#else
#define B_AT(idx) smem_h(idx)
#define B_OFF(q, c) ((q) * NTS + (c))
#endif
#define ACC_DECL                                       \
  float acc[FM * FN][EMU_ELEMS];                       \
  LOOP_UNROLL for (uint i_ = 0; i_ < FM * FN; ++i_)    \
    LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) acc[i_][k_] = 0.0
#define A_DECL \
  uint a[FM];  \
  uint a_stride_ = A_STRIDE
#define A_LOAD_STRIDE(i, off, stride) a[i] = (off), a_stride_ = (stride)
#define A_LOAD(i, off) A_LOAD_STRIDE(i, off, A_STRIDE)
#define B_LOAD(off) const uint bm = (off)
#if ACC_F16
#define EMU_ROUND(v) float(float16_t(v))
#else
#define EMU_ROUND(v) (v)
#endif
#define MUL_ADD(i, j)                                                                          \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                          \
    const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / CM_N, c_ = e_ % CM_N; \
    float s_ = acc[(i) * FN + (j)][k_];                                                         \
    for (uint q_ = 0; q_ < CM_K; ++q_)                                                          \
      s_ = EMU_ROUND(s_ + float(smem_h(a[i] + r_ * a_stride_ + q_)) * float(B_AT(bm + B_OFF(q_, c_)))); \
    acc[(i) * FN + (j)][k_] = s_;                                                               \
  }
#define BS_DECL(n) uint bs[n]
#define BS_LOAD(k, off) bs[k] = (off)
#define MUL_ADD_AB(i, j, ia, k)                                                                \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                          \
    const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / CM_N, c_ = e_ % CM_N; \
    float s_ = acc[(i) * FN + (j)][k_];                                                         \
    for (uint q_ = 0; q_ < CM_K; ++q_)                                                          \
      s_ = EMU_ROUND(s_ + float(smem_h(a[ia] + r_ * a_stride_ + q_)) * float(smem_h(bs[k] + q_ * NTS + c_))); \
    acc[(i) * FN + (j)][k_] = s_;                                                               \
  }
#define ACC_STORE(i, j, off)                                                                    \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                          \
    const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / CM_N, c_ = e_ % CM_N; \
    const uint o_ = (off) + c_ * MS + r_;                                                       \
    smem[o_ >> 2][o_ & 3] = float16_t(acc[(i) * FN + (j)][k_]);                                 \
  }
#define ACC_STORE_ROWS_S(i, j, off, stride)                                                     \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                          \
    const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / CM_N, c_ = e_ % CM_N; \
    const uint o_ = (off) + r_ * (stride) + c_;                                                 \
    smem[o_ >> 2][o_ & 3] = float16_t(acc[(i) * FN + (j)][k_]);                                 \
  }
#define ACC_STORE_ROWS(i, j, off) ACC_STORE_ROWS_S(i, j, off, NTS)
#if A_DIRECT
// The fragments a lane "holds" are 16 x 16 halves (row stride 16) of this subgroup's part of the
// region at AD_EMU_OFF; ad_set writes a virtual 32-lane subgroup's element word w there, so the
// emulation checks the tensor path's addressing, masking and element order.
#define AD_DECL const uint ad_base_ = AD_EMU_OFF * 4 + gl_SubgroupID * (2 * AD_ROWS * 256)
#define AD_FRAG(s, p) (ad_base_ + ((s) * AD_ROWS + (p)) * 256)
void ad_set(uint frag, uint vl, uint w, uint word) {
  const uint o = frag + ((vl >> 2) + 8 * (w >> 1)) * 16 + 2 * ((vl & 3u) + 4 * (w & 1u));
  const f16vec2 v = unpackFloat2x16(word);
  smem[o >> 2][o & 3] = v.x;
  smem[(o + 1) >> 2][(o + 1) & 3] = v.y;
}
#define AD_MUL_ADD(i, j, s, p, k)                                                                \
  LOOP_UNROLL for (uint k_ = 0; k_ < EMU_ELEMS; ++k_) {                                          \
    const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / CM_N, c_ = e_ % CM_N; \
    float s_ = acc[(i) * FN + (j)][k_];                                                         \
    for (uint q_ = 0; q_ < CM_K; ++q_)                                                          \
      s_ = EMU_ROUND(s_ + float(smem_h(AD_FRAG(s, p) + r_ * 16 + q_)) * float(smem_h(bs[k] + q_ * NTS + c_))); \
    acc[(i) * FN + (j)][k_] = s_;                                                               \
  }
#define AD_SYNC() \
  subgroupMemoryBarrierShared(); \
  subgroupBarrier()
#endif
#endif

#if Y_HWC
// The NHWC epilogue of both coop shaders. An NHWC tensor's channel count is a multiple of 8 (the
// lowering checks), so the 8 channels co .. co + 7 of an item are all in range.
// EPI_FACTOR=1 (conv2d_coopmat_up2 with an int8 X0): per output channel a factor and a bias
// (vec2, buffer `epi`), applied as acc * factor + bias; else a bias alone.
#ifndef EPI_FACTOR
#define EPI_FACTOR 0
#endif
#if EPI_FACTOR
#define EPI8_T vec2
#else
#define EPI8_T float
#endif
// The epilogue constants of channels co .. co + 7 (no bias: zeros; from c_out on: neutral).
void bias8(uint co, out EPI8_T b[8]) {
  [[unroll]] for (uint k = 0; k < 8; ++k) {
#if EPI_FACTOR
    b[k] = co < pc.c_out ? epi[co + k] : vec2(1.0, 0.0);
#elif HAS_BIAS
    b[k] = co < pc.c_out ? float(bias[co + k]) : 0.0;
#else
    b[k] = 0.0;
#endif
  }
}

// Whether every epilogue item of an invocation has the same 8-channel group (items e = t +
// i * WG_SIZE, group e % (NT / 8)): then the invocation loads its 8 biases once, before the
// item loop, instead of per item.
#ifndef BIAS_ONCE
#define BIAS_ONCE 1
#endif
#define G8_FIXED (BIAS_ONCE != 0 && (WG_SIZE % (NT / 8)) == 0)

// 8 activated values of one output pixel from the pixel-major accumulators (smem offset `at`,
// in halves), with biases b.
void activated8(uint at, const EPI8_T b[8], float act_a, float act_b, out float v[8]) {
  const f16vec4 lo = smem[at / 4], hi = smem[at / 4 + 1];
  [[unroll]] for (uint k = 0; k < 8; ++k) {
    const float x = float(k < 4 ? lo[k] : hi[k - 4]);
#if EPI_FACTOR
    v[k] = activate(x * b[k].x + b[k].y, act_a, act_b);
#else
    v[k] = activate(x + b[k], act_a, act_b);
#endif
  }
}

// Writes 8 channels to the NHWC output at element `base` (a multiple of 8): one 16-byte store.
#if Y_Q8
#include "quant.glsl"
// An NHWC_Q8 output (Y_Q8): codes of Y's scale and zero point, rounded as conv2d_coopmat_q8.comp
// and quantize.comp round.
layout(set = 0, binding = B_Y) writeonly buffer YQ8 { uvec2 yq8[]; };
void store8(uint base, const float v[8]) {
  const float inv = uintBitsToFloat(pc.y_inv_scale);
  yq8[base >> 3] = uvec2(q8_pack4(vec4(v[0], v[1], v[2], v[3]) * inv, Y_ZP), q8_pack4(vec4(v[4], v[5], v[6], v[7]) * inv, Y_ZP));
}
#else
void store8(uint base, const float v[8]) {
  yu4[base >> 3] = uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
                         packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
}
#endif
#endif
