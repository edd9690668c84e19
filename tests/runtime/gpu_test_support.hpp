// Shared by the kernel and runtime tests: one lavapipe device per test process with the Khronos
// validation layer on, a shader compiler with an in-process SPIR-V cache, random inputs, the
// relative L2 error, and "run this graph through the portable plan on the GPU".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/shader_compiler.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/executable_model.hpp"

namespace denox::testing {

// The process's device (created on first use, validation on). Tests check
// device().validation_errors() == 0 at the end.
runtime::DeviceContext& device();
// Destroys device() if it was made. The test mains call it before they return: destroyed by a
// static destructor at exit, after the validation layer had torn its own state down, its
// VkDevice crashed Debian 13's layer (1.4.309) on the GPU machine.
void destroy_device();
// A context over device()'s handles as an engine would pass them (from_external), claiming
// storageBuffer16BitAccess/shaderFloat16 only if `with_16bit` (and the device has them).
std::unique_ptr<runtime::DeviceContext> engine_context(bool with_16bit);
// The shared test device as an engine's (from_external) that says it enabled push descriptors and
// `enabled_features_chain` (a VkDeviceCreateInfo::pNext chain, kept alive by the caller).
runtime::ExternalDevice external_over_own(const void* enabled_features_chain);
kernels::ShaderCompiler& shader_compiler();
runtime::AdapterCompiler adapter_compiler();

// Uniform in +-[0.1, 1]: never zero, so a wrong zero (a missed write) always shows.
HostTensor random_tensor(const std::vector<int64_t>& shape, uint64_t seed);
std::vector<float> random_values(size_t count, uint64_t seed, float scale = 1.0f);

// ||a - b|| / ||b||; throws on a shape mismatch.
double relative_l2(const HostTensor& a, const HostTensor& b);

// Builds the portable plan for `precision` and compiles its shaders.
plan::Plan compiled_plan(const compiler::Graph& graph, plan::Precision precision);

// A device-local buffer usable as storage, transfer source and destination.
runtime::Buffer device_buffer(VkDeviceSize size);
runtime::Buffer device_buffer_on(const runtime::DeviceContext& ctx, VkDeviceSize size);

// Runs the model once: NCHW fp32 caller buffers (one per input/output), set_extent from input
// 0's H and W, record, submit, wait, read back.
std::vector<HostTensor> run_model(runtime::ExecutableModel& model, const std::vector<HostTensor>& inputs);
// The same on any context (the model must have been made on `ctx`); `before_record` runs after
// the bindings, just before record().
std::vector<HostTensor> run_model_on(const runtime::DeviceContext& ctx, runtime::ExecutableModel& model,
                                     const std::vector<HostTensor>& inputs,
                                     const std::function<void(runtime::ExecutableModel&)>& before_record = {});

// compiled_plan + ExecutableModel (denox-owned memory) + run_model.
std::vector<HostTensor> run_on_gpu(const compiler::Graph& graph, plan::Precision precision, const std::vector<HostTensor>& inputs);

// run_on_gpu vs the CPU reference; returns the worst relative L2 over the outputs.
double gpu_vs_reference(const compiler::Graph& graph, plan::Precision precision, const std::vector<HostTensor>& inputs);

// The tolerance of the task: 1e-4 for fp32, 2e-2 for fp16 storage.
double tolerance(plan::Precision precision);

// Whether an adapter or copy writing bytes starting `offset` into a tensor (whose own start is
// aligned: an arena offset, or a caller buffer at offset 0) binds only its part on `ctx`, and so
// needs no barrier after the previous one writing that tensor: where the offset is a multiple of
// the device's minStorageBufferOffsetAlignment and of 16 (record.cpp, as the runtime README
// states it).
bool binds_only_its_part(const runtime::DeviceContext& ctx, uint64_t offset);

}  // namespace denox::testing
