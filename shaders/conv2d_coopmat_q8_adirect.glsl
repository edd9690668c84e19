// conv2d_coopmat_q8.comp's A_DIRECT: the int8 fragments for conv2d_coopmat_adirect.glsl's loads
// and conv2d_coopmat_adirect_k.glsl's K loop, which conv2d_coopmat.comp's fp16 A_DIRECT shares.
// An int8 16x32 A fragment has the fp16 one's word structure (a word holds 4 int8 elements, not
// 2 halves; shaders/coop_a_layout.comp with Q8=1 reads it back): lane 4 g + t holds row g at K
// words t and t + 4, then row g + 8 at the same words. So one 16-byte load of 16 channels of a
// pixel fills a lane's row words for two K steps, as 8 fp16 channels do there
// (quantize_q8_conv orders K to match: a_direct_k). Outside X0 a lane loads X0's zero point (the
// padding value); past c_in too (those weights are zero). Included by conv2d_coopmat_q8.comp
// after b_frag_at (and emu_mul_add, emulated).

#define CM_M 16
#define CM_K 32
#define AD_LANE_C 16  // channels of one 16-byte load
#define AD_PAD uvec4(zp_word(X0_ZP))
#define AD_X_H pc.h
#define AD_X_W pc.w
#define AD_X_C pc.c_in
#define AD_PREDICATED 1
#define AD_KH KH
#define AD_KW KW
// Weights row (tap (ky, kx), B fragment column jn, K position k) in the staged weights.
#define AD_B_AT(ky, kx, k, jn) b_frag_at(ct, chunks, chunk, (ky) * KW + (kx), (jn) * 16, (k) / 32)

// Channels c .. c + 15 of X0's pixel (y, x): one vector of NHWC_Q8.
uvec4 ad_x8(uint n, uint c, uint y, uint x) { return x0v[((n * pc.h + y) * pc.w + x) * (pc.c_in / 16) + c / 16]; }

#if COOP_EMULATE
// The fragments a lane "holds" are 16 rows x 32 bytes (2 vectors a row) of this subgroup's part
// of the region at AD_EMU_OFF; ad_set writes a virtual 32-lane subgroup's element word w there,
// so the emulation checks the tensor path's addressing, padding and element order.
#define AD_DECL const uint ad_base_ = AD_EMU_OFF + gl_SubgroupID * (2 * AD_ROWS * 32)
#define AD_FRAG(s, p) (ad_base_ + ((s) * AD_ROWS + (p)) * 32)
void ad_set(uint frag, uint vl, uint w, uint word) {
  const uint row = (vl >> 2) + 8 * (w >> 1), kw = (vl & 3u) + 4 * (w & 1u);
  smem[frag + row * 2 + (kw >> 2)][kw & 3u] = word;
}
#define BS_DECL(n) uint bs[n]
#define BS_LOAD(k, off) bs[k] = (off)
#define AD_MUL_ADD(i, j, s, p, k) emu_mul_add(acc[(i) * FN + (j)], AD_FRAG(s, p), 2, bs[k])
#define AD_SYNC() \
  subgroupMemoryBarrierShared(); \
  subgroupBarrier()
#else
#define AD_A_T coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>
#define AD_DECL AD_A_T ad[2][AD_ROWS]
void ad_set(inout AD_A_T a, uint w, uint word) {
  const i8vec4 v = unpack8(int32_t(word));
  [[unroll]] for (uint k = 0; k < 4; ++k) a[4 * w + k] = v[k];
}
#define BS_DECL(n) coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> bs[n]
#define BS_LOAD(k, off) coopMatLoad(bs[k], B_SRC, off, B_STRIDE, gl_CooperativeMatrixLayoutColumnMajor)
#define AD_MUL_ADD(i, j, s, p, k) acc[(i) * FN + (j)] = coopMatMulAdd(ad[s][p], bs[k], acc[(i) * FN + (j)])
#define AD_SYNC()
#endif

#include "conv2d_coopmat_adirect.glsl"
