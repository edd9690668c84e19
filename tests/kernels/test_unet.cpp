// Whole OIDN U-Nets (src/modelgen) through import -> build_portable_plan -> ExecutableModel ->
// record -> submit, against the CPU reference, at sizes that are not multiples of 16 (the
// model's own shape subgraph pads and crops).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "modelgen/oidn_unet.hpp"

using namespace denox;
using namespace denox::testing;

namespace {

void check_unet(modelgen::OidnUnetOptions::Size size, int channels, int64_t h, int64_t w, plan::Precision precision) {
  const compiler::Graph g = oidn(size, true, channels);
  const auto start = std::chrono::steady_clock::now();
  const double err = gpu_vs_reference(g, precision, {random_tensor({1, channels, h, w}, 5)});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(channels << " channels, " << h << "x" << w << ", " << plan::precision_name(precision) << ": relative L2 " << err << " in "
                << seconds << " s");
  CHECK(err <= tolerance(precision));
  CHECK(device().validation_errors() == 0);
}

}  // namespace

TEST_CASE("OIDN balanced U-Net, 3 channels, 29x37, fp32 and fp16", "[kernels][unet]") {
  check_unet(modelgen::OidnUnetOptions::Size::Balanced, 3, 29, 37, plan::Precision::F32);
  check_unet(modelgen::OidnUnetOptions::Size::Balanced, 3, 29, 37, plan::Precision::F16);
}

TEST_CASE("OIDN small U-Net, 9 channels, 35x19, fp32 and fp16", "[kernels][unet]") {
  check_unet(modelgen::OidnUnetOptions::Size::Small, 9, 35, 19, plan::Precision::F32);
  check_unet(modelgen::OidnUnetOptions::Size::Small, 9, 35, 19, plan::Precision::F16);
}

// Hidden (run with "[models]"): ONNX files from elsewhere, e.g. the PyTorch exports of
// tests/python, listed in DENOX_TEST_MODELS (colon-separated), each at 37x53 (or 32x48 when the
// model needs multiples of 16) in fp32 and fp16 against the CPU reference.
TEST_CASE("ONNX files named in DENOX_TEST_MODELS", "[.][models]") {
  const char* list = std::getenv("DENOX_TEST_MODELS");
  if (!list) return;
  std::string paths = list;
  for (size_t start = 0; start < paths.size();) {
    const size_t end = std::min(paths.find(':', start), paths.size());
    const std::string path = paths.substr(start, end - start);
    start = end + 1;
    const compiler::Graph g = compiler::import_onnx_file(path);
    const int64_t channels = g.program.constant_value(g.tensor(g.inputs.at(0)).shape.at(1));
    for (plan::Precision precision : {plan::Precision::F32, plan::Precision::F16}) {
      INFO(path << " " << plan::precision_name(precision));
      double err = 0;
      try {
        err = gpu_vs_reference(g, precision, {random_tensor({1, channels, 37, 53}, 2)});
      } catch (const Error& e) {
        if (e.code() != ErrorCode::ShapeMismatch && e.code() != ErrorCode::InvalidArgument) throw;
        err = gpu_vs_reference(g, precision, {random_tensor({1, channels, 32, 48}, 2)});
      }
      std::printf("%s %s: relative L2 %g\n", path.c_str(), plan::precision_name(precision), err);
      CHECK(err <= tolerance(precision));
    }
  }
  CHECK(device().validation_errors() == 0);
}
