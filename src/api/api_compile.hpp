// From ONNX bytes to a runnable plan for one context's device: import, the cache lookup, and on
// a miss lowering, shader compilation and the cache store.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>

#include "api/api_internal.hpp"
#include "compiler/plan/plan.hpp"

namespace denox::api {

plan::Precision resolve_precision(const denox_context_T& ctx, denox_precision requested);

// Imports the model (external data from base_dir), then returns the cached plan for (model
// content, device, denox version, options) or compiles and stores one. Every pipeline of the
// result has its SPIR-V.
plan::Plan obtain_plan(denox_context_T& ctx, const void* onnx, size_t size, const std::optional<std::filesystem::path>& base_dir,
                       plan::Precision precision);

// Fills in SPIR-V a plan lacks (a plan file shipped without it), through the context's cache.
void complete_pipelines(denox_context_T& ctx, plan::Plan& plan);

// Throws MissingFeature when a plan made elsewhere needs what this device lacks (cooperative
// matrices); fp16 storage is checked by the runtime.
void check_plan_runs_here(const denox_context_T& ctx, const plan::Plan& plan);

}  // namespace denox::api
