// What a compute shader's SPIR-V asks of the device beyond what a plan's pipeline says of itself:
// the shared memory it declares and the cooperative-matrix types it uses; and its interface
// (entry point, workgroup size, descriptors), which must be the pipeline's. A plan carries its
// SPIR-V (compiled for the device it was made on); loading it on a device with less shared
// memory per workgroup or other cooperative-matrix shapes would make pipeline creation
// undefined behaviour (a driver may crash), so the load checks these first and names what is
// missing. Read from the words themselves: no SPIR-V library is needed at load time.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/vulkan/device_context.hpp"

namespace denox::runtime {

// One OpTypeCooperativeMatrixKHR: rows x cols of `component` for `use` (0 A, 1 B, 2 the
// accumulator) at `scope` (3: subgroup).
struct SpirvCoopMatrix {
  uint32_t rows = 0, cols = 0, use = 0, scope = 0;
  VkComponentTypeKHR component = VK_COMPONENT_TYPE_MAX_ENUM_KHR;
  bool operator==(const SpirvCoopMatrix&) const = default;
};

struct SpirvRequirements {
  // The Workgroup-storage variables' sizes added up, as the validation layer counts them
  // (VUID-RuntimeSpirv-Workgroup-06530: no padding between struct members).
  uint64_t workgroup_bytes = 0;
  std::vector<SpirvCoopMatrix> coop_matrices;  // each distinct type once, in declaration order
  // The interface, to compare with the pipeline the plan says the module is for.
  uint32_t entry_points = 0, compute_entry_points = 0;  // OpEntryPoint, and those of GLCompute
  std::optional<std::array<uint32_t, 3>> local_size;    // OpExecutionMode LocalSize
  bool local_size_by_id = false;                        // OpExecutionModeId LocalSizeId (not read)
  std::vector<std::pair<uint32_t, uint32_t>> descriptors;  // (set, binding) of each decorated id
  uint64_t push_constant_bytes = 0;                        // the end of its push-constant block's furthest member
  std::vector<uint32_t> capabilities;                      // OpCapability operands, sorted, each once
};

// Reads a module's requirements. Throws Error(InvalidModel) naming `who` and the word where the
// module is malformed (truncated instructions, an id out of range, a size from a non-constant).
SpirvRequirements read_spirv_requirements(std::span<const uint32_t> spirv, const std::string& who);

// "" where `caps` meets `r`; else what is missing, e.g. "declares 53248 bytes of shared memory,
// more than the 49152 a workgroup may have (maxComputeSharedMemorySize)", "uses 16x8 fp16 (A)
// cooperative matrices, a shape the device does not report (...)" or "declares SPIR-V
// capability Float16, but VkPhysicalDeviceVulkan12Features::shaderFloat16 is not enabled". A
// matrix type passes where some subgroup shape of the device has a matrix of its size and
// component type as its A, B, C or result, whatever its use (as the Vulkan spec allows).
// A capability denox has no feature for is unmet where `unknown_capabilities_unmet` (SPIR-V from
// a plan file or another driver's cache row); SPIR-V compiled in this process passes it, as a
// glslang other than setup-deps' may declare what this list lacks.
std::string unmet_spirv_requirement(const SpirvRequirements& r, const DeviceCapabilities& caps, bool unknown_capabilities_unmet = true);

// "" where the module's interface is the pipeline's: one GLCompute entry point, workgroups of
// `local_size`, descriptors only in set 0 below `binding_count`, a push-constant block within
// `push_constant_bytes`. Else what differs, e.g. "declares workgroups of 256x1x1 invocations, its pipeline 128x1x1". A module that
// disagrees with its pipeline would make pipeline creation undefined behaviour.
std::string spirv_interface_mismatch(const SpirvRequirements& r, const std::array<uint32_t, 3>& local_size, uint32_t binding_count,
                                     uint32_t push_constant_bytes);

// "16x8 fp16 (A)": a matrix type for messages.
std::string describe(const SpirvCoopMatrix& m);

}  // namespace denox::runtime
