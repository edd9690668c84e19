// denox_mma_peak_probe: the cooperative-matrix multiply rate this Vulkan driver reaches with no
// memory traffic (peak.comp), fp16 (16x16x16, fp16 and fp32 accumulators) against int8 (16x16x32,
// int32 accumulators). A measurement for issue 4 (how close the conv kernels' multiply phase is
// to the tensor cores' rate; what an int8 path could gain), not part of libdenox: README.md.
//
//   denox_mma_peak_probe [path/to/peak.comp] [SM count]   (defaults: bench/mma_peak_probe/peak.comp, 132)
#include <glslang/Public/ShaderLang.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "vk_probe.hpp"

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "bench/mma_peak_probe/peak.comp";
  const uint32_t sms = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 132;
  const std::string source = denox::probe::read_source(path);
  const denox::probe::CoopGpu g = denox::probe::open_coop_gpu("denox_mma_peak_probe", false);
  if (!g.phys) {
    std::printf("no device with VK_KHR_cooperative_matrix: nothing to measure\n");
    return 0;
  }
  glslang::InitializeProcess();
  {
    constexpr uint32_t kIters = 4096, kWaves = 8;
    denox::probe::ComputeHarness h(g.phys, g.dev, g.family, 0, 60);
    const auto src = h.buffer(1 << 20, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    const auto dst = h.buffer(256u << 20, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    h.bind({src, dst});
    h.submit([&](VkCommandBuffer cmd) { vkCmdFillBuffer(cmd, src.buffer, 0, VK_WHOLE_SIZE, 0); });  // zeros: no overflow, no NaN
    std::printf("\n%-28s %4s %4s %4s %10s %12s\n", "type", "fa", "fb", "sg", "ms", "TFLOP/TOP/s");
    struct Kind {
      const char* name;
      int type, acc32;
      double flop_per_mma;  // 2 * M * N * K
    };
    for (const Kind& k : {Kind{"fp16 16x16x16 -> fp16", 0, 0, 2.0 * 16 * 16 * 16}, Kind{"fp16 16x16x16 -> fp32", 0, 1, 2.0 * 16 * 16 * 16},
                          Kind{"int8 16x16x32 -> int32", 1, 0, 2.0 * 16 * 16 * 32}})
      for (auto [fa, fb] : {std::pair{2u, 2u}, {4u, 2u}, {4u, 4u}})
        for (uint32_t sg : {4u, 8u}) {
          std::ostringstream pre;
          pre << "#define TYPE " << k.type << "\n#define ACC32 " << k.acc32 << "\n#define FA " << fa << "\n#define FB " << fb
              << "\n#define ITERS " << kIters << "\n#define SG " << sg << "\n";
          VkResult pr = VK_SUCCESS;
          const VkPipeline pipe = h.pipeline(denox::probe::compile_compute(source, pre.str(), "peak.comp"), &pr);
          if (pr != VK_SUCCESS) {
            std::printf("%-28s %4u %4u %4u pipeline creation failed (VkResult %d)\n", k.name, fa, fb, sg, static_cast<int>(pr));
            continue;
          }
          const uint32_t groups = sms * kWaves;
          for (int r = 0; r < 3; ++r) h.time_dispatches(pipe, nullptr, groups, 1, 1, 5, 20, nullptr, nullptr);  // clock up
          const double ms = h.time_dispatches(pipe, nullptr, groups, 1, 1, 5, 20, nullptr, nullptr);
          const double ops = k.flop_per_mma * fa * fb * kIters * sg * groups;
          std::printf("%-28s %4u %4u %4u %10.3f %12.1f\n", k.name, fa, fb, sg, ms, ops / (ms * 1e-3) * 1e-12);
          std::fflush(stdout);
          h.destroy(pipe);
        }
  }
  glslang::FinalizeProcess();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "denox_mma_peak_probe: %s\n", e.what());
  return 1;
}
