#version 450
// A probe, not a denox kernel (README.md): the cooperative-matrix multiply rate with no memory
// traffic. Each subgroup holds FA A and FB B fragments (loaded once from a small buffer) and
// ITERS times multiplies every pair into FA x FB accumulators, which are stored at the end.
// Macros: TYPE 0 (fp16 16x16x16, fp16 or fp32 accumulators by ACC32) or 1 (int8 16x16x32, int32
// accumulators); FA FB; ITERS; SG (subgroups per workgroup).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

#if TYPE == 1
#define AB_T int8_t
#define C_T int32_t
#define MK 32
#else
#define AB_T float16_t
#if ACC32
#define C_T float
#else
#define C_T float16_t
#endif
#define MK 16
#endif

layout(local_size_x = 32 * SG) in;
layout(set = 0, binding = 0) readonly buffer In { AB_T src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { C_T dst[]; };

void main() {
  coopmat<AB_T, gl_ScopeSubgroup, 16, MK, gl_MatrixUseA> a[FA];
  coopmat<AB_T, gl_ScopeSubgroup, MK, 16, gl_MatrixUseB> b[FB];
  coopmat<C_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c[FA * FB];
  [[unroll]] for (uint i = 0; i < FA; ++i) coopMatLoad(a[i], src, i * 16 * MK, MK, gl_CooperativeMatrixLayoutRowMajor);
  [[unroll]] for (uint j = 0; j < FB; ++j) coopMatLoad(b[j], src, (FA + j) * 16 * MK, 16, gl_CooperativeMatrixLayoutRowMajor);
  [[unroll]] for (uint k = 0; k < FA * FB; ++k) c[k] = coopmat<C_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(C_T(0));
  for (uint it = 0; it < ITERS; ++it)
    [[unroll]] for (uint i = 0; i < FA; ++i)
      [[unroll]] for (uint j = 0; j < FB; ++j) c[i * FB + j] = coopMatMulAdd(a[i], b[j], c[i * FB + j]);
  const uint base = (gl_WorkGroupID.x * SG + gl_SubgroupID) * FA * FB * 256;
  [[unroll]] for (uint k = 0; k < FA * FB; ++k) coopMatStore(c[k], dst, base + k * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
}
