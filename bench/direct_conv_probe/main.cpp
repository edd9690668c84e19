// denox_direct_conv_probe: how fast a 3x3 convolution runs when its cooperative-matrix fragments
// are loaded straight from HWC buffers (direct.comp: no shared memory, no barriers), at the
// shapes of OIDN balanced's big convolutions. A measurement for the next conv kernel (issue 4),
// not part of libdenox: see README.md. Exits 0 with a message where the device has no
// 16x16x16 fp16 cooperative matrices.
//
//   denox_direct_conv_probe [path/to/direct.comp]   (default: bench/direct_conv_probe/direct.comp)
#include <volk.h>

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed with VkResult " + std::to_string(static_cast<int>(r)));
}
#define VK(call) check((call), #call)

struct Config {
  int fmx, fmy, nt, sgx, sgy, acc_f16;
};

std::vector<uint32_t> compile(const std::string& source, const Config& c) {
  std::ostringstream pre;
  pre << "#define FMX " << c.fmx << "\n#define FMY " << c.fmy << "\n#define NT " << c.nt << "\n#define SGX " << c.sgx << "\n#define SGY "
      << c.sgy << "\n#define ACC_F16 " << c.acc_f16 << "\n";
  const std::string preamble = pre.str();
  glslang::TShader shader(EShLangCompute);
  const char* text = source.c_str();
  shader.setStrings(&text, 1);
  shader.setPreamble(preamble.c_str());
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_3);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_6);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  if (!shader.parse(GetDefaultResources(), 450, ECoreProfile, false, false, messages))
    throw std::runtime_error(std::string("direct.comp: ") + shader.getInfoLog());
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) throw std::runtime_error(std::string("direct.comp link: ") + program.getInfoLog());
  std::vector<uint32_t> spirv;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv);
  return spirv;
}

bool has_extension(VkPhysicalDevice p, const char* name) {
  uint32_t n = 0;
  VK(vkEnumerateDeviceExtensionProperties(p, nullptr, &n, nullptr));
  std::vector<VkExtensionProperties> exts(n);
  VK(vkEnumerateDeviceExtensionProperties(p, nullptr, &n, exts.data()));
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

struct Gpu {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice dev = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  float ts_period = 1;
  VkPhysicalDeviceMemoryProperties mem{};
};

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
};

Buffer make_buffer(const Gpu& g, VkDeviceSize size, VkMemoryPropertyFlags props) {
  Buffer b;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  VK(vkCreateBuffer(g.dev, &bi, nullptr, &b.buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(g.dev, b.buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = UINT32_MAX;
  for (uint32_t i = 0; i < g.mem.memoryTypeCount; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (g.mem.memoryTypes[i].propertyFlags & props) == props) {
      ai.memoryTypeIndex = i;
      break;
    }
  if (ai.memoryTypeIndex == UINT32_MAX) throw std::runtime_error("no memory type for a buffer");
  VK(vkAllocateMemory(g.dev, &ai, nullptr, &b.memory));
  VK(vkBindBufferMemory(g.dev, b.buffer, b.memory, 0));
  return b;
}

// A device with 16x16x16 fp16 cooperative matrices (both accumulator types), or phys = null.
Gpu open_gpu() {
  Gpu g;
  VK(volkInitialize());
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VK(vkCreateInstance(&ici, nullptr, &g.instance));
  volkLoadInstance(g.instance);
  uint32_t n = 0;
  VK(vkEnumeratePhysicalDevices(g.instance, &n, nullptr));
  std::vector<VkPhysicalDevice> devs(n);
  VK(vkEnumeratePhysicalDevices(g.instance, &n, devs.data()));
  for (VkPhysicalDevice p : devs)
    if (has_extension(p, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) g.phys = p;
  if (!g.phys) return g;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(g.phys, &props);
  g.ts_period = props.limits.timestampPeriod;
  vkGetPhysicalDeviceMemoryProperties(g.phys, &g.mem);
  std::printf("device: %s (driver %u)\n", props.deviceName, props.driverVersion);

  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &cm};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
  vkGetPhysicalDeviceFeatures2(g.phys, &f2);  // enable what the device has
  if (!cm.cooperativeMatrix || !v12.shaderFloat16 || !v11.storageBuffer16BitAccess) {
    g.phys = VK_NULL_HANDLE;
    return g;
  }
  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(g.phys, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nf);
  vkGetPhysicalDeviceQueueFamilyProperties(g.phys, &nf, fams.data());
  for (uint32_t i = 0; i < nf; ++i)
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      g.family = i;
      break;
    }
  const float priority = 1;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = g.family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  const char* exts[] = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME};
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = exts;
  VK(vkCreateDevice(g.phys, &dci, nullptr, &g.dev));
  volkLoadDevice(g.dev);
  vkGetDeviceQueue(g.dev, g.family, 0, &g.queue);
  return g;
}

float half_to_float(uint16_t h) {  // normal numbers and zero only (what the check reads)
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  return e ? static_cast<float>((1.0 + m / 1024.0) * std::ldexp(1.0, static_cast<int>(e) - 15)) : 0.0f;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "bench/direct_conv_probe/direct.comp";
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  const std::string source((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Gpu g = open_gpu();
  if (!g.phys) {
    std::printf("no device with VK_KHR_cooperative_matrix and fp16: nothing to measure\n");
    return 0;
  }
  glslang::InitializeProcess();

  struct Shape {
    const char* name;
    uint32_t cin, cout, w, h;
  };
  const Shape shapes[] = {{"enc_conv1  32->32 1920x1088", 32, 32, 1920, 1088},
                          {"dec_conv1b 64->32 1920x1088", 64, 32, 1920, 1088},
                          {"dec_conv1a-like 64->64 1920x1088", 64, 64, 1920, 1088},
                          {"dec_conv2a 128->64 960x544", 128, 64, 960, 544},
                          {"dec_conv3b 96->96 480x272", 96, 96, 480, 272}};
  std::vector<Config> configs;
  for (auto [fmx, fmy] : {std::pair{1, 1}, {2, 1}, {4, 1}, {2, 2}, {1, 2}, {4, 2}})
    for (int nt : {16, 32, 64, 96})
      for (auto [sgx, sgy] : {std::pair{1, 1}, {2, 1}, {4, 1}, {2, 2}, {1, 4}}) configs.push_back({fmx, fmy, nt, sgx, sgy, 1});

  VkDeviceSize max_x = 0, max_y = 0, max_w = 0;
  for (const Shape& s : shapes) {
    const VkDeviceSize px = VkDeviceSize{s.w + 2} * (s.h + 2);
    max_x = std::max(max_x, px * s.cin * 2);
    max_y = std::max(max_y, px * s.cout * 2);
    max_w = std::max<VkDeviceSize>(max_w, 9ull * s.cin * s.cout * 2);
  }
  Buffer x = make_buffer(g, max_x, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT), w = make_buffer(g, max_w, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
         y = make_buffer(g, max_y, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  Buffer host = make_buffer(g, 256, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);

  VkDescriptorSetLayoutBinding binds[3];
  for (uint32_t i = 0; i < 3; ++i) binds[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = 3;
  dl.pBindings = binds;
  VkDescriptorSetLayout set_layout;
  VK(vkCreateDescriptorSetLayout(g.dev, &dl, nullptr, &set_layout));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 16};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &pcr;
  VkPipelineLayout layout;
  VK(vkCreatePipelineLayout(g.dev, &pl, nullptr, &layout));
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = 1;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &ps;
  VkDescriptorPool pool;
  VK(vkCreateDescriptorPool(g.dev, &dp, nullptr, &pool));
  VkDescriptorSetAllocateInfo dsa{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dsa.descriptorPool = pool;
  dsa.descriptorSetCount = 1;
  dsa.pSetLayouts = &set_layout;
  VkDescriptorSet set;
  VK(vkAllocateDescriptorSets(g.dev, &dsa, &set));
  VkDescriptorBufferInfo infos[3] = {{x.buffer, 0, VK_WHOLE_SIZE}, {w.buffer, 0, VK_WHOLE_SIZE}, {y.buffer, 0, VK_WHOLE_SIZE}};
  VkWriteDescriptorSet writes[3];
  for (uint32_t i = 0; i < 3; ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(g.dev, 3, writes, 0, nullptr);

  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = g.family;
  VkCommandPool cmd_pool;
  VK(vkCreateCommandPool(g.dev, &cpi, nullptr, &cmd_pool));
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = cmd_pool;
  cai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  VK(vkAllocateCommandBuffers(g.dev, &cai, &cmd));
  constexpr uint32_t kWarmup = 3, kRuns = 20;
  VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpi.queryCount = 2 * (kWarmup + kRuns);
  VkQueryPool queries;
  VK(vkCreateQueryPool(g.dev, &qpi, nullptr, &queries));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  VK(vkCreateFence(g.dev, &fci, nullptr, &fence));
  auto submit = [&](auto&& record) {
    VK(vkResetCommandBuffer(cmd, 0));
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK(vkBeginCommandBuffer(cmd, &bi));
    record();
    VK(vkEndCommandBuffer(cmd));
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    VK(vkQueueSubmit(g.queue, 1, &si, fence));
    VK(vkWaitForFences(g.dev, 1, &fence, VK_TRUE, 30'000'000'000ull));
    VK(vkResetFences(g.dev, 1, &fence));
  };
  const VkMemoryBarrier full{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                             VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT};
  // Input 1.0 everywhere (the border too), weights 1/16 (exact in fp16): every output is
  // 9 * cin / 16 (ReLU leaves it): each run's check.
  submit([&] {
    vkCmdFillBuffer(cmd, x.buffer, 0, VK_WHOLE_SIZE, 0x3c003c00u);
    vkCmdFillBuffer(cmd, w.buffer, 0, VK_WHOLE_SIZE, 0x2c002c00u);
  });

  std::printf("\n%-34s %-28s %9s %9s  %s\n", "shape", "config (frags xy, nt, sg xy)", "ms", "TFLOP/s", "check");
  for (const Shape& s : shapes) {
    double best = 1e30;
    std::string best_name;
    const double flop = 2.0 * s.w * s.h * s.cin * s.cout * 9;
    for (const Config& cfg : configs) {
      if (s.cout % cfg.nt || s.w % (16 * cfg.fmx) || s.h % cfg.fmy) continue;
      const std::vector<uint32_t> spirv = compile(source, cfg);
      VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      smi.codeSize = spirv.size() * 4;
      smi.pCode = spirv.data();
      VkShaderModule module;
      VK(vkCreateShaderModule(g.dev, &smi, nullptr, &module));
      VkComputePipelineCreateInfo cpc{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
      cpc.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module, "main", nullptr};
      cpc.layout = layout;
      VkPipeline pipe;
      const VkResult pr = vkCreateComputePipelines(g.dev, VK_NULL_HANDLE, 1, &cpc, nullptr, &pipe);
      vkDestroyShaderModule(g.dev, module, nullptr);
      char name[64];
      std::snprintf(name, sizeof name, "%dx%d nt%d sg%dx%d", cfg.fmx, cfg.fmy, cfg.nt, cfg.sgx, cfg.sgy);
      if (pr != VK_SUCCESS) {
        std::printf("%-34s %-28s pipeline creation failed (VkResult %d)\n", s.name, name, static_cast<int>(pr));
        continue;
      }
      const uint32_t push[4] = {s.cin, s.cout, s.h, s.w};
      const uint32_t gx = (s.w + 16 * cfg.fmx * cfg.sgx - 1) / (16 * cfg.fmx * cfg.sgx);
      const uint32_t gy = (s.h + cfg.fmy * cfg.sgy - 1) / (cfg.fmy * cfg.sgy);
      const VkDeviceSize probe = ((VkDeviceSize{s.h / 2 + 1} * (s.w + 2) + s.w / 2 + 1) * s.cout) * 2;
      submit([&] {
        vkCmdFillBuffer(cmd, y.buffer, 0, VK_WHOLE_SIZE, 0);
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &full, 0, nullptr, 0, nullptr);
        vkCmdResetQueryPool(cmd, queries, 0, qpi.queryCount);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
        for (uint32_t r = 0; r < kWarmup + kRuns; ++r) {
          vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 2 * r);
          vkCmdDispatch(cmd, gx, gy, s.cout / cfg.nt);
          vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 2 * r + 1);
          vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                               0, 1, &full, 0, nullptr, 0, nullptr);
        }
        VkBufferCopy copy{probe, 0, 2 * s.cout};
        vkCmdCopyBuffer(cmd, y.buffer, host.buffer, 1, &copy);
      });
      std::vector<uint64_t> stamps(qpi.queryCount);
      VK(vkGetQueryPoolResults(g.dev, queries, 0, qpi.queryCount, stamps.size() * 8, stamps.data(), 8,
                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
      std::vector<double> ms;
      for (uint32_t r = kWarmup; r < kWarmup + kRuns; ++r) ms.push_back((stamps[2 * r + 1] - stamps[2 * r]) * g.ts_period * 1e-6);
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2];
      void* mapped = nullptr;
      VK(vkMapMemory(g.dev, host.memory, 0, 256, 0, &mapped));
      std::vector<uint16_t> got(s.cout);
      std::memcpy(got.data(), mapped, 2 * s.cout);
      vkUnmapMemory(g.dev, host.memory);
      const float want = 9.0f * s.cin / 16.0f;
      bool ok = true;
      for (uint16_t v : got) ok = ok && std::abs(half_to_float(v) - want) <= 0.01f * want;
      std::printf("%-34s %-28s %9.3f %9.1f  %s\n", s.name, name, med, flop / (med * 1e-3) * 1e-12, ok ? "ok" : "WRONG");
      if (ok && med < best) best = med, best_name = name;
      vkDestroyPipeline(g.dev, pipe, nullptr);
    }
    if (!best_name.empty()) std::printf("%-34s best: %s, %.3f ms, %.1f TFLOP/s\n", s.name, best_name.c_str(), best, flop / (best * 1e-3) * 1e-12);
  }
  glslang::FinalizeProcess();
  vkDestroyFence(g.dev, fence, nullptr);
  vkDestroyQueryPool(g.dev, queries, nullptr);
  vkDestroyCommandPool(g.dev, cmd_pool, nullptr);
  vkDestroyDescriptorPool(g.dev, pool, nullptr);
  vkDestroyPipelineLayout(g.dev, layout, nullptr);
  vkDestroyDescriptorSetLayout(g.dev, set_layout, nullptr);
  for (Buffer* buf : {&x, &w, &y, &host}) {
    vkDestroyBuffer(g.dev, buf->buffer, nullptr);
    vkFreeMemory(g.dev, buf->memory, nullptr);
  }
  vkDestroyDevice(g.dev, nullptr);
  vkDestroyInstance(g.instance, nullptr);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "denox_direct_conv_probe: %s\n", e.what());
  return 1;
}
