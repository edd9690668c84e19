#version 450
// gemm.comp with the staging done by the shader: each K step the workgroup copies its A tile
// (TILE_M x TILE_K) and B tile (TILE_K x TILE_N) into shared memory with 16-byte loads (rows
// padded by 8 halves), then loads the workgroup-scope matrices from shared memory. The question:
// does the driver run workgroup-scope matrices whose operands are in shared memory faster than
// subgroup-scope ones (i.e. on Hopper's warpgroup MMA, which reads shared memory directly)?
// Same macros, bindings, push constants and dispatch as gemm.comp (run the probe with this path).
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#if ACC_F16
#define ACC_T float16_t
#else
#define ACC_T float
#endif

layout(local_size_x = WG_SIZE) in;
layout(set = 0, binding = 0) readonly buffer ABuf { uvec4 a[]; };
layout(set = 0, binding = 1) readonly buffer BBuf { uvec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer CBuf { float16_t c[]; };
layout(push_constant) uniform Push { uint M, N, K, A_ROWS; } pc;

#define AS ((TILE_K + 8) / 8)  // row strides in uvec4 (8 halves)
#define BS ((TILE_N + 8) / 8)
shared uvec4 sa[TILE_M * AS];
shared uvec4 sb[TILE_K * BS];

void main() {
  const uint t = gl_LocalInvocationIndex;
  const uint m0 = gl_WorkGroupID.x * TILE_M, n0 = gl_WorkGroupID.y * TILE_N, am0 = m0 % pc.A_ROWS;
  coopmat<ACC_T, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator> acc =
      coopmat<ACC_T, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator>(0.0);
  for (uint k = 0; k < pc.K; k += TILE_K) {
    for (uint i = t; i < TILE_M * (TILE_K / 8); i += WG_SIZE) {
      const uint r = i / (TILE_K / 8), q = i % (TILE_K / 8);
      sa[r * AS + q] = a[((am0 + r) * pc.K + k) / 8 + q];
    }
    for (uint i = t; i < TILE_K * (TILE_N / 8); i += WG_SIZE) {
      const uint r = i / (TILE_N / 8), q = i % (TILE_N / 8);
      sb[r * BS + q] = b[((k + r) * pc.N + n0) / 8 + q];
    }
    barrier();
    coopmat<float16_t, gl_ScopeWorkgroup, TILE_M, TILE_K, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, TILE_K, TILE_N, gl_MatrixUseB> mb;
    coopMatLoad(ma, sa, 0, AS, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, sb, 0, BS, gl_CooperativeMatrixLayoutRowMajor);
    acc = coopMatMulAdd(ma, mb, acc);
    barrier();
  }
  coopmat<float16_t, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator> result =
      coopmat<float16_t, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator>(acc);
  coopMatStore(result, c, m0 * pc.N + n0, pc.N, gl_CooperativeMatrixLayoutRowMajor);
}
