// conv2d_coopmat.comp's HEAD prologue: the convolution before this one, when it reads a narrow
// image (a denoiser's first conv, 3 -> 32 channels, 3x3), is computed by this workgroup into
// the shared patch instead of being read from memory, so that its full-resolution output (32
// channels in OIDN: 134 MB at 1920x1088) is never written nor read back, and its dispatch is
// gone.
//
// The head is a GEMM on the image staged as conv2d_coopmat's NARROW=2 slots (a slot holds two
// neighbouring pixels of 4 channels; an A row of 16 halves spans two slots, i.e. the 3 taps of
// one kernel row, so a 3x3 head takes 3 K steps). Its M is the patch flattened with a row pitch
// of H_PP = HALO_W + 1 pixels, the image slots' pitch too: the A row of patch position
// q = hy * H_PP + hx at kernel row ky is slot q + ky * H_PP, a constant shift per K step, so
// 16 consecutive positions are one strided coopMatLoad wherever they fall. Column hx = HALO_W
// of every row (and the rows after the last) is computed from slots that wrap around: garbage
// that the conv never reads (its A rows stay within columns [0, HALO_W)). The conv's own patch
// therefore has the same pitch (PATCH_W = H_PP).
//
// Per chunk of CK = 16 conv input channels (= 16 head output channels):
//   1. the image slots and the chunk's head weights go from registers (every chunk's loaded
//      once, before the first chunk) to the region R after the patch; the chunk's conv weights
//      are fetched into registers (fetch_weights, conv2d_coopmat_stage.glsl);
//   2. each subgroup computes its head fragments: bias (a stride-0 load of the bias row), three
//      K steps, the head's activation element-wise, stored as fp16 rows into the patch;
//   3. patch pixels outside the head's output (edge tiles) are zeroed: the conv's zero padding;
//      the conv weights go into R (stash_weights), over the slots (the 48 KB of shared memory
//      hold the 8x64-pixel tile's 32 KB patch, 15 KB of slots and head weights and 11 KB of
//      conv weights only so);
//   4. the conv's multiplies as without HEAD.
// The head's zero padding and a zero Pad before it cost nothing: slots outside the image hold 0.
//
// Included by conv2d_coopmat.comp with HEAD=1 (not with NARROW, CONCAT, UPSAMPLE0, B_GLOBAL or
// TAIL; CK = 16). Macros: H_K (the conv's input channels = the head's output channels, rounded
// up to 16), H_HAS_BIAS, H_ACT. X0 is the image (NCHW, at most 4 channels). Bindings after the
// conv's: the head's weights (pack_coop_weights with nt 16, narrow 2: [H_K / 16][3 ky][16][16]),
// [its bias]. Push constants after the conv's 19 (whose h0 w0 are the image's stored extents):
// h_c (image channels), h_h h_w (the image's region that holds data), h_pad_top h_pad_left (the
// head's padding plus a folded Pad's begin), h_act_a h_act_b.

// (H_PP, H_FRAGS, H_PX, H_SLOTS, H_WS and H_REGION_VEC4 are conv2d_coopmat.comp's:
// they size its shared memory.)
#define H_SLOT_ROWS (HALO_H + 2)  // slot rows that hold image data
#define H_NS_PER_T ((H_SLOTS + WG_SIZE - 1) / WG_SIZE)
#define H_W_CHUNK 192                                      // f16vec4 items of a chunk's head weights (48 x 16)
#define H_W_ITEMS ((H_K / 16) * H_W_CHUNK)                 // every chunk's
#define H_W_PER_T ((H_W_ITEMS + WG_SIZE - 1) / WG_SIZE)
#define H_HN (CM_K / CM_N)                                 // head N fragments per chunk (16 channels)
#if CK != 16 || (H_K % 16) != 0
#error "conv2d_coopmat HEAD: inconsistent macros"
#endif

layout(set = 0, binding = B_HW) readonly buffer HWBuf { f16vec4 hw[]; };
#if H_HAS_BIAS
layout(set = 0, binding = B_HB) readonly buffer HBBuf { float16_t hbias[]; };
#endif

// Offsets in halves: R (after the patch: slots, then head weights; the conv weights over them
// from step 3 on), and the head's biases after everything else.
#define H_R_OFF (X_VEC4 * 4)
#define H_W_OFF (H_R_OFF + H_SLOTS * 8)
#define H_B_OFF (HEAD_C_OFF * 4)

f16vec4 h_img[2 * H_NS_PER_T];  // this invocation's slots, loaded once
f16vec4 h_w[H_W_PER_T];         // this invocation's head weights, loaded once

// Channel c of image pixel (iy, ix), 0 outside its data region or past its channels.
float16_t head_load(uint n, uint c, int iy, int ix) {
  if (c >= pc.h_c || iy < 0 || ix < 0 || iy >= int(pc.h_h) || ix >= int(pc.h_w)) return float16_t(0.0);
  return x0[((n * pc.h_c + c) * pc.h0 + uint(iy)) * pc.w0 + uint(ix)];
}

// Before the first chunk: the slots and the head weights into registers, the head's biases into
// shared memory (zero past the head's channels; never overwritten).
void head_fetch(uint t, uint n, int iy0, int ix0) {
  const int sy0 = iy0 - pc.h_pad_top, sx0 = ix0 - pc.h_pad_left;
  LOOP_UNROLL for (uint i = 0; i < H_NS_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    float16_t v[8];
    [[unroll]] for (uint k = 0; k < 8; ++k) v[k] = float16_t(0.0);
    if (e < H_SLOTS && e / H_PP < H_SLOT_ROWS) {
      const int iy = sy0 + int(e / H_PP), ix = sx0 + int(e % H_PP);
      [[unroll]] for (uint q = 0; q < 2; ++q)
        [[unroll]] for (uint c = 0; c < 4; ++c) v[q * 4 + c] = head_load(n, c, iy, ix + int(q));
    }
    h_img[2 * i] = f16vec4(v[0], v[1], v[2], v[3]);
    h_img[2 * i + 1] = f16vec4(v[4], v[5], v[6], v[7]);
  }
  LOOP_UNROLL for (uint i = 0; i < H_W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < H_W_ITEMS) h_w[i] = hw[e];
  }
  for (uint c = t; c < H_K; c += WG_SIZE) {
#if H_HAS_BIAS
    const float16_t b = c < pc.c_in ? hbias[c] : float16_t(0.0);
#else
    const float16_t b = float16_t(0.0);
#endif
    smem[(H_B_OFF + c) >> 2][(H_B_OFF + c) & 3] = b;
  }
}

// Step 1: slots and chunk `chunk`'s head weights from registers into R.
void head_stash(uint t, uint chunk) {
  LOOP_UNROLL for (uint i = 0; i < H_NS_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < H_SLOTS) {
      smem[H_R_OFF / 4 + 2 * e] = h_img[2 * i];
      smem[H_R_OFF / 4 + 2 * e + 1] = h_img[2 * i + 1];
    }
  }
  LOOP_UNROLL for (uint i = 0; i < H_W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < H_W_ITEMS && e / H_W_CHUNK == chunk) smem[(H_W_OFF + ((e % H_W_CHUNK) / 4) * H_WS) / 4 + e % 4] = h_w[i];
  }
}

// Step 2: this subgroup's head fragments of chunk `chunk`: fragments sg + i * SG_COUNT. The
// head's B and bias fragments are loaded once per chunk, and the H_FULL fragments every
// subgroup has are computed side by side (independent multiply chains), then the last one of
// the first H_REM subgroups.
#define H_FULL (H_FRAGS / SG_COUNT)
#define H_REM (H_FRAGS % SG_COUNT)
#if !COOP_EMULATE
#define H_ACC_MAT coopmat<ACC_T, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>
// Fragments f0, f0 + SG_COUNT, ... (count n, a compile-time constant) from their A rows.
#define HEAD_FRAGS(f0, n)                                                                                                  \
  {                                                                                                                         \
    H_ACC_MAT hacc[(n) * H_HN];                                                                                             \
    [[unroll]] for (uint i = 0; i < (n) * H_HN; ++i) hacc[i] = hbias_m[i % H_HN];                                         \
    [[unroll]] for (uint ky = 0; ky < 3; ++ky)                                                                              \
      [[unroll]] for (uint i = 0; i < (n); ++i) {                                                                           \
        coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA> a_;                                                 \
        coopMatLoad(a_, smem, (H_R_OFF + (((f0) + i * SG_COUNT) * CM_M + ky * H_PP) * 8) / 4, 8 / 4,                       \
                    gl_CooperativeMatrixLayoutRowMajor);                                                                    \
        [[unroll]] for (uint j = 0; j < H_HN; ++j) hacc[i * H_HN + j] = coopMatMulAdd(a_, hb[ky * H_HN + j], hacc[i * H_HN + j]); \
      }                                                                                                                     \
    [[unroll]] for (uint i = 0; i < (n) * H_HN; ++i) {                                                                      \
      for (int k_ = 0; k_ < hacc[i].length(); ++k_) hacc[i][k_] = ACC_T(activate_as(H_ACT, float(hacc[i][k_]), act_a, act_b)); \
      coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>(hacc[i]), smem,                 \
                   ((((f0) + (i / H_HN) * SG_COUNT) * CM_M) * CKS + (i % H_HN) * CM_N) / 4, CKS / 4,                       \
                   gl_CooperativeMatrixLayoutRowMajor);                                                                     \
    }                                                                                                                       \
  }
#endif
void head_gemm(uint chunk, uint sg) {
  const float act_a = uintBitsToFloat(pc.h_act_a), act_b = uintBitsToFloat(pc.h_act_b);
#if !COOP_EMULATE
  H_ACC_MAT hbias_m[H_HN];  // every row the chunk's biases
  coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB> hb[3 * H_HN];
  [[unroll]] for (uint j = 0; j < H_HN; ++j) {
    coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator> b_;
    coopMatLoad(b_, smem, (H_B_OFF + chunk * 16 + j * CM_N) / 4, 0, gl_CooperativeMatrixLayoutRowMajor);  // every row the bias row
    hbias_m[j] = H_ACC_MAT(b_);
    [[unroll]] for (uint ky = 0; ky < 3; ++ky)
      coopMatLoad(hb[ky * H_HN + j], smem, (H_W_OFF + ky * 16 * H_WS + j * CM_N) / 4, H_WS / 4, gl_CooperativeMatrixLayoutRowMajor);
  }
#if H_FULL > 0
  HEAD_FRAGS(sg, H_FULL);
#endif
#if H_REM > 0
  if (sg < H_REM) HEAD_FRAGS(sg + H_FULL * SG_COUNT, 1);
#endif
#else
  for (uint f = sg; f < H_FRAGS; f += SG_COUNT) {
    const uint q0 = f * CM_M;
    // Element e = lane + k * SUBGROUP_SIZE of each 16 x 16 block: row e / 16, column e % 16.
    LOOP_UNROLL for (uint k_ = 0; k_ < CM_M * 16 / SUBGROUP_SIZE; ++k_) {
      const uint e_ = gl_SubgroupInvocationID + k_ * SUBGROUP_SIZE, r_ = e_ / 16, c_ = e_ % 16;
      float s_ = float(smem_h(H_B_OFF + chunk * 16 + c_));
      for (uint ky = 0; ky < 3; ++ky)
        for (uint k = 0; k < CM_K; ++k)
          s_ = EMU_ROUND(s_ + float(smem_h(H_R_OFF + (q0 + r_ + ky * H_PP) * 8 + k)) *
                                  float(smem_h(H_W_OFF + (ky * 16 + k) * H_WS + c_)));
      const uint o_ = (q0 + r_) * CKS + c_;
      smem[o_ >> 2][o_ & 3] = float16_t(EMU_ROUND(activate_as(H_ACT, s_, act_a, act_b)));
    }
  }
#endif
}

// Step 3 (after the barrier that ends step 2): patch pixels outside the head's output (the
// conv's zero padding) to 0, on tiles whose patch crosses the edge.
void head_zero_outside(uint t, int iy0, int ix0) {
  if (iy0 >= 0 && ix0 >= 0 && iy0 + HALO_H <= int(pc.h) && ix0 + HALO_W <= int(pc.w)) return;  // uniform
  for (uint e = t; e < HALO_H * HALO_W * 4; e += WG_SIZE) {
    const uint p = e / 4, hy = p / HALO_W, hx = p % HALO_W;
    const int iy = iy0 + int(hy), ix = ix0 + int(hx);
    if (iy < 0 || ix < 0 || iy >= int(pc.h) || ix >= int(pc.w)) smem[(hy * H_PP + hx) * (CKS / 4) + e % 4] = f16vec4(0.0);
  }
}
