#include "api/api_compile.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "compiler/import/onnx_import.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/shader_source.hpp"
#include "runtime/cache/content_hash.hpp"

namespace denox::api {

namespace {

// The lowering's identity: bump when the lowering changes what it emits for the same graph
// without the shaders changing.
constexpr const char* kLowering = "lowering/2";

// What the lowering may use on this device: cooperative-matrix convolutions for fp16 plans
// where the device has them enabled, else the portable shaders.
kernels::LoweringTarget target_for(const denox_context_T& ctx, plan::Precision precision) {
  if (precision != plan::Precision::F16) return {};
  return kernels::lowering_target(ctx.device->caps());
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

cache::CacheKey key_for(const denox_context_T& ctx, const std::string& model, plan::Precision precision,
                        const kernels::LoweringTarget& target) {
  cache::CacheKey key;
  key.model_hash = model;
  key.device = ctx.identity;
  key.denox_version = std::string(DENOX_VERSION_STRING) + "+shaders." + shader_set_hash();
  key.options = std::string("precision=") + plan::precision_name(precision) + ";" + kLowering + "=" + target.key();
  return key;
}

// A cached plan, or nullopt when there is none or it cannot be used (logged, then recompiled).
std::optional<plan::Plan> load_cached(denox_context_T& ctx, const cache::CacheKey& key) {
  auto bytes = ctx.cache.load_plan(key);
  if (!bytes) return std::nullopt;
  try {
    plan::Plan p = plan::deserialize_plan(*bytes);
    for (const auto& pipe : p.pipelines) {
      if (pipe.spirv.empty()) fail(ErrorCode::InvalidModel, "plan: pipeline '" + pipe.family + "' has no SPIR-V");
    }
    return p;
  } catch (const Error& e) {
    spdlog::warn("denox: ignoring a cached plan that cannot be used ({}); compiling again", e.what());
    return std::nullopt;
  }
}

}  // namespace

plan::Precision resolve_precision(const denox_context_T& ctx, denox_precision requested) {
  const bool fp16 = ctx.device->caps().fp16_usable();
  switch (requested) {
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

void check_plan_runs_here(const denox_context_T& ctx, const plan::Plan& plan) {
  for (const auto& p : plan.pipelines) {
    if (p.family.find("coopmat") != std::string::npos && !ctx.device->caps().cooperative_matrix)
      fail(ErrorCode::MissingFeature, "the plan uses cooperative-matrix convolutions ('" + p.family + "') but device '" +
                                          ctx.device->caps().device_name +
                                          "' has not enabled VK_KHR_cooperative_matrix; compile the plan on this device");
  }
}

plan::Plan obtain_plan(denox_context_T& ctx, const void* onnx, size_t size, const std::optional<std::filesystem::path>& base_dir,
                       plan::Precision precision) {
  auto t0 = std::chrono::steady_clock::now();
  compiler::ImportOptions options;
  options.base_dir = base_dir;
  compiler::Graph graph = compiler::import_onnx_bytes(onnx, size, options);
  const kernels::LoweringTarget target = target_for(ctx, precision);
  const cache::CacheKey key = key_for(ctx, model_hash(onnx, size, graph), precision, target);
  spdlog::debug("denox: imported in {:.1f} ms, cache key {}", ms_since(t0), key.digest());
  if (auto cached = load_cached(ctx, key)) {
    ctx.plan_cache_hits++;
    spdlog::info("denox: plan from the cache ({} dispatches)", cached->dispatches.size());
    return std::move(*cached);
  }
  t0 = std::chrono::steady_clock::now();
  plan::Plan p = kernels::build_portable_plan(graph, precision, target);
  const double lower_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  kernels::compile_pipelines(p, ctx.compiler);
  plan::validate_plan(p);
  ctx.plans_compiled++;
  spdlog::info("denox: compiled a plan of {} dispatches, {} pipelines (lowering {:.1f} ms, shaders {:.1f} ms)", p.dispatches.size(),
               p.pipelines.size(), lower_ms, ms_since(t0));
  if (ctx.cache.enabled() && !ctx.cache.store_plan(key, plan::serialize_plan(p)))
    spdlog::warn("denox: could not store the plan in the cache '{}'", ctx.cache.path().string());
  return p;
}

}  // namespace denox::api
