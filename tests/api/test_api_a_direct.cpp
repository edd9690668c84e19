// Heuristic plans through the C API with conv2d_coopmat's A_DIRECT (its fragments filled in an
// element order the device must be checked for: denox_context_create runs the check,
// api_compile.cpp's check_a_direct, and every compile reads the answer). lavapipe has no
// cooperative matrices: the test hook DENOX_TEST_COOP_EMULATE=1 lowers with COOP_EMULATE
// shaders, whose A_DIRECT fills shared-memory fragments in the same order and needs no check.
// So this shows that the heuristic's A_DIRECT plans compute right through the API and are the
// same plan in both memory modes; that the check runs at context creation, and that no load
// submits for it, shows on the GPU machine (the log's "A_DIRECT convolutions on", the path
// tracer's external-memory loads: bench/RESULTS.md, twenty-second session).
#include <catch2/catch.hpp>

#include "api_test_util.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;

namespace {

// The schedule's A_DIRECT steps ("adirect" in their configuration) of a freshly compiled plan.
int a_direct_steps(denox_model model) {
  const nlohmann::json report = report_of(model);
  REQUIRE(report.at("from_cache") == false);
  int n = 0;
  for (const auto& step : report.at("schedule")) n += step.at("config").get<std::string>().find("adirect") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("heuristic fp16 plans take A_DIRECT and run right, and external memory gets the same plan", "[api][a-direct]") {
  if (!engine_device().fp16()) {
    WARN("skipped: the device has no fp16 storage");
    return;
  }
  EmulatedCoop emulated;
  TempDir dir;
  const auto path = write_oidn(dir.path(), Size::Small, 3, true, 91);
  denox_context ctx = make_context(dir / "cache.sqlite3");
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP16;
  o.tuning = DENOX_TUNING_HEURISTIC;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "heuristic load");
  // On the GPU OIDN small's convs of 32-64 channels but the HEAD and the wide-skip up2 convs
  // (tests/kernels/test_coop_a_direct.cpp names them). Emulated, the fragments take shared
  // memory too, and on lavapipe (32 KB) only dec_conv1a's one phase (8x16 tiles) still fits.
  const int taken = a_direct_steps(model);
  CHECK(taken >= 1);
  for (auto [w, h] : {std::pair{37, 29}, {22, 45}}) {
    const auto input = random_image(3, h, w, static_cast<uint32_t>(w) + 7);
    const double err = relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F16), reference_output(path, input).f32);
    INFO(w << "x" << h << ": relative L2 " << err << " with " << taken << " A_DIRECT steps");
    CHECK(err <= 2e-2);
  }
  denox_model_destroy(model);

  // External memory (a load that submits nothing, e.g. on an engine's worker thread): the same
  // heuristic plan, from the cache, since the check ran when the context was created.
  o.external_memory = 1;
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "external-memory heuristic load");
  CHECK(report_of(model).at("from_cache") == true);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  // ... and as a context's first load, compiled afresh: A_DIRECT all the same.
  ctx = make_context(dir / "cache-2.sqlite3");
  require_ok(denox_model_load_file(ctx, path.string().c_str(), &o, &model), "first load, external memory");
  CHECK(a_direct_steps(model) == taken);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}
