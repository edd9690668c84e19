// denox_pipeline_stats: what the driver reports about each compiled pipeline of a plan (register
// count, shared and local memory, ...) through VK_KHR_pipeline_executable_properties. A
// performance tool for the kernels (issue 4: "compile the SPIR-V and read what the driver
// reports"), not part of libdenox: see README.md.
//
//   denox compile M.onnx --size 1920x1088 --plan M.plan
//   denox_pipeline_stats M.plan            # one block per dispatch, in plan order
//
// Exits 0 with a message where the device lacks the extension (NVIDIA has it; Debian 12's lavapipe
// does not).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/plan/plan_serialize.hpp"
#include "vk_probe.hpp"

namespace {

using denox::probe::has_extension;

struct Gpu {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  ~Gpu() {
    if (device) vkDestroyDevice(device, nullptr);
    if (instance) vkDestroyInstance(instance, nullptr);
  }
};

// Instance and device with what denox's shaders use (fp16 storage and arithmetic, cooperative
// matrices where present) plus pipeline executable statistics. False: the extension is missing.
bool open_gpu(Gpu& gpu) {
  gpu.instance = denox::probe::create_instance("denox_pipeline_stats");
  const auto devices = denox::probe::physical_devices(gpu.instance);
  if (devices.empty()) throw std::runtime_error("no Vulkan device");
  gpu.phys = devices[0];
  for (VkPhysicalDevice pd : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) { gpu.phys = pd; break; }
  }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(gpu.phys, &props);
  std::printf("device: %s (maxComputeSharedMemorySize %u bytes)\n", props.deviceName, props.limits.maxComputeSharedMemorySize);
  if (!has_extension(gpu.phys, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) return false;

  const bool coop = has_extension(gpu.phys, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &v11;
  v11.pNext = &v12;
  v12.pNext = &exec;
  exec.pNext = coop ? &cm : nullptr;
  vkGetPhysicalDeviceFeatures2(gpu.phys, &f2);  // enable what is supported
  if (!exec.pipelineExecutableInfo) return false;

  std::vector<const char*> extensions{VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
  if (coop) extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  gpu.device = denox::probe::create_device(gpu.phys, denox::probe::compute_queue_family(gpu.phys), extensions, &f2);
  return true;
}

// Creates `pipe` with statistics capture and returns "name=value" pairs of its executables.
std::vector<std::string> pipeline_statistics(VkDevice dev, const denox::plan::Pipeline& pipe) {
  if (pipe.spirv.empty()) return {"(the plan holds no SPIR-V for this pipeline)"};
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t i = 0; i < pipe.binding_count; ++i)
    bindings.push_back({i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  VkDescriptorSetLayoutCreateInfo sli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sli.bindingCount = static_cast<uint32_t>(bindings.size());
  sli.pBindings = bindings.data();
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  PROBE_VK(vkCreateDescriptorSetLayout(dev, &sli, nullptr, &set_layout));
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pipe.push_constant_count * 4};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout;
  pli.pushConstantRangeCount = range.size ? 1 : 0;
  pli.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  PROBE_VK(vkCreatePipelineLayout(dev, &pli, nullptr, &layout));
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = pipe.spirv.size() * 4;
  smi.pCode = pipe.spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  PROBE_VK(vkCreateShaderModule(dev, &smi, nullptr, &module));
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = "main";
  cpi.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  PROBE_VK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipeline));

  std::vector<std::string> out = denox::probe::pipeline_statistics(dev, pipeline);
  vkDestroyPipeline(dev, pipeline, nullptr);
  vkDestroyShaderModule(dev, module, nullptr);
  vkDestroyPipelineLayout(dev, layout, nullptr);
  vkDestroyDescriptorSetLayout(dev, set_layout, nullptr);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: denox_pipeline_stats PLAN   (a plan file from `denox compile M --plan PLAN`)\n");
    return 2;
  }
  try {
    std::ifstream file(argv[1], std::ios::binary);
    if (!file) throw std::runtime_error(std::string("cannot open ") + argv[1]);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    const denox::plan::Plan plan = denox::plan::deserialize_plan(bytes);
    Gpu gpu;
    if (!open_gpu(gpu)) {
      std::printf("the device has no VK_KHR_pipeline_executable_properties: nothing to report\n");
      return 0;
    }
    std::map<uint32_t, std::vector<std::string>> by_pipeline;  // each pipeline compiled once
    for (const auto& d : plan.dispatches) {
      auto it = by_pipeline.find(d.pipeline);
      if (it == by_pipeline.end()) it = by_pipeline.emplace(d.pipeline, pipeline_statistics(gpu.device, plan.pipelines[d.pipeline])).first;
      const auto& pipe = plan.pipelines[d.pipeline];
      std::printf("%s  [%s, %u invocations]\n", d.name.c_str(), pipe.family.c_str(), pipe.local_size[0] * pipe.local_size[1] * pipe.local_size[2]);
      std::string defines;
      for (const auto& [k, v] : pipe.defines) defines += " " + k + "=" + v;
      std::printf("  defines:%s\n  ", defines.c_str());
      for (const auto& s : it->second) std::printf(" %s;", s.c_str());
      std::printf("\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "denox_pipeline_stats: %s\n", e.what());
    return 1;
  }
}
