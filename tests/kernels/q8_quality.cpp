// The int8 precision's quality on a trained denoiser, through the product path (hidden test
// [.][q8-quality], a measurement, not a check): the shipped model's fp16 and int8 plans on the
// GPU's cooperative matrices, PSNR against the references of a data set rendered by
// examples/pathtracer (tools/train/README.md: NNNNN_sppS.npy H x W x 9, NNNNN_ref.npy H x W x 3),
// calibrated on another set. PSNR on display values as everywhere in the project (Reinhard, then
// gamma 1/2.2, peak 1, per image, averaged). bench/q8_quality.sh runs it on the GPU machine.
// Environment: DENOX_Q8_MODEL (models/oidn_pathtracer_balanced.onnx), DENOX_Q8_DATA (the
// held-out set), DENOX_Q8_CALIB (the calibration set), DENOX_Q8_CALIB_COUNT (8 inputs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "compiler/calibrate/calibrate.hpp"
#include "compiler/import/onnx_import.hpp"
#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "io/npy.hpp"
#include "kernels/lowering_target.hpp"

using namespace denox;

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// H x W x C (a data set file) -> 1 x C x H x W.
HostTensor nchw_of(const HostTensor& hwc) {
  const int64_t h = hwc.shape.at(0), w = hwc.shape.at(1), c = hwc.shape.at(2);
  HostTensor t;
  t.shape = {1, c, h, w};
  t.f32.resize(hwc.f32.size());
  for (int64_t p = 0; p < h * w; ++p)
    for (int64_t k = 0; k < c; ++k) t.f32[static_cast<size_t>(k * h * w + p)] = hwc.f32[static_cast<size_t>(p * c + k)];
  return t;
}

// PSNR of an NCHW color output against an H x W x 3 reference, on display values.
double display_psnr(const HostTensor& out, const HostTensor& ref_hwc) {
  auto display = [](double radiance) { return std::pow(std::max(radiance, 0.0) / (1.0 + std::max(radiance, 0.0)), 1.0 / 2.2); };
  const int64_t plane = ref_hwc.shape.at(0) * ref_hwc.shape.at(1);
  double sum = 0;
  for (int64_t p = 0; p < plane; ++p)
    for (int64_t k = 0; k < 3; ++k) {
      const double d = display(out.f32[static_cast<size_t>(k * plane + p)]) - display(ref_hwc.f32[static_cast<size_t>(p * 3 + k)]);
      sum += d * d;
    }
  return 10.0 * std::log10(static_cast<double>(3 * plane) / sum);
}

// The data set's inputs: (spp, scene file) -> path, in scene order.
std::map<int, std::vector<std::filesystem::path>> inputs_of(const std::filesystem::path& dir) {
  std::map<int, std::vector<std::filesystem::path>> by_spp;
  const std::regex name(R"((\d+)_spp(\d+)\.npy)");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::smatch m;
    const std::string base = f.filename().string();
    if (std::regex_match(base, m, name)) by_spp[std::stoi(m[2].str())].push_back(f);
  }
  return by_spp;
}

}  // namespace

TEST_CASE("int8 quality: the shipped denoiser's fp16 and int8 plans against references", "[.][q8-quality]") {
  if (!testing::coop_available()) return;
  const auto& ctx = testing::coop_device();
  kernels::LoweringTarget fp16 = kernels::lowering_target(ctx.caps());
  REQUIRE(fp16.coop.int8);
  const compiler::Graph g = compiler::import_onnx_file(env_or("DENOX_Q8_MODEL", "models/oidn_pathtracer_balanced.onnx"));
  const auto data = inputs_of(env_or("DENOX_Q8_DATA", "/tmp/denox-int8/test"));
  const auto calib = inputs_of(env_or("DENOX_Q8_CALIB", "/tmp/denox-int8/calib"));
  REQUIRE(!data.empty());
  REQUIRE(!calib.empty());

  // Calibration inputs: the first DENOX_Q8_CALIB_COUNT files, every spp in turn.
  const size_t count = static_cast<size_t>(std::atoi(env_or("DENOX_Q8_CALIB_COUNT", "8").c_str()));
  std::vector<std::vector<HostTensor>> samples;
  for (size_t i = 0; samples.size() < count; ++i) {
    bool any = false;
    for (const auto& [spp, files] : calib)
      if (i < files.size() && samples.size() < count) samples.push_back({nchw_of(io::read_npy(files[i].string()))}), any = true;
    if (!any) break;
  }
  const auto t0 = std::chrono::steady_clock::now();
  kernels::LoweringTarget int8 = fp16;
  int8.int8 = std::make_shared<kernels::QuantTable>(autotune::calibrate_int8(g, samples));
  std::printf("calibrated on %zu inputs in %.1f s\n", samples.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  const plan::Plan plan8 = testing::compile(g, plan::Precision::F16, int8);
  runtime::ExecutableModel model16(ctx, testing::compile(g, plan::Precision::F16, fp16), VK_NULL_HANDLE, testing::adapter_compiler(), false);
  runtime::ExecutableModel model8(ctx, plan8, VK_NULL_HANDLE, testing::adapter_compiler(), false);
  const auto families = testing::families(plan8);
  std::printf("int8 plan: %d conv2d_coopmat_q8 of %zu dispatches\n", families.count("conv2d_coopmat_q8") ? families.at("conv2d_coopmat_q8") : 0,
              plan8.dispatches.size());
  std::printf("\n%6s %8s %10s %10s %10s %10s\n", "spp", "images", "fp16 dB", "int8 dB", "int8-fp16", "worst");
  for (const auto& [spp, files] : data) {
    double sum16 = 0, sum8 = 0, worst = INFINITY;
    for (const auto& f : files) {
      const std::string ref = std::regex_replace(f.string(), std::regex(R"(_spp\d+\.npy$)"), "_ref.npy");
      const HostTensor in = nchw_of(io::read_npy(f.string())), reference = io::read_npy(ref);
      const double p16 = display_psnr(testing::run_model_on(ctx, model16, {in}).at(0), reference);
      const double p8 = display_psnr(testing::run_model_on(ctx, model8, {in}).at(0), reference);
      sum16 += p16, sum8 += p8, worst = std::min(worst, p8 - p16);
    }
    const double n = static_cast<double>(files.size());
    std::printf("%6d %8zu %10.2f %10.2f %10.2f %10.2f\n", spp, files.size(), sum16 / n, sum8 / n, (sum8 - sum16) / n, worst);
  }
}
