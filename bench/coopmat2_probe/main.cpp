// denox_coopmat2_probe: how fast plain GEMMs run on workgroup-scope cooperative matrices
// (VK_NV_cooperative_matrix2) on this GPU, at the shapes of OIDN balanced's full-resolution
// convolutions seen as implicit GEMMs (M = 1920 x 1088 pixels, N = output channels, K = 9 x input
// channels) and at a square size for the peak. A measurement for the next conv kernel (issue 4),
// not part of libdenox: see README.md. Exits 0 with a message where the extension is missing.
//
//   denox_coopmat2_probe [path/to/gemm.comp]     (default: bench/coopmat2_probe/gemm.comp)
#include <glslang/Public/ShaderLang.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/half.hpp"
#include "vk_probe.hpp"

namespace {

using denox::probe::has_extension;

struct Config {
  int tile_m, tile_n, tile_k, wg, acc_f16;
};

std::vector<uint32_t> compile(const std::string& source, const Config& c) {
  std::ostringstream pre;
  pre << "#define TILE_M " << c.tile_m << "\n#define TILE_N " << c.tile_n << "\n#define TILE_K " << c.tile_k << "\n#define WG_SIZE "
      << c.wg << "\n#define ACC_F16 " << c.acc_f16 << "\n";
  return denox::probe::compile_compute(source, pre.str(), "gemm.comp");
}

struct Gpu {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice dev = VK_NULL_HANDLE;
  uint32_t family = 0;
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> flexible;
};

Gpu open_gpu() {
  Gpu g;
  g.instance = denox::probe::create_instance("denox_coopmat2_probe");
  for (VkPhysicalDevice p : denox::probe::physical_devices(g.instance))
    if (has_extension(p, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME) && has_extension(p, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) g.phys = p;
  if (!g.phys) return g;

  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(g.phys, &props);
  std::printf("device: %s (driver %u)\n", props.deviceName, props.driverVersion);

  uint32_t count = 0;
  PROBE_VK(vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(g.phys, &count, nullptr));
  g.flexible.assign(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
  PROBE_VK(vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(g.phys, &count, g.flexible.data()));
  std::printf("flexible dimensions (granularity M N K, A B C Result types, scope, workgroup invocations):\n");
  for (const auto& f : g.flexible)
    std::printf("  %3u %3u %3u  types %d %d %d %d  scope %d  invocations %u\n", f.MGranularity, f.NGranularity, f.KGranularity, f.AType,
                f.BType, f.CType, f.ResultType, f.scope, f.workgroupInvocations);

  // Enable every feature the device has in these structures (what the shader may need).
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV cm2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, &cm2};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &cm};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
  vkGetPhysicalDeviceFeatures2(g.phys, &f2);
  std::printf("coopmat2 features: workgroup scope %u, flexible dimensions %u, tensor addressing %u, block loads %u\n",
              cm2.cooperativeMatrixWorkgroupScope, cm2.cooperativeMatrixFlexibleDimensions, cm2.cooperativeMatrixTensorAddressing,
              cm2.cooperativeMatrixBlockLoads);
  VkPhysicalDeviceCooperativeMatrix2PropertiesNV cm2p{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &cm2p};
  vkGetPhysicalDeviceProperties2(g.phys, &p2);
  std::printf("workgroup scope: max workgroup size %u, reserved shared memory %u, flexible max dimension %u\n",
              cm2p.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize, cm2p.cooperativeMatrixWorkgroupScopeReservedSharedMemory,
              cm2p.cooperativeMatrixFlexibleDimensionsMaxDimension);

  g.family = denox::probe::compute_queue_family(g.phys);
  g.dev = denox::probe::create_device(g.phys, g.family, {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME}, &f2);
  return g;
}

// Whether the driver lists the tile sizes for fp16 A/B with this accumulator at workgroup scope.
bool supported(const Gpu& g, const Config& c) {
  const VkComponentTypeKHR acc = c.acc_f16 ? VK_COMPONENT_TYPE_FLOAT16_KHR : VK_COMPONENT_TYPE_FLOAT32_KHR;
  for (const auto& f : g.flexible)
    if (f.scope == VK_SCOPE_WORKGROUP_KHR && f.AType == VK_COMPONENT_TYPE_FLOAT16_KHR && f.BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
        f.CType == acc && f.ResultType == acc && f.workgroupInvocations == static_cast<uint32_t>(c.wg) && c.tile_m % f.MGranularity == 0 &&
        c.tile_n % f.NGranularity == 0 && c.tile_k % f.KGranularity == 0)
      return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "bench/coopmat2_probe/gemm.comp";
  const std::string source = denox::probe::read_source(path);
  Gpu g = open_gpu();
  if (!g.phys) {
    std::printf("no device with VK_NV_cooperative_matrix2 and VK_KHR_cooperative_matrix: nothing to measure\n");
    return 0;
  }
  glslang::InitializeProcess();

  struct Shape {
    const char* name;
    uint32_t m, n, k;
  };
  const Shape shapes[] = {{"dec_conv1a 67->64 (K 80x9)", 1920 * 1088, 64, 720},
                          {"dec_conv1b 64->32", 1920 * 1088, 32, 576},
                          {"enc_conv1  32->32", 1920 * 1088, 32, 288},
                          {"dec_conv2a 128->64 (1/4 res)", 960 * 544, 64, 1152},
                          {"square 8192", 8192, 8192, 8192}};
  std::vector<Config> configs;
  for (int wg : {128, 256})
    for (int tm : {64, 128, 256})
      for (int tn : {32, 64, 128})
        for (int tk : {32, 64})
          for (int f16 : {1, 0}) configs.push_back({tm, tn, tk, wg, f16});

  constexpr uint32_t kARows = 16384;  // rows of A actually stored (see gemm.comp)
  constexpr uint32_t kWarmup = 3, kRuns = 20;
  {
    denox::probe::ComputeHarness h(g.phys, g.dev, g.family, 16, kWarmup + kRuns);
    const auto a = h.buffer(VkDeviceSize{kARows} * 8192 * 2, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
               b = h.buffer(VkDeviceSize{8192} * 8192 * 2, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
               c = h.buffer(VkDeviceSize{1920 * 1088} * 64 * 2, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    const auto host = h.buffer(4096, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    h.bind({a, b, c});
    // A and B hold 1.0 everywhere (fp16 0x3c00), so every element of C is K: a check of each run.
    h.submit([&](VkCommandBuffer cmd) {
      vkCmdFillBuffer(cmd, a.buffer, 0, VK_WHOLE_SIZE, 0x3c003c00u);
      vkCmdFillBuffer(cmd, b.buffer, 0, VK_WHOLE_SIZE, 0x3c003c00u);
    });

    std::printf("\n%-30s %-26s %9s %9s  %s\n", "shape (M x N x K)", "tile MxNxK wg acc", "ms", "TFLOP/s", "check");
    for (const Shape& s : shapes) {
      double best = 1e30;
      std::string best_name;
      for (const Config& cfg : configs) {
        if (s.m % cfg.tile_m || s.n % cfg.tile_n || s.k % cfg.tile_k || std::min(s.m, kARows) % cfg.tile_m || !supported(g, cfg)) continue;
        VkResult pr = VK_SUCCESS;
        const VkPipeline pipe = h.pipeline(compile(source, cfg), &pr);
        char name[64];
        std::snprintf(name, sizeof name, "%dx%dx%d wg%d %s", cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.wg, cfg.acc_f16 ? "f16" : "f32");
        if (pr != VK_SUCCESS) {
          std::printf("%-30s %-26s pipeline creation failed (VkResult %d)\n", s.name, name, static_cast<int>(pr));
          continue;
        }
        const uint32_t push[4] = {s.m, s.n, s.k, std::min(s.m, kARows)};
        const double med = h.time_dispatches(pipe, push, s.m / cfg.tile_m, s.n / cfg.tile_n, 1, kWarmup, kRuns, nullptr,
                                             [&](VkCommandBuffer cmd) {
                                               VkBufferCopy copy{0, 0, 4096};
                                               vkCmdCopyBuffer(cmd, c.buffer, host.buffer, 1, &copy);
                                             });
        h.destroy(pipe);
        const double tflops = 2.0 * s.m * s.n * s.k / (med * 1e-3) * 1e-12;
        const auto bytes = h.read(host, 2);
        uint16_t h0;
        std::memcpy(&h0, bytes.data(), 2);
        const double v = denox::half_to_float(h0);
        const bool ok = std::abs(v - s.k) <= 0.01 * s.k;
        std::printf("%-30s %-26s %9.3f %9.1f  C[0] = %.0f %s\n", s.name, name, med, tflops, v, ok ? "ok" : "WRONG");
        if (ok && med < best) best = med, best_name = name;
      }
      if (!best_name.empty())
        std::printf("%-30s best: %s, %.3f ms, %.1f TFLOP/s\n", s.name, best_name.c_str(), best, 2.0 * s.m * s.n * s.k / (best * 1e-3) * 1e-12);
    }
  }
  glslang::FinalizeProcess();
  vkDestroyDevice(g.dev, nullptr);
  vkDestroyInstance(g.instance, nullptr);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "denox_coopmat2_probe: %s\n", e.what());
  return 1;
}
