#include "api/api_background.hpp"


#include <algorithm>
#include <cstring>
#include <utility>

#include "common/log.hpp"
#include "runtime/measure/measure.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::api {

namespace {

// A failed job's message, copied in its exception handler: without memory for it (the job may
// have failed for want of memory), the result code alone is kept.
void keep_message(std::string& message, const char* what) noexcept {
  try {
    message = what;
  } catch (...) {
    message.clear();
  }
}

// How often record() may stat a watched file.
constexpr auto kWatchInterval = std::chrono::milliseconds(500);
// Records a replaced plan is kept for when retire_after_records is 0: three frames in flight.
constexpr uint32_t kDefaultRetireAfterRecords = 3;

// A rough 0..1 for a job from its stage: the share of a typical background tune each stage
// takes (measuring dominates; "build" is pipelines + weight upload + applying the bindings).
float job_fraction(const std::string& stage, size_t done, size_t total) {
  struct Span {
    const char* stage;
    float from, to;
  };
  static constexpr Span spans[] = {{"import", 0.00f, 0.05f},  {"enumerate", 0.05f, 0.10f}, {"compile", 0.10f, 0.30f},
                                   {"measure", 0.30f, 0.85f}, {"select", 0.85f, 0.88f},    {"lower", 0.88f, 0.90f},
                                   {"shaders", 0.90f, 0.95f}, {"build", 0.95f, 1.00f},     {"done", 0.95f, 0.95f}};
  for (const auto& s : spans) {
    if (stage != s.stage) continue;
    const float part = total == 0 ? 0.0f : std::min(1.0f, static_cast<float>(done) / static_cast<float>(total));
    return s.from + (s.to - s.from) * part;
  }
  return 0.0f;
}

uint32_t constant_channels(const plan::Plan& p, const plan::IoTensor& io) {
  if (!p.program.is_constant(io.shape[1]))
    fail(ErrorCode::Unsupported, "tensor '" + io.name + "' has a symbolic channel count (" + p.program.to_string(io.shape[1]) +
                                     "); denox needs a fixed number of channels per input and output");
  return static_cast<uint32_t>(p.program.constant_value(io.shape[1]));
}

IoSignature signature_of_plan(const plan::Plan& p) {
  IoSignature s;
  for (const auto& io : p.inputs) s.inputs.push_back(constant_channels(p, io));
  for (const auto& io : p.outputs) s.outputs.push_back(constant_channels(p, io));
  return s;
}

// Throws ShapeMismatch naming the first difference between a new plan and the running model.
void check_compatible(const IoSignature& running, const plan::Plan& candidate) {
  const IoSignature got = signature_of_plan(candidate);
  auto compare = [&](const std::vector<uint32_t>& want, const std::vector<uint32_t>& have, const std::vector<plan::IoTensor>& ios,
                     const char* what) {
    if (want.size() != have.size())
      fail(ErrorCode::ShapeMismatch, "the new model has " + std::to_string(have.size()) + " " + what + "s, the running model " +
                                         std::to_string(want.size()) + "; a replacement needs the same inputs and outputs");
    for (size_t i = 0; i < want.size(); ++i)
      if (want[i] != have[i])
        fail(ErrorCode::ShapeMismatch, std::string("the new model's ") + what + " " + std::to_string(i) + " ('" + ios[i].name + "') has " +
                                           std::to_string(have[i]) + " channels, the running model's " + std::to_string(want[i]) +
                                           "; a replacement needs the same channel counts");
  };
  compare(running.inputs, got.inputs, candidate.inputs, "input");
  compare(running.outputs, got.outputs, candidate.outputs, "output");
}

std::string job_name(const BackgroundJob& job) {
  if (job.kind == DENOX_JOB_TUNE) return "background tune";
  if (job.file) return "reload of '" + job.file->string() + "'";
  return "reload (from memory)";
}

void publish_swap_status(denox_model_T& m) {
  std::lock_guard lock(m.status_mutex);
  m.swap_status.staged = m.staged != nullptr;
  m.swap_status.retired = static_cast<uint32_t>(m.retired.size());
  if (!m.staged) m.swap_status.waiting_for_memory = false;
}

void retire_tick(denox_model_T& m) {
  if (m.retired.empty()) return;
  for (auto& r : m.retired) r.records_left--;
  // Its last command buffers were recorded retire_after_records calls ago: done by now.
  std::erase_if(m.retired, [](const RetiredPlan& r) { return r.records_left == 0; });
  publish_swap_status(m);
}

void poll_watch(denox_model_T& m) {
  FileWatch& w = *m.watch;
  const auto now = std::chrono::steady_clock::now();
  if (now - w.last_check < kWatchInterval) return;
  w.last_check = now;
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(w.path, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(w.path, ec);
  if (ec) {
    // Gone (an editor replacing it, say): reload when it is back.
    w.exists = false;
    return;
  }
  if (w.exists && mtime == w.mtime && size == w.size) return;
  w.exists = true;
  w.mtime = mtime;
  w.size = size;
  log::info("denox: '{}' changed; reloading it in the background", w.path.string());
  BackgroundJob job;
  job.kind = DENOX_JOB_RELOAD;
  job.file = w.path;
  job.request = compile_request(*m.context, &m.options, m.calibration);
  start_job(m, std::move(job));
}

// Swaps the staged plan in when it can record, or when the running one cannot either.
void try_swap(denox_model_T& m) {
  ReadyPlan& next = *m.staged;
  IoState io;
  bool reapply = false;
  {
    std::lock_guard lock(m.io_mutex);
    if (m.io.generation != next.io_generation) {
      io = m.io;
      reapply = true;
    }
  }
  if (reapply) {
    try {
      apply_io(*next.model, io);
      next.io_generation = io.generation;
    } catch (const Error& e) {
      const std::string message = "the new plan does not take the current extent and bindings (it is dropped; the running plan "
                                  "stays): " + std::string(e.what());
      log::warn("denox: {}", message);
      m.worker->record_failure(result_of(e.code()), e.vk_result(), message);
      m.staged.reset();
      publish_swap_status(m);
      return;
    }
  }
  if (!next.model->recordable() && m.model->recordable()) {
    // External memory whose scratch or weights are not bound yet for the new plan (bindings
    // and extent are the caller's, already applied): keep recording the running plan.
    std::lock_guard lock(m.status_mutex);
    m.swap_status.waiting_for_memory = next.model->external_memory();
    return;
  }
  const uint32_t keep = m.options.retire_after_records != 0 ? m.options.retire_after_records : kDefaultRetireAfterRecords;
  m.retired.push_back({std::move(m.model), keep});
  m.model = std::move(next.model);
  m.report_json = std::move(next.report_json);
  const denox_plan_kind kind = next.kind;
  m.staged.reset();
  log::info("denox: swapped in the {} plan ({} dispatches) at a frame boundary", kind == DENOX_PLAN_TUNED ? "tuned" : "reloaded",
               m.model->plan().dispatches.size());
  {
    std::lock_guard lock(m.status_mutex);
    m.swap_status.active = kind;
    m.swap_status.swaps++;
  }
  publish_swap_status(m);
}

}  // namespace

IoSignature signature_of(const runtime::ExecutableModel& model) { return signature_of_plan(model.plan()); }

void apply_io(runtime::ExecutableModel& model, const IoState& io) {
  if (io.extent) model.set_extent(io.extent->first, io.extent->second);
  for (size_t i = 0; i < io.inputs.size() && i < model.input_count(); ++i)
    if (!io.inputs[i].empty()) model.bind_input(i, io.inputs[i]);
  for (size_t i = 0; i < io.outputs.size() && i < model.output_count(); ++i)
    if (!io.outputs[i].empty()) model.bind_output(i, io.outputs[i]);
}

const runtime::DeviceContext* background_device(denox_context_T& ctx) {
  std::lock_guard lock(ctx.background_mutex);
  if (!ctx.background_checked) {
    ctx.background_device = ctx.device->background_view();
    ctx.background_checked = true;
  }
  return ctx.background_device.get();
}

const runtime::DeviceContext& require_background_device(denox_context_T& ctx, const std::string& what) {
  if (const auto* device = background_device(ctx)) return *device;
  fail(ErrorCode::InvalidArgument,
       what + " needs a queue denox may submit to from its worker thread while the engine submits frames: create the context with "
              "denox_vulkan_device::background_queue (another queue of queue_family_index that only denox uses) or "
              "lock_queue/unlock_queue (the engine's lock around its queue)");
}

// ---- BackgroundWorker --------------------------------------------------------------------

BackgroundWorker::BackgroundWorker(denox_model_T& model) : model_(model), thread_([this] { run(); }) {}

BackgroundWorker::~BackgroundWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    cancel_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundWorker::submit(BackgroundJob job) {
  {
    std::lock_guard lock(mutex_);
    if (running_ != DENOX_JOB_NONE) cancel_ = true;
    // The status reports a queued job as running from now on: a caller polling right after a
    // load or reload must not see an idle model before the worker wakes.
    running_ = job.kind;
    stage_ = "queued";
    progress_ = 0;
    queued_ = std::move(job);
  }
  wake_.notify_all();
}

std::unique_ptr<ReadyPlan> BackgroundWorker::take_ready(bool blocking) {
  if (!has_ready_.load(std::memory_order_acquire)) return nullptr;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (blocking) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return nullptr;
  }
  has_ready_ = false;
  return std::move(ready_);
}

void BackgroundWorker::record_failure(denox_result result, int vk_result, const std::string& message) {
  std::lock_guard lock(mutex_);
  failed_jobs_++;
  error_result_ = result;
  error_vk_result_ = vk_result;
  error_ = message;
}

void BackgroundWorker::fill_status(denox_model_status& out) const {
  std::lock_guard lock(mutex_);
  out.running_job = running_;
  out.progress = running_ == DENOX_JOB_NONE ? 0.0f : progress_;
  std::snprintf(out.stage, sizeof out.stage, "%s", running_ == DENOX_JOB_NONE ? "" : stage_.c_str());
  out.swap_pending = out.swap_pending || ready_ != nullptr;
  out.failed_jobs = failed_jobs_;
  out.last_error_result = error_result_;
  out.last_error_vk_result = static_cast<VkResult>(error_vk_result_);
  std::snprintf(out.last_error, sizeof out.last_error, "%s", error_.c_str());
}

void BackgroundWorker::on_progress(const char* stage, size_t done, size_t total) {
  std::lock_guard lock(mutex_);
  if (cancel_) return;  // a superseded job: the status shows the queued one
  stage_ = stage;
  progress_ = job_fraction(stage_, done, total);
}

void BackgroundWorker::run() {
  for (;;) {
    BackgroundJob job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || queued_.has_value(); });
      if (stop_) return;
      job = std::move(*queued_);
      queued_.reset();
      cancel_ = false;
      running_ = job.kind;
      stage_.clear();
      progress_ = 0;
    }
    std::unique_ptr<ReadyPlan> built;
    denox_result failure = DENOX_SUCCESS;
    int failure_vk_result = 0;
    std::string message;
    try {
      built = build(job);
    } catch (const measure::Cancelled&) {
      // Superseded by a newer job or the model is being destroyed: not a failure.
    } catch (const Error& e) {
      failure = result_of(e.code());
      failure_vk_result = e.vk_result();
      keep_message(message, e.what());
    } catch (const std::bad_alloc&) {
      failure = DENOX_ERROR_OUT_OF_HOST_MEMORY;
      keep_message(message, "out of host memory");
    } catch (const std::exception& e) {
      failure = DENOX_ERROR_INTERNAL;
      keep_message(message, e.what());
    } catch (...) {
      failure = DENOX_ERROR_INTERNAL;
      keep_message(message, "unknown exception");
    }
    std::unique_ptr<ReadyPlan> dropped;  // destroyed outside the lock (never recorded)
    // Logged after the lock is released: spdlog runs the caller's log callback on this thread,
    // and a callback that calls denox_model_get_status would wait on this lock forever.
    enum class Outcome { None, Cancelled, Failed } outcome = Outcome::None;
    std::string failure_line;
    {
      std::lock_guard lock(mutex_);
      const bool cancelled = cancel_.load();
      if (queued_) {
        running_ = queued_->kind;
        stage_ = "queued";
        progress_ = 0;
      } else {
        running_ = DENOX_JOB_NONE;
        stage_.clear();
      }
      if (cancelled) {
        dropped = std::move(built);
        outcome = Outcome::Cancelled;
      } else if (built) {
        dropped = std::move(ready_);  // an older finished plan the caller never took
        ready_ = std::move(built);
        has_ready_ = true;
        error_result_ = DENOX_SUCCESS;
        error_vk_result_ = 0;
        error_.clear();
      } else if (failure != DENOX_SUCCESS) {
        failed_jobs_++;
        error_result_ = failure;
        error_vk_result_ = failure_vk_result;
        try {
          error_ = job_name(job) + " failed (the running plan stays): " + message;
          failure_line = error_;
        } catch (...) {
          error_.clear();  // the result stays; an exception here would end the process
        }
        outcome = Outcome::Failed;
      }
    }
    try {  // (job_name allocates; nothing may leave this thread)
      if (outcome == Outcome::Cancelled) log::debug("denox: {} cancelled", job_name(job));
      if (outcome == Outcome::Failed) log::warn("denox: {}", failure_line);
    } catch (...) {
    }
  }
}

std::unique_ptr<ReadyPlan> BackgroundWorker::build(BackgroundJob& job) {
  denox_context_T& ctx = *model_.context;
  CompileRequest& request = job.request;
  request.cancel = &cancel_;
  request.observer = [this](const char* stage, size_t done, size_t total) { on_progress(stage, done, total); };
  // Null only where nothing is submitted (checked when the job was queued).
  request.measure_device = background_device(ctx);
  CompiledPlan compiled;
  std::shared_ptr<const ImportedModel> imported = job.imported;
  if (job.kind == DENOX_JOB_TUNE) {
    compiled = compile_plan(ctx, *job.imported, request);
  } else {
    std::string bytes = job.file ? compiler::read_onnx_file(*job.file) : std::move(job.onnx);
    std::optional<std::filesystem::path> base_dir;
    if (job.file) base_dir = job.file->parent_path().empty() ? std::filesystem::path(".") : job.file->parent_path();
    imported = import_model(bytes.data(), bytes.size(), base_dir, request);
    auto cached = cached_plan(ctx, *imported, request);
    // A shipped plan made under another driver serves a load, but a model that tunes in the
    // background tunes its reloads for this driver (it is never stored: nothing else would).
    if (cached && cached->other_driver && model_.options.tune_in_background != 0 && request.tuning != DENOX_TUNING_HEURISTIC)
      cached.reset();
    compiled = cached ? std::move(*cached) : compile_plan(ctx, *imported, request);
    if (job.model_name.empty() && job.file) job.model_name = job.file->stem().string();
    check_compatible(model_.signature, compiled.plan);
  }
  if (compiled.plan.model_name.empty()) compiled.plan.model_name = job.model_name;
  on_progress("build", 0, 1);
  if (cancel_) throw measure::Cancelled();
  auto ready = std::make_unique<ReadyPlan>();
  ready->kind = job.kind == DENOX_JOB_TUNE ? DENOX_PLAN_TUNED : DENOX_PLAN_RELOADED;
  ready->report_json = std::move(compiled.report_json);
  // A cancel (a newer reload, the model's destroy) stops within one driver pipeline.
  const auto cancel_check = [this] {
    if (cancel_) throw measure::Cancelled();
  };
  auto build_model = [&](plan::Plan plan) {
    return std::make_unique<runtime::ExecutableModel>(*ctx.device, std::move(plan), ctx.pipeline_cache->handle(), adapter_compiler(ctx),
                                                      model_.options.external_memory != 0, request.measure_device, cancel_check);
  };
  const bool other_driver = compiled.other_driver;
  try {
    ready->model = build_model(std::move(compiled.plan));
  } catch (const Error& e) {
    // A shipped plan made under another driver passed the load checks, but this driver may still
    // refuse one of its pipelines: compiled as without it (as a foreground load does), else the
    // same refusal would end every later reload too.
    if (!other_driver || runtime::device_lost(e) || dynamic_cast<const measure::Cancelled*>(&e) != nullptr) throw;
    log::warn("denox: the shipped plan made under another driver does not build here ({}); compiling the model", e.what());
    compiled = compile_plan(ctx, *imported, request);
    check_compatible(model_.signature, compiled.plan);
    if (compiled.plan.model_name.empty()) compiled.plan.model_name = job.model_name;
    ready->report_json = std::move(compiled.report_json);
    ready->model = build_model(std::move(compiled.plan));
  }
  save_pipeline_cache(ctx);
  IoState io;
  {
    std::lock_guard lock(model_.io_mutex);
    io = model_.io;
  }
  try {
    apply_io(*ready->model, io);
  } catch (const Error& e) {
    fail(e, "the new plan does not take the model's current extent and bindings: " + std::string(e.what()));
  }
  ready->io_generation = io.generation;
  on_progress("build", 1, 1);
  return ready;
}

// ---- the caller's side ---------------------------------------------------------------------

void start_job(denox_model_T& model, BackgroundJob job) {
  if (!model.worker) {
    model.worker = std::make_unique<BackgroundWorker>(model);
    model.worker_for_status = model.worker.get();
  }
  model.worker->submit(std::move(job));
}

void collect_ready(denox_model_T& m, bool blocking) {
  if (!m.worker) return;
  if (auto ready = m.worker->take_ready(blocking)) {
    m.staged = std::move(ready);  // an older staged plan was never recorded: dropped at once
    {
      std::lock_guard lock(m.status_mutex);
      m.swap_status.waiting_for_memory = false;
    }
    publish_swap_status(m);
  }
}

void at_frame_boundary(denox_model_T& m) {
  // A record() call that failed recorded nothing, so it does not count towards retiring.
  if (std::exchange(m.recorded_since_retire_tick, false)) retire_tick(m);
  if (m.watch) poll_watch(m);
  collect_ready(m, false);
  if (m.staged) try_swap(m);
}

}  // namespace denox::api

denox_model_T::denox_model_T() = default;

denox_model_T::~denox_model_T() {
  // The worker reads this model's io state, options and signature: stop it before they go.
  worker_for_status = nullptr;
  worker.reset();
}
