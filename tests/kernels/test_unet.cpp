// Whole OIDN U-Nets (src/modelgen) through import -> build_portable_plan -> ExecutableModel ->
// record -> submit, against the CPU reference, at sizes that are not multiples of 16 (the
// model's own shape subgraph pads and crops).
#include <catch2/catch.hpp>

#include <chrono>

#include "../runtime/gpu_test_support.hpp"
#include "compiler/import/onnx_import.hpp"
#include "modelgen/oidn_unet.hpp"

using namespace denox;
using namespace denox::testing;

namespace {

compiler::Graph unet(modelgen::OidnUnetOptions::Size size, int channels) {
  modelgen::OidnUnetOptions options;
  options.size = size;
  options.input_channels = channels;
  options.pad_to_16_and_crop = true;
  std::string bytes;
  modelgen::build_oidn_unet(options).SerializeToString(&bytes);
  return compiler::import_onnx_bytes(bytes.data(), bytes.size());
}

void check_unet(modelgen::OidnUnetOptions::Size size, int channels, int64_t h, int64_t w, plan::Precision precision) {
  const compiler::Graph g = unet(size, channels);
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
  check_unet(modelgen::OidnUnetOptions::Size::Balanced, 3, 37, 53, plan::Precision::F16);
  check_unet(modelgen::OidnUnetOptions::Size::Balanced, 3, 37, 53, plan::Precision::F32);
}

TEST_CASE("OIDN small U-Net, 9 channels, 35x19, fp32 and fp16", "[kernels][unet]") {
  check_unet(modelgen::OidnUnetOptions::Size::Small, 9, 35, 19, plan::Precision::F32);
  check_unet(modelgen::OidnUnetOptions::Size::Small, 9, 35, 19, plan::Precision::F16);
}
