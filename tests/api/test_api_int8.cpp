// The int8 precision through the C API: calibration (from samples, saved, loaded back, refused
// when damaged), DENOX_PRECISION_INT8 loads (refused without a calibration, with one of another
// model, or on a device without int8 cooperative matrices), the plan against the CPU reference
// at odd sizes, its cache entry, and reloads that keep the calibration.
//
// lavapipe has no cooperative matrices: the tests that run int8 plans set the test hook
// DENOX_TEST_COOP_EMULATE=1 (api_compile.cpp), which lowers with COOP_EMULATE shaders (the
// int8 data flow in plain arithmetic), validation layer on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "../llvmpipe_version.hpp"
#include "api_test_util.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;
using namespace std::chrono_literals;

namespace {

std::string last() { return denox_last_error(); }

// Relative L2 against the fp32 reference: these random-weight U-Nets keep 8-bit codes through
// a dozen layers, 1.6e-2 to 3.2e-2 on lavapipe (fp16: 1.7e-3); a wrong scale, zero point or
// layout gives 0.3 and more.
constexpr double kInt8Tolerance = 4e-2;

// Samples at extents other than the test inputs', random (never zero) values.
struct Samples {
  std::vector<denox::HostTensor> images;
  std::vector<const float*> arrays;
  std::vector<denox_calibration_sample> samples;
  Samples(int channels, std::initializer_list<std::pair<int, int>> extents, uint32_t seed) {
    for (auto [w, h] : extents) images.push_back(random_image(channels, h, w, seed++));
    for (const auto& im : images) arrays.push_back(im.f32.data());
    for (size_t i = 0; i < images.size(); ++i)
      samples.push_back({static_cast<uint32_t>(images[i].shape[3]), static_cast<uint32_t>(images[i].shape[2]), &arrays[i], 1});
  }
};

denox_calibration calibrate(const fs::path& model, const Samples& s) {
  denox_calibration c = nullptr;
  require_ok(denox_calibrate_file(model.string().c_str(), s.samples.data(), static_cast<uint32_t>(s.samples.size()), &c), "calibrate");
  return c;
}

std::string saved(denox_calibration c) {
  size_t size = 0;
  require_ok(denox_calibration_save(c, nullptr, &size), "save size");
  std::string bytes(size, '\0');
  require_ok(denox_calibration_save(c, bytes.data(), &size), "save");
  return bytes;
}

// int8 plans are fp16 plans: a device without fp16 storage skips them (with a warning).
bool int8_plans_run_here() {
  if (engine_device().fp16()) return true;
  WARN("skipped: the device has no fp16 storage (int8 plans are fp16 plans)");
  return false;
}

// Debian 12's llvmpipe (Mesa 22.3) computes garbage in the emulated by-phase int8 conv with three
// or more X0 chunks and two or more X1 chunks (OIDN balanced's dec_conv4a and dec_conv3a); Mesa
// 25's computes it right (src/kernels/int8.md). The tests run on Mesa 25's lavapipe, which
// scripts/setup-deps.sh fetches; on an older one this skips, with a warning.
bool balanced_int8_runs_here() {
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
  vkGetPhysicalDeviceProperties2(engine_device().physical_device(), &p2);
  if (!llvmpipe_before_mesa25(driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE, driver.driverInfo)) return true;
  // "skipped on llvmpipe": CTest's skip (or, on Mesa 25's driver, fail) pattern for this test.
  WARN("skipped on llvmpipe, " << driver.driverInfo << ": it miscomputes the emulated by-phase int8 conv (Mesa 25 or later needed)");
  return false;
}

// Root mean square of got - want: int8's error is absolute (the calibration's steps).
double rms_error(const std::vector<float>& got, const std::vector<float>& want) {
  double sum = 0;
  for (size_t i = 0; i < want.size(); ++i) sum += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
  return std::sqrt(sum / double(want.size()));
}

// The degenerate extents the tests run: one pixel, and one or two pixels wide.
constexpr std::pair<int, int> kDegenerateExtents[] = {{1, 1}, {2, 3}, {1, 37}, {33, 1}, {131, 2}};
bool degenerate(std::pair<int, int> extent) {
  return std::find(std::begin(kDegenerateExtents), std::end(kDegenerateExtents), extent) != std::end(kDegenerateExtents);
}
// `ordinary` extents (w, h), then the degenerate ones. The first ordinary extent is the baseline
// of int8's RMS error: the degenerate extents hold it to its value there.
std::vector<std::pair<int, int>> with_degenerate_extents(std::initializer_list<std::pair<int, int>> ordinary) {
  std::vector<std::pair<int, int>> out(ordinary);
  out.insert(out.end(), std::begin(kDegenerateExtents), std::end(kDegenerateExtents));
  return out;
}

denox_model_options int8_options(denox_calibration c) {
  denox_model_options o{};
  o.precision = DENOX_PRECISION_INT8;
  o.calibration = c;
  return o;
}

}  // namespace

TEST_CASE("int8 calibration: made from samples, saved and loaded back, refused with reasons", "[api][int8]") {
  TempDir dir;
  const auto path = write_oidn(dir.path(), Size::Small, 3, true, 61);
  const Samples s(3, {{33, 21}, {27, 35}}, 100);
  denox_calibration c = calibrate(path, s);
  const std::string bytes = saved(c);
  CHECK(bytes.find("\"denox int8 calibration\"") != std::string::npos);
  CHECK(bytes.find("/enc_conv1/Relu_output_0") != std::string::npos);

  // From memory: the same model content, the same calibration; save(load(x)) == x.
  std::ifstream in(path, std::ios::binary);
  const std::string onnx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  denox_calibration from_memory = nullptr;
  require_ok(denox_calibrate_memory(onnx.data(), onnx.size(), s.samples.data(), 2, &from_memory), "calibrate from memory");
  CHECK(saved(from_memory) == bytes);
  CHECK(std::string(denox_calibration_model_hash(from_memory)) == denox_calibration_model_hash(c));
  denox_calibration loaded = nullptr;
  require_ok(denox_calibration_load(bytes.data(), bytes.size(), &loaded), "load");
  CHECK(saved(loaded) == bytes);
  size_t small = 10;
  char buf[10];
  CHECK(denox_calibration_save(loaded, buf, &small) == DENOX_ERROR_INVALID_ARGUMENT);

  // Damaged bytes: a reason, never a crash.
  auto refused = [&](const std::string& text, const std::string& reason) {
    denox_calibration bad = nullptr;
    INFO(text.substr(0, 200));
    CHECK(denox_calibration_load(text.data(), text.size(), &bad) == DENOX_ERROR_INVALID_ARGUMENT);
    CHECK(bad == nullptr);
    CHECK(last().find(reason) != std::string::npos);
  };
  refused(bytes.substr(0, bytes.size() / 2), "not JSON");
  refused("{\"format\": \"something else\"}", "not a denox int8 calibration");
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = bytes;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  refused(edited("\"version\": 1", "\"version\": 2"), "version 2");
  refused(edited("\"zero_point\": -128", "\"zero_point\": 5"), "zero point 5");
  refused(edited("\"scale\": ", "\"scale\": -"), "not a positive finite number");
  refused(edited("\"model\": ", "\"modl\": "), "no \"model\"");

  // Bad samples: named.
  denox_calibration none = nullptr;
  CHECK(denox_calibrate_file(path.string().c_str(), s.samples.data(), 0, &none) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("at least one sample") != std::string::npos);
  denox_calibration_sample two_inputs = s.samples[0];
  two_inputs.input_count = 2;
  CHECK(denox_calibrate_file(path.string().c_str(), &two_inputs, 1, &none) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("the model has 1") != std::string::npos);
  auto nan_image = random_image(3, 20, 20, 5);
  nan_image.f32[17] = std::numeric_limits<float>::quiet_NaN();
  const float* nan_array = nan_image.f32.data();
  const denox_calibration_sample nan_sample{20, 20, &nan_array, 1};
  CHECK(denox_calibrate_file(path.string().c_str(), &nan_sample, 1, &none) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("NaN") != std::string::npos);
  CHECK(denox_calibrate_file((dir / "missing.onnx").string().c_str(), s.samples.data(), 1, &none) == DENOX_ERROR_IO);
  CHECK(last().find("missing.onnx") != std::string::npos);
  CHECK(none == nullptr);
  denox_calibration_destroy(c);
  denox_calibration_destroy(from_memory);
  denox_calibration_destroy(loaded);
  denox_calibration_destroy(nullptr);
}

TEST_CASE("int8 loads are refused without a calibration, with another model's, and on a device without int8", "[api][int8]") {
  TempDir dir;
  const auto path_a = write_oidn(dir.path(), Size::Small, 3, true, 62);
  const auto path_b = write_oidn(dir.path(), Size::Small, 3, true, 63);
  denox_calibration cal_b = calibrate(path_b, Samples(3, {{24, 20}}, 7));
  denox_context ctx = make_context({});
  denox_model model = nullptr;
  denox_context_info info{};
  require_ok(denox_context_get_info(ctx, &info), "info");
  if (!info.cooperative_matrix) {
    // lavapipe: no cooperative matrices, so no int8 ones.
    CHECK(info.int8_supported == 0);
    const denox_model_options o = int8_options(cal_b);
    CHECK(denox_model_load_file(ctx, path_b.string().c_str(), &o, &model) == DENOX_ERROR_MISSING_FEATURE);
    CHECK(last().find("int8 cooperative matrices") != std::string::npos);
    CHECK(last().find("VK_KHR_cooperative_matrix") != std::string::npos);
  }
  {
    EmulatedCoop emulated;
    require_ok(denox_context_get_info(ctx, &info), "info");
    CHECK(info.int8_supported == (engine_device().fp16() ? 1 : 0));
    denox_model_options o = int8_options(nullptr);
    CHECK(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model) == DENOX_ERROR_INVALID_ARGUMENT);
    CHECK(last().find("needs a calibration") != std::string::npos);
    o.calibration = cal_b;
    CHECK(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model) == DENOX_ERROR_INVALID_ARGUMENT);
    CHECK(last().find("another model") != std::string::npos);
    CHECK(last().find(std::string(denox_calibration_model_hash(cal_b)).substr(0, 16)) != std::string::npos);
    CHECK(model == nullptr);
  }
  denox_calibration_destroy(cal_b);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("int8 plans through the API (emulated) against the CPU reference at odd sizes, cached apart from fp16", "[api][int8]") {
  if (!int8_plans_run_here()) return;
  EmulatedCoop emulated;
  TempDir dir;
  const auto path = write_oidn(dir.path(), Size::Small, 3, true, 64);
  denox_calibration c = calibrate(path, Samples(3, {{40, 24}, {26, 38}, {31, 31}}, 300));
  denox_context ctx = make_context(dir / "cache.sqlite3");
  denox_model_options o = int8_options(c);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "int8 load");
  denox_calibration_destroy(c);  // the model keeps its copy
  const uint32_t int8 = denox_model_int8_dispatch_count(model);
  CHECK(int8 >= 3);
  CHECK(denox_model_precision(model) == DENOX_PRECISION_FP16);
  // dec_conv1a, an fp16 up2 conv writing int8, on A_DIRECT reading its X0 in fp16 (emulated,
  // the element order needs no check): the heuristic's pick for it in int8 plans too.
  bool dec_conv1a_a_direct = false;
  const nlohmann::json report = report_of(model);  // (kept: a range-for over a temporary's member would dangle)
  for (const auto& step : report.at("schedule"))
    if (step.at("name").get<std::string>().find("dec_conv1a") != std::string::npos)
      dec_conv1a_a_direct |= step.at("config").get<std::string>().find("adirect") != std::string::npos;
  CHECK(dec_conv1a_a_direct);
  for (auto [w, h] : {std::pair{37, 29}, {22, 45}}) {
    const auto input = random_image(3, h, w, static_cast<uint32_t>(w));
    const auto want = reference_output(path, input);
    const double err = relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F16), want.f32);
    INFO(w << "x" << h << ": relative L2 " << err << " with " << int8 << " int8 dispatches");
    CHECK(err <= kInt8Tolerance);
  }
  denox_model_destroy(model);

  // The same model in fp16: another plan (no int8 dispatch), compiled rather than the int8 one
  // from the cache; the int8 load again: from the cache.
  denox_stats before{}, after{};
  require_ok(denox_context_get_stats(ctx, &before), "stats");
  denox_model_options fp16{};
  fp16.precision = DENOX_PRECISION_FP16;
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &fp16, &model), "fp16 load");
  CHECK(denox_model_int8_dispatch_count(model) == 0);
  denox_model_destroy(model);
  require_ok(denox_context_get_stats(ctx, &after), "stats");
  CHECK(after.plans_compiled == before.plans_compiled + 1);
  denox_calibration again = calibrate(path, Samples(3, {{40, 24}, {26, 38}, {31, 31}}, 300));  // the same samples
  o = int8_options(again);
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "int8 load again");
  require_ok(denox_context_get_stats(ctx, &before), "stats");
  CHECK(before.plans_compiled == after.plans_compiled);
  CHECK(before.plan_cache_hits == after.plan_cache_hits + 1);
  CHECK(denox_model_int8_dispatch_count(model) == int8);
  denox_model_destroy(model);
  denox_calibration_destroy(again);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("fp32, fp16 and int8 plans (emulated) at degenerate extents (1x1, 2x3, 1x37, 33x1, 131x2) against the CPU reference",
          "[api][int8]") {
  // Images one or two pixels wide put every tile-border case of the convs, pools and upsamples
  // into one row (and, with pad/crop, a frame that is almost all padding). fp32 and fp16 keep
  // their usual bounds. int8's error is absolute (its steps are the calibration's scales), and
  // these random-weight U-Nets' outputs shrink 5-34x at such extents, so its relative L2 can rise
  // with nothing wrong: up to 0.1-0.2 with bench/check_reference.sh's models, inputs and
  // calibrations, on the H200's production configurations as emulated (bench/RESULTS.md,
  // twenty-seventh session). With this test's seeds (lavapipe is deterministic) it stays at or
  // below 0.034, so 0.1 holds it with a 3x margin; another seed or calibration may need
  // check_reference's 0.25. A wrong row or tile (an error of the output's own size) breaks it.
  // int8's RMS error is also held to its value at 37x29 (here 0.11-0.42x of it): it must not
  // grow where the output shrinks.
  if (!int8_plans_run_here()) return;
  EmulatedCoop emulated;
  TempDir dir;
  denox_context ctx = make_context({});
  // OIDN small in fp32, fp16 and int8; balanced in fp16 (its int8 plan needs Mesa 25's
  // lavapipe: the [int8-mesa25] case runs it at these extents).
  for (Size size : {Size::Small, Size::Balanced}) {
    const bool small = size == Size::Small;
    INFO((small ? "OIDN small" : "OIDN balanced"));
    const auto path = write_oidn(dir.path(), size, 3, true, small ? 66 : 67);
    denox_model fp32 = nullptr, fp16 = nullptr, int8 = nullptr;
    denox_model_options o{};
    o.precision = DENOX_PRECISION_FP32;
    require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &fp32), "fp32 load");
    o.precision = DENOX_PRECISION_FP16;
    require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &fp16), "fp16 load");
    if (small) {
      denox_calibration c = calibrate(path, Samples(3, {{40, 24}, {26, 38}}, 500));
      o = int8_options(c);
      require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &int8), "int8 load");
      denox_calibration_destroy(c);
      CHECK(denox_model_int8_dispatch_count(int8) >= 3);
    }
    double int8_rms_at_37x29 = 0;
    for (auto [w, h] : with_degenerate_extents({{37, 29}})) {
      INFO(w << "x" << h);
      const bool baseline = !degenerate({w, h});
      const auto input = random_image(3, h, w, static_cast<uint32_t>(1000 + 7 * w + h));
      const auto want = reference_output(path, input);
      const double e32 = relative_l2(run_on_buffers(ctx, fp32, input, DENOX_DTYPE_F32), want.f32);
      const double e16 = relative_l2(run_on_buffers(ctx, fp16, input, DENOX_DTYPE_F32), want.f32);
      INFO("relative L2 fp32 " << e32 << ", fp16 " << e16);
      CHECK(e32 <= 1e-4);
      CHECK(e16 <= 2e-2);
      if (!int8) continue;
      const auto got8 = run_on_buffers(ctx, int8, input, DENOX_DTYPE_F32);
      const double e8 = relative_l2(got8, want.f32), rms8 = rms_error(got8, want.f32);
      if (baseline) int8_rms_at_37x29 = rms8;
      INFO("int8 " << e8 << " (RMS error " << rms8 << ", at 37x29 " << int8_rms_at_37x29 << ")");
      CHECK(e8 <= (baseline ? kInt8Tolerance : 0.1));
      if (!baseline) CHECK(rms8 <= int8_rms_at_37x29);
    }
    for (denox_model m : {fp32, fp16, int8})
      if (m) denox_model_destroy(m);
  }
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

// Registered apart (tests/api/CMakeLists.txt) to run on Mesa 25's lavapipe.
TEST_CASE("OIDN balanced's int8 plan (emulated), its up+concat convs by output phase, against the CPU reference at odd and degenerate sizes",
          "[.][int8-mesa25]") {
  if (!int8_plans_run_here() || !balanced_int8_runs_here()) return;
  EmulatedCoop emulated;
  TempDir dir;
  const auto path = write_oidn(dir.path(), Size::Balanced, 3, true, 65);
  denox_calibration c = calibrate(path, Samples(3, {{40, 24}, {26, 38}}, 400));
  denox_context ctx = make_context({});
  denox_model_options o = int8_options(c);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "int8 load");
  denox_calibration_destroy(c);
  // dec_conv4a, 3a and 2a (96 + 64, 112 + 48 and 96 + 32 input channels) by output phase: the
  // first two are the shapes Mesa 22.3's llvmpipe got wrong.
  int by_phase = 0;
  const nlohmann::json report = report_of(model);
  for (const auto& step : report.at("schedule"))
    by_phase += step.at("config").get<std::string>().find(" q8 up2") != std::string::npos;
  CHECK(by_phase == 3);
  double rms_at_37x29 = 0;
  for (auto [w, h] : with_degenerate_extents({{37, 29}, {45, 23}})) {
    const auto input = random_image(3, h, w, static_cast<uint32_t>(h));
    const auto want = reference_output(path, input);
    const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F16);
    const double err = relative_l2(got, want.f32), rms = rms_error(got, want.f32);
    if (w == 37 && h == 29) rms_at_37x29 = rms;
    INFO(w << "x" << h << ": relative L2 " << err << ", RMS error " << rms << " (at 37x29 " << rms_at_37x29 << ") with "
           << denox_model_int8_dispatch_count(model) << " int8 dispatches");
    // The extents one or two pixels wide are held as in the case above (here at most 0.036
    // relative, RMS 0.14-0.34x its value at 37x29).
    const bool tiny = degenerate({w, h});
    CHECK(err <= (tiny ? 0.1 : kInt8Tolerance));
    if (tiny) CHECK(rms <= rms_at_37x29);
  }
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("int8 reloads keep the load's calibration: the same model swaps in, another one is refused by name", "[api][int8]") {
  if (!int8_plans_run_here()) return;
  EmulatedCoop emulated;
  TempDir dir;
  const auto path_a = write_oidn(dir.path(), Size::Small, 3, true, 65);
  const auto path_b = write_oidn(dir.path(), Size::Small, 3, true, 66);
  denox_calibration c = calibrate(path_a, Samples(3, {{30, 26}, {41, 23}, {25, 37}}, 400));
  denox_context ctx = make_context({});
  const denox_model_options o = int8_options(c);
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path_a.string().c_str(), &o, &model), "int8 load");
  denox_calibration_destroy(c);
  const auto input = random_image(3, 21, 35, 9);
  const auto want = reference_output(path_a, input);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F16), want.f32) <= kInt8Tolerance);

  auto wait_idle = [&](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + 300s;
    denox_model_status s{};
    for (;;) {
      require_ok(denox_model_get_status(model, &s), "status");
      if (s.running_job == DENOX_JOB_NONE && done(s)) return s;
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(10ms);
    }
  };
  require_ok(denox_model_reload_file(model, path_b.string().c_str()), "reload B");
  auto s = wait_idle([](const denox_model_status& st) { return st.failed_jobs == 1; });
  CHECK(s.last_error_result == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(s.last_error).find("another model") != std::string::npos);
  require_ok(denox_model_reload_file(model, path_a.string().c_str()), "reload A");
  wait_idle([](const denox_model_status& st) { return st.swap_pending != 0; });
  const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F16);  // swaps at this record
  require_ok(denox_model_get_status(model, &s), "status");
  CHECK(s.swaps == 1);
  CHECK(relative_l2(got, want.f32) <= kInt8Tolerance);
  CHECK(denox_model_int8_dispatch_count(model) > 0);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}
