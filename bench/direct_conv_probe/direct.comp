#version 450
// A probe, not a denox kernel (README.md): a 3x3 convolution as an implicit GEMM whose A and B
// fragments are loaded by coopMatLoad straight from the buffers, with no shared memory and no
// barrier at all. Activations are HWC (channels contiguous, a multiple of 16) stored with a
// one-pixel zero border, so that every tap of every fragment is a plain strided load; the
// result is stored the same way (stride Cout). Weights: [tap][cin][cout] row-major.
//
// Macros: FMX (16-pixel fragments along x per subgroup), FMY (rows per subgroup), NT (output
// channels per subgroup, a multiple of 16), SGX SGY (subgroups per workgroup along x and y),
// ACC_F16.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

#if ACC_F16
#define ACC_T float16_t
#else
#define ACC_T float
#endif
#define FN (NT / 16)

layout(local_size_x = 32 * SGX * SGY) in;
layout(set = 0, binding = 0) readonly buffer X { float16_t x[]; };
layout(set = 0, binding = 1) readonly buffer W { float16_t wts[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float16_t y[]; };
layout(push_constant) uniform Push { uint cin, cout, h, w; } pc;  // h w: the image without border

void main() {
  const uint sg = gl_SubgroupID, sgx = sg % SGX, sgy = sg / SGX;
  const uint co_tiles = pc.cout / NT;
  const uint ct = gl_WorkGroupID.z % co_tiles;
  const uint x0 = (gl_WorkGroupID.x * SGX + sgx) * FMX * 16;
  const uint y0 = (gl_WorkGroupID.y * SGY + sgy) * FMY;
  if (x0 >= pc.w || y0 >= pc.h) return;  // whole subgroups only (w a multiple of 16 * FMX here)
  const uint wp = pc.w + 2;               // stored row length (border included)

  coopmat<ACC_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FMY * FMX * FN];
  [[unroll]] for (uint i = 0; i < FMY * FMX * FN; ++i) acc[i] = coopmat<ACC_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);

  [[unroll]] for (uint tap = 0; tap < 9; ++tap) {
    const uint ky = tap / 3, kx = tap % 3;
    for (uint c = 0; c < pc.cin; c += 16) {
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a[FMY * FMX];
      // Output pixel (y, x) reads stored pixel (y + ky, x + kx) (the border shifts by one).
      [[unroll]] for (uint r = 0; r < FMY; ++r)
        [[unroll]] for (uint f = 0; f < FMX; ++f)
          coopMatLoad(a[r * FMX + f], x, ((y0 + r + ky) * wp + x0 + f * 16 + kx) * pc.cin + c, pc.cin,
                      gl_CooperativeMatrixLayoutRowMajor);
      [[unroll]] for (uint j = 0; j < FN; ++j) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
        coopMatLoad(b, wts, (tap * pc.cin + c) * pc.cout + ct * NT + j * 16, pc.cout, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint i = 0; i < FMY * FMX; ++i) acc[i * FN + j] = coopMatMulAdd(a[i], b, acc[i * FN + j]);
      }
    }
  }
  [[unroll]] for (uint i = 0; i < FMY * FMX; ++i) {
    const uint r = i / FMX, f = i % FMX;
    [[unroll]] for (uint j = 0; j < FN; ++j) {
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> o =
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i * FN + j]);
      for (int k = 0; k < o.length(); ++k) o[k] = max(o[k], float16_t(0.0));  // ReLU, element-wise
      coopMatStore(o, y, ((y0 + r + 1) * wp + x0 + f * 16 + 1) * pc.cout + ct * NT + j * 16, pc.cout,
                   gl_CooperativeMatrixLayoutRowMajor);
    }
  }
}
