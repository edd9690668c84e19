// Background work of a model (issue 5, "Lazy JIT" and "Hot reload"): a worker thread per model
// that compiles a plan (a tune of the loaded model, or a reloaded model) and builds it into an
// ExecutableModel, while the caller keeps recording the running plan; the swap happens on the
// caller's thread at the next record() (the frame boundary).
//
// Who touches what:
//  - the worker: its own job slot, status and finished plan (under BackgroundWorker's mutex),
//    the model's IoState (a snapshot under io_mutex), the context (thread-safe), and the
//    model's options and signature (fixed at load);
//  - the caller's thread (the model's API calls, externally synchronized): everything else of
//    denox_model_T, notably the running plan, `staged` and `retired`.
// A finished plan crosses over once, by move, under the worker's mutex (take_ready).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/api_compile.hpp"
#include "api/api_internal.hpp"

namespace denox::api {

// A plan a background job built, with the caller's extent and bindings applied as of
// `io_generation`.
struct ReadyPlan {
  std::unique_ptr<runtime::ExecutableModel> model;
  std::string report_json;
  denox_plan_kind kind = DENOX_PLAN_TUNED;
  uint64_t io_generation = 0;
};

struct FileWatch {
  std::filesystem::path path;
  std::filesystem::file_time_type mtime{};
  uintmax_t size = 0;
  bool exists = false;
  std::chrono::steady_clock::time_point last_check{};
};

// One job: tune an imported model, or reload one (from bytes, or a file the worker reads).
struct BackgroundJob {
  denox_background_job kind = DENOX_JOB_TUNE;
  std::shared_ptr<const ImportedModel> imported;  // tune
  std::string onnx;                               // reload from memory
  std::optional<std::filesystem::path> file;      // reload from a file
  std::string model_name;                         // for a plan that names no model ("" : the file's stem)
  CompileRequest request;
};

class BackgroundWorker {
 public:
  explicit BackgroundWorker(denox_model_T& model);
  // Cancels the running job and joins the thread.
  ~BackgroundWorker();
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  // Queues `job`; the newest request wins: a queued one is replaced, a running one cancelled.
  void submit(BackgroundJob job);
  // A finished plan, if there is one. `blocking` false: gives up (nullptr) rather than wait
  // for the worker's lock (record() must not stall).
  std::unique_ptr<ReadyPlan> take_ready(bool blocking);
  // A failure found on the caller's thread (a plan that did not take the current bindings).
  void record_failure(denox_result result, int vk_result, const std::string& message);
  void fill_status(denox_model_status& out) const;

 private:
  void run();
  std::unique_ptr<ReadyPlan> build(BackgroundJob& job);
  void on_progress(const char* stage, size_t done, size_t total);

  denox_model_T& model_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<BackgroundJob> queued_;
  bool stop_ = false;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> has_ready_{false};  // lets record() skip the lock on almost every frame
  std::unique_ptr<ReadyPlan> ready_;
  denox_background_job running_ = DENOX_JOB_NONE;
  std::string stage_;
  float progress_ = 0;
  uint32_t failed_jobs_ = 0;
  denox_result error_result_ = DENOX_SUCCESS;
  int error_vk_result_ = 0;  // Error::vk_result of that failure
  std::string error_;
  std::thread thread_;  // last: started after every member above exists
};

// The device background work submits through, or null when the engine gave denox no way to
// submit from another thread (denox_vulkan_device::background_queue / lock_queue).
const runtime::DeviceContext* background_device(denox_context_T& ctx);
// The same, or throws InvalidArgument explaining what to provide; `what` names the feature.
const runtime::DeviceContext& require_background_device(denox_context_T& ctx, const std::string& what);

// The channel counts a plan's inputs and outputs have (throws Unsupported for symbolic ones).
IoSignature signature_of(const runtime::ExecutableModel& model);

// Starts the model's worker on a job (creating it on first use).
void start_job(denox_model_T& model, BackgroundJob job);

// Moves a finished plan from the worker into model.staged (replacing an older staged one).
void collect_ready(denox_model_T& model, bool blocking);

// The frame boundary, at the start of record(): retires old plans, polls a watched file, swaps
// in a staged plan that is ready to record.
void at_frame_boundary(denox_model_T& model);

// Applies `io` to `model` (extent, then every bound input and output).
void apply_io(runtime::ExecutableModel& model, const IoState& io);

}  // namespace denox::api
