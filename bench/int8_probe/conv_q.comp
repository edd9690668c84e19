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
// Subgroups of 32 invocations (NVIDIA) are assumed throughout (workgroup size, loader counts).
// Macros: Q8 ACC32 F16_IO S8_STORE WS PROD_SG CIN COUT TH TW NT CK SG_M SG_N B_GLOBAL. Dispatch (W/TW, H/TH, COUT/NT).
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
// Strides and sizes in 16-byte vectors.
#define VPP (CK * ES / 16)           // one patch pixel's chunk
#define A_STRIDE (VPP + 1)
#define PATCH_V (HALO_H * HALO_W * A_STRIDE)
#if S8_STORE
#define IPP (CK / 16)  // items per patch pixel: 16 int8 channels loaded, two fp16 vectors stored
#else
#define IPP VPP
#endif
#define PATCH_ITEMS (HALO_H * HALO_W * IPP)
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
#define OS (NT * 2 / 16 + 1)         // epilogue: one pixel's NT fp16 values, padded
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

uvec4 px[PATCH_PER_T * LOADS_PER_ITEM];
#if !B_GLOBAL
uvec4 pw[W_PER_T];
#endif

// Loader invocation tl's share of chunk `chunk` (patch, and weights unless B_GLOBAL) into registers.
void fetch(uint chunk, uint tl) {
  const uint x0 = gl_WorkGroupID.x * TW, y0 = gl_WorkGroupID.y * TH, co_tile = gl_WorkGroupID.z;
  const uint wp = pc.w + 2;
  // Global loads of the chunk's patch (and weights) into registers, all issued before any store.
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
#if !B_GLOBAL
  [[unroll]] for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = tl + i * LOADER_T;
    if (e < W_ITEMS) smem[base + PATCH_V + (e / VPP) * A_STRIDE + e % VPP] = pw[i];
  }
#endif
}

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
    [[unroll]] for (uint tap = 0; tap < 9; ++tap) {
      const uint ky = tap / 3, kx = tap % 3;
      [[unroll]] for (uint s = 0; s < CK / CM_K; ++s) {
        coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> a[FM];
        [[unroll]] for (uint i = 0; i < FM; ++i) {
          const uint f = sm * FM + i, r = f / (TW / 16), cx = (f % (TW / 16)) * 16;
          coopMatLoad(a[i], smem, base + ((r + ky) * HALO_W + cx + kx) * A_STRIDE + s * (CM_K * ES / 16), A_STRIDE,
                      gl_CooperativeMatrixLayoutRowMajor);
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
    }  // the multiplying subgroups' part
#if WS
    barrier();
#endif
  }

  // Accumulators -> shared memory as fp16, pixel-major (the patch is dead after this barrier).
  barrier();
#if WS
  if (!producer)
#endif
  [[unroll]] for (uint i = 0; i < FM; ++i)
    [[unroll]] for (uint j = 0; j < FN; ++j) {
#if Q8
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> f32 =
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i * FN + j]) * pc.prescale;
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> hv =
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(f32);
#else
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> hv =
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i * FN + j]);
#endif
      coopMatStore(hv, smem, (sm * FM + i) * 16 * OS + (sn * FN + j) * 2, OS, gl_CooperativeMatrixLayoutRowMajor);
    }
  barrier();
  // Epilogue: 8 channels of a pixel per item.
  [[unroll]] for (uint e = t; e < TH * TW * (NT / 8); e += WG_SIZE) {
    const uint p = e / (NT / 8), c8 = e % (NT / 8);
    const uint oy = y0 + p / TW, ox = x0 + p % TW, co = co_tile * NT + c8 * 8;
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
}
