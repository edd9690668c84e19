// The CLI's Vulkan path, written the way an engine uses denox: a headless denox context (the
// C++ wrapper of the public C API), the engine-side helper for buffers and timestamps, one model
// bound to CHW buffers of the caller.
#pragma once

#include "vkhost/vk_host.hpp"  // volk before denox.hpp

#include <denox/denox.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"

namespace denox::cli {

struct GpuOptions {
  int device = -1;
  std::string precision = "auto";  // auto, fp32, fp16, int8
  std::string calibration;         // int8: the calibration file (`denox calibrate`)
  std::string cache_path;          // empty: the default path
  bool no_cache = false;
  std::string shipped_cache_path;  // empty: none (read-only, consulted after the writable cache)
  bool validation = false;
  std::string tuning = "heuristic";  // heuristic, measure, exhaustive
  std::string tune_size = "1920x1088";  // the extent measured tuning tunes for
};

// --tuning's value (heuristic, measure or exhaustive, CLI-checked) as the library's enum.
denox_tuning tuning_from_name(const std::string& name);

// The context options of --cache, --no-cache and --shipped-cache; points into `options`.
denox_context_options context_options(const GpuOptions& options);
// --validation: the layer's errors (synchronization hazards included) were logged as they came;
// after a command's output, any at all fail it (exit status 1).
void fail_on_validation_errors(const denox_stats& stats);

// "fp32", "fp16", "int8", else auto.
denox_precision parse_precision(const std::string& p);
// The model options of --precision and --calibration (the rest zero); the calibration read
// from its file goes to `calibration`, which must outlive the load. Errors name the file, or
// the missing --calibration of --precision int8.
denox_model_options model_options(const GpuOptions& options, Calibration& calibration);
// For tables: "fp32", "fp16", or "int8+fp16" when the plan has int8 dispatches.
std::string precision_label(const Model& model);

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

struct ClockWarmup {
  double ms = 0;  // wall time of its submits
  int runs = 0;   // inferences
  int submits = 0;
};

struct DispatchTime {
  std::string name;
  double median_ms = 0;
};

class GpuSession {
 public:
  GpuSession(const std::string& model_path, const GpuOptions& options);
  ~GpuSession();

  // Binds CHW buffers for a w x h input (fp16 buffers when the plan is fp16, else fp32).
  // Host-visible for run(); `device_local` for timing: an engine's buffers live in VRAM, and
  // host-visible ones would time the io adapters at PCIe speed (the input is then filled with
  // 0.5 on the GPU, never left uninitialized).
  void prepare(uint32_t width, uint32_t height, bool device_local = false);
  // One inference on `input` (1xCxHxW float32); returns output 0 as 1xCxHxW float32.
  HostTensor run(const HostTensor& input);
  // GPU time of the whole model (timestamps around record()), `runs` after `warmup`.
  Timing time_model(int warmup, int runs);
  // On a GPU (not a CPU device such as lavapipe), untimed back-to-back inferences until `ms`
  // of wall time has passed: after an idle spell the clock takes a few hundred ms of work to
  // come back up, and a handful of warm-up runs time the model ~2% slow (bench/RESULTS.md,
  // 2026-11-26). Returns what it did (all zero where nothing).
  ClockWarmup warm_clock(double ms);
  // Per-dispatch times with a barrier before each dispatch (serialized), median of `runs`.
  std::vector<DispatchTime> time_dispatches(int warmup, int runs);
  // Host time of denox_model_record (microseconds, median of `runs`).
  double record_host_us(int runs);

  const Context& context() const { return ctx_; }
  const Model& model() const { return model_; }
  denox_stats stats() const { return ctx_.stats(); }
  double load_ms() const { return load_ms_; }
  uint32_t input_channels() const { return in_c_; }

 private:
  Context ctx_;
  std::unique_ptr<vkhost::Device> dev_;
  Calibration calibration_;
  Model model_;
  double load_ms_ = 0;
  uint32_t in_c_ = 0, out_c_ = 0, w_ = 0, h_ = 0, out_w_ = 0, out_h_ = 0;
  bool f16_ = false;
  std::unique_ptr<vkhost::Buffer> in_, out_;  // host-visible: run() reads and writes them
};

double median(std::vector<double> v);

}  // namespace denox::cli
