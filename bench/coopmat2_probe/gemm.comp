#version 450
// A plain GEMM C[M][N] = A[M][K] x B[K][N] (row-major fp16, C fp16) on workgroup-scope
// cooperative matrices (GL_NV_cooperative_matrix2): the driver stages and pipelines the tiles
// itself. The probe (main.cpp) times it at the shapes of OIDN's full-resolution convolutions as
// implicit GEMMs (M = pixels, N = output channels, K = 9 x input channels) to learn what this
// path could give the conv kernels; it is not a denox kernel.
//
// Macros: TILE_M TILE_N TILE_K (the workgroup's matrices), WG_SIZE (invocations: one the
// driver lists for workgroup scope), ACC_F16 (1: fp16 accumulators, 0: fp32).
// Push constants: M N K A_ROWS: A holds A_ROWS rows and row r of the GEMM reads row r % A_ROWS,
// so that A stays in the L2 cache as a convolution's input patch does (an implicit GEMM reads
// each input pixel for 9 taps; a materialized im2col A would make the probe memory-bound).
// Dispatch: (M / TILE_M, N / TILE_N, 1); M, N, K, A_ROWS multiples of the tiles.
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
layout(set = 0, binding = 0) readonly buffer ABuf { float16_t a[]; };
layout(set = 0, binding = 1) readonly buffer BBuf { float16_t b[]; };
layout(set = 0, binding = 2) writeonly buffer CBuf { float16_t c[]; };
layout(push_constant) uniform Push { uint M, N, K, A_ROWS; } pc;

void main() {
  tensorLayoutNV<2> ta = createTensorLayoutNV(2);
  ta = setTensorLayoutDimensionNV(ta, pc.A_ROWS, pc.K);
  tensorLayoutNV<2> tb = createTensorLayoutNV(2);
  tb = setTensorLayoutDimensionNV(tb, pc.K, pc.N);
  tensorLayoutNV<2> tc = createTensorLayoutNV(2);
  tc = setTensorLayoutDimensionNV(tc, pc.M, pc.N);
  const uint m0 = gl_WorkGroupID.x * TILE_M, n0 = gl_WorkGroupID.y * TILE_N, am0 = m0 % pc.A_ROWS;

  coopmat<ACC_T, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator> acc =
      coopmat<ACC_T, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator>(0.0);
  for (uint k = 0; k < pc.K; k += TILE_K) {
    coopmat<float16_t, gl_ScopeWorkgroup, TILE_M, TILE_K, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, TILE_K, TILE_N, gl_MatrixUseB> mb;
    coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(ta, am0, TILE_M, k, TILE_K));
    coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(tb, k, TILE_K, n0, TILE_N));
    acc = coopMatMulAdd(ma, mb, acc);
  }
  coopmat<float16_t, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator> result =
      coopmat<float16_t, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator>(acc);
  coopMatStoreTensorNV(result, c, 0, sliceTensorLayoutNV(tc, m0, TILE_M, n0, TILE_N));
}
