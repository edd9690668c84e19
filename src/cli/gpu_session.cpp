#include "cli/gpu_session.hpp"

#include <CLI/CLI.hpp>

#include "common/error.hpp"
#include "cli/commands.hpp"
#include "common/read_file.hpp"
#include "compiler/plan/plan_serialize.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <array>
#include <fstream>
#include <tuple>
#include <chrono>
#include <stdexcept>

namespace denox::cli {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void fail_on_validation_errors(const denox_stats& stats) {
  if (stats.validation_errors > 0)
    fail(ErrorCode::Vulkan, "the validation layer reported " + std::to_string(stats.validation_errors) + " error(s) (see the log)");
}

denox_context_options context_options(const GpuOptions& options) {
  denox_context_options co{};
  co.cache_path = options.cache_path.empty() ? nullptr : options.cache_path.c_str();
  co.disable_cache = options.no_cache ? 1 : 0;
  co.shipped_cache_path = options.shipped_cache_path.empty() ? nullptr : options.shipped_cache_path.c_str();
  return co;
}

denox_precision parse_precision(const std::string& p) {
  if (p == "fp32") return DENOX_PRECISION_FP32;
  if (p == "fp16") return DENOX_PRECISION_FP16;
  if (p == "int8") return DENOX_PRECISION_INT8;
  return DENOX_PRECISION_AUTO;
}

denox_model_options model_options(const GpuOptions& options, Calibration& calibration) {
  denox_model_options mo{};
  mo.precision = parse_precision(options.precision);
  if (mo.precision == DENOX_PRECISION_INT8 && options.calibration.empty())
    fail(ErrorCode::InvalidArgument, "--precision int8 needs --calibration FILE (make one with `denox calibrate`)");
  if (!options.calibration.empty()) {
    const std::string bytes = read_regular_file(options.calibration);  // Io errors name the file
    try {
      calibration = Calibration::from_bytes(bytes.data(), bytes.size());
    } catch (const ApiError& e) {
      fail(ErrorCode::InvalidArgument, "calibration file '" + options.calibration + "': " + e.what());
    }
    mo.calibration = calibration.get();
  }
  return mo;
}

std::string precision_label(const Model& model) {
  if (model.int8_dispatch_count() > 0) return "int8+fp16";
  return model.precision() == DENOX_PRECISION_FP16 ? "fp16" : "fp32";
}

denox_tuning tuning_from_name(const std::string& name) {
  return name == "measure" ? DENOX_TUNING_MEASURE : name == "exhaustive" ? DENOX_TUNING_EXHAUSTIVE : DENOX_TUNING_HEURISTIC;
}

std::pair<uint32_t, uint32_t> parse_extent(const std::string& s, const std::string& option) {
  // std::from_chars, not sscanf: "%u" takes "-1" as 4294967295 and ignores what follows.
  const auto x = s.find_first_of("xX");
  uint32_t w = 0, h = 0;
  const auto number = [&](size_t from, size_t to, uint32_t& out) {
    const auto [end, error] = std::from_chars(s.data() + from, s.data() + to, out);
    return from < to && error == std::errc() && end == s.data() + to && out >= 1 && out <= 65536;
  };
  if (x == std::string::npos || !number(0, x, w) || !number(x + 1, s.size(), h))
    fail(ErrorCode::InvalidArgument, option + " '" + s + "' is not WIDTHxHEIGHT (1 to 65536 each, e.g. 1920x1088)");
  return {w, h};
}

bool is_plan_file(const std::string& path) {
  regular_file_size(path);  // (a missing file, a directory or a FIFO fails here, by name)
  std::ifstream in(path, std::ios::binary);
  std::array<char, 16> head{};
  in.read(head.data(), head.size());
  return plan::looks_like_plan({reinterpret_cast<const uint8_t*>(head.data()), static_cast<size_t>(in.gcount())});
}

GpuSession::GpuSession(const std::string& model_path, const GpuOptions& options) {
  const denox_context_options co = context_options(options);
  ctx_ = Context::headless(options.device, options.validation, &co);
  dev_ = vkhost::Device::wrap(ctx_.info(), ctx_.get());
  denox_model_options mo = model_options(options, calibration_);
  mo.tuning = tuning_from_name(options.tuning);
  if (mo.tuning != DENOX_TUNING_HEURISTIC) std::tie(mo.tune_width, mo.tune_height) = parse_extent(options.tune_size, "--tune-size");
  const auto t0 = std::chrono::steady_clock::now();
  if (is_plan_file(model_path)) {
    const std::string plan = read_regular_file(model_path);
    model_ = Model::from_plan(ctx_, plan.data(), plan.size(), &mo);
  } else {
    model_ = Model::from_file(ctx_, model_path, &mo);
  }
  load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (model_.input_count() != 1 || model_.output_count() != 1)
    fail(ErrorCode::Unsupported, "model '" + model_path + "' has " + std::to_string(model_.input_count()) + " inputs and " +
                                     std::to_string(model_.output_count()) + " outputs; the Vulkan backend of the CLI runs models with one of each");
  in_c_ = model_.tensor_info(DENOX_INPUT, 0).channels;
  out_c_ = model_.tensor_info(DENOX_OUTPUT, 0).channels;
  f16_ = model_.precision() == DENOX_PRECISION_FP16;
}

GpuSession::~GpuSession() {
  // Buffers before the device wrapper, the model before the context (members die in reverse).
  in_.reset();
  out_.reset();
  model_ = Model();
}

void GpuSession::prepare(uint32_t width, uint32_t height, bool device_local) {
  model_.set_extent(width, height);
  const auto oi = model_.tensor_info(DENOX_OUTPUT, 0);
  w_ = width;
  h_ = height;
  out_w_ = oi.width;
  out_h_ = oi.height;
  const size_t elem = f16_ ? 2 : 4;
  in_ = std::make_unique<vkhost::Buffer>(*dev_, size_t{in_c_} * w_ * h_ * elem, device_local);
  out_ = std::make_unique<vkhost::Buffer>(*dev_, size_t{out_c_} * out_w_ * out_h_ * elem, device_local);
  if (device_local) {
    const uint32_t half = f16_ ? 0x38003800u : 0x3f000000u;  // 0.5 as two fp16 or one fp32
    dev_->submit([&](VkCommandBuffer cmd) { vkCmdFillBuffer(cmd, in_->handle(), 0, VK_WHOLE_SIZE, half); });
  }
  const denox_dtype dtype = f16_ ? DENOX_DTYPE_F16 : DENOX_DTYPE_F32;
  model_.bind_input(0, {buffer_binding(0, in_c_, in_->handle(), 0, DENOX_LAYOUT_CHW, dtype, in_c_)});
  model_.bind_output(0, {buffer_binding(0, out_c_, out_->handle(), 0, DENOX_LAYOUT_CHW, dtype, out_c_)});
}

HostTensor GpuSession::run(const HostTensor& input) {
  if (input.shape.size() != 4 || input.shape[0] != 1 || input.shape[1] != in_c_)
    fail(ErrorCode::ShapeMismatch, "input " + input.shape_string() + ": the model takes 1x" + std::to_string(in_c_) + "xHxW");
  prepare(static_cast<uint32_t>(input.shape[3]), static_cast<uint32_t>(input.shape[2]));
  if (f16_) {
    std::vector<uint16_t> h(input.f32.size());
    std::transform(input.f32.begin(), input.f32.end(), h.begin(), vkhost::to_half);
    in_->write(h.data(), h.size() * 2);
  } else {
    in_->write(input.f32.data(), input.f32.size() * 4);
  }
  dev_->submit([&](VkCommandBuffer cmd) {
    ctx_.input_barrier(cmd, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_WRITE_BIT);
    model_.record(cmd);
    ctx_.output_barrier(cmd, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
  });
  HostTensor out;
  out.shape = {1, out_c_, out_h_, out_w_};
  out.f32.resize(out.element_count());
  if (f16_) {
    std::vector<uint16_t> h(out.f32.size());
    out_->read(h.data(), h.size() * 2);
    std::transform(h.begin(), h.end(), out.f32.begin(), vkhost::from_half);
  } else {
    out_->read(out.f32.data(), out.f32.size() * 4);
  }
  return out;
}

Timing GpuSession::time_model(int warmup, int runs) {
  // A frame as an engine records it: the timestamps only around it (vkhost::timed_frames).
  const std::vector<double> all = vkhost::timed_frames(*dev_, warmup + runs, [&](VkCommandBuffer cmd) { model_.record(cmd); });
  const std::vector<double> totals(all.begin() + warmup, all.end());
  Timing t;
  t.runs = runs;
  t.median_ms = median(totals);
  t.min_ms = *std::min_element(totals.begin(), totals.end());
  t.max_ms = *std::max_element(totals.begin(), totals.end());
  return t;
}

ClockWarmup GpuSession::warm_clock(double ms) {
  ClockWarmup w;
  // DENOX_TEST_WARM_CPU: also on a CPU device, with at least two inferences per submit (the
  // tests' way to run this path under validation; an inference there can take 100 ms).
  const bool forced = std::getenv("DENOX_TEST_WARM_CPU") != nullptr;
  if (ms <= 0 || (dev_->properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !forced)) return w;
  const double min_n = forced ? 2.0 : 1.0;
  // Submits of at most ~100 ms of inferences each (one long submit could trip a display
  // driver's watchdog) until `ms` of wall time has passed; each one sized by the previous one's
  // time per inference, the first holding min_n. Back-to-back recordings in one
  // command buffer are valid: each starts with a compute->compute barrier (denox.h).
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  int n = static_cast<int>(min_n);
  while (w.ms < ms) {
    const auto s0 = clock::now();
    dev_->submit([&](VkCommandBuffer cmd) {
      for (int r = 0; r < n; ++r) model_.record(cmd);
    });
    const auto s1 = clock::now();
    w.runs += n;
    ++w.submits;
    w.ms = std::chrono::duration<double, std::milli>(s1 - t0).count();
    const double per = std::max(std::chrono::duration<double, std::milli>(s1 - s0).count() / n, 1e-3);
    n = static_cast<int>(std::clamp(100.0 / per, min_n, 10000.0));
  }
  return w;
}

std::vector<DispatchTime> GpuSession::time_dispatches(int warmup, int runs) {
  const uint32_t n = model_.dispatch_count();
  auto all = vkhost::timed_runs(*dev_, n + 1, warmup + runs, [&](VkCommandBuffer cmd, VkQueryPool pool) {
    model_.record_timed(cmd, pool, true);
  });
  std::vector<DispatchTime> out;
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<double> d;
    for (size_t r = static_cast<size_t>(warmup); r < all.size(); ++r) d.push_back(all[r][i + 1] - all[r][i]);
    out.push_back({model_.dispatch_name(i), median(d)});
  }
  return out;
}

double GpuSession::record_host_us(int runs) {
  std::vector<double> us;
  dev_->submit([&](VkCommandBuffer cmd) {
    // Recorded many times into one command buffer that is then submitted once: each recording
    // is a complete inference, so the buffer stays valid.
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      model_.record(cmd);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
  });
  return median(us);
}

}  // namespace denox::cli
