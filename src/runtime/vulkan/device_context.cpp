#include "runtime/vulkan/device_context.hpp"


#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/error.hpp"
#include "common/log.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::runtime {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// volk keeps the loader entry point in a global; initialize it once per process. An engine
// that hands us its own vkGetInstanceProcAddr gets that one (the first context wins; all
// loaders' trampolines dispatch on the handle, so any of them serves every instance).
std::mutex g_volk_mutex;
bool g_volk_ready = false;

void init_volk(PFN_vkGetInstanceProcAddr gipa) {
  std::lock_guard lock(g_volk_mutex);
  if (g_volk_ready) return;
  if (gipa) {
    volkInitializeCustom(gipa);
  } else if (volkInitialize() != VK_SUCCESS) {
    fail(ErrorCode::MissingFeature, "the Vulkan loader (libvulkan.so.1) could not be loaded; install libvulkan1 and a driver");
  }
  g_volk_ready = true;
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vk_check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> exts(n);
  vk_check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()), "vkEnumerateDeviceExtensionProperties");
  exts.resize(n);
  return exts;
}

// Supported features of a physical device, as the chain denox cares about.
struct FeatureChain {
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  void link(bool with_coop) {
    f2.pNext = &v11;
    v11.pNext = &v12;
    v12.pNext = with_coop ? &coop : nullptr;
    coop.pNext = nullptr;
  }
  // What `pd` supports (the cooperative-matrix part only `with_coop`: the extension is there).
  void query_supported(VkPhysicalDevice pd, bool with_coop) {
    link(with_coop);
    vkGetPhysicalDeviceFeatures2(pd, &f2);
  }
};

// Fills the physical-device part of the capabilities (name, ids, limits, what is supported).
DeviceCapabilities describe(VkPhysicalDevice pd, const std::vector<VkExtensionProperties>& exts) {
  DeviceCapabilities caps;
  VkPhysicalDevicePushDescriptorPropertiesKHR push{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
  VkPhysicalDeviceVulkan11Properties p11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
  VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  VkPhysicalDeviceMaintenance4Properties m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &p11;
  p11.pNext = &p12;
  p12.pNext = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) ? &push : nullptr;
  // maxBufferSize comes with Vulkan 1.3 and VK_KHR_maintenance4 (a property query needs the
  // extension supported, not enabled). Chained elsewhere, the structure would be unknown to the
  // driver, and the limit is then unknown (no limit checked).
  VkPhysicalDeviceProperties plain{};
  vkGetPhysicalDeviceProperties(pd, &plain);
  const bool has_max_buffer_size = plain.apiVersion >= VK_API_VERSION_1_3 || has_extension(exts, VK_KHR_MAINTENANCE_4_EXTENSION_NAME);
  if (has_max_buffer_size) push.pNext = &m4;
  if (has_max_buffer_size && p12.pNext == nullptr) p12.pNext = &m4;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const auto& p = props.properties;
  caps.max_buffer_size = has_max_buffer_size ? m4.maxBufferSize : ~VkDeviceSize{0};
  caps.max_memory_allocation_size = p11.maxMemoryAllocationSize;
  caps.device_name = p.deviceName;
  caps.driver_name = p12.driverName;
  caps.driver_info = p12.driverInfo;
  caps.api_version = p.apiVersion;
  caps.driver_version = p.driverVersion;
  caps.vendor_id = p.vendorID;
  caps.device_id = p.deviceID;
  caps.device_type = p.deviceType;
  std::memcpy(caps.pipeline_cache_uuid.data(), p.pipelineCacheUUID, VK_UUID_SIZE);
  caps.timestamp_period_ns = p.limits.timestampPeriod;
  caps.timestamps = p.limits.timestampComputeAndGraphics;
  caps.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  caps.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  caps.max_push_constants_size = p.limits.maxPushConstantsSize;
  caps.max_push_descriptors = push.maxPushDescriptors;
  caps.max_compute_shared_memory = p.limits.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i) caps.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  for (int i = 0; i < 3; ++i) caps.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
  caps.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  caps.subgroup_size = p11.subgroupSize;

  if (has_extension(exts, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) {
    uint32_t n = 0;
    vk_check(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, nullptr), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    std::vector<VkCooperativeMatrixPropertiesKHR> shapes(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    vk_check(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, shapes.data()), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    for (const auto& s : shapes) {
      if (s.scope != VK_SCOPE_SUBGROUP_KHR) continue;
      caps.coop_matrix_shapes.push_back({s.MSize, s.NSize, s.KSize, s.AType, s.BType, s.CType, s.ResultType});
    }
  }
  return caps;
}

uint32_t compute_queue_family(VkPhysicalDevice pd, uint32_t* timestamp_bits) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  for (uint32_t i = 0; i < n; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      *timestamp_bits = families[i].timestampValidBits;
      return i;
    }
  }
  fail(ErrorCode::MissingFeature, "the Vulkan device has no compute queue");
}

bool layer_has_extension(const char* layer, const char* extension) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(layer, &n, exts.data()) != VK_SUCCESS) return false;
  exts.resize(n);
  return has_extension(exts, extension);
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const char* text = data && data->pMessage ? data->pMessage : "(no message)";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1);
    log::error("vulkan validation: {}", text);
  } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    log::warn("vulkan validation: {}", text);
  }
  return VK_FALSE;
}

VkInstance create_instance(bool validation, VkDebugUtilsMessengerCreateInfoEXT* messenger_info) {
  init_volk(nullptr);
  const uint32_t loader_version = volkGetInstanceVersion();
  if (loader_version < VK_API_VERSION_1_3)
    fail(ErrorCode::MissingFeature, "the Vulkan loader supports only Vulkan " + std::to_string(VK_API_VERSION_MAJOR(loader_version)) +
                                        "." + std::to_string(VK_API_VERSION_MINOR(loader_version)) + "; denox needs 1.3");
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "denox";
  app.pEngineName = "denox";
  app.apiVersion = VK_API_VERSION_1_3;
  std::vector<const char*> layers, extensions;
  if (validation) {
    uint32_t n = 0;
    vk_check(vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties");
    std::vector<VkLayerProperties> available(n);
    vk_check(vkEnumerateInstanceLayerProperties(&n, available.data()), "vkEnumerateInstanceLayerProperties");
    bool found = std::any_of(available.begin(), available.begin() + n,
                             [](const auto& l) { return std::strcmp(l.layerName, kValidationLayer) == 0; });
    if (!found) fail(ErrorCode::MissingFeature, std::string(kValidationLayer) + " was requested but is not installed (Debian: vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  // Synchronization validation too: denox derives its own barriers, and only this part of the
  // layer reports a missing one (a read-after-write hazard between two dispatches).
  const VkValidationFeatureEnableEXT sync_validation = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync_validation;
  features.pNext = messenger_info;
  const bool sync = validation && layer_has_extension(kValidationLayer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  if (sync) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  if (validation && !sync) log::warn("the validation layer lacks VK_EXT_validation_features: no synchronization validation");
  // Layers from mid-2024 on (Debian 13's 1.4.309 among them) leave out of the synchronization
  // checks what shaders access through descriptors unless `syncval_shader_accesses_heuristic` is
  // on, and every denox dispatch reaches its tensors that way: without it, a barrier missing
  // between two dispatches went unreported on the GPU machine. Older layers check those accesses
  // by default and lack VK_EXT_layer_settings.
  const VkBool32 on = VK_TRUE;
  const VkLayerSettingEXT shader_accesses{kValidationLayer, "syncval_shader_accesses_heuristic", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &on};
  VkLayerSettingsCreateInfoEXT settings{VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT};
  settings.settingCount = 1;
  settings.pSettings = &shader_accesses;
  if (sync && layer_has_extension(kValidationLayer, VK_EXT_LAYER_SETTINGS_EXTENSION_NAME)) {
    extensions.push_back(VK_EXT_LAYER_SETTINGS_EXTENSION_NAME);
    settings.pNext = features.pNext;
    features.pNext = &settings;
  }
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  info.pNext = sync ? static_cast<const void*>(&features) : validation ? messenger_info : nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  vk_check(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance");
  volkLoadInstanceOnly(instance);
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t n = 0;
  vk_check(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  vk_check(vkEnumeratePhysicalDevices(instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
  devices.resize(n);
  return devices;
}

}  // namespace

const std::vector<DeviceRequirement>& device_requirements() {
  static const std::vector<DeviceRequirement> list = {
      {"Vulkan 1.3", true, "denox's shaders target SPIR-V 1.6 and use Vulkan 1.3 core synchronization"},
      {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, true,
       "record() pushes its bindings into the caller's command buffer: no descriptor sets to keep alive across frames"},
      {"VkPhysicalDeviceVulkan11Features::storageBuffer16BitAccess", false, "fp16 tensors (half the memory traffic)"},
      {"VkPhysicalDeviceVulkan12Features::shaderFloat16", false, "fp16 tensors (half the memory traffic)"},
      {"VkPhysicalDeviceVulkan12Features::shaderInt8", false, "the opt-in int8 precision's tensor-core convolutions"},
      {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME " + VkPhysicalDeviceCooperativeMatrixFeaturesKHR::cooperativeMatrix", false,
       "tensor-core convolutions"},
      {"VkPhysicalDeviceVulkan12Features::vulkanMemoryModel + vulkanMemoryModelDeviceScope", false,
       "tensor-core convolutions (their shaders use the Vulkan memory model; every Vulkan 1.3 device supports both)"},
  };
  return list;
}

namespace {

// An engine that leaves a feature out of enabled_features_chain gets the portable fp32 shaders,
// several times slower, and nothing else says why: name what the device has and was not enabled.
void warn_unused_features(VkPhysicalDevice pd, const DeviceCapabilities& caps, const std::vector<std::string>& enabled_extensions) {
  const auto exts = device_extensions(pd);
  const bool coop_ext = has_extension(exts, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  FeatureChain supported;
  supported.query_supported(pd, coop_ext);
  std::vector<std::string> unused;
  if (supported.v11.storageBuffer16BitAccess && !caps.storage_buffer_16bit) unused.push_back("VkPhysicalDeviceVulkan11Features::storageBuffer16BitAccess");
  if (supported.v12.shaderFloat16 && !caps.shader_float16) unused.push_back("VkPhysicalDeviceVulkan12Features::shaderFloat16");
  if (supported.v12.shaderInt8 && !caps.shader_int8) unused.push_back("VkPhysicalDeviceVulkan12Features::shaderInt8");
  if (supported.v12.vulkanMemoryModel && supported.v12.vulkanMemoryModelDeviceScope && !caps.vulkan_memory_model)
    unused.push_back("VkPhysicalDeviceVulkan12Features::vulkanMemoryModel (with vulkanMemoryModelDeviceScope)");
  if (coop_ext && supported.coop.cooperativeMatrix && !caps.cooperative_matrix) {
    const bool listed = std::find(enabled_extensions.begin(), enabled_extensions.end(), VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) != enabled_extensions.end();
    unused.push_back(listed ? "VkPhysicalDeviceCooperativeMatrixFeaturesKHR::cooperativeMatrix"
                            : "VkPhysicalDeviceCooperativeMatrixFeaturesKHR::cooperativeMatrix (and " VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME ")");
  }
  if (unused.empty()) return;
  std::string list;
  for (const auto& u : unused) list += (list.empty() ? "" : ", ") + u;
  log::warn("denox: the device supports {} but denox_vulkan_device::enabled_features_chain / enabled_extensions do not say the "
               "VkDevice enabled them; denox uses only what they list, so models run slower paths (see denox_device_requirements)",
               list);
}

}  // namespace

DebugLabels DebugLabels::load(PFN_vkGetInstanceProcAddr gipa, VkInstance instance) {
  // The engine's own entry point, not volk's global one (the first context's). Called only where
  // the instance enabled the extension; NULL even then (a layer in the way) means no labels.
  DebugLabels labels;
  labels.begin = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(gipa(instance, "vkCmdBeginDebugUtilsLabelEXT"));
  labels.end = reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(gipa(instance, "vkCmdEndDebugUtilsLabelEXT"));
  if (!labels.begin || !labels.end) labels = DebugLabels{};
  return labels;
}

std::unique_ptr<DeviceContext> DeviceContext::from_external(const ExternalDevice& ext) {
  if (!ext.instance || !ext.physical_device || !ext.device || !ext.get_instance_proc_addr)
    fail(ErrorCode::InvalidArgument, "the Vulkan handles need instance, physical_device, device and get_instance_proc_addr");
  init_volk(ext.get_instance_proc_addr);
  volkLoadInstanceOnly(ext.instance);
  std::unique_ptr<DeviceContext> ctx(new DeviceContext());
  ctx->instance_ = ext.instance;
  ctx->physical_device_ = ext.physical_device;
  ctx->device_ = ext.device;
  ctx->queue_family_ = ext.queue_family_index;
  ctx->queue_ = ext.queue;
  if ((ext.queue_lock.lock == nullptr) != (ext.queue_lock.unlock == nullptr))
    fail(ErrorCode::InvalidArgument, "lock_queue and unlock_queue must both be set or both be NULL");
  if (ext.background_queue != VK_NULL_HANDLE && ext.background_queue == ext.queue)
    fail(ErrorCode::InvalidArgument, "background_queue is the same VkQueue as queue; pass another queue of queue_family_index "
                                     "that only denox uses, or lock_queue/unlock_queue");
  ctx->background_queue_ = ext.background_queue;
  ctx->engine_hooks_ = ext.queue_lock;
  if (std::find(ext.enabled_instance_extensions.begin(), ext.enabled_instance_extensions.end(),
                VK_EXT_DEBUG_UTILS_EXTENSION_NAME) != ext.enabled_instance_extensions.end())
    ctx->labels_ = DebugLabels::load(ext.get_instance_proc_addr, ext.instance);
  ctx->caps_ = describe(ext.physical_device, device_extensions(ext.physical_device));

  // What the caller enabled: its extension list and its VkDeviceCreateInfo::pNext chain. We
  // cannot ask a VkDevice what it enabled, and using a feature that was not enabled is
  // undefined behaviour, so nothing is assumed.
  auto enabled = [&](const char* name) {
    return std::any_of(ext.enabled_extensions.begin(), ext.enabled_extensions.end(), [&](const auto& e) { return e == name; });
  };
  DeviceCapabilities& caps = ctx->caps_;
  caps.push_descriptor = enabled(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  for (auto* s = static_cast<const VkBaseInStructure*>(ext.enabled_features_chain); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
        caps.storage_buffer_16bit |= reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(s)->storageBuffer16BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
        caps.storage_buffer_16bit |= reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(s)->storageBuffer16BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES:
        caps.shader_float16 |= reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s)->shaderFloat16;
        caps.shader_int8 |= reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s)->shaderInt8;
        caps.vulkan_memory_model |= reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s)->vulkanMemoryModel;
        caps.vulkan_memory_model_device_scope |= reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s)->vulkanMemoryModelDeviceScope;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES:
        caps.vulkan_memory_model |= reinterpret_cast<const VkPhysicalDeviceVulkanMemoryModelFeatures*>(s)->vulkanMemoryModel;
        caps.vulkan_memory_model_device_scope |=
            reinterpret_cast<const VkPhysicalDeviceVulkanMemoryModelFeatures*>(s)->vulkanMemoryModelDeviceScope;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES:
        caps.shader_float16 |= reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s)->shaderFloat16;
        caps.shader_int8 |= reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s)->shaderInt8;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR:
        caps.cooperative_matrix |= reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixFeaturesKHR*>(s)->cooperativeMatrix &&
                                   enabled(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
        break;
      default: break;
    }
  }
  // With the Vulkan memory model on, device scope must be on too for any shader to use it, and
  // denox's io adapters do (their atomics keep the caller's other channels): without it every
  // adapter would be invalid SPIR-V for this device (VUID-RuntimeSpirv-vulkanMemoryModel-06265).
  if (caps.vulkan_memory_model && !caps.vulkan_memory_model_device_scope)
    fail(ErrorCode::MissingFeature, "the VkDevice enabled vulkanMemoryModel without vulkanMemoryModelDeviceScope; denox's io adapters "
                                    "use device-scope atomics, which are then invalid. Enable vulkanMemoryModelDeviceScope too (every "
                                    "Vulkan 1.3 device supports it), or neither");
  warn_unused_features(ext.physical_device, caps, ext.enabled_extensions);
  ctx->load(false, false);
  return ctx;
}

std::unique_ptr<DeviceContext> DeviceContext::create_own(const OwnDeviceOptions& options) {
  std::unique_ptr<DeviceContext> ctx(new DeviceContext());
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = on_validation_message;
  messenger_info.pUserData = ctx->validation_errors_.get();
  ctx->instance_ = create_instance(options.validation, &messenger_info);
  ctx->owns_instance_ = true;
  if (options.validation)
    vk_check(vkCreateDebugUtilsMessengerEXT(ctx->instance_, &messenger_info, nullptr, &ctx->messenger_), "vkCreateDebugUtilsMessengerEXT");
  if (options.validation) ctx->labels_ = DebugLabels::load(vkGetInstanceProcAddr, ctx->instance_);  // debug utils is on then

  const auto devices = physical_devices(ctx->instance_);
  if (devices.empty()) fail(ErrorCode::MissingFeature, "no Vulkan device found (is a driver, e.g. mesa-vulkan-drivers, installed?)");
  size_t pick = 0;
  if (options.device_index >= 0) {
    if (static_cast<size_t>(options.device_index) >= devices.size())
      fail(ErrorCode::InvalidArgument, "--device " + std::to_string(options.device_index) + ": there are only " +
                                           std::to_string(devices.size()) + " Vulkan devices (see `denox info`)");
    pick = static_cast<size_t>(options.device_index);
  } else {
    for (size_t i = 0; i < devices.size(); ++i) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(devices[i], &p);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) { pick = i; break; }
    }
  }
  VkPhysicalDevice pd = devices[pick];
  const auto exts = device_extensions(pd);
  ctx->physical_device_ = pd;
  ctx->caps_ = describe(pd, exts);
  DeviceCapabilities& caps = ctx->caps_;

  // Enable everything denox can use that the device supports.
  const bool coop_ext = has_extension(exts, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  FeatureChain supported;
  supported.query_supported(pd, coop_ext);
  FeatureChain enable;
  enable.link(coop_ext && supported.coop.cooperativeMatrix);
  enable.v11.storageBuffer16BitAccess = supported.v11.storageBuffer16BitAccess;
  enable.v12.shaderFloat16 = supported.v12.shaderFloat16;
  enable.v12.shaderInt8 = supported.v12.shaderInt8;
  enable.v12.vulkanMemoryModel = enable.v12.vulkanMemoryModelDeviceScope =
      supported.v12.vulkanMemoryModel && supported.v12.vulkanMemoryModelDeviceScope;
  enable.coop.cooperativeMatrix = supported.coop.cooperativeMatrix;
  std::vector<const char*> extensions;
  if (has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (coop_ext && supported.coop.cooperativeMatrix) extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  caps.push_descriptor = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  caps.storage_buffer_16bit = enable.v11.storageBuffer16BitAccess;
  caps.shader_float16 = enable.v12.shaderFloat16;
  caps.shader_int8 = enable.v12.shaderInt8;
  caps.vulkan_memory_model = enable.v12.vulkanMemoryModel;
  caps.vulkan_memory_model_device_scope = enable.v12.vulkanMemoryModelDeviceScope;
  caps.cooperative_matrix = coop_ext && enable.coop.cooperativeMatrix;

  uint32_t ts_bits = 0;
  ctx->queue_family_ = compute_queue_family(pd, &ts_bits);
  if (caps.api_version >= VK_API_VERSION_1_3 && caps.push_descriptor) {
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = ctx->queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.pNext = &enable.f2;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue_info;
    info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    vk_check(vkCreateDevice(pd, &info, nullptr, &ctx->device_), "vkCreateDevice (" + caps.device_name + ")");
    ctx->owns_device_ = true;
  }
  ctx->load(true, true);
  // Through the device table: volkLoadInstanceOnly leaves the global device-level pointers null.
  ctx->table_.vkGetDeviceQueue(ctx->device_, ctx->queue_family_, 0, &ctx->queue_);
  return ctx;
}

// Checks the requirements, loads device entry points and the rest of the capabilities.
void DeviceContext::load(bool owns_instance, bool owns_device) {
  owns_instance_ = owns_instance;
  owns_device_ = owns_device;
  std::vector<std::string> missing;
  if (caps_.api_version < VK_API_VERSION_1_3)
    missing.push_back("Vulkan 1.3 (the device reports " + std::to_string(VK_API_VERSION_MAJOR(caps_.api_version)) + "." +
                      std::to_string(VK_API_VERSION_MINOR(caps_.api_version)) + ")");
  if (!caps_.push_descriptor)
    missing.push_back(std::string(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) +
                      (owns_device ? " (not supported by the device)" : " (enable it at device creation and list it in enabled_extensions)"));
  if (!missing.empty()) {
    std::string text = "device '" + caps_.device_name + "' lacks what denox needs:";
    for (const auto& m : missing) text += "\n  - " + m;
    fail(ErrorCode::MissingFeature, text);
  }
  volkLoadDeviceTable(&table_, device_);
  uint32_t ts_bits = 0;
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &n, families.data());
  if (queue_family_ >= n) fail(ErrorCode::InvalidArgument, "queue_family_index " + std::to_string(queue_family_) + " does not exist");
  if (!(families[queue_family_].queueFlags & VK_QUEUE_COMPUTE_BIT))
    fail(ErrorCode::InvalidArgument, "queue family " + std::to_string(queue_family_) + " cannot run compute work");
  ts_bits = families[queue_family_].timestampValidBits;
  caps_.timestamp_valid_bits = ts_bits;
  caps_.timestamps = caps_.timestamps || ts_bits > 0;
  if (ts_bits == 0) caps_.timestamps = false;
  vkGetPhysicalDeviceMemoryProperties(physical_device_, &memory_);
}

QueueGuard::QueueGuard(std::mutex& mutex, const QueueLockHooks& hooks, VkQueue queue) : hooks_(hooks), queue_(queue) {
  if (hooks_) hooks_.lock(queue_, hooks_.user);
  lock_ = std::unique_lock<std::mutex>(mutex);
}

QueueGuard::~QueueGuard() {
  lock_.unlock();
  if (hooks_) hooks_.unlock(queue_, hooks_.user);
}

std::unique_ptr<DeviceContext> DeviceContext::background_view() const {
  std::unique_ptr<DeviceContext> view(new DeviceContext());
  if (owns_device_) {
    // denox's own queue: every submit to it, the caller's included (denox_context_lock_queue),
    // goes through queue_mutex().
    view->queue_ = queue_;
    view->queue_mutex_ = queue_mutex_;
  } else if (background_queue_ != VK_NULL_HANDLE) {
    // Only denox uses it: one mutex for denox's threads, and the engine's hooks (if any) so that
    // it can keep denox off every queue around vkDeviceWaitIdle.
    view->queue_ = background_queue_;
    view->hooks_ = engine_hooks_;
  } else if (engine_hooks_ && queue_ != VK_NULL_HANDLE) {
    view->queue_ = queue_;
    view->queue_mutex_ = queue_mutex_;
    view->hooks_ = engine_hooks_;
  } else {
    return nullptr;
  }
  view->instance_ = instance_;
  view->physical_device_ = physical_device_;
  view->device_ = device_;
  view->queue_family_ = queue_family_;
  view->owns_instance_ = view->owns_device_ = false;  // and no messenger: the destructor destroys nothing
  view->validation_errors_ = validation_errors_;
  view->coop_a_rows_ = coop_a_rows_;
  view->table_ = table_;
  view->labels_ = labels_;
  view->caps_ = caps_;
  view->memory_ = memory_;
  return view;
}

DeviceContext::~DeviceContext() {
  if (owns_device_ && device_) {
    table_.vkDeviceWaitIdle(device_);
    table_.vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (owns_instance_ && instance_) vkDestroyInstance(instance_, nullptr);
}

uint32_t DeviceContext::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  for (int pass = 0; pass < 2; ++pass) {
    const VkMemoryPropertyFlags want = pass == 0 ? (required | preferred) : required;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
    }
  }
  fail(ErrorCode::MissingFeature, "no Vulkan memory type with the properties denox needs (flags " + std::to_string(required) + ")");
}

std::vector<DeviceCapabilities> DeviceContext::enumerate(bool validation) {
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  std::atomic<uint64_t> errors{0};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
  messenger_info.pfnUserCallback = on_validation_message;
  messenger_info.pUserData = &errors;
  VkInstance instance = create_instance(validation, &messenger_info);
  std::vector<DeviceCapabilities> out;
  try {
    for (VkPhysicalDevice pd : physical_devices(instance)) {
      const auto exts = device_extensions(pd);
      DeviceCapabilities caps = describe(pd, exts);
      FeatureChain supported;
      supported.query_supported(pd, has_extension(exts, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME));
      caps.push_descriptor = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
      caps.storage_buffer_16bit = supported.v11.storageBuffer16BitAccess;
      caps.shader_float16 = supported.v12.shaderFloat16;
      caps.shader_int8 = supported.v12.shaderInt8;
      caps.vulkan_memory_model = supported.v12.vulkanMemoryModel;
      caps.vulkan_memory_model_device_scope = supported.v12.vulkanMemoryModelDeviceScope;
      caps.cooperative_matrix = has_extension(exts, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && supported.coop.cooperativeMatrix;
      uint32_t bits = 0;
      compute_queue_family(pd, &bits);
      caps.timestamp_valid_bits = bits;
      out.push_back(std::move(caps));
    }
  } catch (...) {
    vkDestroyInstance(instance, nullptr);
    throw;
  }
  vkDestroyInstance(instance, nullptr);
  return out;
}

}  // namespace denox::runtime
