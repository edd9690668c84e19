#include "api/api_compile.hpp"


#include <chrono>
#include <cstdlib>
#include <optional>

#include "api/api_plan_check.hpp"
#include "api/api_report.hpp"
#include "common/log.hpp"
#include "compiler/import/onnx_import.hpp"
#include "compiler/schedule/schedule.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/shader_source.hpp"
#include "runtime/cache/content_hash.hpp"
#include "runtime/measure/measure.hpp"
#include "runtime/vulkan/spirv_requirements.hpp"

namespace denox::api {

namespace {

// The lowering's identity: bump when the lowering changes what it emits for the same graph
// without the shaders changing.
constexpr const char* kLowering = "lowering/5";  // 5: NHWC tensors between coop convs

// Tests only: DENOX_TEST_COOP_EMULATE=1 makes every fp16 plan a cooperative-matrix plan with
// COOP_EMULATE=1 shaders (plain arithmetic, H100-like shapes), int8 included, so that the int8
// path through the API runs on lavapipe in CI. Never set it in a product: the plans are slow.
bool coop_emulated_for_tests() {
  const char* v = std::getenv("DENOX_TEST_COOP_EMULATE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

kernels::LoweringTarget device_target(const denox_context_T& ctx) {
  const auto& caps = ctx.device->caps();
  return coop_emulated_for_tests() ? kernels::emulated_lowering_target(caps) : kernels::lowering_target(caps);
}

// Why this device cannot run int8 convolutions ("" when it can).
std::string int8_missing(const denox_context_T& ctx) {
  if (coop_emulated_for_tests()) return "";
  const auto& caps = ctx.device->caps();
  if (kernels::lowering_target(caps).coop.int8) return "";
  if (!caps.cooperative_matrix) return "VK_KHR_cooperative_matrix (with its cooperativeMatrix feature) is not enabled";
  if (!caps.vulkan_memory_model) return "VkPhysicalDeviceVulkan12Features::vulkanMemoryModel (which its shaders use) is not enabled";
  if (!caps.shader_int8) return "VkPhysicalDeviceVulkan12Features::shaderInt8 is not enabled";
  return "the device reports no 16x16x32 sint8 x sint8 -> sint32 subgroup cooperative-matrix shape";
}

// What the lowering may use on this device: cooperative-matrix convolutions for fp16 plans
// where the device has them enabled (int8 ones too for an INT8 request), else the portable
// shaders. Throws InvalidArgument when the request's calibration is of another model.
kernels::LoweringTarget target_for(const denox_context_T& ctx, const CompileRequest& request, const std::string& model_hash) {
  if (request.precision != plan::Precision::F16) return {};
  kernels::LoweringTarget t = device_target(ctx);
  // A_DIRECT where the element-order check passed: context creation ran it (check_a_direct);
  // compiles only read the answer (background views share it), so none submits for it.
  if (!coop_emulated_for_tests()) kernels::enable_checked_a_direct(t, request.measure_device != nullptr ? *request.measure_device : *ctx.device);
  if (const auto& c = request.calibration) {
    if (c->model_hash != model_hash)
      fail(ErrorCode::InvalidArgument, "the int8 calibration was made for another model (content hash " + c->model_hash.substr(0, 16) +
                                           "..., this model " + model_hash.substr(0, 16) +
                                           "...): calibrate this model (denox_calibrate_file, `denox calibrate`)");
    t.int8 = std::shared_ptr<const kernels::QuantTable>(c, &c->table);
  }
  return t;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The model's content: the ONNX bytes and every constant the importer read, which covers
// external data files without the API re-parsing the model to find them.
std::string model_hash(const void* onnx, size_t size, const compiler::Graph& graph) {
  cache::ContentHasher h;
  h.field(onnx, size);
  for (const auto& t : graph.tensors) {
    if (t.f32_data) h.field(t.f32_data->data(), t.f32_data->size() * sizeof(float));
    if (t.i64_data) h.field(t.i64_data->data(), t.i64_data->size() * sizeof(int64_t));
  }
  return h.hex();
}

// Every embedded shader text: a rebuilt denox with edited shaders must not reuse old plans even
// when its version string did not change.
const std::string& shader_set_hash() {
  static const std::string hash = [] {
    cache::ContentHasher h;
    for (const auto& f : kernels::detail::embedded_shader_files()) h.field(f.name).field(f.text);
    return h.hex();
  }();
  return hash;
}

const char* tuning_name(denox_tuning t) {
  switch (t) {
    case DENOX_TUNING_HEURISTIC: return "heuristic";
    case DENOX_TUNING_MEASURE: return "measure";
    case DENOX_TUNING_EXHAUSTIVE: return "exhaustive";
  }
  return "?";
}

// The schedule's identity in the cache key: heuristic plans do not depend on the extent (the
// cost model ranks the same way at every size); measured ones are per resolution class.
std::string tuning_key(const CompileRequest& r) {
  if (r.tuning == DENOX_TUNING_HEURISTIC) return "heuristic";
  return std::string(tuning_name(r.tuning)) + "@" + std::to_string(r.width) + "x" + std::to_string(r.height);
}

cache::CacheKey key_for(const denox_context_T& ctx, const std::string& model, const CompileRequest& r,
                        const kernels::LoweringTarget& target) {
  cache::CacheKey key;
  key.model_hash = model;
  key.device = ctx.identity;
  key.denox_version = std::string(DENOX_VERSION_STRING) + "+shaders." + shader_set_hash();
  key.options = std::string("precision=") + plan::precision_name(r.precision) + ";" + kLowering + "=" + target.key() +
                ";tuning=" + tuning_key(r);
  return key;
}

// Refuses (InvalidModel) a pipeline whose module `r` is not the one the pipeline describes: its
// creation would be undefined behaviour. `shader` names it.
void refuse_mismatched_module(const runtime::SpirvRequirements& r, const plan::Pipeline& p, const std::string& shader) {
  const std::string wrong = runtime::spirv_interface_mismatch(r, p.local_size, p.binding_count, p.push_constant_count * 4);
  if (!wrong.empty()) fail(ErrorCode::InvalidModel, "plan: " + shader + " " + wrong + "; the plan is damaged or was not written by denox");
}

// A cache row's plan, refused (InvalidModel) when a pipeline lacks its SPIR-V or its SPIR-V is
// not the module its pipeline describes (workgroup size, descriptors, push constants): a row
// damaged past its checksum, or written by hand, is compiled again instead of reaching the
// driver, where such a module is undefined behaviour. (Reading the words costs microseconds;
// the device's own limits were this row's key.)
plan::Plan cached_plan_of(std::span<const std::uint8_t> bytes) {
  plan::Plan p = plan::deserialize_plan(bytes);
  for (const auto& pipe : p.pipelines) {
    if (pipe.spirv.empty()) fail(ErrorCode::InvalidModel, "plan: pipeline '" + pipe.family + "' has no SPIR-V");
    const std::string shader = "the plan's '" + pipe.family + "' shader";
    refuse_mismatched_module(runtime::read_spirv_requirements(pipe.spirv, shader), pipe, shader);
  }
  return p;
}

// A cached plan (from the writable cache, else the shipped one: `from` says which), or nullopt
// when there is none or it cannot be used (logged, then recompiled).
std::optional<plan::Plan> load_cached(denox_context_T& ctx, const cache::CacheKey& key, cache::CacheLayer& from) {
  auto bytes = ctx.cache.load_plan(key, &from);
  if (!bytes) return std::nullopt;
  try {
    return cached_plan_of(*bytes);
  } catch (const Error& e) {
    log::warn("denox: ignoring a cached plan that cannot be used ({}); compiling again", e.what());
    return std::nullopt;
  }
}

// The shipped cache was given for this model but has no plan for this key: say why, where
// the plans came from and what happens instead, once per load (a game that shipped plans for
// other GPUs only should hear about it, players' machines then compile).
void warn_shipped_miss(denox_context_T& ctx, const cache::CacheKey& key, const CompileRequest& request) {
  const auto why = ctx.cache.explain_shipped_miss(key);
  if (!why) return;
  const auto& writable = ctx.cache.writable();
  log::warn("denox: the shipped cache '{}' has no plan of this model for this device: {}; compiling it here with {} tuning "
               "instead ({})",
               ctx.cache.shipped().path().string(), *why, tuning_key(request),
               writable.enabled() ? "the plan goes to the writable cache '" + writable.path().string() + "'"
                                  : "not cached: the writable cache is off");
}

// The shipped cache's plan of this model for this GPU under another driver (after a driver
// update), if it runs here; nullopt otherwise (said in the log).
std::optional<plan::Plan> other_driver_plan(denox_context_T& ctx, const cache::CacheKey& key) {
  auto other = ctx.cache.load_shipped_for_other_driver(key);
  if (!other) return std::nullopt;
  const std::string path = ctx.cache.shipped().path().string();
  try {
    plan::Plan p = cached_plan_of(other->plan);
    check_plan_runs_here(ctx, p);
    // A warning once per context (a driver update is routine for players; every load of every
    // model would say it again), then at info level.
    const bool first = !ctx.warned_other_driver.exchange(true);
    log::logger().log(first ? spdlog::level::warn : spdlog::level::info,
                      "denox: the shipped cache '{}' has no plan of this model for this driver ([{}]); using its plan made on "
                      "this GPU under driver [{}] (the driver changed since the cache was made; the plan is not copied to the "
                      "writable cache)",
                      path, key.device.describe(), other->key.device.describe());
    return p;
  } catch (const Error& e) {
    log::warn("denox: the shipped cache '{}' has a plan of this model for this GPU under another driver, but it cannot be used "
              "here ({})", path, e.what());
    return std::nullopt;
  }
}

}  // namespace

bool int8_supported(const denox_context_T& ctx) { return ctx.device->caps().fp16_usable() && int8_missing(ctx).empty(); }

plan::Precision resolve_precision(const denox_context_T& ctx, denox_precision requested) {
  const bool fp16 = ctx.device->caps().fp16_usable();
  switch (requested) {
    case DENOX_PRECISION_INT8: {
      if (!fp16)
        fail(ErrorCode::MissingFeature, "precision int8 needs storageBuffer16BitAccess and shaderFloat16 enabled on device '" +
                                            ctx.device->caps().device_name + "' (its other tensors are fp16)");
      const std::string missing = int8_missing(ctx);
      if (!missing.empty())
        fail(ErrorCode::MissingFeature, "precision int8 needs int8 cooperative matrices; on device '" + ctx.device->caps().device_name +
                                            "' " + missing);
      return plan::Precision::F16;
    }
    case DENOX_PRECISION_AUTO: return fp16 ? plan::Precision::F16 : plan::Precision::F32;
    case DENOX_PRECISION_FP32: return plan::Precision::F32;
    case DENOX_PRECISION_FP16:
      if (!fp16)
        fail(ErrorCode::MissingFeature, "precision fp16 needs storageBuffer16BitAccess and shaderFloat16 enabled on device '" +
                                            ctx.device->caps().device_name + "'");
      return plan::Precision::F16;
  }
  fail(ErrorCode::InvalidArgument, "unknown precision " + std::to_string(static_cast<int>(requested)));
}

void complete_pipelines(denox_context_T& ctx, plan::Plan& plan) { kernels::compile_pipelines(plan, ctx.compiler); }

namespace {

bool defined(const plan::Pipeline& p, const char* macro) {
  for (const auto& [name, value] : p.defines)
    if (name == macro) return value != "0";
  return false;
}

bool emulated(const plan::Pipeline& p) { return defined(p, "COOP_EMULATE"); }

// int8 fragments: the int8 convolution, or an up2 conv's int8 X0.
bool uses_int8(const plan::Pipeline& p) { return p.family == "conv2d_coopmat_q8" || defined(p, "X0_Q8"); }

}  // namespace

uint32_t int8_dispatches(const plan::Plan& plan) {
  uint32_t n = 0;
  for (const auto& d : plan.dispatches) n += uses_int8(plan.pipelines.at(d.pipeline)) ? 1 : 0;
  return n;
}

void check_plan_runs_here(const denox_context_T& ctx, const plan::Plan& plan, const std::vector<bool>* compiled_here) {
  const auto& caps = ctx.device->caps();
  // Each weight range is bound as one storage buffer descriptor: a plan made where descriptors
  // may span more (4 GB on many desktop GPUs) must not bind more than this device allows.
  for (const auto& w : plan.weights)
    if (w.size > caps.max_storage_buffer_range)
      fail(ErrorCode::MissingFeature, "the plan's weight range '" + w.name + "' takes " + std::to_string(w.size) +
                                          " bytes, more than one storage buffer may span on device '" + caps.device_name +
                                          "' (maxStorageBufferRange " + std::to_string(caps.max_storage_buffer_range) +
                                          "); compile the plan on this device");
  // Each pipeline's first dispatch, to name it (one pass: a scan per pipeline was quadratic).
  std::vector<const plan::Dispatch*> first_use(plan.pipelines.size(), nullptr);
  for (const auto& d : plan.dispatches)
    if (d.pipeline < first_use.size() && first_use[d.pipeline] == nullptr) first_use[d.pipeline] = &d;
  for (size_t i = 0; i < plan.pipelines.size(); ++i) {
    if (compiled_here != nullptr && !compiled_here->at(i)) continue;  // (checked when the plan came in)
    const plan::Pipeline& p = plan.pipelines[i];
    // What the SPIR-V itself asks: a plan made where a workgroup may have more shared memory (64
    // KB on many AMD and Intel GPUs, 48 KB on NVIDIA's) or where other cooperative-matrix shapes
    // exist would make pipeline creation undefined behaviour here (a driver may crash).
    std::string shader = "the plan's '" + p.family + "' shader";
    std::optional<runtime::SpirvRequirements> requirements;
    if (!p.spirv.empty()) {
      if (first_use[i] != nullptr) shader += " for '" + first_use[i]->name + "'";
      requirements = runtime::read_spirv_requirements(p.spirv, shader);
      // (A capability this denox has no feature for passes SPIR-V its own glslang wrote just now.)
      const std::string unmet = runtime::unmet_spirv_requirement(*requirements, caps, compiled_here == nullptr);
      if (!unmet.empty()) fail(ErrorCode::MissingFeature, shader + " " + unmet + " on device '" + caps.device_name + "'; compile the plan on this device");
    }
    // Workgroups larger than the device takes: pipeline creation is undefined behaviour then.
    const uint64_t invocations = uint64_t{p.local_size[0]} * p.local_size[1] * p.local_size[2];
    bool too_large = invocations > caps.max_workgroup_invocations;
    for (int k = 0; k < 3; ++k) too_large = too_large || p.local_size[k] > caps.max_workgroup_size[k];
    if (too_large)
      fail(ErrorCode::MissingFeature, "the plan's '" + p.family + "' shaders run workgroups of " + std::to_string(p.local_size[0]) + "x" +
                                          std::to_string(p.local_size[1]) + "x" + std::to_string(p.local_size[2]) + " invocations, but device '" +
                                          caps.device_name + "' takes at most " + std::to_string(caps.max_workgroup_size[0]) + "x" +
                                          std::to_string(caps.max_workgroup_size[1]) + "x" + std::to_string(caps.max_workgroup_size[2]) + " and " +
                                          std::to_string(caps.max_workgroup_invocations) + " in all; compile the plan on this device");
    // The module must be the one its pipeline describes (workgroup size, descriptors), or
    // pipeline creation is undefined behaviour: a damaged or hand-made plan.
    if (requirements) refuse_mismatched_module(*requirements, p, shader);
    // Plain-arithmetic stand-ins for cooperative matrices exist only in tests: a plan file that
    // names the macro elsewhere does not escape the checks below.
    if (emulated(p) && coop_emulated_for_tests()) continue;
    if (uses_int8(p)) {
      const std::string missing = int8_missing(ctx);
      if (!missing.empty())
        fail(ErrorCode::MissingFeature, "the plan uses int8 cooperative-matrix convolutions but on device '" +
                                            caps.device_name + "' " + missing + "; compile the plan on this device");
    }
    if (p.family.find("coopmat") != std::string::npos && !caps.cooperative_matrix)
      fail(ErrorCode::MissingFeature, "the plan uses cooperative-matrix convolutions ('" + p.family + "') but device '" +
                                          caps.device_name +
                                          "' has not enabled VK_KHR_cooperative_matrix; compile the plan on this device");
    // The cooperative-matrix shaders split their tiles among SUBGROUP_SIZE lanes: on a device
    // whose subgroups differ (another vendor) they would compute garbage, silently.
    for (const auto& [name, value] : p.defines)
      if (name == "SUBGROUP_SIZE" && value != std::to_string(caps.subgroup_size))
        fail(ErrorCode::MissingFeature, "the plan's '" + p.family + "' shaders were made for subgroups of " + value + " invocations, but device '" +
                                            caps.device_name + "' has " + std::to_string(caps.subgroup_size) + "; compile the plan on this device");
    // A plan file from another device or driver may hold A_DIRECT convolutions, which are right
    // only where the element order checked out (at context creation: check_a_direct; read, not
    // run, here: a load submits nothing for it and needs no glslang).
    if (defined(p, "A_DIRECT") && ctx.device->coop_a_rows_state() != 1)
      fail(ErrorCode::MissingFeature, "the plan uses A_DIRECT cooperative-matrix convolutions ('" + p.family + "') but on device '" +
                                          caps.device_name +
                                          "' the cooperative-matrix element order they fill did not check out (see the log); "
                                          "compile the plan on this device");
  }
}

bool check_a_direct(denox_context_T& ctx) {
  if (coop_emulated_for_tests()) return true;  // (the emulation fills its fragments in A_DIRECT's order itself)
  kernels::LoweringTarget t = kernels::lowering_target(ctx.device->caps());
  // (The check's SPIR-V through the context's cache: a later process, or one with a shipped
  // cache, starts no glslang for it.)
  kernels::enable_a_direct(t, *ctx.device, &ctx.compiler);
  return t.coop.a_rows;
}

CompileRequest compile_request(const denox_context_T& ctx, const denox_model_options* options,
                               std::shared_ptr<const autotune::Calibration> retained) {
  CompileRequest r;
  r.precision = resolve_precision(ctx, options ? options->precision : DENOX_PRECISION_AUTO);
  if (!options) return r;
  if (options->precision == DENOX_PRECISION_INT8) {
    r.calibration = options->calibration != nullptr ? options->calibration->data : std::move(retained);
    if (!r.calibration)
      fail(ErrorCode::InvalidArgument, "precision int8 needs a calibration (denox_model_options::calibration; make one with "
                                       "denox_calibrate_file or `denox calibrate`)");
  }
  if (options->tuning != DENOX_TUNING_HEURISTIC && options->tuning != DENOX_TUNING_MEASURE && options->tuning != DENOX_TUNING_EXHAUSTIVE)
    fail(ErrorCode::InvalidArgument, "tuning " + std::to_string(static_cast<int>(options->tuning)) + " is not a denox_tuning");
  r.tuning = options->tuning;
  if ((options->tune_width == 0) != (options->tune_height == 0))
    fail(ErrorCode::InvalidArgument, "tune_width and tune_height must both be set or both be 0");
  if (options->tune_width) {
    if (options->tune_width > 65536 || options->tune_height > 65536)
      fail(ErrorCode::InvalidArgument, "tuning extent " + std::to_string(options->tune_width) + "x" +
                                           std::to_string(options->tune_height) + " is out of range (1..65536)");
    r.width = options->tune_width, r.height = options->tune_height;
  }
  r.recompile = options->recompile != 0;
  r.progress = options->progress;
  r.progress_user_data = options->progress_user_data;
  return r;
}

namespace {

// Every progress report of a compile: the cancel check of a background job (between stages and
// edges), its status observer, then the caller's callback.
void report(const CompileRequest& r, const char* stage, size_t done, size_t total, const std::string& what) {
  if (r.cancel != nullptr && r.cancel->load(std::memory_order_relaxed)) throw measure::Cancelled();
  if (r.observer) r.observer(stage, done, total);
  if (r.progress) r.progress(stage, static_cast<uint32_t>(done), static_cast<uint32_t>(total), what.c_str(), r.progress_user_data);
}

}  // namespace

std::shared_ptr<const ImportedModel> import_model(const void* onnx, size_t size, const std::optional<std::filesystem::path>& base_dir,
                                                  const CompileRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  report(request, "import", 0, 1, "");
  compiler::ImportOptions options;
  options.base_dir = base_dir;
  auto out = std::make_shared<ImportedModel>();
  out->graph = compiler::import_onnx_bytes(onnx, size, options);
  out->hash = model_hash(onnx, size, out->graph);
  out->import_ms = ms_since(t0);
  return out;
}

std::optional<CompiledPlan> cached_plan(denox_context_T& ctx, const ImportedModel& model, const CompileRequest& request) {
  if (request.recompile) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  const cache::CacheKey key = key_for(ctx, model.hash, request, target_for(ctx, request, model.hash));
  log::debug("denox: imported in {:.1f} ms, cache key {}", model.import_ms, key.digest());
  cache::CacheLayer from = cache::CacheLayer::None;
  auto cached = load_cached(ctx, key, from);
  bool other_driver = false;
  if (!cached) {
    cached = other_driver_plan(ctx, key);
    if (!cached) {
      warn_shipped_miss(ctx, key, request);
      return std::nullopt;
    }
    from = cache::CacheLayer::Shipped;
    other_driver = true;
  }
  ctx.plan_cache_hits++;
  if (from == cache::CacheLayer::Shipped) ctx.shipped_plan_hits++;
  log::info("denox: plan from the {}cache ({} dispatches, {})", from == cache::CacheLayer::Shipped ? "shipped " : "",
               cached->dispatches.size(), tuning_key(request));
  CompileTimes times;
  times.import_ms = model.import_ms;
  times.total_ms = model.import_ms + ms_since(t0);
  report(request, "done", 1, 1, "");
  CompiledPlan out{std::move(*cached), "", other_driver};
  out.report_json = schedule_report_json(nullptr, times, tuning_key(request), out.plan.dispatches.size());
  return out;
}

CompiledPlan compile_plan(denox_context_T& ctx, const ImportedModel& model, const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](const char* stage, size_t done, size_t total, const std::string& what) { report(request, stage, done, total, what); };
  const compiler::Graph& graph = model.graph;
  const kernels::LoweringTarget target = target_for(ctx, request, model.hash);
  const cache::CacheKey key = key_for(ctx, model.hash, request, target);
  CompileTimes times;
  times.import_ms = model.import_ms;

  autotune::ScheduleOptions so;
  so.precision = request.precision;
  so.target = target;
  // The heuristic's plan is one per model (its cache key has no extent): it ranks at
  // autotune::kHeuristicWidth x kHeuristicHeight (1920x1088), the options' default.
  if (request.tuning != DENOX_TUNING_HEURISTIC) so.width = request.width, so.height = request.height;
  so.progress = progress;
  std::unique_ptr<measure::DeviceMeasurer> measurer;
  if (request.tuning != DENOX_TUNING_HEURISTIC) {
    so.space = request.tuning == DENOX_TUNING_EXHAUSTIVE ? kernels::ConfigSpace::Full : kernels::ConfigSpace::Pruned;
    measure::MeasureOptions mo;
    mo.cancel = request.cancel;
    // A background tune shares the GPU with the engine's frames, which keep its clock up; busy
    // work there would only take GPU time from them.
    mo.keep_clock = request.measure_device == nullptr;
    const runtime::DeviceContext& device = request.measure_device != nullptr ? *request.measure_device : *ctx.device;
    measurer = std::make_unique<measure::DeviceMeasurer>(device, ctx.compiler, ctx.pipeline_cache->handle(), adapter_compiler(ctx),
                                                         &ctx.cache, "measure/1|" + ctx.identity.canonical() + "|" + key.denox_version, mo);
    so.measurer = measurer.get();
  }
  const autotune::Schedule schedule = autotune::schedule_graph(graph, so);
  auto t0 = std::chrono::steady_clock::now();
  progress("lower", 0, 1, "");
  plan::Plan p = autotune::lower_schedule(graph, schedule, request.precision);
  times.lower_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  progress("shaders", 0, p.pipelines.size(), "");
  // A cancelled background job stops within one shader compile.
  const auto cancel_check = [&] {
    if (request.cancel != nullptr && request.cancel->load(std::memory_order_relaxed)) throw measure::Cancelled();
  };
  kernels::compile_pipelines(p, ctx.compiler, 0, cancel_check);
  times.shaders_ms = ms_since(t0);
  // A tuned plan is checked against the heuristic one (api_plan_check.hpp says why): the faster
  // of the two, both timed whole at the tune extent, is kept.
  std::optional<autotune::Schedule> untuned;
  PlanCheck check;
  if (measurer) {
    autotune::ScheduleOptions ho;
    ho.precision = so.precision;
    ho.target = so.target;
    untuned = autotune::schedule_graph(graph, ho);
    plan::Plan hp = autotune::lower_schedule(graph, *untuned, request.precision);
    kernels::compile_pipelines(hp, ctx.compiler, 0, cancel_check);
    // The heuristic plan is a candidate only if each of its implementations measured fine on this
    // device (the store has them, else they are measured now, under the crash journal): one that
    // failed or crashed the process is never run again, here neither.
    const bool needed = plan_check_needed(p, hp);
    std::string failed;
    if (needed) {
      std::vector<const kernels::Implementation*> used;
      for (size_t i : untuned->chosen)
        if (untuned->impls[i].kind != kernels::Implementation::Kind::Free) used.push_back(&untuned->impls[i]);
      const std::vector<autotune::Measured> m = measurer->measure(graph, used, request.precision, request.width, request.height, progress);
      for (size_t i = 0; i < m.size() && failed.empty(); ++i)
        if (!m[i].ok) failed = used[i]->name() + " [" + used[i]->family + " " + used[i]->config + "]: " + m[i].failure;
      if (!failed.empty()) log::info("denox: the heuristic plan is not a candidate ({} failed on this device)", failed);
    }
    if (needed && failed.empty()) {
      progress("check", 0, 1, "the tuned plan against the heuristic one");
      try {
        // (In the background the engine's frames keep the clock up: no warm-up runs there.)
        const uint32_t warm_ms = request.measure_device != nullptr ? 0 : measure::MeasureOptions{}.clock_warmup_ms;
        check = check_tuned_plan(*measurer, p, hp, request.width, request.height, warm_ms);
        log::info("denox: the tuned plan takes {:.4f} ms, the heuristic one {:.4f} ms at {}x{}: keeping the {} plan", check.tuned_ms,
                     check.heuristic_ms, request.width, request.height, check.kept_heuristic ? "heuristic" : "tuned");
      } catch (const measure::Cancelled&) {
        throw;
      } catch (const Error& e) {
        if (e.code() == ErrorCode::Vulkan) throw;  // a lost or hung device: nothing more should run on it
        log::warn("denox: could not time the tuned plan against the heuristic one ({}); keeping the tuned plan", e.what());
        check = {};
      }
      if (check.kept_heuristic) p = std::move(hp);
    }
  }
  plan::validate_plan(p);
  ctx.plans_compiled++;
  // The tuning's counters stay; where the heuristic plan was kept, its steps and prediction.
  autotune::ScheduleReport r = schedule.report;
  if (check.kept_heuristic) {
    r.steps = untuned->report.steps, r.predicted_ms = untuned->report.predicted_ms, r.dispatches = untuned->report.dispatches;
    r.pipeline_swaps.clear();  // the swaps were the discarded plan's
  }
  if (r.pipelines) r.pipelines = p.pipelines.size();  // the kept plan's own count
  log::info("denox: compiled a plan of {} dispatches, {} pipelines ({} tuning: {} edges, {} measured, {} from the cache, {} failed; "
               "predicted {:.3f} ms)",
               p.dispatches.size(), p.pipelines.size(), tuning_key(request), r.edges, r.measured_edges, r.cached_edges, r.failed_edges,
               r.predicted_ms);
  if (ctx.cache.writable().enabled() && !ctx.cache.store_plan(key, plan::serialize_plan(p)))
    log::warn("denox: could not store the plan in the cache '{}'", ctx.cache.writable().path().string());
  if (measurer) save_pipeline_cache(ctx);
  times.total_ms = model.import_ms + ms_since(start);
  progress("done", 1, 1, "");
  const size_t dispatches = p.dispatches.size();
  return CompiledPlan{std::move(p), schedule_report_json(&r, times, tuning_key(request), dispatches, measurer ? &check : nullptr)};
}

}  // namespace denox::api
