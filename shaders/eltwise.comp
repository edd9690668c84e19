#version 450
// A chain of elementwise ops on one tensor X and scalar or per-channel constants, fused into one pass (the
// lowering's eltwise pattern, src/kernels/eltwise.cpp): e.g. the HDR transfer x / (x * a + b)
// a denoiser model applies to its input, or y / (1 - clip(y)) on its output. Each op
// (Add/Sub/Mul/Div or an activation) had its own dispatch, reading and writing the whole tensor;
// here X is read once and Y written once, 4 consecutive elements per invocation.
//
// The chain is a register program in macros (compile-time constants, so the loop below unrolls
// into straight-line arithmetic): step i computes r[i] from operands L_i and R_i, each -1 (the
// element of X), -2 (the constant beside it: table entry [(i * 2 + side) * CT + channel]) or
// k >= 0 (step k's result), with K_i = 0 add, 1 sub, 2 mul, 3 div, or 10 + common.glsl's ACT_*
// code for an activation of L_i with parameters AA_i and AB_i (float bits, as signed ints).
// Y is r[STEPS - 1]. Arithmetic in fp32; constants in the storage type.
//
// Macros: STEPS (1..8), CT (the table's channels: 1, or X's channel count where a constant is
//   per channel), K_i L_i R_i (and AA_i AB_i for activations) for i < STEPS, STORAGE_F16.
// Bindings: 0 X, 1 Y (contiguous NCHW, the same element count), 2 the constant table.
// Push constants: count (elements), row (elements per grid row: groups x 1024), plane (H x W).
// Dispatch: (gx, gy, 1) with gx * 1024 * gy >= count.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#define MAX_STEPS 8
#if STEPS < 1 || STEPS > MAX_STEPS
#error "eltwise: STEPS must be 1..8"
#endif
#ifndef K_1
#define K_1 0
#define L_1 -1
#define R_1 -1
#endif
#ifndef K_2
#define K_2 0
#define L_2 -1
#define R_2 -1
#endif
#ifndef K_3
#define K_3 0
#define L_3 -1
#define R_3 -1
#endif
#ifndef K_4
#define K_4 0
#define L_4 -1
#define R_4 -1
#endif
#ifndef K_5
#define K_5 0
#define L_5 -1
#define R_5 -1
#endif
#ifndef K_6
#define K_6 0
#define L_6 -1
#define R_6 -1
#endif
#ifndef K_7
#define K_7 0
#define L_7 -1
#define R_7 -1
#endif
// Activation parameters: only activation steps define them.
#ifndef AA_0
#define AA_0 0
#define AB_0 0
#endif
#ifndef AA_1
#define AA_1 0
#define AB_1 0
#endif
#ifndef AA_2
#define AA_2 0
#define AB_2 0
#endif
#ifndef AA_3
#define AA_3 0
#define AB_3 0
#endif
#ifndef AA_4
#define AA_4 0
#define AB_4 0
#endif
#ifndef AA_5
#define AA_5 0
#define AB_5 0
#endif
#ifndef AA_6
#define AA_6 0
#define AB_6 0
#endif
#ifndef AA_7
#define AA_7 0
#define AB_7 0
#endif

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuf { STYPE x[]; };
layout(set = 0, binding = 0) readonly buffer XVec { STYPE4 x4[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { STYPE y[]; };
layout(set = 0, binding = 1) writeonly buffer YVec { STYPE4 y4[]; };
layout(set = 0, binding = 2) readonly buffer CBuf { STYPE cst[]; };

layout(push_constant) uniform Push {
  uint count, row, plane;
} pc;

const int K[MAX_STEPS] = int[](K_0, K_1, K_2, K_3, K_4, K_5, K_6, K_7);
const int L[MAX_STEPS] = int[](L_0, L_1, L_2, L_3, L_4, L_5, L_6, L_7);
const int R[MAX_STEPS] = int[](R_0, R_1, R_2, R_3, R_4, R_5, R_6, R_7);
const int AA[MAX_STEPS] = int[](AA_0, AA_1, AA_2, AA_3, AA_4, AA_5, AA_6, AA_7);
const int AB[MAX_STEPS] = int[](AB_0, AB_1, AB_2, AB_3, AB_4, AB_5, AB_6, AB_7);

// Element v of channel c.
float evaluate(float v, uint c) {
  float r[MAX_STEPS];
  [[unroll]] for (int i = 0; i < STEPS; ++i) {
    const float a = L[i] == -1 ? v : L[i] == -2 ? float(cst[(i * 2) * CT + c]) : r[max(L[i], 0)];
    const float b = R[i] == -1 ? v : R[i] == -2 ? float(cst[(i * 2 + 1) * CT + c]) : r[max(R[i], 0)];
    if (K[i] == 0) r[i] = a + b;
    else if (K[i] == 1) r[i] = a - b;
    else if (K[i] == 2) r[i] = a * b;
    else if (K[i] == 3) r[i] = a / b;
    else r[i] = activate_as(K[i] - 10, a, intBitsToFloat(AA[i]), intBitsToFloat(AB[i]));
  }
  return r[STEPS - 1];
}

uint channel(uint i) { return CT == 1 ? 0u : (i / pc.plane) % uint(CT); }

void main() {
  const uint first = 4u * (gl_GlobalInvocationID.x + gl_WorkGroupID.y * pc.row / 4u);
  if (first >= pc.count) return;
  // Whole 4-element vectors where the count allows (a binding offset that meets
  // minStorageBufferOffsetAlignment is all a vec4 array needs).
  if ((pc.count & 3u) == 0u) {
    const vec4 v = vec4(x4[first / 4u]);
    y4[first / 4u] = STYPE4(evaluate(v.x, channel(first)), evaluate(v.y, channel(first + 1u)), evaluate(v.z, channel(first + 2u)),
                            evaluate(v.w, channel(first + 3u)));
  } else {
    [[unroll]] for (uint k = 0; k < 4u; ++k)
      if (first + k < pc.count) y[first + k] = STYPE(evaluate(float(x[first + k]), channel(first + k)));
  }
}
