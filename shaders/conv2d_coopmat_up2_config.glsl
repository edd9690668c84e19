// conv2d_coopmat_up2.comp's configuration, included where it stands: the optional macros' defaults,
// the checks that the macros fit together, the phase and fragment geometry, and the shared-memory
// layout (low-resolution patch, skip planes or rows, weights, epilogue staging) with the items
// each invocation stages. The macros themselves are documented at the top of conv2d_coopmat_up2.comp.
#include "coop_defaults.glsl"
#define B_GLOBAL 0  // never B from the buffer (the same 0 as the default: a B_GLOBAL=1 does not compile)
#ifndef ONE_PHASE
#define ONE_PHASE 0
#endif
#ifndef SKIP_ROWS
#define SKIP_ROWS 0
#endif
#if SKIP_ROWS && !(ONE_PHASE && CONCAT)
#error "conv2d_coopmat_up2: SKIP_ROWS is a ONE_PHASE skip mode"
#endif
#ifndef X0_Q8
#define X0_Q8 0
#endif
#if X0_Q8
#if !(ONE_PHASE && Y_HWC && X0_HWC && CM_N == 16 && !HAS_BIAS)
#error "conv2d_coopmat_up2: X0_Q8 needs ONE_PHASE, X0_HWC, Y_HWC, CM_N 16 and its epilogue constants (no HAS_BIAS)"
#endif
#define EPI_FACTOR 1
#define CKU 32  // X0 channels per chunk (one int8 K step)
#define QS 6    // f16vec4 (8-byte) units per int8 patch pixel or weight row: 32 codes + 16 bytes
#else
#define CKU CK
#endif
#include "coop_fp16_geometry.glsl"
#ifndef A_DIRECT
#define A_DIRECT 0
#endif
#if A_DIRECT && !(ONE_PHASE && X0_HWC && !X0_Q8 && (CK % 32) == 0 && TILE_W == 16)
#error "conv2d_coopmat_up2: A_DIRECT reads one-phase fp16 NHWC X0 chunks of a multiple of 32 channels, tiles 16 columns wide"
#endif
#if A_DIRECT && !COOP_EMULATE && SUBGROUP_SIZE != 32
#error "conv2d_coopmat_up2: A_DIRECT builds fragments in the element order of 32-lane subgroups"
#endif
#define M_TILE (TILE_H * TILE_W)
#define FN (NT / CM_N / SG_N)
// Strides in halves, padded as in conv2d_coopmat.comp (distinct banks per load phase).
#define CKS (CK + 8)
#define A_STRIDE CKS
#define NTS (NT + 8)
#define MS (M_TILE + 8)
#define WU_BLOCK (16 * CK * NT / 4)  // an X0 chunk's weights in the buffer: 4 phases x 4 taps
#if ONE_PHASE
#define FRAGS_W (TILE_W / CM_M)
#define FRAGS_M (M_TILE / CM_M)
#define FM (FRAGS_M / SG_M)
// The low-resolution patch of X0 chunks: rows Y0+py-1 .. Y0+py-1+TILE_H, columns likewise.
#define LHALO_H (TILE_H + 1)
#define LHALO_W (TILE_W + 1)
// The skip's slots: full-resolution rows 2Y0+py-1 .. 2Y0+py-1+2 TILE_H; slot j of a row holds
// columns 2 (X0 + j) + px - 1 and + px, so SLOT_W = TILE_W + 1 covers the last A row's second slot.
#if X0_Q8
#undef WU_BLOCK
#define WU_BLOCK (16 * 32 * NT / 8)  // an X0 chunk's int8 weights: 4 phases x 4 taps x NT x 32 codes
#define WU_ITEMS (4 * 32 * NT / 8)   // a phase's 4 taps
#define LX_VEC4 (LHALO_H * LHALO_W * QS)
#define STAGE_U (LX_VEC4 + 4 * NT * QS)
#else
#define WU_ITEMS (4 * CK * NT / 4)   // what a workgroup stages of an X0 chunk: its phase's 4 taps
#if A_DIRECT
#define LX_VEC4 0  // no patch: each lane loads its A fragments' elements itself
#define AD_ROWS (FM + 1)  // row fragments a subgroup loads per tap column (2x2 taps)
#else
#define LX_VEC4 (LHALO_H * LHALO_W * CKS / 4)
#endif
#define STAGE_U (LX_VEC4 + 4 * CK * NTS / 4)
#endif
#if SKIP_ROWS
// Row step ky of a skip chunk: full-resolution rows 2 (Y0 + r) + py - 1 + ky (r < TILE_H, a row
// stride of 2), columns 2 X0 + px - 1 .. + 2 TILE_W, de-interleaved by parity (even columns
// at 0 .. TILE_W, odd ones from FHALF), CK channels a pixel without padding (SKIP_ROWS above).
#define SPW (2 * TILE_W + 1)
#define FHALF (TILE_W + 1)
#define SX_VEC4 (TILE_H * SPW * CK / 4)
#define WS_ITEMS (3 * CK * NT / 4)   // one row step: taps (ky, 0..2)
#define WS_BLOCK (9 * CK * NT / 4)   // a skip chunk's weights: [3x3 tap][CK][NT]
#define SKIP_STEPS 3
#define STAGE_S (SX_VEC4 + 3 * CK * NTS / 4)
#else
#define SROWS (2 * TILE_H + 1)
#define SLOT_W (TILE_W + 1)
#define SLOTS (SROWS * SLOT_W)
#define WS_ITEMS (3 * 16 * NT / 4)   // the skip chunk: 3 K steps (ky) of 16 rows
#define SX_VEC4 (SLOTS * 2)
#define FHALF 0  // (stash_patch's de-interleaving is for the full-resolution patch, not taken)
#if CONCAT
#define STAGE_S (SX_VEC4 + 3 * 16 * NTS / 4)
#else
#define STAGE_S 0
#endif
#endif
#else
#define LH (TILE_H / 2)
#define LW (TILE_W / 2)
#define FRAGS_W (LW / CM_M)
#define FR_PH (LH * FRAGS_W)  // fragments per phase
#define FRAGS_M (4 * FR_PH)
#define FM (FRAGS_M / SG_M)
// The low-resolution patch of X0 chunks: rows Y0-1 .. Y0+LH, columns X0-1 .. X0+LW.
#define LHALO_H (LH + 2)
#define LHALO_W (LW + 2)
// The full-resolution patch of X1 chunks: rows y0-1 .. y0+TILE_H, columns likewise.
#define FHALO_H (TILE_H + 2)
#define FHALO_W (TILE_W + 2)
#define FHALF (FHALO_W / 2)
#define LX_VEC4 (LHALO_H * LHALO_W * CKS / 4)
#define FX_VEC4 (FHALO_H * FHALO_W * CKS / 4)
#define WU_ITEMS WU_BLOCK
#define WS_ITEMS (9 * CK * NT / 4)   // an X1 chunk's weights: 9 taps
#define STAGE_U (LX_VEC4 + 16 * CK * NTS / 4)
#if CONCAT
#define STAGE_S (FX_VEC4 + 9 * CK * NTS / 4)
#else
#define STAGE_S 0
#endif
#endif
#ifndef WS_BLOCK
#define WS_BLOCK WS_ITEMS  // a skip chunk's weights in the buffer
#define SKIP_STEPS 1       // stage steps per skip chunk
#endif
#if ONE_PHASE && !SKIP_ROWS
#define SKIP_CK 4  // skip channels per chunk: a plane of slots
#else
#define SKIP_CK CK
#endif
// EPI_PASSES (ONE_PHASE only; default 1): the epilogue stages and stores the accumulators
// NT / EPI_PASSES channels at a time, so that the staging is M_TILE x (NT / EPI_PASSES + 8)
// halves (or (NT / EPI_PASSES) x (M_TILE + 8) for an NCHW output), about 1 / EPI_PASSES of the
// one-pass staging. Why: on the H100 two workgroups share an SM only with <= ~30 KB of shared
// memory each, and a 16x16 tile's one-pass staging (37 KB) would set its size; two passes leave
// it at the stage buffer's 23 KB (bench/RESULTS.md, 2026-11-25 evening: dec_conv1a 0.51 -> 0.41
// ms with 16x16 on 4x2 subgroups and 2 passes).
#ifndef EPI_PASSES
#define EPI_PASSES 1
#endif
#if !ONE_PHASE
#undef EPI_PASSES
#define EPI_PASSES 1
#endif
#define NTP (NT / EPI_PASSES)  // channels per epilogue pass
#define NTPS (NTP + 8)
#define G8_FIXED_P (BIAS_ONCE != 0 && (WG_SIZE % (NTP / 8)) == 0)  // G8_FIXED of one pass
#if (NT % (EPI_PASSES * CM_N)) != 0 || (NTP % 8) != 0
#error "conv2d_coopmat_up2: EPI_PASSES must split NT into whole coop-N fragments of 8-channel groups"
#endif
#if Y_HWC
#define OUT_VEC4 (M_TILE * NTPS / 4)  // pixel-major: element (m, j) at m * NTPS + j (per pass)
#else
#define OUT_VEC4 (NTP * MS / 4)  // channel-major: element (m, j) at (j - q NTP) * MS + m (per pass)
#endif
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#if A_DIRECT && COOP_EMULATE
// The emulation's A fragments (coopmat_ops.glsl): 2 x AD_ROWS 16x16 fragments a subgroup, after the rest.
#define AD_EMU_OFF MAX2(MAX2(STAGE_U, STAGE_S), OUT_VEC4)
#define SMEM_VEC4 (AD_EMU_OFF + SG_COUNT * 2 * AD_ROWS * 64)
#else
#define SMEM_VEC4 MAX2(MAX2(STAGE_U, STAGE_S), OUT_VEC4)
#endif
// Work items per chunk, as conv2d_coopmat.comp's: fast path 4 channels x 4 aligned pixels,
// scalar path 4 channels of one pixel; weights 4 consecutive halves of one (tap, k) row.
#define NGL ((LHALO_W + 6) / 4)
#define XV_U ((CK / 4) * LHALO_H * NGL)
#define X_U ((CK / 4) * LHALO_H * LHALO_W)
#if CONCAT && !ONE_PHASE
#define NGF ((FHALO_W + 6) / 4)
#define XV_S ((CK / 4) * FHALO_H * NGF)
#define X_S ((CK / 4) * FHALO_H * FHALO_W)
#elif SKIP_ROWS
#define NGF ((SPW + 6) / 4)
#define XV_S ((CK / 4) * TILE_H * NGF)
#define X_S ((CK / 4) * TILE_H * SPW)
#else
#define XV_S 0
#define X_S 0
#endif
#define PER_T(n) (((n) + WG_SIZE - 1) / WG_SIZE)
#define XV_PER_T PER_T(MAX2(XV_U, XV_S))
// HWC path: 8 channels of one patch pixel per item (X0_Q8: 16 codes, 2 items a pixel).
#if X0_Q8
#define HV_U (LHALO_H * LHALO_W * 2)
#else
#define HV_U (LHALO_H * LHALO_W * (CK / 8))
#endif
#if CONCAT && !ONE_PHASE
#define HV_S (FHALO_H * FHALO_W * (CK / 8))
#elif SKIP_ROWS
#define HV_S (TILE_H * SPW * (CK / 8))
#else
#define HV_S 0
#endif
#define HV_PER_T PER_T(MAX2(HV_U, HV_S))
#define X_PER_T PER_T(MAX2(X_U, X_S))

#if ONE_PHASE
#if (TILE_W % CM_M) != 0 || (CK % CM_K) != 0 || (FRAGS_M % SG_M) != 0 || (NT % (CM_N * SG_N)) != 0
#error "conv2d_coopmat_up2: inconsistent tile macros (ONE_PHASE)"
#endif
#elif (TILE_H % 2) != 0 || (LW % CM_M) != 0 || (CK % CM_K) != 0 || (FRAGS_M % SG_M) != 0 || (FR_PH % FM) != 0 || \
    (NT % (CM_N * SG_N)) != 0
#error "conv2d_coopmat_up2: inconsistent tile macros"
#endif
