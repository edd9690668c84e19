// conv2d_coopmat_q8.comp's configuration, included where it stands: the optional macros' defaults,
// the checks that the macros fit together, the per-subgroup fragment counts, and the shared-memory
// layout in 16-byte vectors (patch, weights, accumulator staging; the tail's and PHASES' parts).
// The macros themselves are documented at the top of conv2d_coopmat_q8.comp.
#include "coop_defaults.glsl"
#ifndef X1_ZP
#define X1_ZP 0
#endif
#ifndef Y_ZP
#define Y_ZP 0
#endif
#ifndef T_FOLD
#define T_FOLD 0
#endif
#if T_FOLD && !(TAIL && (ACT == ACT_NONE || ACT == ACT_RELU || ACT == ACT_LEAKY_RELU))
#error "conv2d_coopmat_q8: T_FOLD is a TAIL mode for activations that commute with a positive factor"
#endif
#if TAIL && (Y_Q8 || POOL || SG_N != 1 || TILE_H < 2 || (T_NT % 16) != 0 || 9 * T_COUT > T_NT || T_COUT > 4 || T_K > NT || (T_K % 16) != 0)
#error "conv2d_coopmat_q8 TAIL: an fp16 NCHW output, no POOL, one subgroup column, consistent tail macros"
#endif
#if (TILE_W % 16) != 0 || (CK % 32) != 0 || (NT % (16 * SG_N)) != 0 || ((TILE_H * TILE_W / 16) % SG_M) != 0
#error "conv2d_coopmat_q8: TILE_W, CK, NT or SG_M does not divide"
#endif
#if POOL && (TILE_H % 2) != 0
#error "conv2d_coopmat_q8: POOL needs an even TILE_H"
#endif
#ifndef PHASES
#define PHASES 0
#endif
#if PHASES && !(UPSAMPLE0 && CONCAT && KH == 3 && KW == 3 && (TILE_W % 32) == 0 && (TILE_H % 2) == 0 && (SG_M % 4) == 0 && !POOL && !TAIL && !B_GLOBAL)
#error "conv2d_coopmat_q8 PHASES: an upsample and a concat, 3x3, TILE_W a multiple of 32, an even TILE_H, SG_M a multiple of 4, no POOL, TAIL or B_GLOBAL"
#endif

#define WG_SIZE (SG_M * SG_N * SUBGROUP_SIZE)
#define KK (KH * KW)
#define HALO_H (TILE_H + KH - 1)
#define HALO_W (TILE_W + KW - 1)
#define FRAGS_W (TILE_W / 16)
#define FM (TILE_H * FRAGS_W / SG_M)  // A fragments (16 pixels of a row) per subgroup
#define FN (NT / 16 / SG_N)           // B fragments (16 channels) per subgroup
// Q8_A_REUSE (default 1; taken where the tile allows, as conv2d_coopmat's A_REUSE): a subgroup's FM
// fragments are one 16-pixel column segment of FM consecutive tile rows, so the A fragment of
// patch row r0 + p at kernel column kx serves kernel row p - i of fragment i. Per (kx, 32-channel
// step) a subgroup loads FM + KH - 1 A fragments instead of FM * KH and holds that column's
// KH * FN B fragments: 16x32 pixels on 8 x 1 subgroups load 36 fragments per chunk, not 54.
#ifndef Q8_A_REUSE
#define Q8_A_REUSE 1
#endif
#define A_REUSE_ON (Q8_A_REUSE && !PHASES && FM >= 2 && KH >= 2 && (TILE_H % FM) == 0 && SG_M == (TILE_H / FM) * FRAGS_W)
// Shared memory in 16-byte vectors: the patch (pixel rows of VPP vectors, padded by one), the
// chunk's weights (rows (tap, n) likewise) and, after the last chunk, the fp16 accumulators
// (pixel rows of NT halves, padded by one vector).
#define VPP (CK / 16)
#define A_STRIDE (VPP + 1)
#define PATCH_ITEMS (HALO_H * HALO_W * VPP)
#define PATCH_V (HALO_H * HALO_W * A_STRIDE)
#define W_ITEMS (KK * NT * VPP)
#if B_GLOBAL
#define W_V 0
#else
#define W_V (KK * NT * A_STRIDE)
#endif
#if TAIL
// Pixel rows wide enough for the conv's channels and for Z (YS halves, a multiple of 8).
#define YS ((NT > T_NT ? NT : T_NT) + 8)
#define OS (YS / 8)
#else
#define OS (NT / 8 + 1)
#endif
#define OUT_V (TILE_H * TILE_W * OS)
#define MAIN_V ((PATCH_V + W_V) > OUT_V ? (PATCH_V + W_V) : OUT_V)
#if TAIL
// After everything else: the tail's weights W2, T_K rows of T_NTS halves, staged before the
// first chunk.
#define T_NTS (T_NT + 8)
#define T_FN (T_NT / 16)
#define T_W2_V MAIN_V
#define SMEM_V (MAIN_V + T_K * T_NTS / 8)
#else
#define SMEM_V MAIN_V
#endif
#if PHASES
// X0's chunks (PHASES): the low-resolution patch (the tile's rows and columns halved, plus one on
// each side) and 4 taps of weights per output phase (16 blocks); X1's chunks as without PHASES.
#define PH0_H (TILE_H / 2 + 2)
#define PH0_W (TILE_W / 2 + 2)
#define PATCH0_ITEMS (PH0_H * PH0_W * VPP)
#define PATCH0_V (PH0_H * PH0_W * A_STRIDE)
#define W0_ITEMS (16 * NT * VPP)
#define W0_V (16 * NT * A_STRIDE)
#define STAGE0_V (PATCH0_V + W0_V)
#undef MAIN_V
#define MAIN_V (STAGE0_V > (PATCH_V + W_V) ? (STAGE0_V > OUT_V ? STAGE0_V : OUT_V) : ((PATCH_V + W_V) > OUT_V ? (PATCH_V + W_V) : OUT_V))
#undef SMEM_V
#define SMEM_V MAIN_V
#define PATCH_PER_T (((PATCH_ITEMS > PATCH0_ITEMS ? PATCH_ITEMS : PATCH0_ITEMS) + WG_SIZE - 1) / WG_SIZE)
#define W_PER_T (((W_ITEMS > W0_ITEMS ? W_ITEMS : W0_ITEMS) + WG_SIZE - 1) / WG_SIZE)
#else
#define PATCH_PER_T ((PATCH_ITEMS + WG_SIZE - 1) / WG_SIZE)
#define W_PER_T ((W_ITEMS + WG_SIZE - 1) / WG_SIZE)
#endif
