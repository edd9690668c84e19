#include "vk_probe.hpp"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace denox::probe {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed with VkResult " + std::to_string(static_cast<int>(r)));
}

bool has_extension(VkPhysicalDevice p, const char* name) {
  uint32_t n = 0;
  PROBE_VK(vkEnumerateDeviceExtensionProperties(p, nullptr, &n, nullptr));
  std::vector<VkExtensionProperties> exts(n);
  PROBE_VK(vkEnumerateDeviceExtensionProperties(p, nullptr, &n, exts.data()));
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

VkInstance create_instance(const char* app_name) {
  PROBE_VK(volkInitialize());
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = app_name;
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  PROBE_VK(vkCreateInstance(&ici, nullptr, &instance));
  volkLoadInstance(instance);
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t n = 0;
  PROBE_VK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  std::vector<VkPhysicalDevice> devs(n);
  PROBE_VK(vkEnumeratePhysicalDevices(instance, &n, devs.data()));
  return devs;
}

uint32_t compute_queue_family(VkPhysicalDevice p) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(p, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(p, &n, fams.data());
  for (uint32_t i = 0; i < n; ++i)
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
  throw std::runtime_error("the device has no compute queue");
}

VkDevice create_device(VkPhysicalDevice p, uint32_t family, const std::vector<const char*>& extensions, const void* features) {
  const float priority = 1;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, features};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
  VkDevice dev = VK_NULL_HANDLE;
  PROBE_VK(vkCreateDevice(p, &dci, nullptr, &dev));
  volkLoadDevice(dev);
  return dev;
}

std::string read_source(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

CoopGpu::CoopGpu(CoopGpu&& o) noexcept : instance(o.instance), phys(o.phys), dev(o.dev), family(o.family), stats(o.stats) {
  o.instance = VK_NULL_HANDLE, o.dev = VK_NULL_HANDLE;
}

CoopGpu::~CoopGpu() {
  if (dev) vkDestroyDevice(dev, nullptr);
  if (instance) vkDestroyInstance(instance, nullptr);
}

CoopGpu open_coop_gpu(const char* app_name, bool statistics) {
  CoopGpu g;
  g.instance = create_instance(app_name);
  for (VkPhysicalDevice p : physical_devices(g.instance))
    if (has_extension(p, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) g.phys = p;
  if (!g.phys) return g;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(g.phys, &props);
  std::printf("device: %s (driver %u)\n", props.deviceName, props.driverVersion);
  g.stats = statistics && has_extension(g.phys, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, g.stats ? &exec : nullptr};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &cm};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
  vkGetPhysicalDeviceFeatures2(g.phys, &f2);  // enable what the device has
  if (!cm.cooperativeMatrix || !v12.shaderFloat16 || !v11.storageBuffer16BitAccess) {
    g.phys = VK_NULL_HANDLE;
    return g;
  }
  g.stats = g.stats && exec.pipelineExecutableInfo;
  std::vector<const char*> extensions{VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME};
  if (g.stats) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  g.family = compute_queue_family(g.phys);
  g.dev = create_device(g.phys, g.family, extensions, &f2);
  return g;
}

namespace {
std::string statistic_text(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return std::to_string(s.value.f64);
    default: return "?";
  }
}
}  // namespace

std::vector<std::string> pipeline_statistics(VkDevice dev, VkPipeline pipeline) {
  std::vector<std::string> out;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t executables = 0;
  PROBE_VK(vkGetPipelineExecutablePropertiesKHR(dev, &info, &executables, nullptr));
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = e;
    uint32_t n = 0;
    PROBE_VK(vkGetPipelineExecutableStatisticsKHR(dev, &ei, &n, nullptr));
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    PROBE_VK(vkGetPipelineExecutableStatisticsKHR(dev, &ei, &n, stats.data()));
    for (uint32_t i = 0; i < n; ++i) out.push_back(std::string(stats[i].name) + "=" + statistic_text(stats[i]));
  }
  return out;
}

int register_count(const CoopGpu& g, VkPipeline pipe) {
  if (!g.stats) return -1;
  for (const std::string& st : pipeline_statistics(g.dev, pipe))
    if (st.rfind("Register Count=", 0) == 0) return std::atoi(st.c_str() + 15);
  return -1;
}

std::vector<uint32_t> compile_compute(const std::string& source, const std::string& preamble, const std::string& name) {
  glslang::TShader shader(EShLangCompute);
  const char* text = source.c_str();
  shader.setStrings(&text, 1);
  shader.setPreamble(preamble.c_str());
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_3);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_6);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  if (!shader.parse(GetDefaultResources(), 450, ECoreProfile, false, false, messages))
    throw std::runtime_error(name + ": " + shader.getInfoLog());
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) throw std::runtime_error(name + " link: " + program.getInfoLog());
  std::vector<uint32_t> spirv;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv);
  return spirv;
}

ComputeHarness::ComputeHarness(VkPhysicalDevice phys, VkDevice dev, uint32_t family, uint32_t push_bytes, uint32_t max_timed)
    : dev_(dev), push_bytes_(push_bytes), max_timed_(max_timed) {
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys, &props);
  ts_period_ = props.limits.timestampPeriod;
  vkGetPhysicalDeviceMemoryProperties(phys, &mem_);
  vkGetDeviceQueue(dev, family, 0, &queue_);
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = family;
  PROBE_VK(vkCreateCommandPool(dev, &cpi, nullptr, &cmd_pool_));
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = cmd_pool_;
  cai.commandBufferCount = 1;
  PROBE_VK(vkAllocateCommandBuffers(dev, &cai, &cmd_));
  VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpi.queryCount = 2 * max_timed;
  PROBE_VK(vkCreateQueryPool(dev, &qpi, nullptr, &queries_));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  PROBE_VK(vkCreateFence(dev, &fci, nullptr, &fence_));
}

ComputeHarness::~ComputeHarness() {
  vkDeviceWaitIdle(dev_);
  vkDestroyFence(dev_, fence_, nullptr);
  vkDestroyQueryPool(dev_, queries_, nullptr);
  vkDestroyCommandPool(dev_, cmd_pool_, nullptr);
  if (pool_) vkDestroyDescriptorPool(dev_, pool_, nullptr);
  if (layout_) vkDestroyPipelineLayout(dev_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(dev_, set_layout_, nullptr);
  for (const Buffer& b : owned_) {
    vkDestroyBuffer(dev_, b.buffer, nullptr);
    vkFreeMemory(dev_, b.memory, nullptr);
  }
}

Buffer ComputeHarness::buffer(VkDeviceSize size, VkMemoryPropertyFlags props) {
  Buffer b;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  PROBE_VK(vkCreateBuffer(dev_, &bi, nullptr, &b.buffer));
  owned_.push_back(b);  // destroyed with the harness even if the allocation below fails
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev_, b.buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = UINT32_MAX;
  for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & props) == props) {
      ai.memoryTypeIndex = i;
      break;
    }
  if (ai.memoryTypeIndex == UINT32_MAX) throw std::runtime_error("no memory type for a buffer");
  PROBE_VK(vkAllocateMemory(dev_, &ai, nullptr, &b.memory));
  owned_.back().memory = b.memory;
  PROBE_VK(vkBindBufferMemory(dev_, b.buffer, b.memory, 0));
  return b;
}

void ComputeHarness::bind(const std::vector<Buffer>& buffers) {
  const auto n = static_cast<uint32_t>(buffers.size());
  std::vector<VkDescriptorSetLayoutBinding> binds(n);
  for (uint32_t i = 0; i < n; ++i) binds[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = n;
  dl.pBindings = binds.data();
  PROBE_VK(vkCreateDescriptorSetLayout(dev_, &dl, nullptr, &set_layout_));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout_;
  pl.pushConstantRangeCount = push_bytes_ ? 1 : 0;
  pl.pPushConstantRanges = &pcr;
  PROBE_VK(vkCreatePipelineLayout(dev_, &pl, nullptr, &layout_));
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = 1;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &ps;
  PROBE_VK(vkCreateDescriptorPool(dev_, &dp, nullptr, &pool_));
  VkDescriptorSetAllocateInfo dsa{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dsa.descriptorPool = pool_;
  dsa.descriptorSetCount = 1;
  dsa.pSetLayouts = &set_layout_;
  PROBE_VK(vkAllocateDescriptorSets(dev_, &dsa, &set_));
  std::vector<VkDescriptorBufferInfo> infos(n);
  std::vector<VkWriteDescriptorSet> writes(n, {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET});
  for (uint32_t i = 0; i < n; ++i) {
    infos[i] = {buffers[i].buffer, 0, VK_WHOLE_SIZE};
    writes[i].dstSet = set_;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(dev_, n, writes.data(), 0, nullptr);
}

VkPipeline ComputeHarness::pipeline(const std::vector<uint32_t>& spirv, VkResult* result, bool capture_statistics) {
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = spirv.size() * 4;
  smi.pCode = spirv.data();
  VkShaderModule module;
  PROBE_VK(vkCreateShaderModule(dev_, &smi, nullptr, &module));
  VkComputePipelineCreateInfo cpc{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpc.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main", nullptr};
  cpc.layout = layout_;
  if (capture_statistics) cpc.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipe = VK_NULL_HANDLE;
  *result = vkCreateComputePipelines(dev_, VK_NULL_HANDLE, 1, &cpc, nullptr, &pipe);
  vkDestroyShaderModule(dev_, module, nullptr);
  return *result == VK_SUCCESS ? pipe : VK_NULL_HANDLE;
}

void ComputeHarness::destroy(VkPipeline p) { vkDestroyPipeline(dev_, p, nullptr); }

void ComputeHarness::submit(const std::function<void(VkCommandBuffer)>& fn) {
  PROBE_VK(vkResetCommandBuffer(cmd_, 0));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  PROBE_VK(vkBeginCommandBuffer(cmd_, &bi));
  fn(cmd_);
  PROBE_VK(vkEndCommandBuffer(cmd_));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  PROBE_VK(vkQueueSubmit(queue_, 1, &si, fence_));
  PROBE_VK(vkWaitForFences(dev_, 1, &fence_, VK_TRUE, 30'000'000'000ull));
  PROBE_VK(vkResetFences(dev_, 1, &fence_));
}

void ComputeHarness::full_barrier(VkCommandBuffer cmd) {
  const VkMemoryBarrier full{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                             VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                                 VK_ACCESS_TRANSFER_WRITE_BIT};
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &full, 0, nullptr, 0, nullptr);
}

double ComputeHarness::time_dispatches(VkPipeline pipe, const void* push, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t warmup,
                                       uint32_t runs, const std::function<void(VkCommandBuffer)>& before,
                                       const std::function<void(VkCommandBuffer)>& after) {
  const uint32_t total = warmup + runs;
  if (total > max_timed_ || runs == 0) throw std::runtime_error("time_dispatches: more runs than the query pool holds");
  submit([&](VkCommandBuffer cmd) {
    if (before) before(cmd);
    vkCmdResetQueryPool(cmd, queries_, 0, 2 * total);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
    if (push_bytes_) vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_, push);
    for (uint32_t r = 0; r < total; ++r) {
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 2 * r);
      vkCmdDispatch(cmd, gx, gy, gz);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 2 * r + 1);
      full_barrier(cmd);
    }
    if (after) after(cmd);
  });
  std::vector<uint64_t> stamps(2 * total);
  PROBE_VK(vkGetQueryPoolResults(dev_, queries_, 0, 2 * total, stamps.size() * 8, stamps.data(), 8,
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  std::vector<double> ms;
  for (uint32_t r = warmup; r < total; ++r) ms.push_back((stamps[2 * r + 1] - stamps[2 * r]) * ts_period_ * 1e-6);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void ComputeHarness::upload(const Buffer& dst, const Buffer& staging, const void* data, VkDeviceSize bytes) {
  void* mapped = nullptr;
  PROBE_VK(vkMapMemory(dev_, staging.memory, 0, bytes, 0, &mapped));
  std::memcpy(mapped, data, bytes);
  vkUnmapMemory(dev_, staging.memory);
  submit([&](VkCommandBuffer cmd) {
    VkBufferCopy copy{0, 0, bytes};
    vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &copy);
  });
}

std::vector<uint8_t> ComputeHarness::read(const Buffer& b, size_t bytes) {
  void* mapped = nullptr;
  PROBE_VK(vkMapMemory(dev_, b.memory, 0, bytes, 0, &mapped));
  std::vector<uint8_t> out(bytes);
  std::memcpy(out.data(), mapped, bytes);
  vkUnmapMemory(dev_, b.memory);
  return out;
}

std::vector<ConvShape> plain_conv_shapes() {
  return {{"dec_conv1b 64->32 1920x1088", 64, 32, 1920, 1088, 0.371},
          {"enc_conv1 32->32 1920x1088", 32, 32, 1920, 1088, 0.0},
          {"dec_conv2b 64->64 960x544", 64, 64, 960, 544, 0.165},
          {"dec_conv3b 96->96 480x272", 96, 96, 480, 272, 0.101}};
}

ConvIoBytes max_conv_io_bytes(const std::vector<ConvShape>& shapes) {
  ConvIoBytes m;
  for (const ConvShape& s : shapes) {
    m.x = std::max<uint64_t>(m.x, uint64_t{s.w + 2} * (s.h + 2) * s.cin * 2);
    m.y = std::max<uint64_t>(m.y, uint64_t{s.w} * s.h * s.cout * 2);
  }
  return m;
}

}  // namespace denox::probe
