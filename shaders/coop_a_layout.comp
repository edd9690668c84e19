#version 450
// Which A-matrix elements each lane of a subgroup holds: GL_KHR_cooperative_matrix leaves the
// order of a lane's elements to the implementation, and conv2d_coopmat's A_DIRECT builds A
// fragments element by element from global memory, so the device context checks the order on the
// device before the lowering may use it (src/runtime/vulkan/coop_layout_check.cpp; also
// bench/int8_probe). One subgroup loads two 16 x CM_K A matrices whose elements are their row and
// their column, and each lane writes its elements' values out.
//   Q8=0 (default): float16_t, 16 x 16;  Q8=1: int8_t, 16 x 32.
// Bindings: 0 the two matrices (row-major, the rows matrix then the columns matrix), 1 the output
// (uint): [0] the number of elements a lane holds n, then for lane l and element e the row at
// 1 + 2 (l n + e) and the column after it. Dispatch (1, 1, 1) with one subgroup of 32 or fewer lanes.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require

#ifndef Q8
#define Q8 0
#endif
#if Q8
#define ELEM int8_t
#define CM_K 32
#else
#define ELEM float16_t
#define CM_K 16
#endif
layout(set = 0, binding = 0) readonly buffer X { ELEM xs[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uint yw[]; };

layout(local_size_x = 32) in;

void main() {
  if (gl_SubgroupID != 0) return;  // (subgroups of fewer than 32 lanes: the first one answers)
  coopmat<ELEM, gl_ScopeSubgroup, 16, CM_K, gl_MatrixUseA> rows, cols;
  coopMatLoad(rows, xs, 0, CM_K, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(cols, xs, 16 * CM_K, CM_K, gl_CooperativeMatrixLayoutRowMajor);
  const uint lane = gl_SubgroupInvocationID, n = uint(rows.length());
  if (lane == 0) yw[0] = n;
  for (uint e = 0; e < n; ++e) {
    const uint at = 1 + 2 * (lane * n + e);
    if (at + 1 >= uint(yw.length())) break;  // (more elements than the caller expects: [0] says so)
    yw[at] = uint(int(rows[e]));
    yw[at + 1] = uint(int(cols[e]));
  }
}
