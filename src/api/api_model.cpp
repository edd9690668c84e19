// Models: loading (ONNX or plan), extent, memory, bindings and recording.

#include <algorithm>
#include <cstring>
#include <vector>

#include "api/api_background.hpp"
#include "api/api_compile.hpp"
#include "api/api_internal.hpp"
#include "api/api_report.hpp"
#include "common/log.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::api {

namespace {

std::unique_ptr<denox_model_T> make_model(denox_context_T& ctx, plan::Plan p, const denox_model_options* options, std::string report_json,
                                          denox_plan_kind kind) {
  auto m = std::make_unique<denox_model_T>();
  m->context = &ctx;
  if (options != nullptr) m->options = *options;
  if (m->options.calibration != nullptr) m->calibration = m->options.calibration->data;
  m->options.calibration = nullptr;  // the caller may destroy the handle (denox.h)
  m->report_json = std::move(report_json);
  m->model = std::make_unique<runtime::ExecutableModel>(*ctx.device, std::move(p), ctx.pipeline_cache->handle(),
                                                        adapter_compiler(ctx), m->options.external_memory != 0);
  save_pipeline_cache(ctx);
  m->signature = signature_of(*m->model);
  m->io.inputs.resize(m->model->input_count());
  m->io.outputs.resize(m->model->output_count());
  m->swap_status.active = kind;
  return m;
}

denox_model release(denox_context_T& ctx, std::unique_ptr<denox_model_T> m) {
  {
    std::lock_guard lock(ctx.lifetime_mutex);
    ctx.live_models++;
  }
  return m.release();
}

// An ONNX load: the plan for the options, or with tune_in_background the tuned plan if it is
// cached, else the heuristic plan now and the tune on the model's worker thread.
denox_model load_onnx(denox_context_T& ctx, const void* onnx, size_t size, const std::optional<std::filesystem::path>& base_dir,
                      const std::string& name, const denox_model_options* options) {
  const CompileRequest request = compile_request(ctx, options);
  const denox_plan_kind kind = request.tuning == DENOX_TUNING_HEURISTIC ? DENOX_PLAN_HEURISTIC : DENOX_PLAN_TUNED;
  auto named = [&](CompiledPlan c) {
    if (c.plan.model_name.empty()) c.plan.model_name = name;
    return c;
  };
  // A shipped plan made under another driver passed the load checks, but this driver may still
  // refuse one of its pipelines: then the model is compiled as without it. Null on failure.
  auto try_other_driver = [&](CompiledPlan& compiled) -> std::unique_ptr<denox_model_T> {
    try {
      return make_model(ctx, std::move(compiled.plan), options, std::move(compiled.report_json), kind);
    } catch (const Error& e) {
      if (runtime::device_lost(e)) throw;
      log::warn("denox: the shipped plan made under another driver does not build here ({}); compiling the model", e.what());
      return nullptr;
    }
  };
  if (options == nullptr || options->tune_in_background == 0 || kind == DENOX_PLAN_HEURISTIC) {
    const auto imported = import_model(onnx, size, base_dir, request);
    if (auto cached = cached_plan(ctx, *imported, request)) {
      auto compiled = named(std::move(*cached));
      if (!compiled.other_driver)
        return release(ctx, make_model(ctx, std::move(compiled.plan), options, std::move(compiled.report_json), kind));
      if (auto m = try_other_driver(compiled)) return release(ctx, std::move(m));
    }
    auto compiled = named(compile_plan(ctx, *imported, request));
    return release(ctx, make_model(ctx, std::move(compiled.plan), options, std::move(compiled.report_json), kind));
  }
  // Refused up front, not only on a cache miss: whether a load can tune must not depend on what
  // the cache holds on this machine.
  require_background_device(ctx, "tune_in_background");
  const auto imported = import_model(onnx, size, base_dir, request);
  auto tuned = cached_plan(ctx, *imported, request);
  if (tuned && !tuned->other_driver) {
    auto compiled = named(std::move(*tuned));
    return release(ctx, make_model(ctx, std::move(compiled.plan), options, std::move(compiled.report_json), kind));
  }
  // A tuned plan for this GPU under another driver (a shipped cache after a driver update) runs
  // while the tune for this driver does; else the heuristic plan.
  std::unique_ptr<denox_model_T> m;
  if (tuned) {
    auto compiled = named(std::move(*tuned));
    m = try_other_driver(compiled);
    if (!m) tuned.reset();
  }
  if (!m) {
    CompileRequest heuristic = request;
    heuristic.tuning = DENOX_TUNING_HEURISTIC;
    auto cached = cached_plan(ctx, *imported, heuristic);
    auto compiled = named(cached ? std::move(*cached) : compile_plan(ctx, *imported, heuristic));
    m = make_model(ctx, std::move(compiled.plan), options, std::move(compiled.report_json), DENOX_PLAN_HEURISTIC);
  }
  BackgroundJob job;
  job.kind = DENOX_JOB_TUNE;
  job.imported = imported;
  job.model_name = name;
  job.request = request;
  start_job(*m, std::move(job));
  log::info("denox: running the {} plan; tuning ({}x{}) in the background", tuned ? "other driver's tuned" : "heuristic",
            request.width, request.height);
  return release(ctx, std::move(m));
}

// Remembers what the caller set, for plans swapped in later.
template <typename Fn>
void update_io(denox_model_T& m, Fn&& change) {
  std::lock_guard lock(m.io_mutex);
  change(m.io);
  m.io.generation++;
}

runtime::IoSource to_source(const denox_binding& b) {
  runtime::IoSource s;
  s.first_channel = b.first_channel;
  s.channel_count = b.channel_count;
  if (b.image_view != VK_NULL_HANDLE) {
    s.is_image = true;
    s.view = b.image_view;
    s.format = b.image_format;
    return s;
  }
  if (b.layout != DENOX_LAYOUT_CHW && b.layout != DENOX_LAYOUT_HWC)
    fail(ErrorCode::InvalidArgument, "binding layout " + std::to_string(static_cast<int>(b.layout)) + " is not a denox_layout");
  if (b.dtype != DENOX_DTYPE_F32 && b.dtype != DENOX_DTYPE_F16)
    fail(ErrorCode::InvalidArgument, "binding dtype " + std::to_string(static_cast<int>(b.dtype)) + " is not a denox_dtype");
  s.buffer = b.buffer;
  s.offset = b.offset;
  s.range = b.range == 0 ? VK_WHOLE_SIZE : b.range;
  s.layout = b.layout == DENOX_LAYOUT_HWC ? runtime::TensorLayout::HWC : runtime::TensorLayout::CHW;
  s.type = b.dtype == DENOX_DTYPE_F16 ? runtime::ElementType::F16 : runtime::ElementType::F32;
  s.pixel_channels = b.pixel_channels;
  s.source_first_channel = b.buffer_first_channel;
  return s;
}

std::vector<runtime::IoSource> to_sources(const denox_binding* bindings, uint32_t count) {
  if (count == 0) fail(ErrorCode::InvalidArgument, "no bindings (count is 0)");
  require(bindings, "bindings");
  std::vector<runtime::IoSource> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(to_source(bindings[i]));
  return out;
}

runtime::ExecutableModel& model_of(denox_model m) { return *require(m, "model")->model; }

}  // namespace

}  // namespace denox::api

using namespace denox;

extern "C" {

denox_result denox_model_load_file(denox_context context, const char* onnx_path, const denox_model_options* options,
                                   denox_model* out_model) {
  return api::guarded(__func__, [&] {
    api::require(out_model, "out_model");
    *out_model = nullptr;
    api::require(context, "context");
    const std::filesystem::path path(api::require(onnx_path, "onnx_path"));
    const auto bytes = compiler::read_onnx_file(path);
    *out_model = api::load_onnx(*context, bytes.data(), bytes.size(), path.parent_path().empty() ? "." : path.parent_path(),
                                path.stem().string(), options);
  });
}

denox_result denox_model_load_memory(denox_context context, const void* onnx_bytes, size_t size, const denox_model_options* options,
                                     denox_model* out_model) {
  return api::guarded(__func__, [&] {
    api::require(out_model, "out_model");
    *out_model = nullptr;
    api::require(context, "context");
    api::require(onnx_bytes, "onnx_bytes");
    *out_model = api::load_onnx(*context, onnx_bytes, size, std::nullopt, "", options);
  });
}

denox_result denox_model_load_plan(denox_context context, const void* plan_bytes, size_t size, const denox_model_options* options,
                                   denox_model* out_model) {
  return api::guarded(__func__, [&] {
    api::require(out_model, "out_model");
    *out_model = nullptr;
    api::require(context, "context");
    api::require(plan_bytes, "plan_bytes");
    plan::Plan p = plan::deserialize_plan({static_cast<const uint8_t*>(plan_bytes), size});
    api::check_plan_runs_here(*context, p);
    std::vector<bool> compiled_here;
    for (const plan::Pipeline& q : p.pipelines) compiled_here.push_back(q.spirv.empty());
    api::complete_pipelines(*context, p);
    // (What the SPIR-V compiled just now asks, too.)
    if (std::find(compiled_here.begin(), compiled_here.end(), true) != compiled_here.end()) api::check_plan_runs_here(*context, p, &compiled_here);
    const size_t dispatches = p.dispatches.size();
    *out_model = api::release(*context, api::make_model(*context, std::move(p), options,
                                                        api::schedule_report_json(nullptr, {}, "plan file", dispatches), DENOX_PLAN_FROM_FILE));
  });
}

denox_result denox_model_schedule_report(denox_model model, char* json, size_t* size) {
  return api::guarded(__func__, [&] {
    api::require(size, "size");
    const std::string& text = api::require(model, "model")->report_json;
    if (json == nullptr) {
      *size = text.size() + 1;
      return;
    }
    if (*size < text.size() + 1)
      fail(ErrorCode::InvalidArgument, "the buffer holds " + std::to_string(*size) + " bytes, the report needs " + std::to_string(text.size() + 1));
    std::memcpy(json, text.c_str(), text.size() + 1);
    *size = text.size() + 1;
  });
}

denox_result denox_model_export_plan(denox_model model, void* data, size_t* size) {
  return api::guarded(__func__, [&] {
    api::require(size, "size");
    const auto bytes = plan::serialize_plan(api::model_of(model).plan());
    if (data == nullptr) {
      *size = bytes.size();
      return;
    }
    if (*size < bytes.size())
      fail(ErrorCode::InvalidArgument, "the buffer holds " + std::to_string(*size) + " bytes, the plan needs " + std::to_string(bytes.size()));
    std::memcpy(data, bytes.data(), bytes.size());
    *size = bytes.size();
  });
}

void denox_model_destroy(denox_model model) {
  if (model == nullptr) return;
  denox_context context = model->context;
  delete model;  // cancels and joins the worker first (~denox_model_T)
  bool last_of_destroyed_context = false;
  {
    std::lock_guard lock(context->lifetime_mutex);
    last_of_destroyed_context = --context->live_models == 0 && context->destroy_requested;
  }
  if (last_of_destroyed_context) delete context;  // denox_context_destroy came first (it logged an error)
}

uint32_t denox_model_input_count(denox_model model) { return model ? static_cast<uint32_t>(model->model->input_count()) : 0; }
uint32_t denox_model_output_count(denox_model model) { return model ? static_cast<uint32_t>(model->model->output_count()) : 0; }

denox_result denox_model_get_tensor_info(denox_model model, denox_io_kind kind, uint32_t index, denox_tensor_info* out_info) {
  return api::guarded(__func__, [&] {
    auto& m = api::model_of(model);
    api::require(out_info, "out_info");
    const bool input = kind == DENOX_INPUT;
    if (kind != DENOX_INPUT && kind != DENOX_OUTPUT) fail(ErrorCode::InvalidArgument, "kind is neither DENOX_INPUT nor DENOX_OUTPUT");
    const size_t count = input ? m.input_count() : m.output_count();
    if (index >= count)
      fail(ErrorCode::InvalidArgument, std::string(input ? "input" : "output") + " index " + std::to_string(index) + " (the model has " +
                                           std::to_string(count) + ")");
    *out_info = {};
    const auto& io = input ? m.plan().inputs[index] : m.plan().outputs[index];
    std::snprintf(out_info->name, sizeof out_info->name, "%s", io.name.c_str());
    out_info->channels = input ? m.input_channels(index) : m.output_channels(index);
    if (model->extent_set) {
      const auto shape = input ? m.input_shape(index) : m.output_shape(index);
      out_info->height = static_cast<uint32_t>(shape[2]);
      out_info->width = static_cast<uint32_t>(shape[3]);
    }
  });
}

denox_precision denox_model_precision(denox_model model) {
  if (model == nullptr) return DENOX_PRECISION_AUTO;
  return model->model->plan().precision == plan::Precision::F16 ? DENOX_PRECISION_FP16 : DENOX_PRECISION_FP32;
}

uint32_t denox_model_int8_dispatch_count(denox_model model) {
  if (model == nullptr) return 0;
  return api::int8_dispatches(model->model->plan());
}

denox_result denox_model_set_extent(denox_model model, uint32_t width, uint32_t height) {
  return api::guarded(__func__, [&] {
    api::model_of(model).set_extent(width, height);
    model->extent_set = true;
    api::update_io(*model, [&](api::IoState& io) { io.extent = std::make_pair(width, height); });
  });
}

// With external memory, a finished plan waiting to be swapped in takes the memory calls: its
// needs are reported and the caller's new buffers are bound to it (see denox.h). Only
// memory_requirements takes a finished plan from the worker; bind_memory binds to the plan
// whose needs were reported, so a plan finishing between the two calls cannot receive buffers
// sized for another (its weights would overrun them).
static runtime::ExecutableModel& memory_target(denox_model model) {
  auto& running = api::model_of(model);
  if (!running.external_memory()) return running;
  api::collect_ready(*model, true);
  return model->staged ? *model->staged->model : running;
}

static runtime::ExecutableModel& bind_target(denox_model model) {
  auto& running = api::model_of(model);
  runtime::ExecutableModel* staged = model->staged ? model->staged->model.get() : nullptr;
  if (!running.external_memory() || model->memory_reported == 0) return staged ? *staged : running;
  if (staged && staged->id() == model->memory_reported) return *staged;
  if (running.id() == model->memory_reported) return running;
  fail(ErrorCode::InvalidArgument,
       "the plan whose needs denox_model_memory_requirements reported was replaced by a newer one before this bind (a reload "
       "finished); call denox_model_memory_requirements again and bind buffers of the sizes it reports");
}

denox_result denox_model_memory_requirements(denox_model model, uint32_t width, uint32_t height, denox_memory_requirements* out) {
  return api::guarded(__func__, [&] {
    auto& target = memory_target(model);
    const auto r = target.memory_requirements(width, height);
    api::require(out, "out");
    *out = {r.scratch_size, r.scratch_alignment, r.weights_size, r.weights_alignment, r.usage};
    model->memory_reported = target.id();
  });
}

// A plan that background work finished (`target`, not the running plan) takes new buffers while
// the running plan still records with its own: its scratch may not go over the running plan's
// weights, which every command buffer recorded with it before the swap (submitted again, or not
// yet) reads, and its weights (`weights` non-null) over neither the running plan's weights nor
// its scratch, which the running plan's frames write. The same holds against plans replaced
// earlier and not yet released, for any plan's new memory (the running plan's included).
static void refuse_running_plans_memory(denox_model model, const runtime::ExecutableModel& target, const char* call, VkBuffer scratch,
                                        VkDeviceSize scratch_offset, VkDeviceSize scratch_size, VkBuffer weights = VK_NULL_HANDLE,
                                        VkDeviceSize weights_offset = 0) {
  // Plans replaced earlier but not yet released (retire_after_records): frames recorded with
  // them may still be in flight, or be submitted again.
  for (const api::RetiredPlan& retired : model->retired) {
    const std::string left = std::to_string(retired.records_left) + " more record() call" + (retired.records_left == 1 ? "" : "s");
    if (weights != VK_NULL_HANDLE && retired.model->bound_memory_overlaps(weights, weights_offset, target.weights_bytes(), true))
      fail(ErrorCode::InvalidArgument, std::string(call) + ": that weights range overlaps memory a replaced plan uses (its weights or "
                                                           "scratch) until it is released, " + left + " from now (retire_after_records); "
                                                           "bind these weights to other memory");
    if (retired.model->bound_memory_overlaps(scratch, scratch_offset, scratch_size, false))
      fail(ErrorCode::InvalidArgument, std::string(call) + ": that scratch range overlaps the weights of a replaced plan, which command "
                                                           "buffers recorded with it read until it is released, " + left +
                                                           " from now (retire_after_records); bind this scratch to other memory");
  }
  // (Rebinding the running plan's own memory is the engine's business, as without background work.)
  const auto& running = api::model_of(model);
  if (&target == &running) return;
  if (weights != VK_NULL_HANDLE && running.bound_memory_overlaps(weights, weights_offset, target.weights_bytes(), true))
    fail(ErrorCode::InvalidArgument, std::string(call) + ": that weights range overlaps memory the running plan uses (its weights or "
                                                         "scratch) until it is retired; bind the new plan's weights to other memory (the "
                                                         "running plan's may be reused once it is retired)");
  if (running.bound_memory_overlaps(scratch, scratch_offset, scratch_size, false))
    fail(ErrorCode::InvalidArgument, std::string(call) + ": that scratch range overlaps the running plan's weights, which command buffers "
                                                         "recorded with it read until it is retired; bind the new plan's scratch to other memory");
}

denox_result denox_model_bind_memory(denox_model model, VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size,
                                     VkBuffer weights, VkDeviceSize weights_offset) {
  return api::guarded(__func__, [&] {
    auto& target = bind_target(model);
    refuse_running_plans_memory(model, target, "bind_memory", scratch, scratch_offset, scratch_size, weights, weights_offset);
    target.bind_memory(scratch, scratch_offset, scratch_size, weights, weights_offset);
  });
}

denox_result denox_model_bind_scratch(denox_model model, VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size) {
  return api::guarded(__func__, [&] {
    auto& target = bind_target(model);
    refuse_running_plans_memory(model, target, "bind_scratch", scratch, scratch_offset, scratch_size);
    target.bind_scratch(scratch, scratch_offset, scratch_size);
  });
}

denox_result denox_model_bind_input(denox_model model, uint32_t index, const denox_binding* bindings, uint32_t count) {
  return api::guarded(__func__, [&] {
    auto sources = api::to_sources(bindings, count);
    api::model_of(model).bind_input(index, sources);
    api::update_io(*model, [&](api::IoState& io) { io.inputs.at(index) = std::move(sources); });
  });
}

denox_result denox_model_bind_output(denox_model model, uint32_t index, const denox_binding* bindings, uint32_t count) {
  return api::guarded(__func__, [&] {
    auto sources = api::to_sources(bindings, count);
    api::model_of(model).bind_output(index, sources);
    api::update_io(*model, [&](api::IoState& io) { io.outputs.at(index) = std::move(sources); });
  });
}

static denox_result record_impl(const char* function, denox_model model, VkCommandBuffer cmd, VkQueryPool pool, bool serialize,
                                bool frame_boundary) {
  const denox_result r = api::guarded(function, [&] {
    api::require(cmd, "cmd");
    api::require(model, "model");
    if (frame_boundary) api::at_frame_boundary(*model);
    auto& m = api::model_of(model);
    if (!model->extent_set) fail(ErrorCode::InvalidArgument, "set_extent() has not been called");
    m.record(cmd, pool, serialize);
    model->recorded_since_retire_tick = true;
  });
  // With a model and a command buffer, the only argument error left is a model not yet ready
  // (no extent, memory or bindings); the message says which.
  return r == DENOX_ERROR_INVALID_ARGUMENT && model != nullptr && cmd != VK_NULL_HANDLE ? DENOX_ERROR_NOT_READY : r;
}

denox_result denox_model_record(denox_model model, VkCommandBuffer cmd) {
  return record_impl(__func__, model, cmd, VK_NULL_HANDLE, false, true);
}

denox_result denox_model_record_timed(denox_model model, VkCommandBuffer cmd, VkQueryPool query_pool, int serialize) {
  // Not a frame boundary: the query pool was sized for the running plan's dispatch count.
  return record_impl(__func__, model, cmd, query_pool, serialize != 0, false);
}

uint32_t denox_model_dispatch_count(denox_model model) {
  return model ? static_cast<uint32_t>(model->model->command_count()) : 0;
}

const char* denox_model_dispatch_name(denox_model model, uint32_t index) {
  if (model == nullptr) return "";
  // Per thread, valid until this thread's next call.
  static thread_local std::string name;
  try {  // (nothing may leave a C function: out of host memory gives "")
    const auto names = model->model->command_names();
    name = index < names.size() ? names[index] : std::string();
  } catch (...) {
    name.clear();
  }
  return name.c_str();
}

}  // extern "C"
