#version 450
// A probe, not a denox kernel (README.md): a 3x3 convolution (stride 1, padding 1) by Winograd
// F(2x2, 3x3) on cooperative matrices, with the transformed weights held in registers.
//
// Winograd: each 2x2 output block is A^T [sum over input channels of U (.) V] A, where
// V = B^T d B is the block's 4x4 input window d transformed (additions only) and U = G g G^T the
// 3x3 filter g transformed (on the host). The sum is 16 independent GEMMs, one per component
// (i, j) of the 4x4: M_ij[block][co] = sum_ci V_ij[block][ci] U_ij[ci][co], i.e. 16 multiplies
// per block and (ci, co) instead of 36 for the direct conv's four pixels: 2.25x fewer.
//
// Why it might beat conv2d_coopmat (bench/RESULTS.md 2026-11-25): there, every 16-channel chunk
// stages its weights into shared memory again in every workgroup, and the multiplies read A and
// B fragments from shared memory (~512 bytes per multiply). Here each subgroup owns CPW of the 16
// components and keeps U_ij for all input channels and the workgroup's NT output channels in
// registers for the whole dispatch (workgroups loop over pixel tiles): no weight staging, no B
// traffic in shared memory, 2.25x fewer multiplies. What is staged per tile is V: 4 halves per
// pixel and channel (the window of a block overlaps its neighbours': 16 loads for 4 pixels,
// served by L1).
//
// Per tile (BH x BW blocks = 2BH x 2BW output pixels) and chunk of CKW input channels:
//   1. each item (block, 4 channels) transforms its window from registers into V (shared:
//      [component][block][CKW + 8 halves]); with PREFETCH=1 the windows were loaded before the
//      previous chunk's multiplies, so that their latency hides behind them;
//   2. barrier; each subgroup multiplies its components' A fragments (16 blocks x 16 channels)
//      with its register B fragments into its accumulators;
//   3. after the last chunk, the accumulators go to shared memory (fp16), and each item (block, 4
//      output channels) reads its 16 components, applies A^T . A (fp32), bias and ReLU and
//      stores the 2x2 pixels.
//
// Layouts: X is HWC with a one-pixel zero border ((h + 2) x (w + 2) x CIN): the window of block
// (by, bx) is stored rows 2by .. 2by + 3, columns 2bx .. 2bx + 3, no bounds checks. U is
// [16 components][CIN][COUT] fp16. Y is HWC without border. h, w multiples of 2BH, 2BW.
//
// Macros: CIN COUT (multiples of 16), NT (output channels per workgroup), BH BW (blocks per tile;
// BH * BW a multiple of 16), CKW (input channels staged per step, divides CIN, multiple of 16),
// CPW (components per subgroup: 1, 2 or 4; the workgroup has 16 / CPW subgroups), ACC_F16,
// PREFETCH (0 or 1), GC (channels per transform item: 4 or 8), IBW (blocks per transform item
// along x: 1 or 2; neighbouring windows share two columns), PRIVATE (below).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

#if ACC_F16
#define ACC_T float16_t
#else
#define ACC_T float
#endif
#define NB (BH * BW)          // blocks per tile
#define MF (NB / 16)          // M fragments per component
#define NF (NT / 16)          // N fragments
#define KF (CIN / 16)         // K fragments over all input channels
#define NCH (CIN / CKW)       // chunks per tile
#define NSG (16 / CPW)        // subgroups
#define WG (NSG * 32)
#define VST (CKW + 8)         // V row stride (halves): 16 bytes of padding against bank conflicts
#define MST (NT + 8)          // accumulator row stride in the epilogue
#define OITEMS (NB * NT / 4)
#define SMEM_HALVES (16 * NB * (VST > MST ? VST : MST))
#if (NB % 16) != 0 || (CIN % CKW) != 0 || (CKW % 16) != 0 || (COUT % NT) != 0 || (NT % 16) != 0
#error "winograd probe: inconsistent macros"
#endif

layout(local_size_x = WG) in;
#ifndef PRIVATE
#define PRIVATE 0
#endif
// Experiment switches (wrong results; what a part of the loop costs): PROF_NO_MMA leaves out the
// A loads and multiplies, PROF_NO_OUT the output transform and stores (the accumulators still go
// to shared memory), PROF_NO_LOAD the global loads after the first tile's (its windows reused).
// EPI_F16=1: the output transform in fp16 arithmetic (half the instructions), else fp32.
#ifndef EPI_F16
#define EPI_F16 0
#endif
#if EPI_F16
#define ET f16vec4
#else
#define ET vec4
#endif
#define BIAS_FIXED ((WG % (NT / 4)) == 0)
#ifndef PROF_NO_MMA
#define PROF_NO_MMA 0
#endif
#ifndef PROF_NO_OUT
#define PROF_NO_OUT 0
#endif
#ifndef PROF_NO_LOAD
#define PROF_NO_LOAD 0
#endif
#if PRIVATE && (PREFETCH || CPW > 2)
#error "winograd probe: PRIVATE takes PREFETCH 0 and CPW 1 or 2"
#endif
#ifndef GC
#define GC 4
#endif
#ifndef IBW
#define IBW 1
#endif
#if GC == 8
layout(set = 0, binding = 0) readonly buffer X { uvec4 xv[]; };
#else
layout(set = 0, binding = 0) readonly buffer X { uvec2 xv[]; };
#endif
layout(set = 0, binding = 1) readonly buffer U { float16_t u[]; };
layout(set = 0, binding = 2) writeonly buffer Y { uvec2 y[]; };
layout(set = 0, binding = 3) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Push { uint h, w; } pc;

shared f16vec4 smem[SMEM_HALVES / 4];

f16vec4 h4(uvec2 v) { return f16vec4(unpackFloat2x16(v.x), unpackFloat2x16(v.y)); }
uvec2 p4(f16vec4 v) { return uvec2(packFloat2x16(v.xy), packFloat2x16(v.zw)); }

// An item: IBW horizontally adjacent blocks x GC channels (GC = 4: 8-byte loads, 8: 16-byte
// loads), whose windows share columns: 4 rows x WCOLS stored pixels.
#define WCOLS (2 * IBW + 2)
#define WIN (4 * WCOLS)  // window entries per item
#if GC == 8
#define WIN_T uvec4
#define XS 8             // halves per X element
#else
#define WIN_T uvec2
#define XS 4
#endif
#define GPB (CKW / GC)   // channel groups per chunk
#define ITEMS ((NB / IBW) * GPB)  // transform items per chunk
#define IPT ((ITEMS + WG - 1) / WG)
#if (BW % IBW) != 0 || (GC != 4 && GC != 8)
#error "winograd probe: IBW must divide BW, GC is 4 or 8"
#endif

// The windows of this invocation's items of chunk `ch` of the tile at block (by0, bx0).
void load_windows(uint t, uint by0, uint bx0, uint ch, out WIN_T win[IPT * WIN]) {
  const uint row = (pc.w + 2) * (CIN / XS);  // X elements per stored row
  [[unroll]] for (uint i = 0; i < IPT; ++i) {
    const uint e = t + i * WG;
    const uint q = e / GPB, g = e % GPB;  // block group, channel group
    const uint gy = by0 + q / (BW / IBW), gx = bx0 + (q % (BW / IBW)) * IBW;
    const uint base = (2 * gy) * row + (2 * gx) * (CIN / XS) + ch * GPB + g;
    [[unroll]] for (uint r = 0; r < 4; ++r)
      [[unroll]] for (uint c = 0; c < WCOLS; ++c)
        win[i * WIN + r * WCOLS + c] = (ITEMS % WG == 0 || e < ITEMS) ? xv[base + r * row + c * (CIN / XS)] : WIN_T(0);
  }
}

// V = B^T d B for 4 channels of one block: d[r * 4 + c] the window, into shared memory at
// component k's row `b`, 4-channel column `col4`.
void transform4(inout f16vec4 d[16], uint b, uint col4) {
  f16vec4 s[16];
  // rows: B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
  [[unroll]] for (uint c = 0; c < 4; ++c) {
    s[0 * 4 + c] = d[0 * 4 + c] - d[2 * 4 + c];
    s[1 * 4 + c] = d[1 * 4 + c] + d[2 * 4 + c];
    s[2 * 4 + c] = d[2 * 4 + c] - d[1 * 4 + c];
    s[3 * 4 + c] = d[1 * 4 + c] - d[3 * 4 + c];
  }
  // columns: . B
  [[unroll]] for (uint r = 0; r < 4; ++r) {
    d[r * 4 + 0] = s[r * 4 + 0] - s[r * 4 + 2];
    d[r * 4 + 1] = s[r * 4 + 1] + s[r * 4 + 2];
    d[r * 4 + 2] = s[r * 4 + 2] - s[r * 4 + 1];
    d[r * 4 + 3] = s[r * 4 + 1] - s[r * 4 + 3];
  }
  [[unroll]] for (uint k = 0; k < 16; ++k) smem[((k * NB + b) * VST) / 4 + col4] = d[k];
}

void transform_store(uint t, const WIN_T win[IPT * WIN]) {
  [[unroll]] for (uint i = 0; i < IPT; ++i) {
    const uint e = t + i * WG;
    if (ITEMS % WG != 0 && e >= ITEMS) continue;
    const uint q = e / GPB, g = e % GPB;
    const uint b0 = (q / (BW / IBW)) * BW + (q % (BW / IBW)) * IBW;  // first block of the group in the tile
    [[unroll]] for (uint k = 0; k < IBW; ++k)
      [[unroll]] for (uint l = 0; l < GC / 4; ++l) {
        f16vec4 d[16];
        [[unroll]] for (uint r = 0; r < 4; ++r)
          [[unroll]] for (uint c = 0; c < 4; ++c) {
            const WIN_T v = win[i * WIN + r * WCOLS + 2 * k + c];
#if GC == 8
            d[r * 4 + c] = l == 0 ? h4(v.xy) : h4(v.zw);
#else
            d[r * 4 + c] = h4(v);
#endif
          }
        transform4(d, b0 + k, g * (GC / 4) + l);
      }
  }
}

#if PRIVATE
// PRIVATE=1: each subgroup transforms only its own components (CPW 1 or 2; with 2 they share
// the row pair of B^T row i), from the window entries those need (2 rows x 2 or 3 columns
// instead of 4 x 4), into its own rows of V, so that the chunk loop needs no workgroup barrier:
// subgroups run out of step and one's loads overlap another's multiplies. The price: each
// window entry is loaded by several subgroups (L1 hits).
// Rows (and columns) of B^T row i: nonzero at RA(i) and RA(i) + RD(i), with signs.
const int RA[4] = {0, 1, 1, 1}, RD[4] = {2, 1, 1, 2};
const float SA[4] = {1, 1, -1, 1}, SB[4] = {-1, 1, 1, -1};
#define PCOLS (CPW == 2 ? 3 : 2)
#define PITEMS (NB * CKW / 4)      // (block, 4 channels) per chunk
#define PIPL ((PITEMS + 31) / 32)  // per lane
void private_transform(uint lane, uint sg, uint by0, uint bx0, uint ch) {
  const uint k0 = sg * CPW, i = k0 / 4, j0 = k0 % 4;
  // Columns loaded: c0 .. c0 + PCOLS - 1 (CPW 2: j0 = 0 -> {0,1,2}, j0 = 2 -> {1,2,3}).
  const uint c0 = CPW == 2 ? j0 / 2 : uint(RA[j0]);
  const uint cstep = CPW == 2 ? 1 : uint(RD[j0]);
  const uint row = (pc.w + 2) * (CIN / 4);
  const float16_t sa = float16_t(SA[i]), sb = float16_t(SB[i]);
  [[unroll]] for (uint it = 0; it < PIPL; ++it) {
    const uint e = lane + it * 32;
    if (PITEMS % 32 != 0 && e >= PITEMS) break;
    const uint b = e / (CKW / 4), g = e % (CKW / 4);
    const uint gy = by0 + b / BW, gx = bx0 + b % BW;
    const uint base = (2 * gy + RA[i]) * row + (2 * gx + c0) * (CIN / 4) + ch * (CKW / 4) + g;
    f16vec4 tcol[PCOLS];  // B^T rows combined, per loaded column
    [[unroll]] for (uint c = 0; c < PCOLS; ++c) {
      const uint off = base + c * cstep * (CIN / 4);
      tcol[c] = sa * h4(xv[off]) + sb * h4(xv[off + RD[i] * row]);
    }
    [[unroll]] for (uint q = 0; q < CPW; ++q) {
      const uint j = j0 + q;
      // column pair of component j relative to c0 (CPW 1: always 0 and 1)
      const uint ca = CPW == 2 ? uint(RA[j]) - c0 : 0, cb = CPW == 2 ? uint(RA[j] + RD[j]) - c0 : 1;
      // selects, not a dynamic index (which could put tcol in local memory)
      const f16vec4 ta = ca == 0 ? tcol[0] : ca == 1 ? tcol[1] : tcol[PCOLS - 1];
      const f16vec4 tb = cb == 0 ? tcol[0] : cb == 1 ? tcol[1] : tcol[PCOLS - 1];
      const f16vec4 v = float16_t(SA[j]) * ta + float16_t(SB[j]) * tb;
      smem[(((k0 + q) * NB + b) * VST) / 4 + g] = v;
    }
  }
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x, sg = gl_SubgroupID;
  const uint n0 = gl_WorkGroupID.y * NT;

  // This subgroup's B fragments: components sg * CPW + c, every K fragment, NF N fragments.
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> bf[CPW * KF * NF];
  [[unroll]] for (uint c = 0; c < CPW; ++c)
    [[unroll]] for (uint k = 0; k < KF; ++k)
      [[unroll]] for (uint j = 0; j < NF; ++j)
        coopMatLoad(bf[(c * KF + k) * NF + j], u, ((sg * CPW + c) * CIN + k * 16) * COUT + n0 + j * 16, COUT,
                    gl_CooperativeMatrixLayoutRowMajor);

#if BIAS_FIXED
  // Every epilogue item of this invocation has the same 4 channels: their biases, loaded once.
  const uint cb = n0 + (t % (NT / 4)) * 4;
  const ET bv = ET(bias[cb], bias[cb + 1], bias[cb + 2], bias[cb + 3]);
#endif
  const uint tiles_x = pc.w / (2 * BW), tiles = tiles_x * (pc.h / (2 * BH));
  uint tile = gl_WorkGroupID.x;
#if !PRIVATE
  WIN_T win[IPT * WIN];
#endif
#if PREFETCH
  if (tile < tiles) load_windows(t, (tile / tiles_x) * BH, (tile % tiles_x) * BW, 0, win);
#endif
  for (; tile < tiles; tile += gl_NumWorkGroups.x) {
    const uint by0 = (tile / tiles_x) * BH, bx0 = (tile % tiles_x) * BW;
    coopmat<ACC_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[CPW * MF * NF];
    [[unroll]] for (uint i = 0; i < CPW * MF * NF; ++i) acc[i] = coopmat<ACC_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);

    [[unroll]] for (uint ch = 0; ch < NCH; ++ch) {
#if PRIVATE
      subgroupBarrier();  // this subgroup's multiplies of the last chunk have read its V rows
      private_transform(gl_SubgroupInvocationID, sg, by0, bx0, ch);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
#else
#if !PREFETCH
      load_windows(t, by0, bx0, ch, win);
#endif
      transform_store(t, win);
      barrier();
#endif
#if PREFETCH && !PROF_NO_LOAD
      // The next step's windows: the next chunk of this tile, or the first of the next tile.
      if (ch + 1 < NCH) load_windows(t, by0, bx0, ch + 1, win);
      else if (tile + gl_NumWorkGroups.x < tiles) {
        const uint nt = tile + gl_NumWorkGroups.x;
        load_windows(t, (nt / tiles_x) * BH, (nt % tiles_x) * BW, 0, win);
      }
#endif
#if !PROF_NO_MMA
      [[unroll]] for (uint c = 0; c < CPW; ++c)
        [[unroll]] for (uint m = 0; m < MF; ++m)
          [[unroll]] for (uint kk = 0; kk < CKW / 16; ++kk) {
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
            coopMatLoad(a, smem, (((sg * CPW + c) * NB + m * 16) * VST + kk * 16) / 4, VST / 4, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0; j < NF; ++j)
              acc[(c * MF + m) * NF + j] = coopMatMulAdd(a, bf[(c * KF + ch * (CKW / 16) + kk) * NF + j], acc[(c * MF + m) * NF + j]);
          }
#endif
#if !PRIVATE
      barrier();
#endif
    }
#if PRIVATE
    barrier();  // every subgroup's multiplies are done before the accumulators overwrite V
#endif

    // Epilogue: accumulators to shared memory ([component][block][MST]), then A^T M A per item.
    [[unroll]] for (uint c = 0; c < CPW; ++c)
      [[unroll]] for (uint m = 0; m < MF; ++m)
        [[unroll]] for (uint j = 0; j < NF; ++j)
          coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[(c * MF + m) * NF + j]), smem,
                       (((sg * CPW + c) * NB + m * 16) * MST + j * 16) / 4, MST / 4, gl_CooperativeMatrixLayoutRowMajor);
    barrier();
#if PROF_NO_OUT
    if (tile + gl_NumWorkGroups.x < tiles) { barrier(); continue; }  // the last tile's outputs only
#endif
    for (uint e = t; e < OITEMS; e += WG) {  // item: block b, output channels g * 4 .. + 4
      const uint b = e / (NT / 4), g = e % (NT / 4);
      ET mv[16];
      [[unroll]] for (uint k = 0; k < 16; ++k) mv[k] = ET(smem[((k * NB + b) * MST) / 4 + g]);
      // A^T = [1 1 1 0; 0 1 -1 -1] on rows, then on columns.
      ET s[8];
      [[unroll]] for (uint c = 0; c < 4; ++c) {
        s[c] = mv[c] + mv[4 + c] + mv[8 + c];
        s[4 + c] = mv[4 + c] - mv[8 + c] - mv[12 + c];
      }
      const uint co = n0 + g * 4;
#if !BIAS_FIXED
      const ET bv = ET(bias[co], bias[co + 1], bias[co + 2], bias[co + 3]);
#endif
      const uint gy = by0 + b / BW, gx = bx0 + b % BW;
      [[unroll]] for (uint r = 0; r < 2; ++r) {
        const ET y0 = max(s[r * 4 + 0] + s[r * 4 + 1] + s[r * 4 + 2] + bv, ET(0.0));
        const ET y1 = max(s[r * 4 + 1] - s[r * 4 + 2] - s[r * 4 + 3] + bv, ET(0.0));
        const uint p = (2 * gy + r) * pc.w + 2 * gx;
        y[(p * COUT + co) / 4] = p4(f16vec4(y0));
        y[((p + 1) * COUT + co) / 4] = p4(f16vec4(y1));
      }
    }
    barrier();
  }
}
