// denox_occupancy_probe: how many workgroups with a given amount of shared memory an SM runs at
// once under this Vulkan driver (spin.comp: each workgroup spins for a fixed time). For each
// size S it times one workgroup per SM against a grid 32 times larger; their ratio is the
// number resident per SM. A measurement for issue 4 (bench/RESULTS.md 2026-11-25 evening saw a
// cliff at ~30 KB per workgroup), not part of libdenox: README.md.
//
//   denox_occupancy_probe [path/to/spin.comp] [SM count]   (defaults: bench/occupancy_probe/spin.comp, 132)
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
  const std::string path = argc > 1 ? argv[1] : "bench/occupancy_probe/spin.comp";
  const uint32_t sms = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 132;
  const std::string source = denox::probe::read_source(path);
  const denox::probe::CoopGpu g = denox::probe::open_coop_gpu("denox_occupancy_probe", true);
  if (!g.phys) {
    std::printf("no device with VK_KHR_cooperative_matrix: nothing to measure\n");
    return 0;
  }
  glslang::InitializeProcess();
  {
    denox::probe::ComputeHarness h(g.phys, g.dev, g.family, 0, 60);
    // Zeros, and large enough for every index spin.comp's never-taken branch names (o[8 + t],
    // o[4 + i + t]: at most 627 words at 512 invocations and REGS 112).
    const auto buf = h.buffer(8192, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    h.bind({buf});
    h.submit([&](VkCommandBuffer cmd) { vkCmdFillBuffer(cmd, buf.buffer, 0, VK_WHOLE_SIZE, 0); });
    constexpr uint32_t kGrid = 32;  // workgroups per SM in the large grid
    // What the pipeline looks like to the driver (spin.comp's knobs); `sizes` in KB.
    struct Variant {
      const char* name;
      const char* macros;
      std::vector<uint32_t> wgs;
      std::vector<uint32_t> sizes;
    };
    const std::vector<uint32_t> all = {1, 4, 6, 8, 12, 16, 20, 23, 24, 25, 28, 30, 31, 32, 33, 36, 40, 44, 48};
    const std::vector<uint32_t> near = {16, 20, 24, 25, 26, 28, 30, 31, 32, 34, 36, 40, 44, 48};
    const std::vector<Variant> variants = {
        {"plain", "", {64, 512}, all},
        {"plain", "", {128, 256}, near},
        {"stay", "#define STAY 1\n", {256, 512}, near},
        {"regs64", "#define STAY 1\n#define REGS 64\n", {256}, near},
        {"regs112", "#define STAY 1\n#define REGS 112\n", {256}, near},
        {"coop", "#define STAY 1\n#define COOP 1\n", {256, 512}, near},
        {"coop+regs112", "#define STAY 1\n#define COOP 1\n#define REGS 112\n", {256}, near},
    };
    std::printf("\n%-13s %5s %5s %10s %12s %12s %16s %16s\n", "variant", "wg", "regs", "shared KB", "1 per SM ms", "32 per SM ms",
                "resident per SM", "shared KB per SM");
    for (const Variant& v : variants)
      for (uint32_t wg : v.wgs)
        for (uint32_t kb : v.sizes) {
          std::ostringstream pre;
          pre << v.macros << "#define WG " << wg << "\n#define SMEM_BYTES " << kb * 1024 << "\n#define ITERS 4000\n";
          VkResult pr = VK_SUCCESS;
          const VkPipeline pipe = h.pipeline(denox::probe::compile_compute(source, pre.str(), "spin.comp"), &pr, g.stats);
          if (pr != VK_SUCCESS) {
            std::printf("%-13s %5u %5s %10u pipeline creation failed (VkResult %d)\n", v.name, wg, "", kb, static_cast<int>(pr));
            continue;
          }
          const int regs = denox::probe::register_count(g, pipe);
          const double one = h.time_dispatches(pipe, nullptr, sms, 1, 1, 5, 20, nullptr, nullptr);
          const double many = h.time_dispatches(pipe, nullptr, sms * kGrid, 1, 1, 5, 20, nullptr, nullptr);
          const double resident = kGrid * one / many;
          std::printf("%-13s %5u %5d %10u %12.4f %12.4f %16.2f %16.1f\n", v.name, wg, regs, kb, one, many, resident, resident * kb);
          std::fflush(stdout);
          h.destroy(pipe);
        }
  }
  glslang::FinalizeProcess();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "denox_occupancy_probe: %s\n", e.what());
  return 1;
}
