// The C API of background work: status, hot reload, file watching, and the queue lock of a
// context's queue (api_background.cpp does the work).

#include <cstring>
#include <filesystem>

#include "api/api_background.hpp"
#include "common/read_file.hpp"

namespace denox::api {

namespace {

// A reload needs the background device unless nothing is submitted: a heuristic model
// (nothing measured) with the caller's memory (no weight upload at build time).
void require_reload_device(denox_model_T& m) {
  const bool submits = m.options.tuning != DENOX_TUNING_HEURISTIC || m.options.external_memory == 0;
  if (submits) require_background_device(*m.context, "hot reload");
}

void queue_reload(denox_model_T& m, BackgroundJob job) {
  require_reload_device(m);
  job.kind = DENOX_JOB_RELOAD;
  job.request = compile_request(*m.context, &m.options, m.calibration);
  start_job(m, std::move(job));
}

}  // namespace

}  // namespace denox::api

using namespace denox;

extern "C" {

denox_result denox_model_get_status(denox_model model, denox_model_status* out_status) {
  return api::guarded(__func__, [&] {
    api::require(model, "model");
    api::require(out_status, "out_status");
    *out_status = {};
    {
      std::lock_guard lock(model->status_mutex);
      const api::SwapStatus& s = model->swap_status;
      out_status->active_plan = s.active;
      out_status->swap_pending = s.staged ? 1 : 0;
      out_status->waiting_for_memory = s.waiting_for_memory ? 1 : 0;
      out_status->swaps = s.swaps;
      out_status->retired_plans = s.retired;
    }
    // A query racing with the first job's start sees no worker: an idle model, which it was.
    if (auto* worker = model->worker_for_status.load()) worker->fill_status(*out_status);
  });
}

denox_result denox_model_reload_file(denox_model model, const char* onnx_path) {
  return api::guarded(__func__, [&] {
    api::require(model, "model");
    const std::filesystem::path path(api::require(onnx_path, "onnx_path"));
    regular_file_size(path);  // refused here, naming why, rather than in the worker (read there)
    api::BackgroundJob job;
    job.file = path;
    api::queue_reload(*model, std::move(job));
  });
}

denox_result denox_model_reload_memory(denox_model model, const void* onnx_bytes, size_t size) {
  return api::guarded(__func__, [&] {
    api::require(model, "model");
    api::require(onnx_bytes, "onnx_bytes");
    api::BackgroundJob job;
    job.onnx.assign(static_cast<const char*>(onnx_bytes), size);
    api::queue_reload(*model, std::move(job));
  });
}

denox_result denox_model_watch_file(denox_model model, const char* onnx_path) {
  return api::guarded(__func__, [&] {
    api::require(model, "model");
    if (onnx_path == nullptr) {
      model->watch.reset();
      return;
    }
    api::require_reload_device(*model);
    auto watch = std::make_unique<api::FileWatch>();
    watch->path = onnx_path;
    // The state now is the baseline: only a later change reloads.
    std::error_code ec;
    watch->mtime = std::filesystem::last_write_time(watch->path, ec);
    if (!ec) watch->size = std::filesystem::file_size(watch->path, ec);
    watch->exists = !ec;
    watch->last_check = std::chrono::steady_clock::now();
    model->watch = std::move(watch);
  });
}

void denox_context_lock_queue(denox_context context) {
  if (context != nullptr) context->device->queue_mutex().lock();
}

void denox_context_unlock_queue(denox_context context) {
  if (context != nullptr) context->device->queue_mutex().unlock();
}

}  // extern "C"
