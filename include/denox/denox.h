/*
 * denox: neural U-Net denoisers (ONNX) compiled to Vulkan compute and recorded into the
 * caller's command buffer.
 *
 * The C API. Handles are opaque; every call that can fail returns a denox_result and leaves a
 * message for denox_last_error(). Nothing here submits work behind the caller's back except
 * where a call says so (a one-dispatch device check at context creation and weight uploads at
 * load time, on the queue given to the context; and background work, only as
 * denox_vulkan_device::background_queue / lock_queue allow).
 *
 * Typical use (see README.md, "C API"):
 *   denox_context_create(&device, &options, &ctx);          once
 *   denox_model_load_file(ctx, "oidn.onnx", NULL, &model);   per model (compiles or hits cache)
 *   denox_model_set_extent(model, 1920, 1080);               per resolution change
 *   denox_model_bind_input(model, 0, bindings, 3);            when the caller's buffers change
 *   denox_model_bind_output(model, 0, &out, 1);
 *   per frame: write inputs; denox_cmd_input_barrier(ctx, cmd, src_stage, src_access);
 *              denox_model_record(model, cmd);
 *              denox_cmd_output_barrier(ctx, cmd, dst_stage, dst_access); read outputs
 *
 * Thread safety: a denox_context may be used from several threads at once (model loads compile
 * in parallel and share the cache). A denox_model is externally synchronized: calls on one
 * model must not overlap, except denox_model_get_status, which may be called from any thread at
 * any time. Background work (denox_model_options::tune_in_background, denox_model_reload_*,
 * denox_model_watch_file) runs on a worker thread per model that touches none of the caller's
 * state outside denox's locks; it submits to a queue only as denox_vulkan_device::
 * background_queue / lock_queue describe. denox_last_error() is per thread.
 */
#ifndef DENOX_DENOX_H
#define DENOX_DENOX_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#if defined(_WIN32)
#define DENOX_API __declspec(dllexport)
#elif defined(__GNUC__)
#define DENOX_API __attribute__((visibility("default")))
#else
#define DENOX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Before 1.0 a minor version may change the layout of the option structs (0.2.0 appended
 * fields to denox_vulkan_device, denox_context_options, denox_model_options, denox_stats and
 * denox_context_info; 0.3.0 appended DENOX_ERROR_OUT_OF_HOST_MEMORY to denox_result; 0.4.0
 * appended last_error_vk_result to denox_model_status and enabled_instance_extensions to
 * denox_vulkan_device): build
 * against the header of the library you link. Zero-initialize the
 * structs ({0} / {}), so that fields you do not set keep their defaults. */
#define DENOX_VERSION_MAJOR 0
#define DENOX_VERSION_MINOR 4
#define DENOX_VERSION_PATCH 3

typedef enum denox_result {
  DENOX_SUCCESS = 0,
  DENOX_ERROR_INVALID_ARGUMENT = 1, /* the caller passed something wrong (null, sizes, indices) */
  DENOX_ERROR_INVALID_MODEL = 2,    /* malformed ONNX or plan, inconsistent graph */
  DENOX_ERROR_UNSUPPORTED = 3,      /* valid ONNX that denox does not implement (message lists nodes) */
  DENOX_ERROR_SHAPE_MISMATCH = 4,   /* shapes that do not fit (at import, or for an extent) */
  DENOX_ERROR_IO = 5,               /* a file could not be read or written */
  DENOX_ERROR_MISSING_FEATURE = 6,  /* the device lacks a feature or extension denox needs */
  DENOX_ERROR_VULKAN = 7,           /* a Vulkan call failed (device lost, out of memory, ...) */
  DENOX_ERROR_NOT_READY = 8,        /* record() while the model cannot record (see denox_model_record) */
  DENOX_ERROR_INTERNAL = 9,         /* a broken invariant inside denox: please report it */
  /* Host memory ran out inside denox (std::bad_alloc), e.g. while importing a huge model. Since
   * 0.3.0; before, DENOX_ERROR_INTERNAL (DENOX_ERROR_INVALID_ARGUMENT from a calibration's CPU
   * reference). A Vulkan call that returns VK_ERROR_OUT_OF_HOST_MEMORY is DENOX_ERROR_VULKAN,
   * its message naming the VkResult. */
  DENOX_ERROR_OUT_OF_HOST_MEMORY = 10
} denox_result;

/* The message of the last failed call on this thread ("" if none). Valid until the next denox
 * call on this thread. */
DENOX_API const char* denox_last_error(void);
/* Since 0.4.0. The VkResult behind the last failed call on this thread when it failed with
 * DENOX_ERROR_VULKAN: the failing Vulkan call's (VK_ERROR_DEVICE_LOST, VK_ERROR_OUT_OF_DEVICE_MEMORY,
 * ...), or VK_TIMEOUT where denox gave up waiting on its own submit (a measurement run that did
 * not finish). VK_SUCCESS when the last call succeeded or failed for another reason. Lets an
 * engine act on a lost device without parsing denox_last_error(). */
DENOX_API VkResult denox_last_vk_result(void);
DENOX_API const char* denox_result_name(denox_result result);
/* "MAJOR.MINOR.PATCH" of the library linked, e.g. "0.3.0"; the DENOX_VERSION_* macros above are
 * the header's (they must match: build against the header of the library you link). */
DENOX_API const char* denox_version_string(void);

typedef enum denox_log_level {
  DENOX_LOG_DEBUG = 1,
  DENOX_LOG_INFO = 2,
  DENOX_LOG_WARN = 3,
  DENOX_LOG_ERROR = 4,
  DENOX_LOG_OFF = 6
} denox_log_level;

/* Receives denox's log lines at `min_level` and above. Process-wide. Lines come one at a time
 * (denox serializes them) but on whichever thread logged them, background workers included: the
 * callback must be safe to run on any thread, and must not destroy a model or a context (it
 * may run on that model's worker thread, or hold up a worker that the destroy waits for). It
 * may be called while denox works on other threads: once it returns, the previous callback is
 * not called again. NULL: the lines at `min_level` and above go to spdlog's default logger of
 * the moment, which filters them by its own level too; that is also what happens before any
 * call, at DENOX_LOG_WARN. That is the application's default logger where the application uses
 * the same shared libspdlog as libdenox (Debian's libspdlog.so.1.10); with a header-only,
 * static or other build of spdlog it is libspdlog's own, which writes to stderr.
 * Since 0.4.0 denox logs through a logger of its own and never replaces spdlog's default logger
 * or changes its level, so an application's own spdlog lines never reach the callback (before,
 * this call made denox's logger the default). A line that denox logs on the callback's thread
 * while the callback runs (a callback that calls denox) is dropped rather than passed to the
 * callback again. */
typedef void (*denox_log_callback)(denox_log_level level, const char* message, void* user_data);
DENOX_API void denox_set_log_callback(denox_log_callback callback, void* user_data, denox_log_level min_level);

/* ---- Device -------------------------------------------------------------------------------- */

/* The caller's Vulkan objects. denox needs Vulkan 1.3 and VK_KHR_push_descriptor; fp16 storage
 * (storageBuffer16BitAccess + shaderFloat16) enables the faster half-precision path. Pass what
 * the device was created with: `enabled_extensions` and the VkDeviceCreateInfo pNext chain
 * (VkPhysicalDeviceFeatures2 / Vulkan11/12/13Features), so denox knows what it may use. */
typedef struct denox_vulkan_device {
  VkInstance instance;
  VkPhysicalDevice physical_device;
  VkDevice device;
  uint32_t queue_family_index; /* a queue family with compute; record() targets it */
  /* A queue of that family denox may submit to, and wait on, during denox_context_create (a
   * device check), while loading a model or binding its memory (weight upload), never during
   * record(). Externally synchronized: do not use it from another thread during
   * denox_context_create, denox_model_load_* and denox_model_bind_memory. */
  VkQueue queue;
  PFN_vkGetInstanceProcAddr get_instance_proc_addr;
  const char* const* enabled_extensions;
  uint32_t enabled_extension_count;
  const void* enabled_features_chain; /* VkDeviceCreateInfo::pNext, or NULL */

  /* Optional (zero: none), for background work: denox_model_options::tune_in_background,
   * denox_model_reload_* and denox_model_watch_file run on a denox worker thread that submits
   * measurement runs and weight uploads while the engine records and submits its frames. A
   * VkQueue is externally synchronized, so denox must be told how it may submit:
   *  - background_queue: another VkQueue of queue_family_index (e.g. vkGetDeviceQueue(device,
   *    queue_family_index, 1, &q) with queueCount >= 2 at device creation) that the engine never
   *    uses. denox's worker threads submit only there. Preferred: nothing waits on the engine.
   *  - lock_queue / unlock_queue (both or neither): the engine's lock around `queue`. Without a
   *    background_queue, the worker submits to `queue`, calling lock_queue(queue, user) right
   *    before each vkQueueSubmit and unlock_queue(queue, user) right after it (never across a
   *    wait); the engine takes the same lock around its own vkQueueSubmit / vkQueuePresentKHR /
   *    vkQueueWaitIdle on that queue. With a background_queue, they are called around denox's
   *    submits to it instead, so that the engine can keep denox out around vkDeviceWaitIdle
   *    (which synchronizes every queue of the device).
   *    Called on denox's worker threads only, never from a denox call on the engine's thread;
   *    they must not call denox. The engine may hold its lock while calling denox, except
   *    denox_model_destroy (it joins the worker, which may be waiting for that lock).
   * Without either, background work is refused with DENOX_ERROR_INVALID_ARGUMENT naming these
   * fields. Headless contexts need neither: denox owns their queue (see
   * denox_context_lock_queue). */
  VkQueue background_queue;
  void (*lock_queue)(VkQueue queue, void* user_data);
  void (*unlock_queue)(VkQueue queue, void* user_data);
  void* queue_lock_user_data;

  /* Since 0.4.0, optional: the instance's VkInstanceCreateInfo::ppEnabledExtensionNames. With
   * VK_EXT_debug_utils among them, record() labels its work (see denox_model_record). Only this
   * list says so: loaders hand out the entry points of extensions an instance did not enable. */
  const char* const* enabled_instance_extensions;
  uint32_t enabled_instance_extension_count;
} denox_vulkan_device;

/* What denox needs from the device: extension names and feature names
 * ("VkPhysicalDeviceVulkan12Features::shaderFloat16"). `required` is 0 for what only enables a
 * faster path. Static storage, valid for the life of the process. */
typedef struct denox_device_requirement {
  const char* name;
  int required;
  const char* why;
} denox_device_requirement;
DENOX_API const denox_device_requirement* denox_device_requirements(uint32_t* count);

typedef enum denox_precision {
  DENOX_PRECISION_AUTO = 0, /* fp16 storage where the device can, else fp32 */
  DENOX_PRECISION_FP32 = 1,
  DENOX_PRECISION_FP16 = 2,
  /* Opt-in: an fp16 plan whose convolutions may run on int8 tensor cores, with int8 tensors
   * between them, where the tuner finds that faster (the others stay fp16). Needs a
   * calibration (denox_model_options::calibration, made by denox_calibrate_* or
   * `denox calibrate` on representative inputs) and a device with int8 cooperative matrices
   * (VK_KHR_cooperative_matrix reporting 16x16x32 sint8 x sint8 -> sint32 at subgroup scope,
   * with VkPhysicalDeviceVulkan12Features::shaderInt8 and vulkanMemoryModel, with its device
   * scope, enabled): else the load fails with
   * DENOX_ERROR_INVALID_ARGUMENT or DENOX_ERROR_MISSING_FEATURE naming what is missing.
   * Inputs and outputs stay fp16 (denox_model_precision reports FP16). Accuracy depends on the
   * calibration inputs: on the shipped denoiser, -0.05..-0.10 dB PSNR against fp16. */
  DENOX_PRECISION_INT8 = 3
} denox_precision;

typedef struct denox_context_options {
  /* The user's writable SQLite cache file. NULL: the default ($DENOX_CACHE_DIR/cache.sqlite3,
   * else $XDG_CACHE_HOME/denox/cache.sqlite3, else ~/.cache/denox/cache.sqlite3). A damaged
   * file is moved aside and rebuilt; one that cannot be opened means running without it. */
  const char* cache_path;
  /* Nonzero: never read or write the writable cache file. A shipped_cache_path is still read
   * (it is never written); leave that NULL too for no cache at all. */
  int disable_cache;
  /* A read-only cache shipped with the application (made with `denox cache export`), e.g.
   * next to its assets. NULL: none. It is opened read-only and immutable (SQLite mode=ro,
   * immutable=1): nothing is ever written to it or created beside it, so it may lie in a
   * read-only directory; it must not change while a context has it open. Lookups of plans,
   * SPIR-V, pipeline cache data and measurements try the writable cache first, then this one;
   * stores go to the writable cache only, and plans and SPIR-V found here are not copied
   * there (the driver's pipeline cache is seeded from both, and what it holds is saved to the
   * writable cache).
   * denox_context_create fails with DENOX_ERROR_IO, naming the path and the cause, when the
   * file does not exist, cannot be read, is not a denox cache, was written by a denox with
   * another cache schema version, or is damaged (SQLite's quick_check). It is never renamed or
   * repaired. A row failing its checksum later is a miss, with a warning; if SQLite reports the
   * file corrupt during use, it is not read again by this context (warning).
   * After a driver update (since 0.4.0): where it holds no plan of a model for this driver but
   * one for this GPU (vendor, device and driver name) under another driver version or pipeline
   * cache UUID, made by this denox build with the same options, that plan is loaded (the
   * newest such driver's) if it runs here, with a warning naming both drivers: nothing is
   * compiled, and it is not copied to the writable cache. With tune_in_background it runs while
   * the tune for this driver does (denox_model_status::active_plan DENOX_PLAN_TUNED).
   * When it holds plans of a model only for other devices, denox builds or options, loading
   * that model logs a warning naming this path, what the plans were made for and for what this
   * device is, and compiles the model with its tuning option as usual. The same file as the
   * writable cache is refused (DENOX_ERROR_INVALID_ARGUMENT). */
  const char* shipped_cache_path;
} denox_context_options;

typedef struct denox_context_T* denox_context;

/* `options` may be NULL. Fails with DENOX_ERROR_MISSING_FEATURE naming every missing
 * requirement. The caller's device must outlive the context. On a device with fp16
 * cooperative matrices of 16x16x16 and 32-lane subgroups it runs one small dispatch on `queue`
 * and waits for it (5-40 ms on an H200, plus a shader compile of ~0.15 s where the cache does
 * not hold its SPIR-V yet: the first time on a machine, or always with disable_cache): it
 * checks the order in which the
 * cooperative-matrix elements lie in a lane's registers, which the spec leaves to the driver and
 * which denox's A_DIRECT convolutions rely on (on an H200, OIDN balanced fp16 at 1920x1088: the
 * heuristic plan 7% faster with them). Every later compile of the context uses the answer
 * without submitting (the log says "A_DIRECT convolutions on"); a failing check is logged and
 * turns them off. */
DENOX_API denox_result denox_context_create(const denox_vulkan_device* device, const denox_context_options* options,
                                            denox_context* out_context);

/* denox creates its own instance and device (tools, tests, headless use). device_index -1
 * picks the first discrete GPU, else the first device. `validation`: enable the Khronos
 * validation layer with synchronization validation where the layer has it (its errors are
 * logged and counted in denox_context_stats), and, where the layer takes VK_EXT_layer_settings,
 * its `syncval_shader_accesses_heuristic`: layers from mid-2024 on check what shaders access
 * through descriptors for hazards only with it, and denox's dispatches reach every tensor that
 * way. An engine validating its own instance sets it likewise (vkconfig, or the environment:
 * VK_KHRONOS_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC=true) to have denox's barriers checked.
 * GPU-assisted validation (VK_KHRONOS_VALIDATION_GPUAV_ENABLE=1) works on denox's dispatches with
 * layers from mid-2026 on (1.4.363 checked); older ones compare each dispatch's accesses with the
 * ranges pushed for a neighbouring dispatch and report false "access out of bounds" errors, since
 * denox pushes every binding (VK_KHR_push_descriptor). */
DENOX_API denox_result denox_context_create_headless(int device_index, int validation,
                                                     const denox_context_options* options, denox_context* out_context);

/* Destroys the context. All its models must be destroyed first. NULL is ignored. If some still
 * exist, it logs an error and the context is freed with the last of them (which must still be
 * destroyed before the VkDevice).
 * After VK_ERROR_DEVICE_LOST (the engine's, or denox's: DENOX_ERROR_VULKAN with
 * denox_last_vk_result(), or denox_model_status::last_error_vk_result, saying it): once the
 * engine's vkDeviceWaitIdle has returned (it does on a lost device), destroy every model,
 * then the context, then the VkDevice. Neither destroy waits on
 * the device (a background job's fence wait ends with the loss; a headless context's
 * vkDeviceWaitIdle returns too). Then create a context on the new device and load the models
 * again (plans and SPIR-V come from the cache). */
DENOX_API void denox_context_destroy(denox_context context);

/* The lock denox holds around each of its own submits to the context's queue
 * (denox_context_info::queue), for callers that submit to that queue themselves while a
 * model's background work may run: a headless context's queue in tools and tests (an engine
 * with its own queue uses denox_vulkan_device::lock_queue instead). Not recursive; hold it only
 * around vkQueueSubmit / vkQueueWaitIdle, never across denox calls. */
DENOX_API void denox_context_lock_queue(denox_context context);
DENOX_API void denox_context_unlock_queue(denox_context context);

typedef struct denox_context_info {
  char device_name[256];
  uint32_t vendor_id, device_id, driver_version, api_version;
  int fp16_supported;           /* fp16 storage and arithmetic usable */
  int cooperative_matrix;       /* VK_KHR_cooperative_matrix enabled (its convolutions also need
                                 * vulkanMemoryModel: see denox_device_requirements) */
  int timestamps_supported;
  float timestamp_period_ns;
  int cache_enabled;
  char cache_path[1024];        /* "" when disabled */
  VkInstance instance;          /* for headless contexts: denox's own objects */
  VkPhysicalDevice physical_device;
  VkDevice device;
  uint32_t queue_family_index;
  VkQueue queue;
  /* The shipped cache being read: "" when none was given, or after SQLite reported it corrupt
   * during use. */
  char shipped_cache_path[1024];
  /* DENOX_PRECISION_INT8 can load here: int8 cooperative matrices (16x16x32 sint8 at subgroup
   * scope) with shaderInt8 and vulkanMemoryModel enabled, and fp16 storage. */
  int int8_supported;
} denox_context_info;
DENOX_API denox_result denox_context_get_info(denox_context context, denox_context_info* out_info);

/* Counters since the context was created: what was compiled and what came from the cache.
 * "A second process compiled nothing" is shaders_compiled == 0 && plans_compiled == 0. */
typedef struct denox_stats {
  uint64_t plans_compiled;      /* models imported and lowered to a plan */
  uint64_t plan_cache_hits;     /* plans from either cache (the shipped ones included) */
  uint64_t shaders_compiled;    /* GLSL -> SPIR-V runs of glslang */
  uint64_t shader_cache_hits;   /* SPIR-V from either cache */
  uint64_t pipeline_cache_hits; /* caches holding VkPipelineCache data for this device (0..2) */
  uint64_t validation_errors;   /* headless contexts with validation only */
  /* Of the hits above, those answered by the shipped cache (denox_context_options). */
  uint64_t shipped_plan_hits;
  uint64_t shipped_shader_hits;
  uint64_t shipped_pipeline_cache_hits;
} denox_stats;
DENOX_API denox_result denox_context_get_stats(denox_context context, denox_stats* out_stats);

/* ---- Models -------------------------------------------------------------------------------- */

typedef struct denox_model_T* denox_model;

/* How the schedule (fusions, kernels, configurations) is chosen when a model is compiled. */
typedef enum denox_tuning {
  /* A cost model ranks the candidates; nothing runs on the device, the result is deterministic
   * for a device and driver (CI, reproducible builds). The default. One plan per model, run at
   * every extent: it ranks at 1920x1088, where each layer's size picks its tiles. (It uses what
   * denox_context_create found out about the device: see there.) */
  DENOX_TUNING_HEURISTIC = 0,
  /* Every candidate left after pruning is timed on the device at tune_width x tune_height
   * (the load call blocks meanwhile, using the context's queue); measurements are kept in the
   * cache, so nothing is measured twice on this device and driver. */
  DENOX_TUNING_MEASURE = 1,
  /* Like MEASURE over the whole configuration space (no configuration pruning): benchmarks and
   * the offline tool that chooses the pruned set (bench/prune/). */
  DENOX_TUNING_EXHAUSTIVE = 2
} denox_tuning;

/* Progress of a compile: `stage` is "import", "enumerate", "compile" (shaders of the
 * candidates), "measure", "select", "lower", "shaders" or "done"; `done` of `total` steps of
 * that stage; `what` names the current item ("" if none). Called on the loading thread, and for
 * background work (tune_in_background, reloads) also on the model's worker thread, possibly
 * while the caller's threads run: it must then be thread-safe, and progress_user_data must stay
 * valid until the model is destroyed. A background job reports its own stages, ending in
 * "done" (also after a foreground load already reported "done"). The callback must not call
 * denox functions on the model it reports for (destroying it from its own worker thread would
 * wait for that thread); denox_model_get_status is the exception. */
typedef void (*denox_progress_callback)(const char* stage, uint32_t done, uint32_t total, const char* what, void* user_data);

/* ---- int8 calibration ------------------------------------------------------------------- */

/* The range of every tensor of one model, measured by running its fp32 CPU reference on
 * representative inputs: what DENOX_PRECISION_INT8 quantizes with. Device-independent (make it
 * once, ship it with the model: denox_calibration_save / _load). It belongs to the model it was
 * made from (its content hash is recorded): loading another model with it fails naming both
 * hashes, so a retrained or edited model (a hot reload included) needs a new calibration. */
typedef struct denox_calibration_T* denox_calibration;

/* One sample: the model's inputs at width x height, one array per ONNX graph input in graph
 * order (denox_model_get_tensor_info's order), each channels x height x width float32 (CHW),
 * finite values. */
typedef struct denox_calibration_sample {
  uint32_t width, height;
  const float* const* inputs;
  uint32_t input_count;
} denox_calibration_sample;

/* Runs the model's fp32 CPU reference on each sample (seconds per 256x256 sample for a denoiser
 * of OIDN's size, on the calling thread; no device) and keeps, per tensor, the 99.99th
 * percentile of its values. Samples should look like what the game will denoise (scenes,
 * sample counts, exposure); 4-16 of 256x256 crops suffice for a denoiser. Fails with
 * DENOX_ERROR_INVALID_ARGUMENT for no sample, a wrong input count or extent, or a NaN or
 * infinity in an input or a tensor (naming it), and as a model load does for the model. */
DENOX_API denox_result denox_calibrate_file(const char* onnx_path, const denox_calibration_sample* samples, uint32_t sample_count,
                                            denox_calibration* out_calibration);
DENOX_API denox_result denox_calibrate_memory(const void* onnx_bytes, size_t size, const denox_calibration_sample* samples,
                                              uint32_t sample_count, denox_calibration* out_calibration);
/* A calibration as bytes (a small JSON document), to store and ship. Call with data == NULL
 * to get the size in *size. */
DENOX_API denox_result denox_calibration_save(denox_calibration calibration, void* data, size_t* size);
/* From denox_calibration_save's bytes (copied). Fails with DENOX_ERROR_INVALID_ARGUMENT saying
 * what is wrong when they are not a denox calibration, of another format version, or damaged. */
DENOX_API denox_result denox_calibration_load(const void* bytes, size_t size, denox_calibration* out_calibration);
/* The model content hash it was made for (hex, static until the calibration is destroyed). */
DENOX_API const char* denox_calibration_model_hash(denox_calibration calibration);
/* A model loaded with it keeps its own copy: it may be destroyed after the load. NULL is ignored. */
DENOX_API void denox_calibration_destroy(denox_calibration calibration);

typedef struct denox_model_options {
  denox_precision precision;
  /* Nonzero: denox allocates no device memory for the model; the caller binds its own buffers
   * (denox_model_memory_requirements / denox_model_bind_memory) and weights are uploaded into
   * them by denox_model_bind_memory (on the context's queue, waiting for completion). */
  int external_memory;
  denox_tuning tuning;
  /* The extent MEASURE / EXHAUSTIVE tune for (its resolution class: the plan is cached per
   * extent and runs at every extent). 0: 1920x1088. The heuristic always ranks at 1920x1088. */
  uint32_t tune_width, tune_height;
  /* Nonzero: do not take the plan from the cache; schedule again (measurements still come from
   * the cache). For tools (`denox compile`). */
  int recompile;
  denox_progress_callback progress; /* may be NULL */
  void* progress_user_data;

  /* Nonzero, with tuning MEASURE or EXHAUSTIVE: loading never waits for measurements. If the
   * tuned plan for this model, device and tuning extent is in the cache, the load uses it at
   * once (as without this flag). Otherwise the load returns with the heuristic plan (cached as
   * usual; or a shipped cache's tuned plan for this GPU under another driver, see
   * shipped_cache_path) and the model's worker thread measures, schedules and builds the tuned plan
   * (pipelines created, weights uploaded: needs denox_vulkan_device::background_queue or
   * lock_queue, else the load fails with DENOX_ERROR_INVALID_ARGUMENT). The first
   * denox_model_record() after it is ready records the tuned plan (see "Frame boundary" at
   * denox_model_record); denox_model_get_status reports progress and errors (running_job says
   * whether the tune still runs). A tune that fails leaves the plan it started with running.
   * Its timings include the engine's own GPU work; they are stored as they are. On an H200
   * beside another process keeping the GPU busy, a tune took 7-8x longer than on a quiet GPU and
   * its plan ran as fast as the quiet tune's (bench/RESULTS.md, 2026-12-01).
   * Ignored with DENOX_TUNING_HEURISTIC. */
  int tune_in_background;
  /* How many further denox_model_record() calls a replaced plan is kept for after a swap (its
   * pipelines and buffers may be used by command buffers still in flight); it is destroyed in
   * the record() call that many calls after the swapping one, or at denox_model_destroy. Only
   * calls that recorded count (one that failed, DENOX_ERROR_NOT_READY say, recorded nothing).
   * Use at least the number of frames the engine keeps in flight times the model's records per
   * frame. 0: 3. */
  uint32_t retire_after_records;
  /* DENOX_PRECISION_INT8: the model's calibration (required; ignored with other precisions).
   * The model copies it (reloads and background tunes use the copy). Part of the plan's cache
   * key: another calibration compiles another plan. */
  denox_calibration calibration;
} denox_model_options;

/* Loads an ONNX model (with external data files resolved next to it), compiles it for the
 * context's device or takes the plan from the cache, creates its pipelines and uploads its
 * weights (default memory mode). Blocks until done. `options` may be NULL. */
DENOX_API denox_result denox_model_load_file(denox_context context, const char* onnx_path,
                                             const denox_model_options* options, denox_model* out_model);
/* The same from bytes (copied; no external data). */
DENOX_API denox_result denox_model_load_memory(denox_context context, const void* onnx_bytes, size_t size,
                                               const denox_model_options* options, denox_model* out_model);
/* A serialized plan (denox_model_export_plan, `denox compile --plan`): needs no ONNX, and
 * compiles none of the plan's shaders (it carries their SPIR-V). A plan carries no checksum and
 * is trusted like code: the load checks its structure, that it fits the device and what its
 * SPIR-V declares, not every value (a damaged or forged plan may make the GPU read or write out
 * of bounds); ship it as you ship executables. The io adapters are not in the
 * plan: denox_model_bind_input / _bind_output compile the ones their bindings need with glslang,
 * on the calling thread, unless the writable or shipped cache holds their SPIR-V (a cache that
 * `denox cache export` wrote where those bindings ran has them). The plan's precision wins
 * over options->precision; it fails with DENOX_ERROR_MISSING_FEATURE if the plan needs fp16,
 * int8 or cooperative matrices the device lacks, subgroups of another width, larger workgroups,
 * more shared memory per workgroup than the device gives or cooperative-matrix shapes it does
 * not report (both read from the plan's SPIR-V: since 0.4.1), or holds A_DIRECT convolutions and
 * the device's cooperative-matrix element order did not check out at denox_context_create; the
 * message names the shader and its dispatch. SPIR-V that cannot be read: DENOX_ERROR_INVALID_MODEL. */
DENOX_API denox_result denox_model_load_plan(denox_context context, const void* plan_bytes, size_t size,
                                             const denox_model_options* options, denox_model* out_model);
/* How the model's plan was made, as a JSON object (for logs and `denox compile --json`):
 * "from_cache", "tuning", "space", "tune_extent", "dispatches", "implementations",
 * "structures", "structures_kept", "edges", "measured_edges", "cached_edges", "failed_edges",
 * "same_edges" (of the measured and cached ones, edges identical to another one, e.g. two
 * layers of the same shapes and configuration: timed once, both given that time),
 * "timed_again_edges" (measured twice, on a GPU whose clock was down during the first timing:
 * the faster time kept), for measured plans (unless the pass was skipped, with a warning in the log) "pipelines"
 * (distinct, of the plan kept) and "pipeline_swaps" (steps moved to a configuration another
 * dispatch runs, which saves a cold pipeline start: {"step", "from", "to", "measured_extra_ms",
 * "pipelines_before", "pipelines_after"}), "total_ms" (predicted), "time_ms" {"import",
 * "enumerate", "prune", "measure", "select", "lower", "shaders", "total"} and "schedule": one
 * object per step {"name", "pattern", "family", "config", "inputs", "output", "dispatches",
 * "ms", "measured"}. A plan from the cache or from a plan file has "from_cache": true and no
 * schedule. Call with json == NULL to get the size (including the terminating NUL) in *size. */
DENOX_API denox_result denox_model_schedule_report(denox_model model, char* json, size_t* size);
/* Writes the model's plan. Call with data == NULL to get the size in *size. */
DENOX_API denox_result denox_model_export_plan(denox_model model, void* data, size_t* size);
/* Waits for nothing on the GPU: the caller must make sure no command buffer that recorded this
 * model (its current or a replaced plan) is still pending. A background job is cancelled and its
 * thread joined first. It stops within about one shader compile, one measurement submit (what
 * it measured so far stays in the cache) or one driver pipeline creation (a large part of a
 * second with a cold driver cache), except in two steps it finishes first: importing a
 * reloaded model (protobuf parsing), and a finished plan's weight upload. NULL is ignored. */
DENOX_API void denox_model_destroy(denox_model model);

typedef enum denox_io_kind { DENOX_INPUT = 0, DENOX_OUTPUT = 1 } denox_io_kind;

typedef struct denox_tensor_info {
  char name[256];
  uint32_t channels;
  uint32_t width, height; /* at the current extent; 0 before set_extent */
} denox_tensor_info;
DENOX_API uint32_t denox_model_input_count(denox_model model);
DENOX_API uint32_t denox_model_output_count(denox_model model);
DENOX_API denox_result denox_model_get_tensor_info(denox_model model, denox_io_kind kind, uint32_t index,
                                                   denox_tensor_info* out_info);
/* The plan's precision (FP32 or FP16: the type of its inputs, outputs and float tensors; an
 * INT8 request's plan is FP16), for logs and tools. */
DENOX_API denox_precision denox_model_precision(denox_model model);
/* The dispatches of the running plan that run on int8 tensor cores: 0 unless loaded with
 * DENOX_PRECISION_INT8, and possibly 0 then (the tuner found nothing faster in int8). */
DENOX_API uint32_t denox_model_int8_dispatch_count(denox_model model);

/* Runs the shape program for the input extent and prepares everything record() needs. Never
 * compiles. In default memory mode the scratch memory may be reallocated when it must grow: no
 * command buffer that recorded this model may then be pending on the GPU. It never shrinks and
 * grows to 9/8 of the need (rounded up to 1 MiB), so a smaller extent later reallocates only if
 * its scratch_size (denox_model_memory_requirements) exceeds that: with dynamic resolution, set
 * the largest extent once at startup. A plan swapped in by background work has its own scratch,
 * sized for the extent current then. Bindings are kept.
 * The extent and the bindings (bind_input / bind_output) are remembered and applied to every
 * plan that background work swaps in. Refused (DENOX_ERROR_UNSUPPORTED, naming the tensor) where
 * one intermediate tensor would take more than the device's maxStorageBufferRange or hold 2^31
 * elements (the shaders address a tensor with 32-bit indices), or where the scratch arena, one
 * buffer, would pass maxBufferSize (past maxMemoryAllocationSize it logs a warning: the
 * allocation may fail). A set_extent, bind_input, bind_output or bind_memory that fails leaves
 * the model as it was: record() records what it did before (except a bind_memory that named the
 * weights buffer bound before: see there). */
DENOX_API denox_result denox_model_set_extent(denox_model model, uint32_t width, uint32_t height);

typedef struct denox_memory_requirements {
  VkDeviceSize scratch_size, scratch_alignment; /* intermediate tensors at that extent */
  VkDeviceSize weights_size, weights_alignment; /* independent of the extent */
  VkBufferUsageFlags usage;                     /* what the buffers must be created with */
} denox_memory_requirements;
DENOX_API denox_result denox_model_memory_requirements(denox_model model, uint32_t width, uint32_t height,
                                                       denox_memory_requirements* out);
/* External memory mode: the caller's buffers for scratch and weights (weights are uploaded on
 * every call, with the context's queue: a buffer with the handle of a destroyed one is a new
 * buffer). Re-bind scratch after an extent change that needs more.
 * With background work: once a new plan is finished (denox_model_get_status: swap_pending),
 * denox_model_memory_requirements reports the new plan's needs and denox_model_bind_memory
 * binds memory for the new plan (uploading its weights), not for the running one; the swap
 * waits for it (waiting_for_memory). bind_memory always binds to the plan whose needs
 * memory_requirements reported last, so a plan that finishes between the two calls never gets
 * buffers sized for another; if that plan was dropped meanwhile (a newer reload finished), it
 * fails with DENOX_ERROR_INVALID_ARGUMENT: ask for the requirements again. The running plan keeps the buffers bound before: keep them
 * alive until it is retired (retire_after_records record() calls after the swap). The new plan's
 * weights may not overlap the running plan's weights or scratch (DENOX_ERROR_INVALID_ARGUMENT,
 * since 0.4.1: the upload would change what command buffers recorded with the running plan
 * compute, or the running plan's frames would overwrite it); its scratch may overlap the
 * running plan's scratch, not its weights (also for denox_model_bind_scratch). The same holds
 * for plans replaced earlier and not yet released (since 0.4.2; denox_model_status::retired_plans).
 * Accesses: the weights range is written once per bind (a transfer on the context's queue,
 * waited for) and then only read, by compute shaders; the scratch range is read and written by
 * denox's compute shaders, in the work record() records. Scratch holds nothing from one record()
 * to the next (every tensor is written before it is read in the same recording; tensors share
 * its bytes): between denox's frames the engine may alias it with other transient memory, its
 * own use ordered after denox's (denox_cmd_output_barrier with its stages) and before the next
 * record() (denox_cmd_input_barrier from its stages). The weights must stay intact.
 * A failure leaves the earlier binding, except where the call named the weights buffer handle
 * bound before: that handle may name a new buffer now (a destroyed buffer's handle value handed
 * out again), or hold part of a failed upload, so its binding is dropped (since 0.4.1), and
 * record() and denox_model_bind_scratch fail, saying so, until a bind_memory succeeds. */
DENOX_API denox_result denox_model_bind_memory(denox_model model, VkBuffer scratch, VkDeviceSize scratch_offset,
                                               VkDeviceSize scratch_size, VkBuffer weights,
                                               VkDeviceSize weights_offset);
/* Since 0.4.0. External memory mode: binds a new scratch range and keeps the weights that
 * denox_model_bind_memory bound (and uploaded) for the same plan: no upload, no submit, no
 * wait, so an extent change that needs more scratch costs no queue drain. The weights buffer
 * must be the one bound then, still alive and unchanged. Binds to the plan bind_memory would
 * bind to; DENOX_ERROR_INVALID_ARGUMENT when that plan has no weights bound yet (a plan just
 * loaded, or one that background work finished: bind_memory first). A failure leaves the
 * model as it was. */
DENOX_API denox_result denox_model_bind_scratch(denox_model model, VkBuffer scratch, VkDeviceSize scratch_offset,
                                                VkDeviceSize scratch_size);

typedef enum denox_layout { DENOX_LAYOUT_CHW = 0, DENOX_LAYOUT_HWC = 1 } denox_layout;
typedef enum denox_dtype { DENOX_DTYPE_F32 = 0, DENOX_DTYPE_F16 = 1 } denox_dtype;

/* Where channels [first_channel, first_channel + channel_count) of a network input come from
 * (or of an output go to). Either a buffer or a storage image:
 *  - buffer: element (c, y, x) of the caller's tensor, which has `pixel_channels` channels per
 *    pixel, is at CHW: offset + ((buffer_first_channel + c) * H + y) * W + x elements,
 *    HWC: offset + (y * W + x) * pixel_channels + buffer_first_channel + c elements, of
 *    `dtype`. `offset` is in bytes, a multiple of minStorageBufferOffsetAlignment.
 *  - image: a 2D storage image view in VK_IMAGE_LAYOUT_GENERAL, format R16G16B16A16_SFLOAT or
 *    R32G32B32A32_SFLOAT, at least W x H (since 0.4.1 a smaller one reads zeros past its edge
 *    and keeps the output that fits, instead of undefined behaviour); components 0 ..
 *    channel_count-1 (channel_count <= 4) are read (input) or written (output: the whole texel
 *    is written; components past channel_count are 0, alpha 1). One output binding per image
 *    (since 0.4.1 two bindings of one output on the same view are refused,
 *    DENOX_ERROR_INVALID_ARGUMENT; across outputs it is not checked).
 *  A buffer binding's range (VK_WHOLE_SIZE included) larger than maxStorageBufferRange is bound
 *  as the bytes the tensor needs; a tensor that needs more is refused (DENOX_ERROR_UNSUPPORTED).
 * A 9-channel network takes three bindings: color (0..2), albedo (3..5), normal (6..8). */
typedef struct denox_binding {
  uint32_t first_channel;
  uint32_t channel_count;
  VkBuffer buffer;
  VkDeviceSize offset;
  VkDeviceSize range; /* bytes, or VK_WHOLE_SIZE */
  denox_layout layout;
  denox_dtype dtype;
  uint32_t pixel_channels;
  uint32_t buffer_first_channel;
  VkImageView image_view; /* non-null: an image binding (the buffer fields are ignored) */
  VkFormat image_format;
} denox_binding;

/* Replace every binding of input/output `index`; together they must cover each channel of the
 * tensor exactly once. Objects must stay alive while command buffers that use them run. */
DENOX_API denox_result denox_model_bind_input(denox_model model, uint32_t index, const denox_binding* bindings,
                                              uint32_t count);
DENOX_API denox_result denox_model_bind_output(denox_model model, uint32_t index, const denox_binding* bindings,
                                               uint32_t count);

/* Records the whole inference into `cmd` (a primary or secondary command buffer in the
 * recording state, for the context's queue family): compute dispatches and the barriers
 * between them that denox derives itself. Submits nothing, waits for nothing; takes about a
 * microsecond per dispatch. Without background work it allocates nothing (with it, see "Frame
 * boundary").
 * Call it outside a render pass instance (vkCmdBeginRenderPass or vkCmdBeginRendering; a
 * secondary `cmd` without RENDER_PASS_CONTINUE_BIT): it records vkCmdPipelineBarrier and
 * vkCmdDispatch. It leaves bound: denox's compute pipeline, descriptor set 0 pushed with
 * denox's pipeline layout (which disturbs the engine's compute descriptor sets) and push
 * constants of VK_SHADER_STAGE_COMPUTE_BIT. Rebind the engine's compute pipeline, descriptor
 * sets and push constants after it. Nothing is bound at the graphics bind point.
 * Debug labels (since 0.4.0): where denox_vulkan_device::enabled_instance_extensions lists
 * VK_EXT_debug_utils (a headless context: with validation), the work is wrapped in a "denox"
 * label and each dispatch in one with its name (denox_model_dispatch_name), so that RenderDoc,
 * Nsight Graphics or RGP show them. Labels open and close within the call.
 * DENOX_ERROR_NOT_READY (nothing recorded; the message says which): no extent; external memory
 * not bound, or a scratch buffer smaller than the extent needs; an input or output not bound,
 * or a bound buffer range too small for the extent; or the commands could not be rebuilt after
 * a failed set_extent / bind_* (until one of them succeeds).
 * Frame boundary: with background work, each call first (without blocking: a lock held by the
 * worker defers this to the next call) swaps in a finished plan whose extent and bindings are
 * in place (re-applying the caller's latest ones if they changed after the worker applied
 * them: the only case where record() may allocate scratch or compile (glslang, on a cache
 * miss) and create an io adapter pipeline), so this and later calls record the new plan;
 * releases a replaced plan (destroys its pipelines, frees its memory)
 * retire_after_records calls after its swap; and with denox_model_watch_file, stats the file
 * (at most every 0.5 s) and queues a reload when it changed. A swapped-in plan that cannot take
 * the current extent or bindings is dropped (status last_error) and the old one is recorded.
 * The caller owes (see the helpers below):
 *  - before: a barrier making its writes of the input buffers/images visible to
 *    VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT / VK_ACCESS_2_SHADER_STORAGE_READ_BIT, and ordering
 *    its earlier reads and writes of the output buffers/images before that stage (denox writes
 *    them with VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT): denox_cmd_input_barrier with src_stage
 *    covering both; images in VK_IMAGE_LAYOUT_GENERAL;
 *  - after: a barrier from VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT /
 *    VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT to wherever it reads the outputs, and whose
 *    destination stages also include those of its next writes of the inputs (denox's dispatches
 *    read the inputs until late in the network: a transfer or fragment-stage write of the next
 *    frame's input must wait for them; denox_cmd_output_barrier with dst_stage covering both);
 *  - across frames: nothing more for denox's own memory. denox's first dispatch waits on earlier
 *    compute work that used its scratch (a compute->compute barrier at the start of each
 *    recording), so recording the model twice in a row, or in consecutive frames, is safe.
 *    A barrier orders only work on one queue, and a model has one scratch arena: command
 *    buffers that recorded one model and go to different queues must be ordered by the engine
 *    (semaphores), or use one model per queue. */
DENOX_API denox_result denox_model_record(denox_model model, VkCommandBuffer cmd);

/* Helpers for the barriers above: one global memory barrier (VkMemoryBarrier) each, so no image
 * layout transition and no queue family ownership transfer: those are the caller's (with its
 * own buffer/image barriers) where it needs them. The input barrier's destination is
 * VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT / SHADER_STORAGE_READ | SHADER_STORAGE_WRITE, the
 * output barrier's source VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT / SHADER_STORAGE_WRITE.
 * Recorded with the Vulkan 1.0 vkCmdPipelineBarrier (synchronization2 need not be enabled):
 * stage and access bits below 2^32 pass unchanged; any stage bit from 2^32 up becomes
 * VK_PIPELINE_STAGE_ALL_COMMANDS_BIT; SHADER_SAMPLED_READ and SHADER_STORAGE_READ become
 * VK_ACCESS_SHADER_READ_BIT, SHADER_STORAGE_WRITE VK_ACCESS_SHADER_WRITE_BIT, any other access
 * bit from 2^32 up VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT. A NULL context or
 * `cmd` records nothing. */
DENOX_API void denox_cmd_input_barrier(denox_context context, VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage,
                                       VkAccessFlags2 src_access);
DENOX_API void denox_cmd_output_barrier(denox_context context, VkCommandBuffer cmd, VkPipelineStageFlags2 dst_stage,
                                        VkAccessFlags2 dst_access);

/* For benchmarks: records like denox_model_record plus a timestamp after each dispatch (query 0
 * before the first) into `query_pool`, which must hold at least denox_model_dispatch_count() + 1
 * timestamp queries (denox resets them in `cmd`). `serialize`: a barrier before every dispatch,
 * so that consecutive timestamps are per-dispatch times. Without it the timestamps still order
 * the dispatches on NVIDIA's driver (commands after a timestamp wait for it), which costs 1-2% on
 * an H100: to time a whole frame, write your own first and last timestamp around
 * denox_model_record() instead (as `denox bench` does). Not a frame boundary: it records the
 * running plan and never swaps (the pool was sized for it). */
DENOX_API uint32_t denox_model_dispatch_count(denox_model model);
DENOX_API denox_result denox_model_record_timed(denox_model model, VkCommandBuffer cmd, VkQueryPool query_pool,
                                                int serialize);
/* The name of dispatch i (after set_extent and the binds), for per-dispatch tables. The string
 * is valid until this thread's next call of this function. */
DENOX_API const char* denox_model_dispatch_name(denox_model model, uint32_t index);

/* ---- Background tuning and hot reload ------------------------------------------------------ */

/* Which plan denox_model_record() records. */
typedef enum denox_plan_kind {
  DENOX_PLAN_HEURISTIC = 0, /* the cost model's schedule (DENOX_TUNING_HEURISTIC, or until a background tune is done) */
  DENOX_PLAN_TUNED = 1,     /* measured on this device (MEASURE / EXHAUSTIVE), from the cache or a background tune; or
                               on this GPU under another driver (a shipped cache after a driver update), while
                               running_job says the tune for this driver runs */
  DENOX_PLAN_RELOADED = 2,  /* swapped in by denox_model_reload_* or a watched file */
  DENOX_PLAN_FROM_FILE = 3  /* denox_model_load_plan */
} denox_plan_kind;

typedef enum denox_background_job {
  DENOX_JOB_NONE = 0,
  DENOX_JOB_TUNE = 1,   /* measuring and building the tuned plan (tune_in_background) */
  DENOX_JOB_RELOAD = 2  /* compiling a reloaded model */
} denox_background_job;

typedef struct denox_model_status {
  denox_plan_kind active_plan;
  denox_background_job running_job; /* what the worker thread does or is about to do (NONE: idle) */
  float progress;                   /* of that job, 0..1 (rough: stages weighted by typical cost) */
  char stage[32];                   /* of that job ("queued", "measure", "build", ...), "" when idle */
  int swap_pending;                 /* a finished plan waits for the next record() */
  int waiting_for_memory;           /* external memory: that plan waits for denox_model_bind_memory */
  uint32_t swaps;                   /* plans swapped in at frame boundaries so far */
  uint32_t retired_plans;           /* replaced plans not yet released (see retire_after_records) */
  uint32_t failed_jobs;             /* background jobs that failed so far */
  denox_result last_error_result;   /* of the last failure, DENOX_SUCCESS when none or after a later success */
  char last_error[1024];            /* its message: the file, node, op or mismatch at fault ("" if none) */
  VkResult last_error_vk_result;    /* since 0.4.0: its VkResult, as denox_last_vk_result() (VK_SUCCESS: none) */
} denox_model_status;
/* A snapshot of the model's background state. May be called from any thread at any time. */
DENOX_API denox_result denox_model_get_status(denox_model model, denox_model_status* out_status);

/* Hot reload: compiles the ONNX model at `onnx_path` (or from bytes, copied) on the model's
 * worker thread, with the options the model was loaded with (a MEASURE model measures what is
 * new, in the background), while record() keeps recording the current plan; the first
 * record() after it is ready swaps to it (see "Frame boundary" at denox_model_record). Returns
 * once the job is queued (reload_file checks only that the file exists; the worker reads it). A
 * newer request cancels a running job (a background tune included): the newest model wins.
 * The new model must have as many inputs and outputs as the model, with the same channel
 * counts, and run at the current extent (names may differ; bindings go by index). A model that
 * cannot be read, parsed, compiled or matched leaves the current plan running; the error
 * (naming the file, node, op or mismatch) goes to denox_model_get_status and the log.
 * Needs background_queue or lock_queue on an engine's device (denox_vulkan_device), except for
 * DENOX_TUNING_HEURISTIC models with external memory (nothing to submit then). */
DENOX_API denox_result denox_model_reload_file(denox_model model, const char* onnx_path);
DENOX_API denox_result denox_model_reload_memory(denox_model model, const void* onnx_bytes, size_t size);
/* Watches `onnx_path`: each record() stats it, at most every 0.5 s (no other I/O in the frame),
 * and queues a reload (as denox_model_reload_file) when its modification time or size changed
 * since the call or the last reload. Does not reload now. NULL stops watching. */
DENOX_API denox_result denox_model_watch_file(denox_model model, const char* onnx_path);

#ifdef __cplusplus
}
#endif

#endif /* DENOX_DENOX_H */
