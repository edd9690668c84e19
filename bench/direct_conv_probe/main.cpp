// denox_direct_conv_probe: how fast a 3x3 convolution runs when its cooperative-matrix fragments
// are loaded straight from HWC buffers (direct.comp: no shared memory, no barriers), at the
// shapes of OIDN balanced's big convolutions. A measurement for the next conv kernel (issue 4),
// not part of libdenox: see README.md. Exits 0 with a message where the device has no
// 16x16x16 fp16 cooperative matrices.
//
//   denox_direct_conv_probe [path/to/direct.comp]   (default: bench/direct_conv_probe/direct.comp)
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

struct Config {
  int fmx, fmy, nt, sgx, sgy, acc_f16;
};

std::vector<uint32_t> compile(const std::string& source, const Config& c) {
  std::ostringstream pre;
  pre << "#define FMX " << c.fmx << "\n#define FMY " << c.fmy << "\n#define NT " << c.nt << "\n#define SGX " << c.sgx << "\n#define SGY "
      << c.sgy << "\n#define ACC_F16 " << c.acc_f16 << "\n";
  return denox::probe::compile_compute(source, pre.str(), "direct.comp");
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "bench/direct_conv_probe/direct.comp";
  const std::string source = denox::probe::read_source(path);
  const denox::probe::CoopGpu g = denox::probe::open_coop_gpu("denox_direct_conv_probe", false);
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
  constexpr uint32_t kWarmup = 3, kRuns = 20;
  {
    denox::probe::ComputeHarness h(g.phys, g.dev, g.family, 16, kWarmup + kRuns);
    const auto x = h.buffer(max_x, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT), w = h.buffer(max_w, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
               y = h.buffer(max_y, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    const auto host = h.buffer(256, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    h.bind({x, w, y});
    // Input 1.0 everywhere (the border too), weights 1/16 (exact in fp16): every output is
    // 9 * cin / 16 (ReLU leaves it): each run's check.
    h.submit([&](VkCommandBuffer cmd) {
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
        VkResult pr = VK_SUCCESS;
        const VkPipeline pipe = h.pipeline(compile(source, cfg), &pr);
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
        const double med = h.time_dispatches(
            pipe, push, gx, gy, s.cout / cfg.nt, kWarmup, kRuns,
            [&](VkCommandBuffer cmd) {
              vkCmdFillBuffer(cmd, y.buffer, 0, VK_WHOLE_SIZE, 0);
              denox::probe::ComputeHarness::full_barrier(cmd);
            },
            [&](VkCommandBuffer cmd) {
              VkBufferCopy copy{probe, 0, 2 * s.cout};
              vkCmdCopyBuffer(cmd, y.buffer, host.buffer, 1, &copy);
            });
        h.destroy(pipe);
        const auto bytes = h.read(host, 2 * s.cout);
        std::vector<uint16_t> got(s.cout);
        std::memcpy(got.data(), bytes.data(), 2 * s.cout);
        const float want = 9.0f * s.cin / 16.0f;
        bool ok = true;
        for (uint16_t v : got) ok = ok && std::abs(denox::half_to_float(v) - want) <= 0.01f * want;
        std::printf("%-34s %-28s %9.3f %9.1f  %s\n", s.name, name, med, flop / (med * 1e-3) * 1e-12, ok ? "ok" : "WRONG");
        if (ok && med < best) best = med, best_name = name;
      }
      if (!best_name.empty())
        std::printf("%-34s best: %s, %.3f ms, %.1f TFLOP/s\n", s.name, best_name.c_str(), best, flop / (best * 1e-3) * 1e-12);
    }
  }
  glslang::FinalizeProcess();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "denox_direct_conv_probe: %s\n", e.what());
  return 1;
}
