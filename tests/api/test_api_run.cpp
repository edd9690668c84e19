// OIDN U-Nets through the C API on the engine's device, compared with the CPU reference at odd
// sizes: fp32 within 1e-4 relative L2, fp16 within 2e-2; no validation errors.
#include <catch2/catch.hpp>

#include "api_test_util.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;

namespace {

struct Case {
  Size size;
  int channels;
  denox_precision precision;
  denox_dtype dtype;
  denox_layout layout;
  int h, w;
};

void run_case(const Case& c) {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), c.size, c.channels, true);
  const auto input = random_image(c.channels, c.h, c.w, 11);
  const auto want = reference_output(model_path, input);

  denox_context ctx = make_context({});
  denox_model_options options{};
  options.precision = c.precision;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load");
  const auto got = run_on_buffers(ctx, model, input, c.dtype, c.layout);
  const double err = relative_l2(got, want.f32);
  INFO("relative L2 " << err << " at " << c.w << "x" << c.h << ", precision " << c.precision);
  CHECK(err <= (denox_model_precision(model) == DENOX_PRECISION_FP16 ? 2e-2 : 1e-4));
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

}  // namespace

TEST_CASE("OIDN small 3ch fp32 on CHW fp32 buffers at 37x53", "[api][run]") {
  run_case({Size::Small, 3, DENOX_PRECISION_FP32, DENOX_DTYPE_F32, DENOX_LAYOUT_CHW, 37, 53});
}

TEST_CASE("OIDN balanced 9ch fp32 on HWC fp32 buffers at 45x29", "[api][run]") {
  run_case({Size::Balanced, 9, DENOX_PRECISION_FP32, DENOX_DTYPE_F32, DENOX_LAYOUT_HWC, 45, 29});
}

TEST_CASE("OIDN balanced 3ch fp16 on HWC fp16 buffers at 37x53", "[api][run]") {
  if (!engine_device().fp16()) {
    WARN("skipped: the device has no fp16 storage");
    return;
  }
  run_case({Size::Balanced, 3, DENOX_PRECISION_FP16, DENOX_DTYPE_F16, DENOX_LAYOUT_HWC, 37, 53});
}

TEST_CASE("OIDN small 6ch fp16 on CHW fp32 buffers at 19x67", "[api][run]") {
  if (!engine_device().fp16()) {
    WARN("skipped: the device has no fp16 storage");
    return;
  }
  run_case({Size::Small, 6, DENOX_PRECISION_FP16, DENOX_DTYPE_F32, DENOX_LAYOUT_CHW, 19, 67});
}
