#version 450
// A probe, not a denox kernel (README.md): a workgroup that declares SMEM_BYTES of shared memory
// and stays resident for a fixed time while using almost no issue slots (one invocation walks a
// chain of ITERS dependent loads), so that the time of a grid of many such workgroups tells how
// many of them an SM holds at once.
//
// Knobs that change what the driver sees of the pipeline but not what runs (the buffer is zeros,
// so `o[2] == 0x5eed` never holds and the branch below never executes; its loads, stores and
// loop bounds are only there to keep the compiler from proving that):
//   REGS N   the branch keeps N floats live across a loop, so the pipeline reports ~N registers;
//   COOP 1   the branch multiplies cooperative matrices loaded from the shared array;
//   STAY 1   every invocation waits at a barrier for the chain (as a conv's invocations stay to its
//            end) instead of exiting at once.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#ifndef REGS
#define REGS 0
#endif
#ifndef COOP
#define COOP 0
#endif
#ifndef STAY
#define STAY 0
#endif
layout(local_size_x = WG) in;
layout(set = 0, binding = 0) buffer O { uint o[]; };  // zeros: the chain stays at element 0
shared uint pad[SMEM_BYTES / 4];

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint i = t; i < SMEM_BYTES / 4; i += WG) pad[i] = gl_WorkGroupID.x + i;  // the whole array is used
  barrier();
  if (o[2] == 0x5eedu) {  // never taken (see above)
#if REGS > 0
    float r[REGS];
    for (int i = 0; i < REGS; ++i) r[i] = uintBitsToFloat(o[4 + i + t]);
    for (uint k = 0; k < o[3]; ++k)
      for (int i = 0; i < REGS; ++i) r[i] = r[i] * r[(i + 1) % REGS] + r[(i + 7) % REGS];
    float s = 0.0;
    for (int i = 0; i < REGS; ++i) s += r[i];
    o[8 + t] = floatBitsToUint(s);
#endif
#if COOP
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c = coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    for (uint k = 0; k < o[3]; ++k) {
      coopMatLoad(a, pad, k * 64u, 8u, gl_CooperativeMatrixLayoutRowMajor);
      coopMatLoad(b, pad, k * 64u + 128u, 8u, gl_CooperativeMatrixLayoutRowMajor);
      c = coopMatMulAdd(a, b, c);
    }
    coopMatStore(c, pad, 0u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    o[8 + t] = pad[t];
#endif
  }
#if STAY
  if (t == 0) {
#else
  if (t != 0) return;
  {
#endif
    uint v = pad[gl_WorkGroupID.x % (SMEM_BYTES / 4)] - gl_WorkGroupID.x % (SMEM_BYTES / 4) - gl_WorkGroupID.x;  // 0
    for (uint i = 0; i < ITERS; ++i) v = o[v];
    if (v != 0u) o[1] = v;  // never true; keeps the chain
  }
#if STAY
  barrier();
#endif
}
