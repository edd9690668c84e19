// denox_e2e_check: imports one ONNX model once, runs it on the CPU reference at every size given
// and compares each result with PyTorch's fp32 output (relative L2). Run by run_e2e_case.py
// after the exporter wrote the model and the .npy pairs.
//
//   denox_e2e_check MODEL.onnx [--symbolic] [--tolerance T] --case IN.npy EXPECTED.npy [--case ...]
//
// --symbolic: the model was exported with dynamic H/W, so its output extents must be shape-program
// expressions of symbols (not constants folded at import): the sizes after the first then run
// through the same imported graph, which is what proves the pad/crop arithmetic is symbolic.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
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

struct Args {
  std::string model;
  bool symbolic = false;
  double tolerance = 1e-4;
  std::vector<Case> cases;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "denox_e2e_check: %s\nusage: denox_e2e_check MODEL.onnx [--symbolic] [--tolerance T] "
               "--case IN.npy EXPECTED.npy [--case ...]\n", why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--symbolic") a.symbolic = true;
    else if (s == "--tolerance" && i + 1 < argc) a.tolerance = std::atof(argv[++i]);
    else if (s == "--case" && i + 2 < argc) a.cases.push_back({argv[i + 1], argv[i + 2]}), i += 2;
    else if (a.model.empty() && s.rfind("--", 0) != 0) a.model = s;
    else usage("unexpected argument '" + s + "'");
  }
  if (a.model.empty() || a.cases.empty()) usage("a model and at least one --case are required");
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

int run(const Args& a) {
  auto t0 = std::chrono::steady_clock::now();
  compiler::Graph g = compiler::import_onnx_file(a.model);
  double import_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (g.inputs.size() != 1 || g.outputs.size() != 1) {
    std::printf("FAIL: expected one input and one output, got %zu and %zu\n", g.inputs.size(), g.outputs.size());
    return 1;
  }
  std::printf("%s: %zu ops, %zu shape-program values, output %s (import %.0f ms)\n", a.model.c_str(), g.ops.size(),
              g.program.size(), g.shape_string(g.outputs[0]).c_str(), import_ms);
  if (a.symbolic && !output_is_symbolic(g)) return 1;
  int failed = 0;
  for (const auto& c : a.cases) {
    HostTensor in = io::read_npy(c.input), want = io::read_npy(c.expected);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<HostTensor> out = reference::run_reference(g, {in});
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    double err = relative_l2(out.at(0), want);
    bool ok = err >= 0 && err <= a.tolerance;
    failed += ok ? 0 : 1;
    if (err < 0) {
      std::printf("FAIL  %s -> %s, PyTorch gives %s\n", in.shape_string().c_str(), out[0].shape_string().c_str(),
                  want.shape_string().c_str());
    } else {
      std::printf("%s  %s -> %s: relative L2 %.3g (tolerance %.3g), %.0f ms\n", ok ? "ok  " : "FAIL",
                  in.shape_string().c_str(), out[0].shape_string().c_str(), err, a.tolerance, ms);
    }
  }
  return failed ? 1 : 0;
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
