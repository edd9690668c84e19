// denox_e2e_check: imports one ONNX model once, runs it on the CPU reference at every size given
// and compares each result with PyTorch's fp32 output (relative L2); then runs it through the
// public API's Vulkan path (libdenox, a headless context with the Khronos validation layer: the
// code of `denox run --backend vulkan --validation --no-cache`) once per --vulkan precision, at
// every size, against the same output. Run by run_e2e_case.py after the exporter wrote the model
// and the .npy pairs.
//
//   denox_e2e_check MODEL.onnx [--name CASE] [--symbolic] [--tolerance T]
//                   [--vulkan fp32|fp16 T ...] --case IN.npy EXPECTED.npy [--case ...]
//
// --symbolic: the model was exported with dynamic H/W, so its output extents must be shape-program
// expressions of symbols (not constants folded at import): the sizes after the first then run
// through the same imported graph, which is what proves the pad/crop arithmetic is symbolic.
// --vulkan P T: load the model once in precision P (the plan must really be P) and require
// relative L2 <= T at every size and no validation error.
#include "cli/gpu_session.hpp"  // volk before anything that includes vulkan.h

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "io/npy.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace {

using namespace denox;

struct Case {
  std::string input, expected;
};

struct VulkanRun {
  std::string precision;  // fp32 or fp16
  double tolerance = 0;
};

struct Args {
  std::string model, name;
  bool symbolic = false;
  double tolerance = 1e-4;
  std::vector<VulkanRun> vulkan;
  std::vector<Case> cases;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "denox_e2e_check: %s\nusage: denox_e2e_check MODEL.onnx [--name CASE] [--symbolic] "
               "[--tolerance T] [--vulkan fp32|fp16 T ...] --case IN.npy EXPECTED.npy [--case ...]\n", why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--symbolic") a.symbolic = true;
    else if (s == "--name" && i + 1 < argc) a.name = argv[++i];
    else if (s == "--tolerance" && i + 1 < argc) a.tolerance = std::atof(argv[++i]);
    else if (s == "--vulkan" && i + 2 < argc) a.vulkan.push_back({argv[i + 1], std::atof(argv[i + 2])}), i += 2;
    else if (s == "--case" && i + 2 < argc) a.cases.push_back({argv[i + 1], argv[i + 2]}), i += 2;
    else if (a.model.empty() && s.rfind("--", 0) != 0) a.model = s;
    else usage("unexpected argument '" + s + "'");
  }
  if (a.model.empty() || a.cases.empty()) usage("a model and at least one --case are required");
  for (const auto& v : a.vulkan)
    if ((v.precision != "fp32" && v.precision != "fp16") || !(v.tolerance > 0))
      usage("--vulkan takes fp32 or fp16 and a positive tolerance");
  if (a.name.empty()) a.name = a.model;
  return a;
}

// Fails unless every output extent past the channels is computed from a symbol: a dynamic
// export whose H/W the importer folded to constants would pass at its traced size only.
bool output_is_symbolic(const compiler::Graph& g) {
  const auto& p = g.program;
  if (p.symbol_names().empty()) {
    std::printf("FAIL: the dynamic model imported without shape symbols\n");
    return false;
  }
  const auto& shape = g.tensor(g.outputs.at(0)).shape;
  for (size_t a = 2; a < shape.size(); ++a) {
    if (p.is_constant(shape[a])) {
      std::printf("FAIL: output axis %zu is the constant %s, not a function of the input size\n", a,
                  p.to_string(shape[a]).c_str());
      return false;
    }
  }
  return true;
}

// Relative L2 error of `got` against `want`, or -1 when the shapes differ.
double relative_l2(const HostTensor& got, const HostTensor& want) {
  if (got.shape != want.shape || got.f32.size() != want.f32.size()) return -1;
  double num = 0, den = 0;
  for (size_t i = 0; i < want.f32.size(); ++i) {
    double d = static_cast<double>(got.f32[i]) - want.f32[i];
    num += d * d;
    den += static_cast<double>(want.f32[i]) * want.f32[i];
  }
  // NaN anywhere makes num NaN, and NaN <= tolerance is false: a NaN output fails.
  return std::sqrt(num / std::max(den, 1e-30));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Pair {
  HostTensor input, expected;
};

// Compares one result and prints one line naming the case, the backend and precision, the size
// and the error; failures are also collected for the summary at the end.
class Report {
 public:
  explicit Report(std::string name) : name_(std::move(name)) {}

  void compare(const std::string& backend, const Pair& p, const HostTensor& got, double tolerance, double ms) {
    const double err = relative_l2(got, p.expected);
    const bool ok = err >= 0 && err <= tolerance;
    const std::string what = name_ + " " + backend + " " + p.input.shape_string();
    if (err < 0) {
      fail(what + ": output " + got.shape_string() + ", PyTorch gives " + p.expected.shape_string());
      return;
    }
    char line[256];
    std::snprintf(line, sizeof line, "relative L2 %.3g (tolerance %.3g)", err, tolerance);
    if (!ok) fail(what + ": " + line);
    else std::printf("ok    %s -> %s: %s, %.0f ms\n", what.c_str(), got.shape_string().c_str(), line, ms);
    double& worst = worst_[backend];
    if (!(err <= worst)) worst = err;  // NaN sticks
  }

  void fail(const std::string& message) {
    std::printf("FAIL  %s\n", message.c_str());
    failures_.push_back(message);
  }

  // The largest error per backend, then every failure again (the log above can be long).
  int finish() const {
    for (const auto& [backend, err] : worst_) std::printf("max relative L2, %s: %.3g\n", backend.c_str(), err);
    for (const auto& f : failures_) std::printf("FAILED: %s\n", f.c_str());
    return failures_.empty() ? 0 : 1;
  }

 private:
  std::string name_;
  std::map<std::string, double> worst_;
  std::vector<std::string> failures_;
};

void run_cpu(const Args& a, const std::vector<Pair>& pairs, Report& report) try {
  auto t0 = std::chrono::steady_clock::now();
  compiler::Graph g = compiler::import_onnx_file(a.model);
  const double import_ms = ms_since(t0);
  if (g.inputs.size() != 1 || g.outputs.size() != 1) {
    report.fail(a.name + ": expected one input and one output, got " + std::to_string(g.inputs.size()) + " and " +
                std::to_string(g.outputs.size()));
    return;
  }
  std::printf("%s: %zu ops, %zu shape-program values, output %s (import %.0f ms)\n", a.model.c_str(), g.ops.size(),
              g.program.size(), g.shape_string(g.outputs[0]).c_str(), import_ms);
  if (a.symbolic && !output_is_symbolic(g)) {
    report.fail(a.name + ": the dynamic export's output extents are not symbolic");
    return;
  }
  for (const auto& p : pairs) {
    t0 = std::chrono::steady_clock::now();
    std::vector<HostTensor> out = reference::run_reference(g, {p.input});
    report.compare("cpu", p, out.at(0), a.tolerance, ms_since(t0));
  }
} catch (const std::exception& e) {  // import errors (denox::Error) too: the Vulkan runs still go
  report.fail(a.name + " cpu: " + e.what());
}

// One headless context per precision, like `denox run --backend vulkan --validation --no-cache`
// (the same GpuSession), but one model load for all sizes.
void run_vulkan(const Args& a, const VulkanRun& v, const std::vector<Pair>& pairs, Report& report) {
  const std::string backend = "vulkan " + v.precision;
  try {
    cli::GpuOptions o;
    o.precision = v.precision;
    o.no_cache = true;
    o.validation = true;
    cli::GpuSession s(a.model, o);
    const bool fp16 = s.model().precision() == DENOX_PRECISION_FP16;
    std::printf("%s: %s on %s, load %.0f ms\n", a.name.c_str(), backend.c_str(), s.context().info().device_name,
                s.load_ms());
    if (fp16 != (v.precision == "fp16")) {
      report.fail(a.name + " " + backend + ": the plan is " + (fp16 ? "fp16" : "fp32"));
      return;
    }
    // Validation errors fail the run they happen in (loading counts as the first size's run).
    uint64_t errors_before = 0;
    for (const auto& p : pairs) {
      const auto t0 = std::chrono::steady_clock::now();
      const HostTensor out = s.run(p.input);
      const double ms = ms_since(t0);
      const uint64_t errors = s.stats().validation_errors;
      if (errors > errors_before)
        report.fail(a.name + " " + backend + " " + p.input.shape_string() + ": " +
                    std::to_string(errors - errors_before) + " validation error(s) (logged above)");
      errors_before = errors;
      report.compare(backend, p, out, v.tolerance, ms);
    }
  } catch (const std::exception& e) {
    report.fail(a.name + " " + backend + ": " + e.what());
  }
}

int run(const Args& a) {
  std::vector<Pair> pairs;
  for (const auto& c : a.cases) pairs.push_back({io::read_npy(c.input), io::read_npy(c.expected)});
  Report report(a.name);
  run_cpu(a, pairs, report);
  for (const auto& v : a.vulkan) run_vulkan(a, v, pairs, report);
  return report.finish();
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    return run(a);
  } catch (const denox::Error& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::printf("FAIL (unexpected exception): %s\n", e.what());
    return 1;
  }
}
