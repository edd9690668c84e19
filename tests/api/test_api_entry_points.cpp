// What denox does through the engine's Vulkan entry points, seen by wrapping the
// vkGetInstanceProcAddr the engine passes (denox_vulkan_device::get_instance_proc_addr):
//  - record() names its work with VK_EXT_debug_utils labels where the engine lists the extension
//    in enabled_instance_extensions ("denox" around everything, each dispatch by its name), and
//    calls no label command where it does not, though the loader hands out the entry points;
//  - a failing Vulkan call's VkResult reaches the caller as a value (denox_last_vk_result,
//    denox_model_status::last_error_vk_result), not only inside the message;
//  - a device lost while measuring stops the tune instead of storing every edge as failed;
//  - an exception on a measurement worker thread fails the load instead of ending the process.
// Its own executable: libdenox's volk keeps the first context's vkGetInstanceProcAddr for the
// device-level entry points, so every context of this process is created through the wrapper.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api_test_util.hpp"

using namespace denox::test;
using Size = denox::modelgen::OidnUnetOptions::Size;

namespace {

// What the wrapper does and saw. Set before a context is created (the label entry points are
// looked up then).
std::atomic<bool> g_labels_visible{true};       // false: NULL for the label commands (a layer in the way)
std::atomic<bool> g_fail_allocations{false};    // vkAllocateMemory returns VK_ERROR_OUT_OF_DEVICE_MEMORY
std::atomic<bool> g_lose_device{false};         // vkWaitForFences returns VK_ERROR_DEVICE_LOST
std::atomic<bool> g_lose_in_pipelines{false};   // so does vkCreateComputePipelines
std::atomic<int> g_throw_in_pipelines{0};       // the next n vkCreateComputePipelines throw std::bad_alloc
std::atomic<int> g_label_lookups{0}, g_allocate_lookups{0};
std::mutex g_labels_mutex;
std::vector<std::string> g_label_log;  // "begin <name>" / "end", in call order

PFN_vkGetDeviceProcAddr g_real_gdpa = nullptr;
PFN_vkAllocateMemory g_real_allocate = nullptr;
PFN_vkWaitForFences g_real_wait = nullptr;
PFN_vkCreateComputePipelines g_real_create_pipelines = nullptr;
PFN_vkCmdPushDescriptorSetKHR g_real_push_descriptors = nullptr;
std::atomic<VkDeviceSize> g_largest_descriptor_range{0};  // of the storage buffers pushed (VK_WHOLE_SIZE counts as such)
PFN_vkCmdBeginDebugUtilsLabelEXT g_real_begin = nullptr;
PFN_vkCmdEndDebugUtilsLabelEXT g_real_end = nullptr;

VKAPI_ATTR void VKAPI_CALL counting_begin(VkCommandBuffer cmd, const VkDebugUtilsLabelEXT* label) {
  {
    std::lock_guard lock(g_labels_mutex);
    g_label_log.push_back(std::string("begin ") + label->pLabelName);
  }
  g_real_begin(cmd, label);
}

VKAPI_ATTR void VKAPI_CALL counting_end(VkCommandBuffer cmd) {
  {
    std::lock_guard lock(g_labels_mutex);
    g_label_log.emplace_back("end");
  }
  g_real_end(cmd);
}

VKAPI_ATTR VkResult VKAPI_CALL maybe_failing_allocate(VkDevice device, const VkMemoryAllocateInfo* info,
                                                       const VkAllocationCallbacks* allocator, VkDeviceMemory* memory) {
  if (g_fail_allocations) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  return g_real_allocate(device, info, allocator, memory);
}

VKAPI_ATTR VkResult VKAPI_CALL maybe_lost_wait(VkDevice device, uint32_t count, const VkFence* fences, VkBool32 all,
                                               uint64_t timeout) {
  const VkResult waited = g_real_wait(device, count, fences, all, timeout);  // (the work still drains)
  return g_lose_device ? VK_ERROR_DEVICE_LOST : waited;
}

VKAPI_ATTR VkResult VKAPI_CALL maybe_lost_create(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                 const VkComputePipelineCreateInfo* infos, const VkAllocationCallbacks* allocator,
                                                 VkPipeline* pipelines) {
  // (As a driver's C++ allocation failing inside the call, or an engine's throwing allocator.)
  if (g_throw_in_pipelines.fetch_sub(1) > 0) throw std::bad_alloc();
  if (g_lose_in_pipelines) {
    for (uint32_t i = 0; i < count; ++i) pipelines[i] = VK_NULL_HANDLE;
    return VK_ERROR_DEVICE_LOST;
  }
  return g_real_create_pipelines(device, cache, count, infos, allocator, pipelines);
}

VKAPI_ATTR void VKAPI_CALL range_seeing_push(VkCommandBuffer cmd, VkPipelineBindPoint bind_point, VkPipelineLayout layout, uint32_t set,
                                              uint32_t count, const VkWriteDescriptorSet* writes) {
  for (uint32_t i = 0; i < count; ++i)
    if (writes[i].descriptorType == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER && writes[i].pBufferInfo != nullptr)
      for (uint32_t k = 0; k < writes[i].descriptorCount; ++k) {
        const VkDeviceSize range = writes[i].pBufferInfo[k].range;
        VkDeviceSize seen = g_largest_descriptor_range;
        while (range > seen && !g_largest_descriptor_range.compare_exchange_weak(seen, range)) {
        }
      }
  g_real_push_descriptors(cmd, bind_point, layout, set, count, writes);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL wrapped_gdpa(VkDevice device, const char* name) {
  if (std::strcmp(name, "vkCmdPushDescriptorSetKHR") == 0) {
    g_real_push_descriptors = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(g_real_gdpa(device, name));
    return g_real_push_descriptors != nullptr ? reinterpret_cast<PFN_vkVoidFunction>(range_seeing_push) : nullptr;
  }
  if (std::strcmp(name, "vkCreateComputePipelines") == 0) {
    g_real_create_pipelines = reinterpret_cast<PFN_vkCreateComputePipelines>(g_real_gdpa(device, name));
    return reinterpret_cast<PFN_vkVoidFunction>(maybe_lost_create);
  }
  if (std::strcmp(name, "vkWaitForFences") == 0) {
    g_real_wait = reinterpret_cast<PFN_vkWaitForFences>(g_real_gdpa(device, name));
    return reinterpret_cast<PFN_vkVoidFunction>(maybe_lost_wait);
  }
  if (std::strcmp(name, "vkAllocateMemory") == 0) {
    g_real_allocate = reinterpret_cast<PFN_vkAllocateMemory>(g_real_gdpa(device, name));
    g_allocate_lookups++;
    return reinterpret_cast<PFN_vkVoidFunction>(maybe_failing_allocate);
  }
  return g_real_gdpa(device, name);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL wrapped_gipa(VkInstance instance, const char* name) {
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) {
    g_real_gdpa = reinterpret_cast<PFN_vkGetDeviceProcAddr>(vkGetInstanceProcAddr(instance, name));
    return reinterpret_cast<PFN_vkVoidFunction>(wrapped_gdpa);
  }
  if (std::strcmp(name, "vkCmdBeginDebugUtilsLabelEXT") == 0) {
    g_label_lookups++;
    if (!g_labels_visible) return nullptr;
    g_real_begin = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(vkGetInstanceProcAddr(instance, name));
    return reinterpret_cast<PFN_vkVoidFunction>(counting_begin);
  }
  if (std::strcmp(name, "vkCmdEndDebugUtilsLabelEXT") == 0) {
    g_label_lookups++;
    if (!g_labels_visible) return nullptr;
    g_real_end = reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(vkGetInstanceProcAddr(instance, name));
    return reinterpret_cast<PFN_vkVoidFunction>(counting_end);
  }
  return vkGetInstanceProcAddr(instance, name);
}

// A context on the engine's device through the wrapper (cache off). The device's instance has
// VK_EXT_debug_utils (the validation layer's messages); `list_instance_extensions` false leaves
// enabled_instance_extensions empty, as an engine that does not say so.
denox_context wrapped_context(bool list_instance_extensions = true, const fs::path& cache = {}) {
  denox_vulkan_device dev = engine_device().as_denox();
  dev.get_instance_proc_addr = wrapped_gipa;
  if (!list_instance_extensions) {
    dev.enabled_instance_extensions = nullptr;
    dev.enabled_instance_extension_count = 0;
  }
  return make_context(cache, &dev);
}

std::vector<std::string> take_label_log() {
  std::lock_guard lock(g_labels_mutex);
  return std::exchange(g_label_log, {});
}

denox_model load_fp32(denox_context ctx, const fs::path& model_path) {
  denox_model_options options{};
  options.precision = DENOX_PRECISION_FP32;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &options, &model), "load");
  return model;
}

// fp32, tuned by measuring at 37x29 (a small extent: lavapipe times every edge in seconds).
denox_model_options measured_fp32() {
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  o.tuning = DENOX_TUNING_MEASURE;
  o.tune_width = 37;
  o.tune_height = 29;
  return o;
}

// Runs OIDN small (3 channels, fp32) at 23x17 on the model and checks it against the CPU reference.
void run_and_check(denox_context ctx, const fs::path& model_path, denox_model model) {
  const auto input = random_image(3, 17, 23, 5);
  const auto want = reference_output(model_path, input);
  const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F32);
  CHECK(relative_l2(got, want.f32) <= 1e-4);
}

}  // namespace

TEST_CASE("record() labels its work where the instance has VK_EXT_debug_utils", "[entry-points][labels]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  g_labels_visible = true;
  const int lookups = g_label_lookups;
  denox_context ctx = wrapped_context();
  CHECK(g_label_lookups >= lookups + 2);  // (volk looks them up too, the first time)
  denox_model model = load_fp32(ctx, model_path);
  take_label_log();  // (nothing recorded yet; loads record no labels)
  run_and_check(ctx, model_path, model);

  // One record(): "denox" around it all, and one label per dispatch, named as
  // denox_model_dispatch_name names it (the io adapters included).
  const auto log = take_label_log();
  const uint32_t n = denox_model_dispatch_count(model);
  REQUIRE(n > 2);
  std::vector<std::string> want{"begin denox"};
  for (uint32_t i = 0; i < n; ++i) {
    want.push_back(std::string("begin ") + denox_model_dispatch_name(model, i));
    want.emplace_back("end");
  }
  want.emplace_back("end");
  CHECK(log == want);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("record() calls no label command unless enabled_instance_extensions lists VK_EXT_debug_utils",
          "[entry-points][labels]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  // Not listed: the wrapper (like real loaders) would hand out working entry points.
  g_labels_visible = true;
  for (const bool listed : {false, true}) {
    // Listed, but the entry points come back NULL (a layer in the way): no labels, no crash.
    if (listed) g_labels_visible = false;
    INFO((listed ? "listed, NULL entry points" : "not listed"));
    denox_context ctx = wrapped_context(listed);
    denox_model model = load_fp32(ctx, model_path);
    take_label_log();
    run_and_check(ctx, model_path, model);
    CHECK(take_label_log().empty());
    denox_model_destroy(model);
    denox_context_destroy(ctx);
  }
  g_labels_visible = true;
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a failing Vulkan call's VkResult is returned as a value", "[entry-points][errors]") {
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = wrapped_context();
  REQUIRE(g_allocate_lookups > 0);  // denox's device table goes through the wrapper
  denox_model model = load_fp32(ctx, model_path);
  CHECK(denox_last_vk_result() == VK_SUCCESS);

  // The scratch arena's allocation fails: DENOX_ERROR_VULKAN, and the VkResult as a value.
  g_fail_allocations = true;
  CHECK(denox_model_set_extent(model, 23, 17) == DENOX_ERROR_VULKAN);
  CHECK(denox_last_vk_result() == VK_ERROR_OUT_OF_DEVICE_MEMORY);
  CHECK(std::string(denox_last_error()).find("VK_ERROR_OUT_OF_DEVICE_MEMORY") != std::string::npos);
  // Any later call resets it: a failure that is not Vulkan's, then a success.
  CHECK(denox_model_set_extent(nullptr, 23, 17) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK(denox_last_vk_result() == VK_SUCCESS);
  CHECK(denox_model_set_extent(model, 23, 17) == DENOX_ERROR_VULKAN);
  g_fail_allocations = false;
  run_and_check(ctx, model_path, model);
  CHECK(denox_last_vk_result() == VK_SUCCESS);

  // A reload whose weights cannot be allocated: the worker's failure carries it too.
  g_fail_allocations = true;
  require_ok(denox_model_reload_file(model, model_path.string().c_str()), "reload_file");
  denox_model_status status{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    require_ok(denox_model_get_status(model, &status), "get_status");
  } while (status.failed_jobs == 0 && !status.swap_pending && std::chrono::steady_clock::now() < deadline);
  g_fail_allocations = false;
  INFO(status.last_error);
  CHECK(status.failed_jobs == 1);
  CHECK(status.last_error_result == DENOX_ERROR_VULKAN);
  CHECK(status.last_error_vk_result == VK_ERROR_OUT_OF_DEVICE_MEMORY);

  // The next reload succeeds and clears both.
  require_ok(denox_model_reload_file(model, model_path.string().c_str()), "reload_file");
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    require_ok(denox_model_get_status(model, &status), "get_status");
  } while (!status.swap_pending && status.failed_jobs == 1 && std::chrono::steady_clock::now() < deadline);
  CHECK(status.failed_jobs == 1);
  CHECK(status.last_error_result == DENOX_SUCCESS);
  CHECK(status.last_error_vk_result == VK_SUCCESS);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a device lost while measuring ends the tune and stores no edge as failed", "[entry-points][errors]") {
  // Before, each edge's timing caught the loss as that configuration's failure: the tune went
  // on against the dead device and stored every remaining edge as failed on this device.
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = wrapped_context(true, dir / "cache.sqlite3");
  const denox_model_options o = measured_fp32();
  denox_model model = nullptr;
  g_lose_device = true;
  const denox_result r = denox_model_load_file(ctx, model_path.string().c_str(), &o, &model);
  g_lose_device = false;
  INFO(denox_last_error());
  CHECK(r == DENOX_ERROR_VULKAN);
  CHECK(denox_last_vk_result() == VK_ERROR_DEVICE_LOST);
  CHECK(std::string(denox_last_error()).find("measuring ") != std::string::npos);  // names the edge
  CHECK(model == nullptr);

  // Lost while the measurement's pipelines are created, on worker threads: the same, named so.
  g_lose_in_pipelines = true;
  const denox_result created = denox_model_load_file(ctx, model_path.string().c_str(), &o, &model);
  g_lose_in_pipelines = false;
  INFO(denox_last_error());
  CHECK(created == DENOX_ERROR_VULKAN);
  CHECK(denox_last_vk_result() == VK_ERROR_DEVICE_LOST);
  CHECK(std::string(denox_last_error()).find("creating the pipelines to measure") != std::string::npos);
  CHECK(model == nullptr);
  denox_context_destroy(ctx);
  for (const auto& [key, result] : measurement_rows(dir / "cache.sqlite3")) {
    INFO(key);
    CHECK(result.find("DEVICE_LOST") == std::string::npos);
  }
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("an exception while measurement pipelines are created on worker threads fails the load", "[entry-points][errors]") {
  // The pipelines to measure are created on several threads (as many as the machine has cores:
  // two in CI). An exception other than denox's own used to leave its worker thread
  // (std::terminate: the engine's process ended) or, thrown on the measuring thread, to unwind
  // past the unjoined workers (std::terminate too): whichever thread takes it, this tests that.
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = wrapped_context(true, dir / "cache.sqlite3");
  const denox_model_options o = measured_fp32();
  denox_model model = nullptr;
  g_throw_in_pipelines = 1;
  const denox_result r = denox_model_load_file(ctx, model_path.string().c_str(), &o, &model);
  const bool thrown = g_throw_in_pipelines.exchange(0) <= 0;
  INFO(denox_last_error());
  CHECK(thrown);
  CHECK(r == DENOX_ERROR_OUT_OF_HOST_MEMORY);
  CHECK(model == nullptr);

  // Nothing was stored as failed for it: the same load then measures and runs right.
  for (const auto& [key, result] : measurement_rows(dir / "cache.sqlite3")) {
    INFO(key);
    CHECK(result.find("bad_alloc") == std::string::npos);
  }
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &o, &model), "load after the failure");
  run_and_check(ctx, model_path, model);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}

TEST_CASE("a bind_memory whose upload fails into the weights buffer handle bound before drops that binding", "[entry-points][errors]") {
  // An engine that destroyed its weights buffer and made another may get the same handle value
  // back. Before, a failed upload into it put the earlier binding back: same handle, so record()
  // and bind_scratch ran on a buffer that held no weights of this plan.
  auto& dev = engine_device();
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = wrapped_context();
  denox_model_options o{};
  o.precision = DENOX_PRECISION_FP32;
  o.external_memory = 1;
  denox_model model = nullptr;
  require_ok(denox_model_load_file(ctx, model_path.string().c_str(), &o, &model), "load");
  denox_memory_requirements req{};
  require_ok(denox_model_memory_requirements(model, 31, 23, &req), "memory_requirements");
  denox::vkhost::Buffer scratch(dev, req.scratch_size, true, req.usage);
  denox::vkhost::Buffer weights(dev, req.weights_size, true, req.usage);
  denox::vkhost::Buffer other_weights(dev, req.weights_size, true, req.usage);
  require_ok(denox_model_bind_memory(model, scratch.handle(), 0, req.scratch_size, weights.handle(), 0), "bind_memory");
  const auto input = random_image(3, 23, 31, 8);
  const auto want = reference_output(model_path, input);
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want.f32) <= 1e-4);

  // A failed upload into another buffer changes nothing: the earlier binding still holds.
  g_fail_allocations = true;
  CHECK(denox_model_bind_memory(model, scratch.handle(), 0, req.scratch_size, other_weights.handle(), 0) == DENOX_ERROR_VULKAN);
  g_fail_allocations = false;
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want.f32) <= 1e-4);

  // Into the same handle: the binding is dropped, and record() and bind_scratch say why.
  g_fail_allocations = true;
  CHECK(denox_model_bind_memory(model, scratch.handle(), 0, req.scratch_size, weights.handle(), 0) == DENOX_ERROR_VULKAN);
  CHECK(denox_last_vk_result() == VK_ERROR_OUT_OF_DEVICE_MEMORY);
  g_fail_allocations = false;
  denox_result recorded = DENOX_SUCCESS;
  dev.submit([&](VkCommandBuffer cmd) { recorded = denox_model_record(model, cmd); });
  CHECK(recorded == DENOX_ERROR_NOT_READY);
  CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("whose binding it dropped"));
  CHECK(denox_model_bind_scratch(model, scratch.handle(), 0, req.scratch_size) == DENOX_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(denox_last_error(), Catch::Matchers::Contains("call denox_model_bind_memory again"));

  // A bind_memory that succeeds makes it run right again.
  require_ok(denox_model_bind_memory(model, scratch.handle(), 0, req.scratch_size, weights.handle(), 0), "bind_memory again");
  CHECK(relative_l2(run_on_buffers(ctx, model, input, DENOX_DTYPE_F32), want.f32) <= 1e-4);
  require_ok(denox_model_bind_scratch(model, scratch.handle(), 0, req.scratch_size), "bind_scratch");
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(dev.validation_errors() == 0);
}

TEST_CASE("a caller buffer range larger than maxStorageBufferRange is bound as what the tensor needs", "[entry-points][io]") {
  // An engine binding its input out of a large pooled buffer: a descriptor's range may not exceed
  // maxStorageBufferRange (VUID-VkWriteDescriptorSet-descriptorType-00333, which the validation
  // layer reports; the pushed ranges are read here too). It used to go into the descriptor as
  // given.
  const VkDeviceSize limit = engine_device().properties().limits.maxStorageBufferRange;
  if (limit >= (VkDeviceSize{1} << 31)) {  // (lavapipe: 128 MiB; a pool one page past it)
    WARN("maxStorageBufferRange " << limit << ": too large a buffer to allocate for this test");
    return;
  }
  TempDir dir;
  const auto model_path = write_oidn(dir.path(), Size::Small, 3, true);
  denox_context ctx = wrapped_context();
  denox_model model = load_fp32(ctx, model_path);
  const auto input = random_image(3, 19, 29, 12);
  g_largest_descriptor_range = 0;
  // (HWC: the io adapters read and write the caller buffers; CHW fp32 would be bound in place.)
  const auto got = run_on_buffers(ctx, model, input, DENOX_DTYPE_F32, DENOX_LAYOUT_HWC, nullptr, limit + 4096);
  CHECK(g_largest_descriptor_range > 0);  // (the wrapper saw the pushes)
  CHECK(g_largest_descriptor_range <= limit);
  CHECK(relative_l2(got, reference_output(model_path, input).f32) <= 1e-4);
  denox_model_destroy(model);
  denox_context_destroy(ctx);
  CHECK(engine_device().validation_errors() == 0);
}
