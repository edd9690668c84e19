// conv2d_coopmat.comp's configuration, included where it stands: the optional macros' defaults,
// the checks that the macros fit together, the fragment counts per subgroup, and the shared-memory
// layout (patch, weights, accumulator staging, the head's and the tail's parts) with the items
// each invocation stages. The macros themselves are documented at the top of conv2d_coopmat.comp.
#include "coop_defaults.glsl"
#ifndef PROFILE_SKIP_MMA
#define PROFILE_SKIP_MMA 0
#endif
#ifndef PROFILE_SKIP_FETCH
#define PROFILE_SKIP_FETCH 0
#endif
#ifndef PROFILE_SKIP_STORE
#define PROFILE_SKIP_STORE 0  // benchmarks only: the NHWC epilogue stores only values of -12345
#endif
// Every chunk is read from NHWC tensors whose channel counts are multiples of 8 (the lowering
// knows): only the 16-byte staging path is compiled, and the register array is its size.
#ifndef HWC_ONLY
#define HWC_ONLY 0
#endif
#ifndef NARROW
#define NARROW 0
#endif
#ifndef HEAD
#define HEAD 0
#endif
#ifndef A_DIRECT
#define A_DIRECT 0
#endif
#if A_DIRECT && (!HWC_ONLY || CONCAT || UPSAMPLE0 || NARROW || HEAD || B_GLOBAL || (CK % 32) != 0)
#error "conv2d_coopmat: A_DIRECT reads one NHWC input (no concat, upsample, NARROW, HEAD or B_GLOBAL; CK a multiple of 32)"
#endif
#if A_DIRECT && !COOP_EMULATE && SUBGROUP_SIZE != 32
#error "conv2d_coopmat: A_DIRECT builds fragments in the element order of 32-lane subgroups"
#endif
#if HEAD && (CONCAT || UPSAMPLE0 || B_GLOBAL || NARROW || TAIL || CK != 16)
#error "conv2d_coopmat: HEAD is for plain convs (no concat, upsample, B_GLOBAL, NARROW or TAIL; CK 16)"
#endif
#ifndef TAIL_PROFILE
#define TAIL_PROFILE 0  // benchmarks only (wrong results): 1 no tap sums, 2 nor Z, 3 no epilogue at all
#endif
#if Y_Q8 && !Y_HWC
#error "conv2d_coopmat: Y_Q8 needs Y_HWC"
#endif
#if TAIL && (Y_HWC || POOL || B_GLOBAL)
#error "conv2d_coopmat: TAIL writes the tail's NCHW output and takes no POOL or B_GLOBAL"
#endif
#if NARROW && (CONCAT || UPSAMPLE0 || B_GLOBAL || HWC_ONLY || CK != 16)
#error "conv2d_coopmat: NARROW is for plain convs (no concat, upsample, B_GLOBAL or HWC_ONLY; CK 16)"
#endif
// Whether any input is NHWC: if none is, the 16-byte path is left out.
#if X0_HWC || (CONCAT && X1_HWC)
#define ANY_HWC_INPUT 1
#else
#define ANY_HWC_INPUT 0
#endif
#include "coop_fp16_geometry.glsl"
#define KK (KH * KW)
#define HALO_H (TILE_H + KH - 1)
#define HALO_W (TILE_W + KW - 1)
#define HALO (HALO_H * HALO_W)
#define M_TILE (TILE_H * TILE_W)
#define FRAGS_W (TILE_W / CM_M)
#define FRAGS_M (M_TILE / CM_M)
#define FM (FRAGS_M / SG_M)
#define AD_ROWS (FM + KH - 1)  // A_DIRECT: row fragments a subgroup loads per kernel column
#define FN (NT / CM_N / SG_N)
// Shared-memory strides in halves, padded by 8 (16 bytes) so that the 8 rows one fragment-load
// phase reads fall into distinct banks; every stride is a multiple of 8 halves, so every row a
// coopMatLoad touches starts 16-byte aligned. The array is f16vec4: offsets below are /4.
#define CKS (CK + 8)
#define NTS (NT + 8)
#define MS (M_TILE + 8)
#if NARROW
// Slots of 8 halves (NARROW above): SLOT_W per patch row, one more than the halo so that the
// second slot of every row a fragment reads exists (zero past the halo). KSX K steps per
// kernel row, each starting at tap KX_STEP * ks.
#define SLOT_W (HALO_W + 1)
#define SLOTS (HALO_H * SLOT_W)
#define KX_STEP (NARROW == 2 ? 3 : 2)
#define KSX ((KW + KX_STEP - 1) / KX_STEP)
#define X_VEC4 (SLOTS * 2)
#define A_STRIDE 8
#define KROWS (KH * KSX * CM_K)  // weight rows of a chunk (a plane of 8 / NARROW channels)
#define CHUNK_C (8 / NARROW)     // input channels per chunk
#else
#if HEAD
// The patch flattened with a row pitch of HALO_W + 1 pixels (conv2d_coopmat_head.glsl says why);
// after it the region R: the image slots and the head's weights, later the conv's weights.
#define H_PP (HALO_W + 1)
#define H_FRAGS ((HALO_H * H_PP + CM_M - 1) / CM_M)
#define H_PX (H_FRAGS * CM_M)
#define H_SLOTS (H_PX + 2 * H_PP + 1)
#define H_WS 24
#define H_REGION_VEC4 (H_SLOTS * 2 + 48 * H_WS / 4)  // slots, one chunk's head weights
#define PATCH_W H_PP
#define X_VEC4 (H_PX * CKS / 4)
#else
#define PATCH_W HALO_W
#if A_DIRECT
#define X_VEC4 0  // no patch: each lane loads its A fragments' elements itself
#else
#define X_VEC4 (HALO * CKS / 4)
#endif
#endif
#define A_STRIDE CKS
#define KROWS (KK * CK)
#endif
// A stage buffer: the patch, then (unless B_GLOBAL) the chunk's weights. B_GLOBAL (B fragments
// straight from the packed weights, global memory, cached) keeps two patch buffers instead:
// chunk c + 1 is stored into the other one while c is multiplied, so one barrier per chunk.
// (Two stage buffers with the weights, "DBUF", fit 48 KiB only with small pixel tiles and were
// slower on the H100 than one: bench/RESULTS.md, 2026-11-25 night.)
#if B_GLOBAL
#define W_VEC4 0
#define NBUF 2
#else
#define W_VEC4 (KROWS * NTS / 4)
#define NBUF 1
#endif
#if HEAD
#define STAGE_VEC4 (X_VEC4 + (H_REGION_VEC4 > W_VEC4 ? H_REGION_VEC4 : W_VEC4))
#else
#define STAGE_VEC4 (X_VEC4 + W_VEC4)
#endif
#if TAIL
// Pixel-major rows wide enough for the conv's channels and for Z (conv2d_coopmat_tail.glsl).
#define YS ((NT > T_NT ? NT : T_NT) + 8)
#define OUT_VEC4 (M_TILE * YS / 4)
#elif Y_HWC
#define OUT_VEC4 (M_TILE * NTS / 4)  // pixel-major: element (m, j) at m * NTS + j
#else
#define OUT_VEC4 (NT * MS / 4)  // channel-major: element (m, j) at j * MS + m
#endif
#define MAIN_VEC4 ((NBUF * STAGE_VEC4) > OUT_VEC4 ? (NBUF * STAGE_VEC4) : OUT_VEC4)
#if TAIL && A_DIRECT
// After the tile's rows, over the dead weights stage: the tail's weights and the conv's bias,
// staged after the chunk loop (TAIL_LATE_CONSTS), so that the weights stage and they fit the
// ~24 KB at which two workgroups share an SM (16x16 nt32: 23104 bytes against 25664).
#define TAIL_LATE_CONSTS 1
#define TAIL_C_OFF OUT_VEC4
#define TAIL_END_VEC4 (OUT_VEC4 + (T_K * (T_NT + 8) + NT) / 4)
#define SMEM_CORE_VEC4 (MAIN_VEC4 > TAIL_END_VEC4 ? MAIN_VEC4 : TAIL_END_VEC4)
#elif TAIL
// After everything else: the tail's weights and the conv's bias (conv2d_coopmat_tail.glsl).
#define TAIL_C_OFF MAIN_VEC4
#define SMEM_CORE_VEC4 (MAIN_VEC4 + (T_K * (T_NT + 8) + NT) / 4)
#elif HEAD
// After everything else: the head's biases (conv2d_coopmat_head.glsl).
#define HEAD_C_OFF MAIN_VEC4
#define SMEM_CORE_VEC4 (MAIN_VEC4 + H_K / 4)
#else
#define SMEM_CORE_VEC4 MAIN_VEC4
#endif
#ifndef TAIL_LATE_CONSTS
#define TAIL_LATE_CONSTS 0
#endif
#if A_DIRECT && COOP_EMULATE
// The emulation's A fragments (coopmat_ops.glsl): per subgroup 2 x AD_ROWS fragments of 16 x 16
// halves, after everything else.
#define AD_EMU_OFF SMEM_CORE_VEC4
#define SMEM_VEC4 (SMEM_CORE_VEC4 + SG_COUNT * 2 * AD_ROWS * 64)
#else
#define SMEM_VEC4 SMEM_CORE_VEC4
#endif
// Per-chunk work items: 4 channels of one patch pixel; 4 consecutive weights of one (tap, k) row.
#define X_ITEMS ((CK / 4) * HALO)
#define W_ITEMS (KROWS * NT / 4)
#define X_PER_T ((X_ITEMS + WG_SIZE - 1) / WG_SIZE)
// Fast path (input width a multiple of 4): 4 channels x 4 aligned pixels of one patch row per
// item; NG aligned 4-pixel groups cover a patch row wherever it starts.
#define NG ((HALO_W + 6) / 4)
#define XV_ITEMS ((CK / 4) * HALO_H * NG)
#define XV_PER_T ((XV_ITEMS + WG_SIZE - 1) / WG_SIZE)
#define W_PER_T ((W_ITEMS + WG_SIZE - 1) / WG_SIZE)
// HWC path: 8 channels of one patch pixel per item (one 16-byte load, two stage slots).
#define HV_ITEMS (HALO * (CK / 8))
#define HV_PER_T ((HV_ITEMS + WG_SIZE - 1) / WG_SIZE)
#if NARROW
#define NS_PER_T ((SLOTS + WG_SIZE - 1) / WG_SIZE)  // slots per invocation
#endif

#if (TILE_W % CM_M) != 0 || (CK % CM_K) != 0 || (FRAGS_M % SG_M) != 0 || (NT % (CM_N * SG_N)) != 0
#error "conv2d_coopmat: inconsistent tile macros"
#endif
// A_REUSE (default 1; taken where the tile allows): a subgroup's FM fragments are the same
// 16-pixel column segment of FM consecutive tile rows, so the A fragment of patch row r0 + p at
// tap column kx is kernel row p - i of fragment i: per (kx, 16-channel step) a subgroup loads
// FM + KH - 1 A fragments instead of FM * KH, holding that kernel column's KH * FN B fragments.
#ifndef A_REUSE
#define A_REUSE 1
#endif
#define A_REUSE_ON (A_REUSE && !NARROW && !B_GLOBAL && FM >= 2 && KH >= 2 && (TILE_H % FM) == 0 && SG_M == (TILE_H / FM) * FRAGS_W)
#if A_DIRECT && !A_REUSE_ON
#error "conv2d_coopmat: A_DIRECT takes the A_REUSE geometry (FM >= 2 consecutive tile rows a subgroup, KH >= 2)"
#endif
#if POOL && (TILE_H % 2) != 0
#error "conv2d_coopmat: POOL needs an even TILE_H"
#endif
