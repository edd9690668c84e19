// From ONNX bytes to a runnable plan for one context's device: import, the cache lookup, and on
// a miss lowering, shader compilation and the cache store.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "api/api_internal.hpp"
#include "compiler/import/onnx_import.hpp"  // read_onnx_file: models by path
#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"

namespace denox::api {

plan::Precision resolve_precision(const denox_context_T& ctx, denox_precision requested);
// Whether DENOX_PRECISION_INT8 loads on this context's device (denox_context_info::int8_supported).
bool int8_supported(const denox_context_T& ctx);

// What a model load asks of the compiler (from denox_model_options, validated).
struct CompileRequest {
  plan::Precision precision = plan::Precision::F32;
  // DENOX_PRECISION_INT8 (an F16 plan with int8 convolutions): the model's calibration.
  std::shared_ptr<const autotune::Calibration> calibration;
  denox_tuning tuning = DENOX_TUNING_HEURISTIC;
  uint32_t width = 1920, height = 1088;  // the tuning extent
  bool recompile = false;
  denox_progress_callback progress = nullptr;
  void* progress_user_data = nullptr;
  // For background jobs (api_background.cpp): the device whose queue measuring submits to (a
  // background view; null: the context's), a flag that stops the compile between steps
  // (measure::Cancelled is thrown), and an observer of every progress report (the job's status).
  const runtime::DeviceContext* measure_device = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const char* stage, size_t done, size_t total)> observer;
};
// `retained`: the calibration a loaded model kept (reloads, background tunes: their stored
// options have none), used when options->calibration is null.
CompileRequest compile_request(const denox_context_T& ctx, const denox_model_options* options,
                               std::shared_ptr<const autotune::Calibration> retained = nullptr);

// An imported ONNX model and its content hash (the plan cache's model key).
struct ImportedModel {
  compiler::Graph graph;
  std::string hash;
  double import_ms = 0;
};
std::shared_ptr<const ImportedModel> import_model(const void* onnx, size_t size, const std::optional<std::filesystem::path>& base_dir,
                                                  const CompileRequest& request);

struct CompiledPlan {
  plan::Plan plan;
  std::string report_json;  // denox_model_schedule_report
  // The shipped cache's plan for this GPU under another driver (cached_plan): a load that
  // tunes in the background still tunes, for this driver.
  bool other_driver = false;
};

// A plan for an imported model: the cached plan for (model content, device, denox version,
// options incl. tuning; nullopt on a miss or with `recompile`), or scheduling (heuristic or
// measured) + lowering + storing one. Every pipeline of the result has its SPIR-V.
std::optional<CompiledPlan> cached_plan(denox_context_T& ctx, const ImportedModel& model, const CompileRequest& request);
CompiledPlan compile_plan(denox_context_T& ctx, const ImportedModel& model, const CompileRequest& request);

// Fills in SPIR-V a plan lacks (a plan file shipped without it), through the context's cache.
void complete_pipelines(denox_context_T& ctx, plan::Plan& plan);

// Throws MissingFeature when a plan made elsewhere needs what this device lacks (cooperative
// matrices, int8 ones, their subgroup width, workgroup sizes, A_DIRECT's element order, and
// from the pipelines' SPIR-V: shared memory and cooperative-matrix shapes), naming the shader
// and the dispatch; InvalidModel for SPIR-V it cannot read. fp16 storage is checked by the runtime.
// With `compiled_here`, only the pipelines it marks (SPIR-V compiled in this process after the
// plan was checked), where a SPIR-V capability denox has no feature for is not refused.
void check_plan_runs_here(const denox_context_T& ctx, const plan::Plan& plan, const std::vector<bool>* compiled_here = nullptr);

// Runs the cooperative-matrix element-order check A_DIRECT needs (kernels::enable_a_direct)
// where the device could use A_DIRECT, and keeps the answer in the context: at context
// creation, so that no compile of the context submits for it. Returns whether A_DIRECT is on.
bool check_a_direct(denox_context_T& ctx);

// The plan's dispatches on int8 cooperative matrices (conv2d_coopmat_q8, up2 convs with X0_Q8).
uint32_t int8_dispatches(const plan::Plan& plan);

}  // namespace denox::api
