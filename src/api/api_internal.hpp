// What the C API's opaque handles hold, and the glue every entry point shares: exceptions
// become result codes and a per-thread message, never an exception across the C boundary.
#pragma once

#include <denox/denox.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.hpp"
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
  std::atomic<int> live_models{0};
};

struct denox_model_T {
  denox_context_T* context = nullptr;
  std::unique_ptr<denox::runtime::ExecutableModel> model;
  bool extent_set = false;
  std::string report_json;  // denox_model_schedule_report
};

namespace denox::api {

// Stores the message for denox_last_error() and returns the result code.
denox_result set_error(denox_result result, const std::string& message);
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
    return set_error(result_of(e.code()), std::string(function) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return set_error(DENOX_ERROR_INTERNAL, std::string(function) + ": out of host memory");
  } catch (const std::exception& e) {
    return set_error(DENOX_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return set_error(DENOX_ERROR_INTERNAL, std::string(function) + ": unknown exception");
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
