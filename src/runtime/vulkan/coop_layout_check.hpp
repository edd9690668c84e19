// The cooperative-matrix element order A_DIRECT relies on, checked on the device.
// GL_KHR_cooperative_matrix leaves the order of the elements a lane holds to the implementation;
// A_DIRECT fills A fragments element by element from global memory (conv2d_coopmat.comp and
// conv2d_coopmat_up2.comp: shaders/conv2d_coopmat_adirect.glsl),
// so the lowering offers it only where this check passed (kernels::CoopTarget::a_rows).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/vulkan/device_context.hpp"

namespace denox::runtime {

// Runs shaders/coop_a_layout.comp (Q8=0, compiled by the caller: the runtime has no GLSL
// compiler) once on the context's queue and compares what each lane of the 32-lane subgroup
// holds with the order A_DIRECT fills: in lane 4 g + t, element 2 w + b (w = 0..3, b = 0..1) is
// row g + 8 (w >> 1), column 2 (t + 4 (w & 1)) + b of the 16x16 fp16 A matrix. Returns "" when
// it holds, else why not (no queue, another subgroup size, the first element that differs).
// Throws denox::Error (ErrorCode::Vulkan) when a Vulkan call fails. Takes a few milliseconds
// (one pipeline, one dispatch, a wait).
std::string coop_a_rows_mismatch(const DeviceContext& ctx, const std::vector<uint32_t>& spirv);

// coop_a_rows_mismatch until the context keeps an answer (background views share it; two first
// calls at once may both run it), with `spirv` called for the shader only then. A context without
// a queue answers false without keeping it; a subgroup size other than 32 answers false at once.
// Never throws: a failing check (or shader compile) is logged and answers false. It submits to
// the context's queue under lock_queue(): call it where the caller may use the queue.
bool checked_coop_a_rows(const DeviceContext& ctx, const std::function<std::vector<uint32_t>()>& spirv);

}  // namespace denox::runtime
