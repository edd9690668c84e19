// `denox bench MODEL.onnx --size WxH`: GPU time of one model at one resolution, measured with
// Vulkan timestamp queries (median of --runs after --warmup-ms of back-to-back inferences and
// --warmup runs; a timestamp before and after each frame only, since per-dispatch ones order
// the dispatches on NVIDIA's driver), plus a per-dispatch table (serialized) and the host cost
// of record(). `--json` prints one object for scripts (bench/).
#include <cstdio>
#include <random>

#include "cli/commands.hpp"
#include "cli/print_json.hpp"
#include "cli/gpu_session.hpp"

namespace denox::cli {
namespace {

struct BenchOptions {
  std::string model, size = "1920x1088";
  GpuOptions gpu;
  int runs = 30, warmup = 5;
  double warmup_ms = 500;
  bool json = false, per_dispatch = false;
};

int bench(BenchOptions o) {
  const auto [w, h] = parse_extent(o.size);
  o.gpu.tune_size = o.size;  // --tuning measure tunes for the benchmarked extent
  GpuSession s(o.model, o.gpu);
  s.prepare(w, h, /*device_local=*/true);
  const auto info = s.context().info();
  const ClockWarmup warmed = s.warm_clock(o.warmup_ms);
  const Timing t = s.time_model(o.warmup, o.runs);
  std::vector<DispatchTime> per;
  if (o.per_dispatch) per = s.time_dispatches(o.warmup, o.runs);
  const double record_us = s.record_host_us(std::max(o.runs, 20));
  const auto st = s.stats();
  const std::string label = precision_label(s.model());
  if (o.json) {
    nlohmann::ordered_json j = {{"model", o.model},
                                {"device", info.device_name},
                                {"width", w},
                                {"height", h},
                                {"precision", label},
                                {"tuning", o.gpu.tuning},
                                {"dispatches", s.model().dispatch_count()},
                                {"runs", t.runs},
                                {"clock_warmup_ms", warmed.ms},
                                {"clock_warmup_runs", warmed.runs},
                                {"clock_warmup_submits", warmed.submits},
                                {"median_ms", t.median_ms},
                                {"min_ms", t.min_ms},
                                {"max_ms", t.max_ms},
                                {"record_host_us", record_us},
                                {"load_ms", s.load_ms()}};
    add_load_counters(j, st);
    j["per_dispatch"] = nlohmann::ordered_json::array();
    for (const auto& d : per) j["per_dispatch"].push_back({{"name", d.name}, {"ms", d.median_ms}});
    print_json(j);
    fail_on_validation_errors(st);
    return 0;
  }
  std::printf("%s on %s, %ux%u, %s, tuning %s, %u dispatches\n", o.model.c_str(), info.device_name, w, h, label.c_str(),
              o.gpu.tuning.c_str(), s.model().dispatch_count());
  std::printf("%-28s %10s\n", "", "ms");
  std::printf("%-28s %10.3f\n", "GPU median", t.median_ms);
  std::printf("%-28s %10.3f\n", "GPU min", t.min_ms);
  std::printf("%-28s %10.3f\n", "GPU max", t.max_ms);
  std::printf("%-28s %10.3f\n", "record() host", record_us / 1000.0);
  std::printf("%-28s %10.1f\n", "load (compile or cache)", s.load_ms());
  std::printf("(median of %d runs after %.0f ms (%d runs) of clock warm-up and %d warm-up runs; plans compiled %llu, shaders "
              "compiled %llu)\n",
              t.runs, warmed.ms, warmed.runs, o.warmup,
              static_cast<unsigned long long>(st.plans_compiled), static_cast<unsigned long long>(st.shaders_compiled));
  if (!per.empty()) {
    std::printf("\n%-48s %10s %7s\n", "dispatch (serialized)", "ms", "%");
    double total = 0;
    for (const auto& d : per) total += d.median_ms;
    for (const auto& d : per) std::printf("%-48s %10.4f %6.1f%%\n", d.name.c_str(), d.median_ms, 100.0 * d.median_ms / total);
    std::printf("%-48s %10.4f\n", "sum", total);
  }
  fail_on_validation_errors(st);
  return 0;
}

}  // namespace

void add_gpu_options(CLI::App* cmd, GpuOptions& g) {
  cmd->add_option("--device", g.device, "Vulkan device index (default: the first discrete GPU, else the first device)");
  cmd->add_option("--precision", g.precision, "auto (fp16 where the device can), fp32, fp16 or int8 (needs --calibration)")
      ->check(CLI::IsMember({"auto", "fp32", "fp16", "int8"}));
  cmd->add_option("--calibration", g.calibration, "int8: the model's calibration file (`denox calibrate`)");
  cmd->add_option("--cache", g.cache_path, "Cache file (default: ~/.cache/denox/cache.sqlite3 or $DENOX_CACHE_DIR)");
  cmd->add_flag("--no-cache", g.no_cache, "Neither read nor write the writable cache (a --shipped-cache is still read)");
  cmd->add_option("--shipped-cache", g.shipped_cache_path,
                  "A read-only cache shipped with an application (`denox cache export`), read after the writable one, never "
                  "written; an error if it is missing or not a denox cache");
  cmd->add_flag("--validation", g.validation,
                "Enable the Khronos validation layer, synchronization validation included; its errors fail the command");
  cmd->add_option("--tuning", g.tuning, "Schedule: heuristic (cost model), measure (tuned on this GPU, cached) or exhaustive")
      ->check(CLI::IsMember({"heuristic", "measure", "exhaustive"}));
}

Action register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time a model on the GPU (Vulkan timestamp queries)");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("model", o->model, "ONNX model file, or a plan file from `denox compile --plan`")->required()->check(CLI::ExistingFile);
  cmd->add_option("--size", o->size, "Input extent WxH");
  cmd->add_option("--runs", o->runs, "Timed runs (median reported)")->check(CLI::Range(1, 10000));
  cmd->add_option("--warmup", o->warmup, "Untimed runs first")->check(CLI::Range(0, 1000));
  cmd->add_option("--warmup-ms", o->warmup_ms,
                  "Wall time of back-to-back untimed inferences before the warm-up runs, so the clock is up (GPUs only; 0: none)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_flag("--per-dispatch", o->per_dispatch, "Also time each dispatch (serialized)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  add_gpu_options(cmd, o->gpu);
  return [o] { return bench(*o); };
}

}  // namespace denox::cli
