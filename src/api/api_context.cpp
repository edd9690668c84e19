// Contexts: the caller's device (or one denox creates), the on-disk cache, the shader compiler
// and the driver's pipeline cache that every model of the context shares.

#include <algorithm>
#include <cstring>
#include <vector>

#include "api/api_compile.hpp"
#include "api/api_internal.hpp"
#include "common/log.hpp"

namespace denox::api {

namespace {

cache::DeviceIdentity identity_of(const runtime::DeviceCapabilities& caps) {
  cache::DeviceIdentity id;
  id.vendor_id = caps.vendor_id;
  id.device_id = caps.device_id;
  std::copy(caps.pipeline_cache_uuid.begin(), caps.pipeline_cache_uuid.end(), id.pipeline_cache_uuid.begin());
  id.driver_version = caps.driver_version;
  id.driver_name = caps.driver_name;
  return id;
}

// The writable cache's path: cache_path, else the default; empty when disable_cache is set.
std::filesystem::path writable_cache_path(const denox_context_options* options) {
  if (options != nullptr && options->disable_cache) return {};
  return options != nullptr && options->cache_path != nullptr && options->cache_path[0] != 0 ? std::filesystem::path(options->cache_path)
                                                                                             : cache::PlanCache::default_path();
}

// The shipped cache of the options, or a disabled one when none is asked for. Unlike the
// writable cache, one that cannot be used fails context creation: the application asked for
// this very file, and running without it would silently compile on every player's machine.
cache::PlanCache open_shipped_cache(const denox_context_options* options) {
  if (options == nullptr || options->shipped_cache_path == nullptr) return cache::PlanCache::disabled("no shipped cache");
  if (options->shipped_cache_path[0] == 0)
    fail(ErrorCode::InvalidArgument, "denox_context_options::shipped_cache_path is empty (NULL means no shipped cache)");
  try {
    return cache::PlanCache::open_read_only(options->shipped_cache_path);
  } catch (const Error& e) {
    fail(e, std::string("shipped cache ") + e.what());
  }
}

// Everything after the device exists: caches, compiler hooks, pipeline cache.
std::unique_ptr<denox_context_T> finish_context(std::unique_ptr<runtime::DeviceContext> device,
                                                const denox_context_options* options) {
  auto ctx = std::make_unique<denox_context_T>();
  ctx->device = std::move(device);
  ctx->identity = identity_of(ctx->device->caps());
  cache::PlanCache shipped = open_shipped_cache(options);
  const std::filesystem::path writable_path = writable_cache_path(options);
  // An immutable reader of a file that the writable connection changes could read torn pages.
  std::error_code ec;
  if (shipped.enabled() && !writable_path.empty() && std::filesystem::equivalent(shipped.path(), writable_path, ec))
    fail(ErrorCode::InvalidArgument, "shipped_cache_path '" + shipped.path().string() + "' is the writable cache itself; give "
                                     "another cache_path (or disable_cache) to read it as a shipped cache");
  const bool disabled = options != nullptr && options->disable_cache;
  ctx->cache = cache::LayeredCache(disabled ? cache::PlanCache::disabled("turned off by denox_context_options::disable_cache")
                                            : cache::PlanCache::open(writable_path),  // an empty path (no home) gives a disabled cache
                                   std::move(shipped));
  denox_context_T* raw = ctx.get();
  ctx->compiler.set_cache(
      [raw](const std::string& hash) {
        cache::CacheLayer from = cache::CacheLayer::None;
        auto words = raw->cache.load_spirv(hash, &from);
        if (from == cache::CacheLayer::Shipped) raw->shipped_shader_hits++;
        return words;
      },
      [raw](const std::string& hash, const std::vector<uint32_t>& spirv) { raw->cache.store_spirv(hash, spirv); });
  // One driver cache for every pipeline of the context, seeded from both caches' data for this
  // device (the driver checks each blob's header and ignores what is not its own).
  auto seeds = ctx->cache.load_pipeline_caches(ctx->identity);
  ctx->pipeline_cache = std::make_unique<runtime::PipelineCache>(*ctx->device, seeds.empty() ? std::vector<uint8_t>() : seeds[0].data);
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (i > 0) {
      try {
        ctx->pipeline_cache->merge(seeds[i].data);
      } catch (const Error& e) {
        // Pipelines are then created (and cached) again: slower, not wrong.
        log::warn("denox: could not merge the shipped pipeline cache data: {}", e.what());
        continue;
      }
    }
    ctx->pipeline_cache_hits++;
    if (seeds[i].from == cache::CacheLayer::Shipped) ctx->shipped_pipeline_cache_hits++;
  }
  // The element order A_DIRECT fills, checked once here, where denox may submit to the queue it
  // was given: 5-40 ms on an H200 (plus a shader compile where the cache lacks its SPIR-V) on a
  // device whose cooperative matrices could take A_DIRECT, nothing elsewhere. Every compile of
  // the context then knows the answer without submitting (a heuristic load into external memory
  // on a worker thread included), and no plan depends on which load ran first.
  const bool a_direct = check_a_direct(*ctx);
  const auto& writable = ctx->cache.writable();
  const auto& shipped_cache = ctx->cache.shipped();
  log::info("denox: context on '{}' ({}), cache {}{}{}", ctx->device->caps().device_name, ctx->device->caps().driver_name,
               writable.enabled() ? writable.path().string() : "off (" + writable.disabled_reason() + ")",
               shipped_cache.enabled() ? ", shipped cache " + shipped_cache.path().string() : "",
               a_direct ? ", A_DIRECT convolutions on" : "");
  return ctx;
}

}  // namespace

runtime::AdapterCompiler adapter_compiler(denox_context_T& ctx) {
  // The runtime names the tensors' storage type as the STORAGE_F16 define.
  return [&ctx](const std::string& family, const std::vector<std::pair<std::string, std::string>>& defines) {
    return ctx.compiler.compile_with_storage_define(family, defines);
  };
}

void save_pipeline_cache(denox_context_T& ctx) {
  if (!ctx.cache.writable().enabled()) return;
  log::DeferScope defer;  // (the cache's lines reach a log callback after the lock)
  std::lock_guard lock(ctx.pipeline_cache_mutex);
  ctx.cache.store_pipeline_cache(ctx.identity, ctx.pipeline_cache->data());
}

}  // namespace denox::api

using namespace denox;

extern "C" {

const denox_device_requirement* denox_device_requirements(uint32_t* count) {
  // Built once from the runtime's list; the strings live as long as the process.
  static const std::vector<denox_device_requirement> table = [] {
    std::vector<denox_device_requirement> t;
    for (const auto& r : runtime::device_requirements()) t.push_back({r.name.c_str(), r.required ? 1 : 0, r.why.c_str()});
    return t;
  }();
  if (count != nullptr) *count = static_cast<uint32_t>(table.size());
  return table.data();
}

denox_result denox_context_create(const denox_vulkan_device* device, const denox_context_options* options,
                                  denox_context* out_context) {
  return api::guarded(__func__, [&] {
    api::require(out_context, "out_context");
    *out_context = nullptr;
    api::require(device, "device");
    if (device->queue == VK_NULL_HANDLE)
      fail(ErrorCode::InvalidArgument, "denox_vulkan_device::queue is VK_NULL_HANDLE; denox needs a queue of queue_family_index "
                                       "for weight uploads at load time");
    runtime::ExternalDevice ext;
    ext.instance = device->instance;
    ext.physical_device = device->physical_device;
    ext.device = device->device;
    ext.queue_family_index = device->queue_family_index;
    ext.queue = device->queue;
    ext.get_instance_proc_addr = device->get_instance_proc_addr;
    if (device->enabled_extension_count > 0) api::require(device->enabled_extensions, "device->enabled_extensions");
    for (uint32_t i = 0; i < device->enabled_extension_count; ++i)
      ext.enabled_extensions.emplace_back(api::require(device->enabled_extensions[i], "an enabled extension name"));
    if (device->enabled_instance_extension_count > 0)
      api::require(device->enabled_instance_extensions, "device->enabled_instance_extensions");
    for (uint32_t i = 0; i < device->enabled_instance_extension_count; ++i)
      ext.enabled_instance_extensions.emplace_back(
          api::require(device->enabled_instance_extensions[i], "an enabled instance extension name"));
    ext.enabled_features_chain = device->enabled_features_chain;
    ext.background_queue = device->background_queue;
    ext.queue_lock = {device->lock_queue, device->unlock_queue, device->queue_lock_user_data};
    *out_context = api::finish_context(runtime::DeviceContext::from_external(ext), options).release();
  });
}

denox_result denox_context_create_headless(int device_index, int validation, const denox_context_options* options,
                                           denox_context* out_context) {
  return api::guarded(__func__, [&] {
    api::require(out_context, "out_context");
    *out_context = nullptr;
    runtime::OwnDeviceOptions own;
    own.device_index = device_index;
    own.validation = validation != 0;
    *out_context = api::finish_context(runtime::DeviceContext::create_own(own), options).release();
  });
}

void denox_context_destroy(denox_context context) {
  if (context == nullptr) return;
  try {
    api::save_pipeline_cache(*context);
  } catch (const std::exception& e) {
    log::warn("denox: could not save the pipeline cache: {}", e.what());
  }
  int live = 0;
  {
    std::lock_guard lock(context->lifetime_mutex);
    live = context->live_models;
    // Freeing it now would leave the models (and their background workers) on freed memory.
    if (live != 0) context->destroy_requested = true;
  }
  if (live == 0) {
    delete context;
    return;
  }
  // (Logged after the lock: a log callback may destroy a model. Not read after this: the last
  // model's destroy may free it from another thread.)
  log::error("denox_context_destroy: {} model(s) of this context still exist; destroy them first (the context is freed "
                "with the last of them, which must happen before the VkDevice is destroyed)",
                live);
}

denox_result denox_context_get_info(denox_context context, denox_context_info* out_info) {
  return api::guarded(__func__, [&] {
    api::require(context, "context");
    api::require(out_info, "out_info");
    *out_info = {};
    const auto& caps = context->device->caps();
    std::snprintf(out_info->device_name, sizeof out_info->device_name, "%s", caps.device_name.c_str());
    out_info->vendor_id = caps.vendor_id;
    out_info->device_id = caps.device_id;
    out_info->driver_version = caps.driver_version;
    out_info->api_version = caps.api_version;
    out_info->fp16_supported = caps.fp16_usable();
    out_info->cooperative_matrix = caps.cooperative_matrix;
    out_info->int8_supported = api::int8_supported(*context) ? 1 : 0;
    out_info->timestamps_supported = caps.timestamps;
    out_info->timestamp_period_ns = caps.timestamp_period_ns;
    out_info->cache_enabled = context->cache.writable().enabled();
    std::snprintf(out_info->cache_path, sizeof out_info->cache_path, "%s", context->cache.writable().path().string().c_str());
    std::snprintf(out_info->shipped_cache_path, sizeof out_info->shipped_cache_path, "%s",
                  context->cache.shipped().path().string().c_str());
    out_info->instance = context->device->instance();
    out_info->physical_device = context->device->physical_device();
    out_info->device = context->device->device();
    out_info->queue_family_index = context->device->queue_family();
    out_info->queue = context->device->queue();
  });
}

denox_result denox_context_get_stats(denox_context context, denox_stats* out_stats) {
  return api::guarded(__func__, [&] {
    api::require(context, "context");
    api::require(out_stats, "out_stats");
    const auto shader = context->compiler.stats();
    *out_stats = {};
    out_stats->plans_compiled = context->plans_compiled.load();
    out_stats->plan_cache_hits = context->plan_cache_hits.load();
    out_stats->shaders_compiled = shader.compiled;
    out_stats->shader_cache_hits = shader.cache_hits;
    out_stats->pipeline_cache_hits = context->pipeline_cache_hits.load();
    out_stats->validation_errors = context->device->validation_errors();
    out_stats->shipped_plan_hits = context->shipped_plan_hits.load();
    out_stats->shipped_shader_hits = context->shipped_shader_hits.load();
    out_stats->shipped_pipeline_cache_hits = context->shipped_pipeline_cache_hits.load();
  });
}

// Recorded with the Vulkan 1.0 barrier so that the caller need not enable synchronization2:
// stage and access bits below 2^32 mean the same in both APIs; the newer, finer bits map to the
// legacy bits that contain them.
static VkPipelineStageFlags legacy_stages(VkPipelineStageFlags2 s) {
  VkPipelineStageFlags out = static_cast<VkPipelineStageFlags>(s & 0xffffffffull);
  if (s >> 32) out |= VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  return out ? out : static_cast<VkPipelineStageFlags>(VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT);
}

static VkAccessFlags legacy_access(VkAccessFlags2 a) {
  VkAccessFlags out = static_cast<VkAccessFlags>(a & 0xffffffffull);
  if (a & (VK_ACCESS_2_SHADER_SAMPLED_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT)) out |= VK_ACCESS_SHADER_READ_BIT;
  if (a & VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT) out |= VK_ACCESS_SHADER_WRITE_BIT;
  const VkAccessFlags2 known = 0xffffffffull | VK_ACCESS_2_SHADER_SAMPLED_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT |
                               VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT;
  if (a & ~known) out |= VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  return out;
}

static void global_barrier(const char* function, denox_context context, VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage,
                           VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access) {
  if (context == nullptr || cmd == VK_NULL_HANDLE) {
    // (No result to return: a missing barrier must at least be in the log.)
    log::error("{}: {} is NULL; no barrier recorded", function, context == nullptr ? "the context" : "the command buffer");
    return;
  }
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = legacy_access(src_access);
  barrier.dstAccessMask = legacy_access(dst_access);
  context->device->vk().vkCmdPipelineBarrier(cmd, legacy_stages(src_stage), legacy_stages(dst_stage), 0, 1, &barrier, 0, nullptr, 0,
                                             nullptr);
}

void denox_cmd_input_barrier(denox_context context, VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage,
                             VkAccessFlags2 src_access) {
  global_barrier(__func__, context, cmd, src_stage, src_access, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                 VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
}

void denox_cmd_output_barrier(denox_context context, VkCommandBuffer cmd, VkPipelineStageFlags2 dst_stage,
                              VkAccessFlags2 dst_access) {
  global_barrier(__func__, context, cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, dst_stage, dst_access);
}

}  // extern "C"
