// `denox compile MODEL --size WxH`: compiles a model for this machine's GPU the way a first
// load does, printing the chosen schedule (one line per step: inputs -> op + fusions -> output,
// configuration, time; the paper's Fig. 8) and, with --json, the library's schedule report.
// Measures on the device by default (results kept in the cache: a second compile measures
// nothing); --no-measure (--tuning heuristic) uses the heuristic cost model, --exhaustive
// (--tuning exhaustive) the whole config space.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/gpu_session.hpp"
#include "io/npy.hpp"  // write_file_atomically

namespace denox::cli {
namespace {

struct CompileOptions {
  std::string model, size = "1920x1088", plan_out;
  GpuOptions gpu;
  bool no_measure = false, exhaustive = false, json = false, quiet = false;
  bool size_given = false;  // --size on the command line (it only steers measured tuning)
  denox_tuning tuning = DENOX_TUNING_MEASURE;  // from the flags: compile_tuning
};

// --tuning, or --no-measure / --exhaustive (the older spellings); measure when none is given.
// Two that disagree are refused while parsing rather than one of them silently ignored.
denox_tuning compile_tuning(const CompileOptions& o, bool tuning_given) {
  if (o.no_measure && o.exhaustive) throw CLI::ValidationError("--no-measure", "cannot be combined with --exhaustive");
  const std::string flag = o.no_measure ? "heuristic" : o.exhaustive ? "exhaustive" : "";
  if (tuning_given && !flag.empty() && flag != o.gpu.tuning)
    throw CLI::ValidationError("--tuning", "--tuning " + o.gpu.tuning + " contradicts " + (o.no_measure ? "--no-measure" : "--exhaustive"));
  return tuning_from_name(tuning_given ? o.gpu.tuning : flag.empty() ? "measure" : flag);
}

// A one-line progress bar on stderr, redrawn per callback.
void progress_bar(const char* stage, uint32_t done, uint32_t total, const char* what, void* user) {
  if (*static_cast<bool*>(user)) return;
  const int width = 30;
  const int filled = total ? static_cast<int>(width * static_cast<double>(done) / total) : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::string item = what ? what : "";
  if (item.size() > 60) item = item.substr(0, 57) + "...";
  std::fprintf(stderr, "\r\033[K%-9s [%s] %u/%u %s", stage, bar.c_str(), done, total, item.c_str());
  if (std::string(stage) == "done") std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

void print_table(const nlohmann::json& r) {
  std::printf("%-58s -> %-40s -> %-26s %-44s %9s\n", "inputs [layout]", "op + fusions (family)", "output [layout]", "config", "ms");
  for (const auto& s : r.at("schedule")) {
    std::string inputs;
    for (const auto& i : s.at("inputs")) inputs += (inputs.empty() ? "" : ", ") + i.get<std::string>();
    const std::string op = s.at("name").get<std::string>() + " (" + s.at("family").get<std::string>() + ")";
    const double ms = s.at("ms").is_number() ? s.at("ms").get<double>() : 0.0;
    std::printf("%-58s -> %-40s -> %-26s %-44s %9.4f%s\n", inputs.c_str(), op.c_str(), s.at("output").get<std::string>().c_str(),
                s.at("config").get<std::string>().c_str(), ms, s.at("measured").get<bool>() ? "" : " (est.)");
  }
  const auto& t = r.at("time_ms");
  std::printf("\n%d dispatches, predicted %.3f ms (%s tuning, %s configs, at %s)\n", r.at("dispatches").get<int>(),
              r.at("total_ms").get<double>(), r.at("tuning").get<std::string>().c_str(), r.at("space").get<std::string>().c_str(),
              r.at("tune_extent").get<std::string>().c_str());
  std::printf("edges: %d enumerated (%d structures, %d kept), %d after pruning; %d measured, %d from the cache, %d failed",
              r.at("implementations").get<int>(), r.at("structures").get<int>(), r.at("structures_kept").get<int>(),
              r.at("edges").get<int>(), r.at("measured_edges").get<int>(), r.at("cached_edges").get<int>(),
              r.at("failed_edges").get<int>());
  // Layers of the same shapes run the same edge: it is timed once (measure.cpp).
  if (const int same = r.value("same_edges", 0); same > 0)
    std::printf("; %d edge%s the same as another one (%s)", same, same == 1 ? "" : "s", r.at("measured_edges").get<int>() > 0 ? "timed once" : "one row");
  // Timed a second time: the first timing ran while the GPU's clock was down (measure.cpp).
  if (const int again = r.value("timed_again_edges", 0); again > 0) std::printf("; %d timed again, the clock having been down", again);
  std::printf("\n");
  if (r.contains("pipelines")) {
    const auto& swaps = r.at("pipeline_swaps");
    // A step moves to another step's configuration when the cold pipeline it would add
    // costs more than the measured difference (src/compiler/schedule/share_pipelines.hpp).
    if (swaps.empty())
      std::printf("pipelines: %d distinct; no step switched to a configuration another dispatch uses\n", r.at("pipelines").get<int>());
    else
      std::printf("pipelines: %d distinct; %zu step%s switched to a configuration another dispatch uses (a cold start, 2 us, "
                  "outweighs the measured difference):\n",
                  r.at("pipelines").get<int>(), swaps.size(), swaps.size() == 1 ? "" : "s");
    for (const auto& s : swaps) {
      const double extra = s.at("measured_extra_ms").is_number() ? s.at("measured_extra_ms").get<double>() : 0.0;
      std::printf("  %s: %s -> %s (%+.4f ms measured alone, %d -> %d pipelines)\n", s.at("step").get<std::string>().c_str(),
                  s.at("from").get<std::string>().c_str(), s.at("to").get<std::string>().c_str(), extra, s.at("pipelines_before").get<int>(),
                  s.at("pipelines_after").get<int>());
    }
  }
  if (r.contains("check") && r.at("check").at("timed").get<bool>()) {
    const auto& c = r.at("check");
    std::printf("checked against the heuristic plan, both timed whole: tuned %.4f ms, heuristic %.4f ms; kept the %s plan%s\n",
                c.at("tuned_ms").get<double>(), c.at("heuristic_ms").get<double>(), c.at("kept").get<std::string>().c_str(),
                c.at("kept") == "heuristic" ? " (the table above is its estimate)" : "");
  }
  std::printf("time (ms): import %.1f, enumerate %.1f, prune %.1f, measure %.1f, select %.1f, lower %.1f, shaders %.1f, total %.1f\n",
              t.at("import").get<double>(), t.at("enumerate").get<double>(), t.at("prune").get<double>(), t.at("measure").get<double>(),
              t.at("select").get<double>(), t.at("lower").get<double>(), t.at("shaders").get<double>(), t.at("total").get<double>());
}

int compile(const CompileOptions& o) {
  const auto [w, h] = parse_extent(o.size);
  if (o.size_given && o.tuning == DENOX_TUNING_HEURISTIC)
    spdlog::warn("denox: --size {} has no effect with heuristic tuning: its cost model ranks every layer at 1920x1088, and the plan "
                 "runs at any extent",
                 o.size);
  const denox_context_options co = context_options(o.gpu);
  Context ctx = Context::headless(o.gpu.device, o.gpu.validation, &co);
  Calibration calibration;
  denox_model_options mo = model_options(o.gpu, calibration);
  mo.tuning = o.tuning;
  mo.tune_width = w;
  mo.tune_height = h;
  mo.recompile = 1;  // always schedule (measurements still come from the cache)
  bool silent = o.quiet;
  mo.progress = progress_bar;
  mo.progress_user_data = &silent;
  Model model = Model::from_file(ctx, o.model, &mo);
  const std::string report = model.schedule_report();
  if (!o.plan_out.empty()) {
    const auto bytes = model.export_plan();
    io::write_file_atomically(o.plan_out, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  if (o.json) {
    std::printf("%s\n", report.c_str());
  } else {
    print_table(nlohmann::json::parse(report));
  }
  fail_on_validation_errors(ctx.stats());
  return 0;
}

}  // namespace

Action register_compile(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile (and tune) a model for this GPU; print the chosen schedule");
  auto o = std::make_shared<CompileOptions>();
  cmd->add_option("model", o->model, "ONNX model file")->required()->check(CLI::ExistingFile);
  CLI::Option* size = cmd->add_option("--size", o->size, "Extent to tune for, WxH (measured tuning; the heuristic ranks at 1920x1088)");
  cmd->add_flag("--no-measure", o->no_measure, "Heuristic cost model only: run nothing on the GPU");
  cmd->add_flag("--exhaustive", o->exhaustive, "Measure the whole configuration space (no config pruning)");
  cmd->add_flag("--json", o->json, "Print the schedule report as one JSON object");
  cmd->add_flag("--quiet", o->quiet, "No progress bar");
  cmd->add_option("--plan", o->plan_out, "Also write the compiled plan to this file (for denox_model_load_plan)");
  add_gpu_options(cmd, o->gpu);
  // (GpuOptions' --tuning defaults to heuristic, bench's default; compile's is measure.)
  CLI::Option* tuning = cmd->get_option("--tuning");
  tuning->description("Schedule: measure (the default here: tuned on this GPU, cached), heuristic (cost model, as --no-measure) or exhaustive (as --exhaustive)");
  cmd->parse_complete_callback([o, tuning, size] {
    o->tuning = compile_tuning(*o, tuning->count() > 0);
    o->size_given = size->count() > 0;
  });
  return [o] { return compile(*o); };
}

}  // namespace denox::cli
