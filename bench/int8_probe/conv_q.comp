#version 450
// A probe, not a denox kernel (README.md): a 3x3 convolution as an implicit GEMM on cooperative
// matrices, in one of two precisions with the same data flow, so that their times compare:
//   Q8=0: fp16 activations and weights, K 16, fp16 (ACC32=0) or fp32 accumulators, fp16 output;
//   Q8=1: int8 activations and weights, K 32, int32 accumulators, int8 output. Per-tensor
//         activation scales and per-output-channel weight scales: y = relu(sx * sw[co] * acc +
//         b[co]), stored as round(y / sy).
// The data flow is conv2d_coopmat's (shaders/conv2d_coopmat.comp) without its layout paths and
// fusions: HWC tensors, the input with a one-pixel zero border (no bounds checks); per chunk of
// CK input channels the workgroup stages its (TH+2) x (TW+2) pixel patch and the chunk's weights
// in shared memory (rows padded by 16 bytes: conflict-free fragment loads), multiplies 9 taps x
// CK/K steps, and after the last chunk writes the accumulators back through shared memory as
// fp16 (pixel-major), from where the epilogue applies scale, bias and ReLU and stores 8 channels
// of a pixel per store. With B_GLOBAL=1 the B fragments are loaded from the weights buffer
// (through the caches) and only the patch is staged: a smaller workgroup
// footprint, so that two or three workgroups share an SM.
// F16_IO=1 (with Q8): int8 multiplies between fp16 tensors. The staging reads the fp16 input
// and quantizes it (x / sx, rounded) before its shared-memory store; the epilogue writes fp16.
// Nothing int8 is stored in memory: a conv could take it alone, between fp16 neighbours.
// S8_STORE=1 (with Q8=0): fp16 multiplies between int8 tensors. The staging loads int8 codes and
// stores them as fp16 (x * sx) in the patch; the epilogue writes int8 (fp16 weights).
// WS=1: warp specialization. PROD_SG more subgroups only stage, into two stage buffers: chunk
// c + 1 is loaded while the SG_M x SG_N subgroups multiply chunk c (overlap without async copies
// or a second workgroup). Not with F16_IO or S8_STORE.
// RESTRICT=1: the input buffers declared `restrict`.
// A_DIRECT=1|2: no patch in shared memory. Each lane builds its A fragments element by element
// from 32-bit words it loads from the input itself (through L1), in the element order shaders/coop_a_layout.comp
// read back from the driver (the host runs it first and takes these variants only where it
// matches; NVIDIA's driver 580): element word w of lane L = 4 g + t holds row g + 8 (w >> 1), K
// word t + 4 (w & 1). A_DIRECT=1 loads those words as they are (four 4-byte loads a fragment);
// A_DIRECT=2 permutes K within each fragment so that a lane's two K words of a row are adjacent
// in memory (two 8-byte loads a fragment); the host packs the weights' K in the same order.
// A_DIRECT=3: as 2, with a subgroup's FM fragments one 16-pixel column of FM consecutive tile rows
// (fragments numbered down the columns; TH a multiple of FM), so that per kernel column it loads
// FM + 2 row fragments and each serves up to 3 kernel rows (conv2d_coopmat's A_REUSE).
// A_DIRECT=4: as 3, with K permuted across each pair of K steps too, so that a lane's four words
// of a row for two steps are one 16-byte load (CK a multiple of 2 CM_K). Only
// the weights are staged, so the workgroup's shared memory is max(weights, epilogue).
// Subgroups of 32 invocations (NVIDIA) are assumed throughout (workgroup size, loader counts).
// Macros: Q8 ACC32 F16_IO S8_STORE WS PROD_SG A_DIRECT EPI_P CIN COUT TH TW NT CK SG_M SG_N B_GLOBAL. Dispatch (W/TW, H/TH, COUT/NT).
// Bindings: 0 X (padded HWC), 1 packed weights, 2 Y (HWC), 3 per-channel factor and bias
// (float2 per output channel: the factor multiplies the pre-scaled fp16 accumulator).
// Push constants: h w (output extents), prescale (applied to the accumulator before it is
// rounded to fp16: sx * max sw for Q8, 1 for fp16), inv_sy (int8 output: 1 / sy), inv_sx
// (F16_IO: 1 / sx), sx (S8_STORE).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

#ifndef F16_IO
#define F16_IO 0
#endif
#ifndef S8_STORE
#define S8_STORE 0
#endif
#define OUT_Q8 ((Q8 && !F16_IO) || S8_STORE)
#if Q8
#define ELEM int8_t
#define ES 1
#define CM_K 32
#define ACC_T int32_t
#else
#define ELEM float16_t
#define ES 2
#define CM_K 16
#if ACC32
#define ACC_T float
#else
#define ACC_T float16_t
#endif
#endif

#ifndef WS
#define WS 0
#endif
#ifndef RESTRICT
#define RESTRICT 0
#endif
#ifndef A_DIRECT
#define A_DIRECT 0
#endif
#if A_DIRECT && (WS || F16_IO || S8_STORE)
#error "conv_q: A_DIRECT with plain fp16 or int8 tensors only, without WS"
#endif
#define SG_COUNT (SG_M * SG_N)  // the subgroups that multiply
#if WS
#define WG_SIZE ((SG_COUNT + PROD_SG) * 32)
#define LOADER_T (PROD_SG * 32)  // the invocations that stage
#else
#define WG_SIZE (SG_COUNT * 32)
#define LOADER_T WG_SIZE
#endif
#define HALO_H (TH + 2)
#define HALO_W (TW + 2)
#define FRAGS_M (TH * TW / 16)
#define FM (FRAGS_M / SG_M)
#define FN (NT / 16 / SG_N)
// Fragment f's tile row and first pixel column: row-major, or down the columns for A_DIRECT=3.
#if A_DIRECT >= 3
#define FRAG_R(f) ((f) % TH)
#define FRAG_CX(f) (((f) / TH) * 16)
#if TH % FM
#error "conv_q: A_DIRECT=3 needs TH a multiple of FM"
#endif
#if A_DIRECT == 4 && CK % (2 * CM_K)
#error "conv_q: A_DIRECT=4 needs CK a multiple of 2 CM_K"
#endif
#else
#define FRAG_R(f) ((f) / (TW / 16))
#define FRAG_CX(f) (((f) % (TW / 16)) * 16)
#endif
// Strides and sizes in 16-byte vectors.
#define VPP (CK * ES / 16)           // one patch pixel's chunk
#define A_STRIDE (VPP + 1)
#if A_DIRECT
#define PATCH_V 0
#else
#define PATCH_V (HALO_H * HALO_W * A_STRIDE)
#endif
#if S8_STORE
#define IPP (CK / 16)  // items per patch pixel: 16 int8 channels loaded, two fp16 vectors stored
#else
#define IPP VPP
#endif
#if A_DIRECT
#define PATCH_ITEMS 0
#else
#define PATCH_ITEMS (HALO_H * HALO_W * IPP)
#endif
// Weights, staged or read from the buffer: [tap][NT][CK] per (channel tile, chunk), i.e. B
// column-major with K contiguous. int8 B fragments in shared memory must be: row-major (N
// contiguous) they ran 1.3-1.9x slower (the transposing fragment load takes 16-bit elements only).
#define W_ROWS (9 * NT)
#define W_ITEMS (W_ROWS * VPP)
#if B_GLOBAL
#define W_V 0
#else
#define W_V (W_ROWS * A_STRIDE)
#endif
// The epilogue in EPI_P passes of NT / EPI_P channels (a smaller stage: with A_DIRECT it can set
// the workgroup's shared memory).
#ifndef EPI_P
#define EPI_P 1
#endif
#define NTP (NT / EPI_P)
#define OS (NTP * 2 / 16 + 1)        // epilogue: one pixel's NTP fp16 values, padded
#define OUT_V (TH * TW * OS)
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define STAGE_V (PATCH_V + W_V)  // one chunk's patch and weights
#if WS
#define SMEM_V MAX2(2 * STAGE_V, OUT_V)
#else
#define SMEM_V MAX2(STAGE_V, OUT_V)
#endif
#define CHUNKS (CIN / CK)
#if F16_IO
#define CIN_V (CIN * 2 / 16)  // the input is fp16: two 16-byte loads per 16 staged int8 channels
#define LOADS_PER_ITEM 2
#elif S8_STORE
#define CIN_V (CIN / 16)
#define LOADS_PER_ITEM 1
#else
#define CIN_V (CIN * ES / 16)
#define LOADS_PER_ITEM 1
#endif
#define COUT_V (COUT * ES / 16)

layout(local_size_x = WG_SIZE) in;
#if RESTRICT  // inputs declared unaliased (lets the compiler use the non-coherent load path)
#define RO readonly restrict
#else
#define RO readonly
#endif
layout(set = 0, binding = 0) RO buffer X { uvec4 xv[]; };
layout(set = 0, binding = 1) RO buffer Wt { uvec4 wv[]; };
#if A_DIRECT  // the same input, seen as 4- and 8-byte words
layout(set = 0, binding = 0) RO buffer XW { uint xw[]; };
layout(set = 0, binding = 0) RO buffer XD { uvec2 xd[]; };
#define CIN_W (CIN * ES / 4)  // one input pixel in 32-bit words
#endif
#if OUT_Q8
layout(set = 0, binding = 2) writeonly buffer Y { uvec2 yv[]; };  // 8 int8 channels
#else
layout(set = 0, binding = 2) writeonly buffer Y { uvec4 yv[]; };  // 8 fp16 channels
#endif
layout(set = 0, binding = 3) readonly buffer Epi { vec2 epi[]; };
layout(push_constant) uniform PC { uint h, w; float prescale, inv_sy, inv_sx, sx; } pc;

shared uvec4 smem[SMEM_V];

#define PATCH_PER_T ((PATCH_ITEMS + LOADER_T - 1) / LOADER_T)
#define W_PER_T ((W_ITEMS + LOADER_T - 1) / LOADER_T)
#if WS && (F16_IO || S8_STORE)
#error "conv_q: WS with plain fp16 or int8 tensors only"
#endif

#if PATCH_ITEMS > 0
uvec4 px[PATCH_PER_T * LOADS_PER_ITEM];
#endif
#if !B_GLOBAL
uvec4 pw[W_PER_T];
#endif

// Loader invocation tl's share of chunk `chunk` (patch, and weights unless B_GLOBAL) into registers.
void fetch(uint chunk, uint tl) {
  const uint x0 = gl_WorkGroupID.x * TW, y0 = gl_WorkGroupID.y * TH, co_tile = gl_WorkGroupID.z;
  const uint wp = pc.w + 2;
  // Global loads of the chunk's patch (and weights) into registers, all issued before any store.
#if PATCH_ITEMS > 0
  [[unroll]] for (uint i = 0; i < PATCH_PER_T; ++i) {
    const uint e = tl + i * LOADER_T;
    if (e < PATCH_ITEMS) {
      const uint p = e / IPP, v = e % IPP;
      const uint iy = y0 + p / HALO_W, ix = x0 + p % HALO_W;
#if F16_IO
      const uint at = (iy * wp + ix) * CIN_V + (chunk * VPP + v) * 2;
      px[2 * i] = xv[at];
      px[2 * i + 1] = xv[at + 1];
#else
      px[i] = xv[(iy * wp + ix) * CIN_V + chunk * IPP + v];
#endif
    }
  }
#endif
#if !B_GLOBAL
  const uint wbase = (co_tile * CHUNKS + chunk) * W_ITEMS;
  [[unroll]] for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = tl + i * LOADER_T;
    if (e < W_ITEMS) pw[i] = wv[wbase + e];
  }
#endif
}

// ... and from registers into the stage buffer at `base` (vectors).
void stash(uint base, uint tl) {
#if PATCH_ITEMS > 0
  [[unroll]] for (uint i = 0; i < PATCH_PER_T; ++i) {
    const uint e = tl + i * LOADER_T;
#if F16_IO
    if (e < PATCH_ITEMS) {
      uvec4 q;
      [[unroll]] for (uint k = 0; k < 4; ++k) {
        const uint word = k < 2 ? px[2 * i][2 * k] : px[2 * i + 1][2 * (k - 2)];
        const uint word1 = k < 2 ? px[2 * i][2 * k + 1] : px[2 * i + 1][2 * (k - 2) + 1];
        const ivec4 c = clamp(ivec4(round(vec4(unpackHalf2x16(word), unpackHalf2x16(word1)) * pc.inv_sx)), -127, 127);
        q[k] = (uint(c.x) & 255u) | ((uint(c.y) & 255u) << 8) | ((uint(c.z) & 255u) << 16) | ((uint(c.w) & 255u) << 24);
      }
      smem[base + (e / VPP) * A_STRIDE + e % VPP] = q;
    }
#elif S8_STORE
    if (e < PATCH_ITEMS) {
      uint hw[8];
      [[unroll]] for (uint k = 0; k < 4; ++k) {
        const int word = int(px[i][k]);
        const vec4 f = vec4(bitfieldExtract(word, 0, 8), bitfieldExtract(word, 8, 8), bitfieldExtract(word, 16, 8),
                            bitfieldExtract(word, 24, 8)) * pc.sx;
        hw[2 * k] = packHalf2x16(f.xy);
        hw[2 * k + 1] = packHalf2x16(f.zw);
      }
      const uint at = base + (e / IPP) * A_STRIDE + (e % IPP) * 2;
      smem[at] = uvec4(hw[0], hw[1], hw[2], hw[3]);
      smem[at + 1] = uvec4(hw[4], hw[5], hw[6], hw[7]);
    }
#else
    if (e < PATCH_ITEMS) smem[base + (e / VPP) * A_STRIDE + e % VPP] = px[i];
#endif
  }
#endif
#if !B_GLOBAL
  [[unroll]] for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = tl + i * LOADER_T;
    if (e < W_ITEMS) smem[base + PATCH_V + (e / VPP) * A_STRIDE + e % VPP] = pw[i];
  }
#endif
}

#if A_DIRECT
// Element word w of an A fragment (shaders/coop_a_layout.comp's order) from a 32-bit word of the input.
void set_word(inout coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a, uint w, uint word) {
#if Q8
  const i8vec4 v = unpack8(int32_t(word));
  [[unroll]] for (uint k = 0; k < 4; ++k) a[4 * w + k] = v[k];
#else
  const f16vec2 v = unpackFloat2x16(word);
  a[2 * w] = v.x;
  a[2 * w + 1] = v.y;
#endif
}

#if A_DIRECT == 4
layout(set = 0, binding = 0) RO buffer XQ { uvec4 xq4[]; };
// The A fragments of tile row r, pixels cx .. cx + 15, at kernel column kx, K steps s and s + 1 of
// chunk `chunk`: fragment word t + 4 q of step s + σ is input word 4 t + 2 σ + q of the pair.
void load_a_direct2(inout coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a,
                    inout coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a2, uint r, uint cx, uint chunk, uint kx, uint s) {
  const uint lane = gl_SubgroupInvocationID, g = lane >> 2, tq = lane & 3;
  const uint wp = pc.w + 2;
  const uint w0 = ((gl_WorkGroupID.y * TH + r) * wp + gl_WorkGroupID.x * TW + cx + g + kx) * CIN_W + chunk * (CK * ES / 4) + s * 8;
  const uint w1 = w0 + 8 * CIN_W;
  const uvec4 d0 = xq4[w0 / 4 + tq], d1 = xq4[w1 / 4 + tq];
  set_word(a, 0, d0.x);
  set_word(a, 1, d0.y);
  set_word(a, 2, d1.x);
  set_word(a, 3, d1.y);
  set_word(a2, 0, d0.z);
  set_word(a2, 1, d0.w);
  set_word(a2, 2, d1.z);
  set_word(a2, 3, d1.w);
}
#endif

// The A fragment of tile row r, pixels cx .. cx + 15, at tap (ky, kx), K step s of chunk `chunk`,
// straight from the input.
void load_a_direct(inout coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a, uint r, uint cx, uint chunk, uint ky, uint kx, uint s) {
  const uint lane = gl_SubgroupInvocationID, g = lane >> 2, tq = lane & 3;
  const uint wp = pc.w + 2;
  // Rows g and g + 8: pixels cx + g and cx + g + 8 of tile row r.
  const uint w0 = ((gl_WorkGroupID.y * TH + r + ky) * wp + gl_WorkGroupID.x * TW + cx + g + kx) * CIN_W + chunk * (CK * ES / 4) + s * 8;
  const uint w1 = w0 + 8 * CIN_W;
#if A_DIRECT == 4
  // Steps s and s + 1 (s even) into a and a2 (load_a_direct2 below).
#elif A_DIRECT == 1
  set_word(a, 0, xw[w0 + tq]);
  set_word(a, 1, xw[w0 + tq + 4]);
  set_word(a, 2, xw[w1 + tq]);
  set_word(a, 3, xw[w1 + tq + 4]);
#else
  const uvec2 d0 = xd[w0 / 2 + tq], d1 = xd[w1 / 2 + tq];
  set_word(a, 0, d0.x);
  set_word(a, 1, d0.y);
  set_word(a, 2, d1.x);
  set_word(a, 3, d1.y);
#endif
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x, sg = gl_SubgroupID;
  const uint sm = sg % SG_M, sn = sg / SG_M;
  const uint x0 = gl_WorkGroupID.x * TW, y0 = gl_WorkGroupID.y * TH, co_tile = gl_WorkGroupID.z;
  const uint wp = pc.w + 2;

  coopmat<ACC_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM * FN];
  [[unroll]] for (uint i = 0; i < FM * FN; ++i) acc[i] = coopmat<ACC_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(ACC_T(0));

#if WS
  const bool producer = sg >= SG_COUNT;
  const uint tl = (sg - SG_COUNT) * gl_SubgroupSize + gl_SubgroupInvocationID;  // producers only
  if (producer) {
    fetch(0, tl);
    stash(0, tl);
  }
  barrier();
#endif
  for (uint chunk = 0; chunk < CHUNKS; ++chunk) {
#if WS
    // Warp specialization: the producer subgroups stage chunk + 1 into the other buffer while
    // the consumers multiply chunk; one barrier per chunk hands the buffers over.
    const uint base = (chunk & 1u) * STAGE_V;
    if (producer) {
      if (chunk + 1 < CHUNKS) {
        fetch(chunk + 1, tl);
        stash(((chunk + 1) & 1u) * STAGE_V, tl);
      }
    } else {
#else
    const uint base = 0;
    fetch(chunk, t);
    barrier();  // the previous chunk's fragment loads are done
    stash(0, t);
    barrier();
    {
#endif
#if A_DIRECT >= 3
    [[unroll]] for (uint kx = 0; kx < 3; ++kx) {
#if A_DIRECT == 4
      [[unroll]] for (uint s2 = 0; s2 < CK / CM_K; s2 += 2) {
        const uint r0 = FRAG_R(sm * FM), cx = FRAG_CX(sm * FM);
        coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a_pair[2][FM + 2];
        [[unroll]] for (uint i = 0; i < FM + 2; ++i) load_a_direct2(a_pair[0][i], a_pair[1][i], r0 + i, cx, chunk, kx, s2);
      [[unroll]] for (uint s = s2; s < s2 + 2; ++s) {
#define a a_pair[s - s2]
#else
      [[unroll]] for (uint s = 0; s < CK / CM_K; ++s) {
        const uint r0 = FRAG_R(sm * FM), cx = FRAG_CX(sm * FM);
        coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a[FM + 2];
        [[unroll]] for (uint i = 0; i < FM + 2; ++i) load_a_direct(a[i], r0 + i, cx, chunk, 0, kx, s);
#endif
        [[unroll]] for (uint ky = 0; ky < 3; ++ky) {
          const uint tap = ky * 3 + kx;
          [[unroll]] for (uint j = 0; j < FN; ++j) {
            coopmat<ELEM, gl_ScopeSubgroup, CM_K, 16, gl_MatrixUseB> b;
            const uint col0 = (sn * FN + j) * 16;
#if B_GLOBAL
            coopMatLoad(b, wv, ((co_tile * CHUNKS + chunk) * 9 * NT + tap * NT + col0) * VPP + s * (CM_K * ES / 16), VPP,
                        gl_CooperativeMatrixLayoutColumnMajor);
#else
            coopMatLoad(b, smem, base + PATCH_V + (tap * NT + col0) * A_STRIDE + s * (CM_K * ES / 16), A_STRIDE,
                        gl_CooperativeMatrixLayoutColumnMajor);
#endif
            [[unroll]] for (uint i = 0; i < FM; ++i) acc[i * FN + j] = coopMatMulAdd(a[i + ky], b, acc[i * FN + j]);
          }
        }
      }
#if A_DIRECT == 4
#undef a
      }
#endif
    }
#else
    [[unroll]] for (uint tap = 0; tap < 9; ++tap) {
      const uint ky = tap / 3, kx = tap % 3;
      [[unroll]] for (uint s = 0; s < CK / CM_K; ++s) {
        coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a[FM];
        [[unroll]] for (uint i = 0; i < FM; ++i) {
#if A_DIRECT
          load_a_direct(a[i], FRAG_R(sm * FM + i), FRAG_CX(sm * FM + i), chunk, ky, kx, s);
#else
          const uint f = sm * FM + i, r = f / (TW / 16), cx = (f % (TW / 16)) * 16;
          coopMatLoad(a[i], smem, base + ((r + ky) * HALO_W + cx + kx) * A_STRIDE + s * (CM_K * ES / 16), A_STRIDE,
                      gl_CooperativeMatrixLayoutRowMajor);
#endif
        }
        [[unroll]] for (uint j = 0; j < FN; ++j) {
          coopmat<ELEM, gl_ScopeSubgroup, CM_K, 16, gl_MatrixUseB> b;
          const uint col0 = (sn * FN + j) * 16;
#if B_GLOBAL
          coopMatLoad(b, wv, ((co_tile * CHUNKS + chunk) * 9 * NT + tap * NT + col0) * VPP + s * (CM_K * ES / 16), VPP,
                      gl_CooperativeMatrixLayoutColumnMajor);
#else
          coopMatLoad(b, smem, base + PATCH_V + (tap * NT + col0) * A_STRIDE + s * (CM_K * ES / 16), A_STRIDE,
                      gl_CooperativeMatrixLayoutColumnMajor);
#endif
          [[unroll]] for (uint i = 0; i < FM; ++i) acc[i * FN + j] = coopMatMulAdd(a[i], b, acc[i * FN + j]);
        }
      }
    }
#endif
    }  // the multiplying subgroups' part
#if WS
    barrier();
#endif
  }

  // Per pass: accumulators -> shared memory as fp16, pixel-major (the patch is dead after the first
  // barrier), then the pass's stores.
  [[unroll]] for (uint pass = 0; pass < EPI_P; ++pass) {
  barrier();
#if WS
  if (!producer)
#endif
  [[unroll]] for (uint i = 0; i < FM; ++i)
    [[unroll]] for (uint j = 0; j < FN; ++j) if ((sn * FN + j) * 16 / NTP == pass) {
#if Q8
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> f32 =
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i * FN + j]) * pc.prescale;
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> hv =
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(f32);
#else
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> hv =
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i * FN + j]);
#endif
      coopMatStore(hv, smem, (FRAG_R(sm * FM + i) * TW + FRAG_CX(sm * FM + i)) * OS + ((sn * FN + j) * 16 % NTP) / 8, OS,
                   gl_CooperativeMatrixLayoutRowMajor);
    }
  barrier();
  // Epilogue: 8 channels of a pixel per item.
  [[unroll]] for (uint e = t; e < TH * TW * (NTP / 8); e += WG_SIZE) {
    const uint p = e / (NTP / 8), c8 = e % (NTP / 8);
    const uint oy = y0 + p / TW, ox = x0 + p % TW, co = co_tile * NT + pass * NTP + c8 * 8;
    const uvec4 raw = smem[p * OS + c8];
    float v[8];
    [[unroll]] for (uint k = 0; k < 4; ++k) {
      const vec2 pair = unpackHalf2x16(raw[k]);
      const vec2 e0 = epi[co + 2 * k], e1 = epi[co + 2 * k + 1];
      v[2 * k] = max(pair.x * e0.x + e0.y, 0.0);
      v[2 * k + 1] = max(pair.y * e1.x + e1.y, 0.0);
    }
#if OUT_Q8
    uint word[2];
    [[unroll]] for (uint k = 0; k < 2; ++k) {
      const ivec4 q = clamp(ivec4(round(vec4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]) * pc.inv_sy)), -128, 127);
      word[k] = (uint(q.x) & 255u) | ((uint(q.y) & 255u) << 8) | ((uint(q.z) & 255u) << 16) | ((uint(q.w) & 255u) << 24);
    }
    yv[((oy * pc.w + ox) * COUT + co) / 8] = uvec2(word[0], word[1]);
#else
    yv[((oy * pc.w + ox) * COUT + co) / 8] =
        uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])), packHalf2x16(vec2(v[4], v[5])), packHalf2x16(vec2(v[6], v[7])));
#endif
  }
  }  // passes
}
