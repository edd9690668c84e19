#include "vkhost/vk_host.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace denox::vkhost {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed (VkResult " + std::to_string(static_cast<int>(r)) + ")");
}

namespace {

std::atomic<uint64_t> g_validation_errors{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    g_validation_errors++;
    std::fprintf(stderr, "validation error: %s\n", data->pMessage);
  }
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

// runtime/vulkan/device_context.cpp has the same check; this library stands for an engine and
// links only libdenox's public API, so it keeps its own copy.
bool layer_has_extension(const char* layer, const char* extension) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(layer, &n, exts.data()) != VK_SUCCESS) return false;
  return std::any_of(exts.begin(), exts.begin() + n, [&](const auto& e) { return std::strcmp(e.extensionName, extension) == 0; });
}

void init_volk() {
  static const VkResult r = volkInitialize();
  check(r, "volkInitialize (is libvulkan1 installed?)");
}

}  // namespace

struct Device::Features {
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  void link(bool with_coop = false) {
    f2.pNext = &v11;
    v11.pNext = &v12;
    v12.pNext = &v13;
    v13.pNext = with_coop ? &coop : nullptr;
    coop.pNext = nullptr;
  }
};

std::unique_ptr<Device> Device::create(int device_index, bool validation, bool bare) {
  init_volk();
  auto d = std::unique_ptr<Device>(new Device());
  d->owns_ = true;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "denox-host";
  app.apiVersion = VK_API_VERSION_1_3;
  std::vector<const char*> layers, exts;
  if (validation) {
    if (!has_layer("VK_LAYER_KHRONOS_validation"))
      throw std::runtime_error("the Khronos validation layer is not installed (Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    // Synchronization validation as well: it is what reports a barrier denox failed to record.
    if (!layer_has_extension("VK_LAYER_KHRONOS_validation", VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME))
      throw std::runtime_error("the Khronos validation layer lacks VK_EXT_validation_features (synchronization validation)");
    exts.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  }
  const VkValidationFeatureEnableEXT sync_validation = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync_validation;
  // Newer layers check descriptor accesses for hazards only with this setting (as denox's own
  // instance does: runtime/vulkan/device_context.cpp); older ones lack VK_EXT_layer_settings.
  const VkBool32 on = VK_TRUE;
  const VkLayerSettingEXT shader_accesses{"VK_LAYER_KHRONOS_validation", "syncval_shader_accesses_heuristic",
                                          VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &on};
  VkLayerSettingsCreateInfoEXT settings{VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT};
  settings.settingCount = 1;
  settings.pSettings = &shader_accesses;
  if (validation && layer_has_extension("VK_LAYER_KHRONOS_validation", VK_EXT_LAYER_SETTINGS_EXTENSION_NAME)) {
    exts.push_back(VK_EXT_LAYER_SETTINGS_EXTENSION_NAME);
    features.pNext = &settings;
  }
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  if (validation) ici.pNext = &features;
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  ici.ppEnabledExtensionNames = exts.data();
  check(vkCreateInstance(&ici, nullptr, &d->instance_), "vkCreateInstance");
  d->instance_extension_ptrs_ = exts;  // (string literals)
  // Device-level entry points too, as the loader's trampolines (see finish()).
  volkLoadInstance(d->instance_);
  if (validation) {
    VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mci.pfnUserCallback = on_message;
    check(vkCreateDebugUtilsMessengerEXT(d->instance_, &mci, nullptr, &d->messenger_), "vkCreateDebugUtilsMessengerEXT");
  }
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(d->instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> pds(n);
  check(vkEnumeratePhysicalDevices(d->instance_, &n, pds.data()), "vkEnumeratePhysicalDevices");
  if (pds.empty()) throw std::runtime_error("no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
  if (device_index >= static_cast<int>(pds.size()))
    throw std::runtime_error("device index " + std::to_string(device_index) + " out of range (" + std::to_string(pds.size()) + " devices)");
  d->physical_ = pds[0];
  if (device_index >= 0) {
    d->physical_ = pds[static_cast<size_t>(device_index)];
  } else {
    for (auto pd : pds) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(pd, &p);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
        d->physical_ = pd;
        break;
      }
    }
  }
  uint32_t qn = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical_, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> qf(qn);
  vkGetPhysicalDeviceQueueFamilyProperties(d->physical_, &qn, qf.data());
  d->queue_family_ = UINT32_MAX;
  for (uint32_t i = 0; i < qn; ++i) {
    if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      d->queue_family_ = i;
      break;
    }
  }
  if (d->queue_family_ == UINT32_MAX) throw std::runtime_error("the device has no compute queue");

  // Enable what denox lists (required or optional) where the device has it, like an engine
  // that reads denox_device_requirements().
  uint32_t en = 0;
  vkEnumerateDeviceExtensionProperties(d->physical_, nullptr, &en, nullptr);
  std::vector<VkExtensionProperties> avail(en);
  vkEnumerateDeviceExtensionProperties(d->physical_, nullptr, &en, avail.data());
  auto available = [&](const char* name) {
    return std::any_of(avail.begin(), avail.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
  };
  uint32_t rn = 0;
  const denox_device_requirement* reqs = denox_device_requirements(&rn);
  for (uint32_t i = 0; i < rn; ++i) {
    // Names like "VK_KHR_cooperative_matrix + <feature>": the extension is the first word.
    const std::string name = std::string(reqs[i].name).substr(0, std::string(reqs[i].name).find(' '));
    if (!bare && name.rfind("VK_", 0) == 0 && available(name.c_str())) d->extensions_.push_back(name);
  }
  const bool coop_ext = std::find(d->extensions_.begin(), d->extensions_.end(), VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) != d->extensions_.end();
  Features supported;
  supported.link(coop_ext);
  vkGetPhysicalDeviceFeatures2(d->physical_, &supported.f2);
  d->features_ = std::make_shared<Features>();
  auto& f = *d->features_;
  f.link(coop_ext);
  if (bare) supported = Features{};
  f.v11.storageBuffer16BitAccess = supported.v11.storageBuffer16BitAccess;
  f.v12.shaderFloat16 = supported.v12.shaderFloat16;
  f.v12.shaderInt8 = supported.v12.shaderInt8;
  f.v12.vulkanMemoryModel = supported.v12.vulkanMemoryModel;
  // Without device scope, shaders that use device-scope atomics (glslang's default) are invalid.
  f.v12.vulkanMemoryModelDeviceScope = supported.v12.vulkanMemoryModelDeviceScope;
  f.v13.synchronization2 = supported.v13.synchronization2;
  f.v13.subgroupSizeControl = supported.v13.subgroupSizeControl;
  f.v13.computeFullSubgroups = supported.v13.computeFullSubgroups;
  f.v13.maintenance4 = supported.v13.maintenance4;
  f.coop.cooperativeMatrix = supported.coop.cooperativeMatrix;
  d->fp16_ = f.v11.storageBuffer16BitAccess && f.v12.shaderFloat16;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = d->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  for (const auto& e : d->extensions_) d->extension_ptrs_.push_back(e.c_str());
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f.f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(d->extension_ptrs_.size());
  dci.ppEnabledExtensionNames = d->extension_ptrs_.data();
  check(vkCreateDevice(d->physical_, &dci, nullptr, &d->device_), "vkCreateDevice");
  d->finish(true);
  return d;
}

std::unique_ptr<Device> Device::wrap(const denox_context_info& info, denox_context queue_owner) {
  init_volk();
  auto d = std::unique_ptr<Device>(new Device());
  d->queue_owner_ = queue_owner;
  d->instance_ = info.instance;
  d->physical_ = info.physical_device;
  d->device_ = info.device;
  d->queue_family_ = info.queue_family_index;
  d->fp16_ = info.fp16_supported != 0;
  volkLoadInstance(d->instance_);
  d->finish(false);
  return d;
}

void Device::finish(bool owns) {
  owns_ = owns;
  // No volkLoadDevice: volk's entry points are process-wide, and loading this device's own
  // functions would route every other Device's calls (a test's second device, a tool's) to
  // this device's driver and layers, skipping the validation layer of the first (which then
  // met denox's commands on command buffers it never saw begin, and crashed). The loader's
  // trampolines from volkLoadInstance dispatch on the handle, so they serve every device.
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  vkGetPhysicalDeviceProperties(physical_, &props_);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family_;
  check(vkCreateCommandPool(device_, &pci, nullptr, &pool_), "vkCreateCommandPool");
}

Device::~Device() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    vkDestroyCommandPool(device_, pool_, nullptr);
  }
  if (!owns_) return;
  // A failed create() may end here before the device (and its entry points) existed.
  if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
  if (messenger_ != VK_NULL_HANDLE) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

denox_vulkan_device Device::as_denox() const {
  denox_vulkan_device d{};
  d.instance = instance_;
  d.physical_device = physical_;
  d.device = device_;
  d.queue_family_index = queue_family_;
  d.queue = queue_;
  d.get_instance_proc_addr = vkGetInstanceProcAddr;
  d.enabled_extensions = extension_ptrs_.data();
  d.enabled_extension_count = static_cast<uint32_t>(extension_ptrs_.size());
  d.enabled_instance_extensions = instance_extension_ptrs_.data();
  d.enabled_instance_extension_count = static_cast<uint32_t>(instance_extension_ptrs_.size());
  d.enabled_features_chain = features_ ? &features_->f2 : nullptr;
  d.lock_queue = [](VkQueue, void* user) { static_cast<const Device*>(user)->queue_mutex_.lock(); };
  d.unlock_queue = [](VkQueue, void* user) { static_cast<const Device*>(user)->queue_mutex_.unlock(); };
  d.queue_lock_user_data = const_cast<Device*>(this);
  return d;
}

uint64_t Device::validation_errors() const { return g_validation_errors.load(); }

uint32_t Device::memory_type(uint32_t bits, VkMemoryPropertyFlags required) const {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(physical_, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & required) == required) return i;
  }
  throw std::runtime_error("no memory type with the needed properties");
}

void Device::submit(const std::function<void(VkCommandBuffer)>& fn) const {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(device_, &ai, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkFence fence = VK_NULL_HANDLE;
  try {
    check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    fn(cmd);
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(device_, &fci, nullptr, &fence), "vkCreateFence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    {
      // VkQueue is externally synchronized: denox's background work may submit to it too.
      if (queue_owner_ != nullptr) denox_context_lock_queue(queue_owner_);
      std::unique_lock<std::mutex> own(queue_mutex_, std::defer_lock);
      if (queue_owner_ == nullptr) own.lock();
      const VkResult submitted = vkQueueSubmit(queue_, 1, &si, fence);
      if (queue_owner_ != nullptr) denox_context_unlock_queue(queue_owner_);
      check(submitted, "vkQueueSubmit");
    }
    check(vkWaitForFences(device_, 1, &fence, VK_TRUE, 120ull * 1000 * 1000 * 1000), "vkWaitForFences (120 s)");
  } catch (...) {
    if (fence) vkDestroyFence(device_, fence, nullptr);
    vkFreeCommandBuffers(device_, pool_, 1, &cmd);
    throw;
  }
  vkDestroyFence(device_, fence, nullptr);
  vkFreeCommandBuffers(device_, pool_, 1, &cmd);
}

uint16_t to_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float from_half(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

}  // namespace denox::vkhost
