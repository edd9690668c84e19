// The LoweringTarget of a device context: what build_portable_plan may use there. Header-only,
// so that denox_kernels itself needs no Vulkan; include it where a DeviceContext is at hand
// (the API's compile path, tests, benchmarks):
//   kernels::build_portable_plan(graph, precision, kernels::lowering_target(ctx.caps()))
#pragma once

#include "kernels/lower_portable.hpp"
#include "kernels/shader_compiler.hpp"
#include "runtime/vulkan/coop_layout_check.hpp"
#include "runtime/vulkan/device_context.hpp"

namespace denox::kernels {

// Cooperative-matrix shapes only if the feature is enabled on the device (caps.cooperative_matrix),
// with the Vulkan memory model their shaders declare, and fp16 storage is usable; fp16 A and B
// with an fp16 or fp32 accumulator (C and result).
inline LoweringTarget lowering_target(const runtime::DeviceCapabilities& caps) {
  LoweringTarget t;
  if (!caps.cooperative_matrix || !caps.vulkan_memory_model || !caps.fp16_usable() || caps.subgroup_size == 0) return t;
  for (const runtime::CoopMatrixShape& s : caps.coop_matrix_shapes) {
    // The shaders multiply A and B of one type and keep C and the result in one type.
    if (s.b_type != s.a_type || s.result_type != s.c_type) continue;
    // int8 x int8 -> int32, 16x16x32: conv2d_coopmat_q8 (with shaderInt8 enabled).
    if (s.a_type == VK_COMPONENT_TYPE_SINT8_KHR && s.c_type == VK_COMPONENT_TYPE_SINT32_KHR && s.m == 16 && s.n == 16 && s.k == 32)
      t.coop.int8 = caps.shader_int8;
    if (s.a_type != VK_COMPONENT_TYPE_FLOAT16_KHR) continue;
    if (s.c_type != VK_COMPONENT_TYPE_FLOAT16_KHR && s.c_type != VK_COMPONENT_TYPE_FLOAT32_KHR) continue;
    t.coop.shapes.push_back({s.m, s.n, s.k, s.c_type == VK_COMPONENT_TYPE_FLOAT16_KHR});
  }
  t.coop.subgroup_size = caps.subgroup_size;
  t.coop.max_shared_bytes = caps.max_compute_shared_memory;
  return t;
}

// Whether ctx's device has the element order conv2d_coopmat's A_DIRECT fills: its fp16 16x16x16
// fragments checked by runtime::checked_coop_a_rows (a few milliseconds, one dispatch on ctx's
// queue under its locks, the answer kept in the context and its background views), with the
// check's shader compiled by `compiler` (its SPIR-V cache: the API's context compiler) or, when
// null, by glslang here.
inline bool device_has_a_rows(const runtime::DeviceContext& ctx, ShaderCompiler* compiler = nullptr) {
  return runtime::checked_coop_a_rows(ctx, [compiler] {
    return compiler != nullptr ? compiler->compile("coop_a_layout", {}, plan::Precision::F32)
                               : compile_shader("coop_a_layout", {}, plan::Precision::F32);
  });
}
// Whether `t` has the fp16 16x16x16 fragments A_DIRECT is made of (else nothing to check).
inline bool a_direct_shapes(const LoweringTarget& t) {
  return t.uses_coop() && (t.coop.supports({16, 16, 16, true}) || t.coop.supports({16, 16, 16, false}));
}
// Turns on A_DIRECT in `t` (a target of ctx's device) where the device has that order, running
// the check if ctx keeps no answer yet. The API runs it at context creation (api_compile.cpp's
// check_a_direct) and its compiles read the kept answer (below); CoopTarget::a_rows adds
// ";arows" to the target's cache key.
inline void enable_a_direct(LoweringTarget& t, const runtime::DeviceContext& ctx, ShaderCompiler* compiler = nullptr) {
  if (a_direct_shapes(t)) t.coop.a_rows = device_has_a_rows(ctx, compiler);
}
// The same from the answer ctx already keeps (false where none): runs nothing, submits nothing.
inline void enable_checked_a_direct(LoweringTarget& t, const runtime::DeviceContext& ctx) {
  if (a_direct_shapes(t)) t.coop.a_rows = ctx.coop_a_rows_state() == 1;
}

// lowering_target(caps) with A_DIRECT where the device has it (tests and benchmarks that force,
// name or tune A_DIRECT configurations).
inline LoweringTarget lowering_target_with_a_direct(const runtime::DeviceContext& ctx) {
  LoweringTarget t = lowering_target(ctx.caps());
  enable_a_direct(t, ctx);
  return t;
}

// The emulated cooperative-matrix target on this device (tests; the API's test hook
// DENOX_TEST_COOP_EMULATE): the H100's fp16 shapes, the device's subgroup size and shared
// memory, COOP_EMULATE=1 shaders (plain arithmetic, int8 included).
inline LoweringTarget emulated_lowering_target(const runtime::DeviceCapabilities& caps) {
  LoweringTarget t;
  t.coop.shapes = h100_coop_shapes();
  t.coop.subgroup_size = caps.subgroup_size;
  t.coop.max_shared_bytes = caps.max_compute_shared_memory;
  t.coop.a_rows = true;  // (the emulation fills its fragments in A_DIRECT's order itself)
  t.coop_emulate = true;
  return t;
}

}  // namespace denox::kernels
