#version 450
// Which A-matrix element each lane holds (conv_q.comp's A_DIRECT builds A fragments element by
// element from global memory, so it must know). GL_KHR_cooperative_matrix leaves the order of a
// lane's elements to the implementation; this shader reads it back: one subgroup loads two
// 16 x CM_K A matrices whose elements are their row and their column, and each lane writes its
// elements' values out. The host compares them with the formula conv_q.comp assumes.
//   Q8=0: float16_t, 16 x 16;  Q8=1: int8_t, 16 x 32.
// Bindings: 0 the two matrices (row-major, rows then columns), 2 the output: [0] the number of
// elements a lane holds, then per lane and element its row and its column.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require

#if Q8
#define ELEM int8_t
#define CM_K 32
layout(set = 0, binding = 0) readonly buffer X { int8_t xs[]; };
#else
#define ELEM float16_t
#define CM_K 16
layout(set = 0, binding = 0) readonly buffer X { float16_t xs[]; };
#endif
layout(set = 0, binding = 2) writeonly buffer Y { uint yw[]; };

layout(local_size_x = 32) in;

void main() {
  coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> rows, cols;
  coopMatLoad(rows, xs, 0, CM_K, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(cols, xs, 16 * CM_K, CM_K, gl_CooperativeMatrixLayoutRowMajor);
  const uint lane = gl_SubgroupInvocationID, n = uint(rows.length());
  if (lane == 0) yw[0] = n;
  for (uint e = 0; e < n; ++e) {
    yw[1 + 2 * (lane * n + e)] = uint(int(rows[e]));
    yw[2 + 2 * (lane * n + e)] = uint(int(cols[e]));
  }
}
