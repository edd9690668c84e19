// What the C API's opaque handles hold, and the glue every entry point shares: exceptions
// become result codes and a per-thread message, never an exception across the C boundary.
#pragma once

#include <denox/denox.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "compiler/calibrate/calibration_file.hpp"
#include "kernels/shader_compiler.hpp"
#include "runtime/cache/layered_cache.hpp"
#include "runtime/vulkan/compute_pipeline.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/executable_model.hpp"

struct denox_context_T {
  std::unique_ptr<denox::runtime::DeviceContext> device;
  // The user's writable cache and the optional read-only shipped one (shipped_cache_path).
  denox::cache::LayeredCache cache;
  denox::cache::DeviceIdentity identity;
  denox::kernels::ShaderCompiler compiler;
  // The driver's pipeline cache, seeded from the on-disk cache; written back after each load.
  std::unique_ptr<denox::runtime::PipelineCache> pipeline_cache;
  std::mutex pipeline_cache_mutex;  // vkGetPipelineCacheData vs. concurrent loads' stores
  std::atomic<uint64_t> plans_compiled{0}, plan_cache_hits{0}, pipeline_cache_hits{0};
  // The part of the hits that the shipped cache answered.
  std::atomic<uint64_t> shipped_plan_hits{0}, shipped_shader_hits{0}, shipped_pipeline_cache_hits{0};
  // Whether a shipped plan made under another driver was announced at warning level yet.
  std::atomic<bool> warned_other_driver{false};
  // Models not yet destroyed, and whether denox_context_destroy came before the last of them:
  // the context is then freed by the last model's destroy (the models use it until they are
  // gone). Both under lifetime_mutex, so that exactly one of the two calls frees it.
  std::mutex lifetime_mutex;
  int live_models = 0;
  bool destroy_requested = false;
  // The device as background work sees it (DeviceContext::background_view), made on first use
  // (api_background.cpp).
  std::mutex background_mutex;
  bool background_checked = false;
  std::unique_ptr<denox::runtime::DeviceContext> background_device;
};

// A calibration handle: shared, so that models loaded with it keep it after the caller destroys
// the handle (reloads and background tunes compile with it).
struct denox_calibration_T {
  std::shared_ptr<const denox::autotune::Calibration> data;
};

namespace denox::api {

class BackgroundWorker;
struct ReadyPlan;
struct FileWatch;

// The caller's extent and bindings: applied to the running plan at once and to every plan that
// background work swaps in (the worker reads them under io_mutex).
struct IoState {
  std::optional<std::pair<uint32_t, uint32_t>> extent;
  std::vector<std::vector<runtime::IoSource>> inputs, outputs;  // empty: not bound yet
  uint64_t generation = 0;                                      // bumped on every change
};

// What a replacement plan must match: the channel counts of the inputs and outputs, by index.
struct IoSignature {
  std::vector<uint32_t> inputs, outputs;
};

// A replaced plan, kept until the command buffers that recorded it are done.
struct RetiredPlan {
  std::unique_ptr<runtime::ExecutableModel> model;
  uint32_t records_left = 0;
};

// What denox_model_get_status reports of the caller's side (written by the calling thread at
// swaps, read from any thread).
struct SwapStatus {
  denox_plan_kind active = DENOX_PLAN_HEURISTIC;
  bool staged = false, waiting_for_memory = false;
  uint32_t swaps = 0, retired = 0;
};

}  // namespace denox::api

struct denox_model_T {
  denox_model_T();
  ~denox_model_T();  // stops the worker first (api_background.cpp)
  denox_context_T* context = nullptr;
  std::unique_ptr<denox::runtime::ExecutableModel> model;  // the running plan: what record() records
  bool extent_set = false;
  std::string report_json;  // denox_model_schedule_report
  denox_model_options options{};  // as loaded: reloads compile with them (calibration: null, see below)
  // options.calibration's data, kept here because the caller may destroy the handle.
  std::shared_ptr<const denox::autotune::Calibration> calibration;
  denox::api::IoSignature signature;

  std::mutex io_mutex;
  denox::api::IoState io;
  // A finished plan taken from the worker, waiting for the frame boundary (and, with external
  // memory, for bind_memory). Calling thread only.
  std::unique_ptr<denox::api::ReadyPlan> staged;
  // The plan (ExecutableModel::id) whose needs denox_model_memory_requirements reported last:
  // bind_memory binds to it, so buffers sized for one plan never go to another. 0: none yet.
  uint64_t memory_reported = 0;
  std::vector<denox::api::RetiredPlan> retired;  // calling thread only
  bool recorded_since_retire_tick = false;       // a record() succeeded since the last tick
  mutable std::mutex status_mutex;
  denox::api::SwapStatus swap_status;
  std::unique_ptr<denox::api::FileWatch> watch;
  std::unique_ptr<denox::api::BackgroundWorker> worker;  // null until the first background job
  // `worker` for denox_model_get_status, which may run on any thread while the caller's thread
  // creates the worker.
  std::atomic<denox::api::BackgroundWorker*> worker_for_status{nullptr};
};

namespace denox::api {

// Stores the message for denox_last_error() and returns the result code.
// "function: what" (what made printable: it may come from outside denox::Error), built inside:
// a handler of std::bad_alloc must not allocate the message itself (guarded is noexcept).
// Without memory for it, the code stays and the text is empty.
// `vk_result`: the failed VkResult behind a DENOX_ERROR_VULKAN (denox_last_vk_result), else 0.
denox_result set_error(denox_result result, const char* function, const char* what, int vk_result = 0) noexcept;
void clear_error();
denox_result result_of(ErrorCode code);
// Runs `fn`, translating exceptions into a result code and denox_last_error().
template <typename Fn>
denox_result guarded(const char* function, Fn&& fn) noexcept {
  try {
    clear_error();
    fn();
    return DENOX_SUCCESS;
  } catch (const Error& e) {
    return set_error(result_of(e.code()), function, e.what(), e.vk_result());
  } catch (const std::bad_alloc&) {
    return set_error(DENOX_ERROR_OUT_OF_HOST_MEMORY, function, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(DENOX_ERROR_INTERNAL, function, e.what());
  } catch (...) {
    return set_error(DENOX_ERROR_INTERNAL, function, "unknown exception");
  }
}

// Throws InvalidArgument naming `what` when `p` is null.
template <typename T>
T* require(T* p, const char* what) {
  if (p == nullptr) fail(ErrorCode::InvalidArgument, std::string(what) + " is NULL");
  return p;
}

// Compiles a shader through the context's compiler (and so its SPIR-V cache).
runtime::AdapterCompiler adapter_compiler(denox_context_T& ctx);

// Writes the driver's pipeline cache data back to the on-disk cache.
void save_pipeline_cache(denox_context_T& ctx);

}  // namespace denox::api
