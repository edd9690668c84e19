// `denox run MODEL.onnx --input IN --output OUT [--backend cpu|vulkan]`: one inference (with
// --backend vulkan, MODEL may be a plan file: `denox compile --plan`).
// Inputs and outputs are .npy (float32, NCHW) or .pfm (a color image, 1x3xHxW). Outputs are
// written only when the whole run succeeded. The vulkan backend goes through the public C API
// (a headless context) and, with --json, reports what was compiled and what came from the cache.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/print_json.hpp"
#include "cli/gpu_session.hpp"
#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "io/npy.hpp"
#include "io/pfm.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace denox::cli {
namespace {

std::string extension_of(const std::string& path) { return std::filesystem::path(path).extension().string(); }

}  // namespace

HostTensor read_tensor(const std::string& path) {
  std::string ext = extension_of(path);
  if (ext == ".npy") return io::read_npy(path);
  if (ext == ".pfm") return io::read_pfm(path);
  fail(ErrorCode::InvalidArgument, "input '" + path + "': unknown format (use .npy or .pfm)");
}

namespace {

void check_output_format(const std::string& path) {
  std::string ext = extension_of(path);
  if (ext != ".npy" && ext != ".pfm") fail(ErrorCode::InvalidArgument, "output '" + path + "': unknown format (use .npy or .pfm)");
}

struct RunOptions {
  std::string model, backend = "cpu";
  std::vector<std::string> inputs, outputs;
  GpuOptions gpu;
  bool json = false;
};

void write_tensor(const std::string& path, const HostTensor& t) {
  if (extension_of(path) == ".pfm") io::write_pfm(path, t);
  else io::write_npy(path, t);
}

int run_vulkan(const RunOptions& o) {
  if (o.inputs.size() != 1 || o.outputs.size() != 1)
    fail(ErrorCode::InvalidArgument, "--backend vulkan takes one --input and one --output");
  const HostTensor input = read_tensor(o.inputs[0]);
  // (The CPU backend refuses them in its executor; here they would upload nothing.)
  if (input.is_int64) fail(ErrorCode::InvalidArgument, "input '" + o.inputs[0] + "' holds integers; the model takes a float image");
  GpuSession s(o.model, o.gpu);
  const auto t0 = std::chrono::steady_clock::now();
  const HostTensor out = s.run(input);
  const double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_tensor(o.outputs[0], out);
  const auto st = s.stats();
  const auto info = s.context().info();
  fail_on_validation_errors(st);
  if (o.json) {
    nlohmann::ordered_json j = {{"backend", "vulkan"},
                                {"device", info.device_name},
                                {"precision", precision_label(s.model())},
                                {"output_shape", out.shape_string()},
                                {"load_ms", s.load_ms()},
                                {"run_ms", run_ms}};
    add_load_counters(j, st);
    print_json(j);
    return 0;
  }
  std::printf("output: %s -> %s\n", out.shape_string().c_str(), o.outputs[0].c_str());
  std::printf("backend vulkan on %s (%s): load %.1f ms (%s), run with upload/readback %.1f ms\n", info.device_name,
              precision_label(s.model()).c_str(), s.load_ms(),
              st.shipped_plan_hits ? "plan from the shipped cache" : st.plan_cache_hits ? "plan from cache" : "compiled", run_ms);
  return 0;
}

int run(const RunOptions& o) {
  for (const auto& out : o.outputs) check_output_format(out);
  if (o.backend == "vulkan") return run_vulkan(o);
  if (is_plan_file(o.model))
    fail(ErrorCode::InvalidArgument, "'" + o.model + "' is a denox plan, not an ONNX model: the cpu backend runs ONNX models (run a plan with --backend vulkan)");
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  compiler::Graph graph = compiler::import_onnx_file(o.model);
  if (o.inputs.size() != graph.inputs.size()) {
    fail(ErrorCode::InvalidArgument, "the model has " + std::to_string(graph.inputs.size()) + " input(s), " +
                                         std::to_string(o.inputs.size()) + " --input given");
  }
  if (o.outputs.size() != graph.outputs.size()) {
    fail(ErrorCode::InvalidArgument, "the model has " + std::to_string(graph.outputs.size()) + " output(s), " +
                                         std::to_string(o.outputs.size()) + " --output given");
  }
  std::vector<HostTensor> inputs;
  for (const auto& path : o.inputs) inputs.push_back(read_tensor(path));
  auto t1 = clock::now();
  std::vector<HostTensor> outputs = reference::run_reference(graph, inputs);
  auto t2 = clock::now();
  for (size_t i = 0; i < outputs.size(); ++i) write_tensor(o.outputs[i], outputs[i]);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::printf("%s: %s -> %s\n", graph.tensor(graph.outputs[i]).name.c_str(), outputs[i].shape_string().c_str(), o.outputs[i].c_str());
  }
  std::printf("backend %s: import + read %.1f ms, inference %.1f ms\n", o.backend.c_str(), ms(t1 - t0), ms(t2 - t1));
  return 0;
}

}  // namespace

Action register_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on inputs from files");
  auto o = std::make_shared<RunOptions>();
  cmd->add_option("model", o->model, "ONNX model file, or (--backend vulkan) a plan file from `denox compile --plan`")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-i,--input", o->inputs, "Input file per model input, in order (.npy or .pfm)")->required();
  cmd->add_option("-o,--output", o->outputs, "Output file per model output, in order (.npy or .pfm)")->required();
  cmd->add_option("--backend", o->backend, "Where to run: cpu (the fp32 reference) or vulkan")
      ->check(CLI::IsMember({"cpu", "vulkan"}));
  add_gpu_options(cmd, o->gpu);
  cmd->add_flag("--json", o->json, "vulkan: print one JSON object (timings, compile and cache counters)");
  return [o] { return run(*o); };
}

}  // namespace denox::cli
