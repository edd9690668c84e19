// denox_winograd_probe: how fast a 3x3 convolution runs as Winograd F(2x2, 3x3) on cooperative
// matrices with the transformed weights in registers (winograd.comp), at the shapes of OIDN
// balanced's plain convolutions. A measurement for issue 4, not part of libdenox: README.md.
// Each configuration's result is checked against a CPU reference (double precision, the fp32
// weights) at 4096 sampled pixels: relative L2 error and NaN. Exits 0 with a message where the
// device has no cooperative matrices.
//
//   denox_winograd_probe [path/to/winograd.comp [shape index]]   (default: bench/winograd_probe/winograd.comp, all)
// WINO_ONLY=TEXT keeps the configurations whose description contains TEXT; WINO_DEFINES=TEXT adds
// TEXT (macro lines) to every shader (the PROF_* experiment switches).
#include <glslang/Public/ShaderLang.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/half.hpp"
#include "vk_probe.hpp"

namespace {

using Shape = denox::probe::ConvShape;

struct Config {
  uint32_t bh, bw, ckw, nt, cpw, prefetch, acc_f16, gc, ibw, priv, epi_f16;
};

std::string describe(const Config& c) {
  char s[96];
  std::snprintf(s, sizeof s, "%ux%u blk ckw%u nt%u cpw%u gc%u ibw%u%s%s%s%s", c.bh, c.bw, c.ckw, c.nt, c.cpw, c.gc, c.ibw,
                c.prefetch ? " pf" : "", c.acc_f16 ? "" : " f32acc", c.priv ? " private" : "", c.epi_f16 ? " epi16" : "");
  return s;
}

std::vector<uint32_t> compile(const std::string& source, const Shape& s, const Config& c) {
  std::ostringstream pre;
  pre << "#define CIN " << s.cin << "\n#define COUT " << s.cout << "\n#define NT " << c.nt << "\n#define BH " << c.bh << "\n#define BW "
      << c.bw << "\n#define CKW " << c.ckw << "\n#define CPW " << c.cpw << "\n#define PREFETCH " << c.prefetch << "\n#define ACC_F16 "
      << c.acc_f16 << "\n#define GC " << c.gc << "\n#define IBW " << c.ibw << "\n#define PRIVATE " << c.priv << "\n#define EPI_F16 " << c.epi_f16 << "\n";
  if (const char* extra = std::getenv("WINO_DEFINES")) pre << extra << "\n";  // e.g. "#define PROF_NO_MMA 1"
  return denox::probe::compile_compute(source, pre.str(), "winograd.comp");
}

bool fits(const Shape& s, const Config& c) {
  const uint32_t nb = c.bh * c.bw;
  if (nb % 16 || s.cin % c.ckw || c.ckw % 16 || s.cout % c.nt || s.h % (2 * c.bh) || s.w % (2 * c.bw)) return false;
  const uint32_t smem = 16 * nb * std::max(c.ckw + 8, c.nt + 8) * 2;
  // B fragments in registers: 4 registers per 16x16 fp16 fragment and lane; keep them below ~100.
  const uint32_t b_regs = c.cpw * (s.cin / 16) * (c.nt / 16) * 4;
  return smem <= 49152 && b_regs <= 96;
}

using Gpu = denox::probe::CoopGpu;

// U = G g G^T for every (co, ci), G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], packed [16][cin][cout].
std::vector<uint16_t> transform_weights(const std::vector<float>& w, uint32_t cin, uint32_t cout) {
  static const double G[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  std::vector<uint16_t> u(16ull * cin * cout);
  for (uint32_t co = 0; co < cout; ++co)
    for (uint32_t ci = 0; ci < cin; ++ci) {
      const float* g = &w[(static_cast<size_t>(co) * cin + ci) * 9];
      double gg[4][3] = {};
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 3; ++k)
          for (int r = 0; r < 3; ++r) gg[i][k] += G[i][r] * g[r * 3 + k];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          double v = 0;
          for (int k = 0; k < 3; ++k) v += gg[i][k] * G[j][k];
          u[(static_cast<size_t>(i * 4 + j) * cin + ci) * cout + co] = denox::float_to_half(static_cast<float>(v));
        }
    }
  return u;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "bench/winograd_probe/winograd.comp";
  const int only_shape = argc > 2 ? std::atoi(argv[2]) : -1;  // one shape (index), else all
  const std::string source = denox::probe::read_source(path);
  Gpu g = denox::probe::open_coop_gpu("denox_winograd_probe", true);
  if (!g.phys) {
    std::printf("no device with VK_KHR_cooperative_matrix and fp16: nothing to measure\n");
    return 0;
  }
  glslang::InitializeProcess();

  const std::vector<Shape> shapes = denox::probe::plain_conv_shapes();
  // The shared transform (4 channels and one block per item: wider items and the private
  // transform lost, bench/RESULTS.md 2026-11-26), with and without prefetch and the fp16 epilogue.
  std::vector<Config> configs;
  for (auto [bh, bw] : {std::pair{4u, 4u}, {2u, 8u}, {4u, 8u}})
    for (uint32_t ckw : {32u, 64u, 96u})
      for (uint32_t nt : {16u, 32u, 64u})
        for (uint32_t cpw : {1u, 2u})
          for (uint32_t pf : {0u, 1u})
            for (uint32_t e16 : {0u, 1u}) configs.push_back({bh, bw, ckw, nt, cpw, pf, 1, 4, 1, 0, e16});

  // Many warm-up runs: the GPU drops its clock while the host checks a result, and a few
  // dispatches do not bring it back up.
  constexpr uint32_t kWarmup = 150, kRuns = 20, kSamples = 4096;
  std::mt19937 rng(7);
  const auto [max_x, max_y] = denox::probe::max_conv_io_bytes(shapes);
  VkDeviceSize max_u = 0;
  for (const Shape& s : shapes) max_u = std::max<VkDeviceSize>(max_u, 16ull * s.cin * s.cout * 2);
  {
    denox::probe::ComputeHarness h(g.phys, g.dev, g.family, 8, kWarmup + kRuns);
    const auto local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const auto hostp = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const auto x = h.buffer(max_x, local), u = h.buffer(max_u, local), y = h.buffer(max_y, local), bias = h.buffer(4 * 256, local);
    const auto stage = h.buffer(std::max(max_x, max_y), hostp);
    h.bind({x, u, y, bias});
    auto upload = [&](const denox::probe::Buffer& dst, const void* data, VkDeviceSize bytes) { h.upload(dst, stage, data, bytes); };

    std::printf("\n%-30s %-38s %9s %9s %9s %8s %5s %10s\n", "shape", "config (blocks)", "ms", "TFLOP/s", "x direct", "grid", "regs", "rel L2");
    for (size_t si = 0; si < std::size(shapes); ++si) {
      const Shape& s = shapes[si];
      if (only_shape >= 0 && static_cast<size_t>(only_shape) != si) continue;
      // Input in [-1, 1] with a zero border; weights with variance 1 / (9 cin); small biases.
      std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
      const uint32_t wp = s.w + 2, hp = s.h + 2;
      std::vector<uint16_t> xh(static_cast<size_t>(wp) * hp * s.cin, 0);
      for (uint32_t yy = 1; yy <= s.h; ++yy)
        for (uint32_t xx = 1; xx <= s.w; ++xx)
          for (uint32_t c = 0; c < s.cin; ++c) xh[(static_cast<size_t>(yy) * wp + xx) * s.cin + c] = denox::float_to_half(unit(rng));
      const float a = std::sqrt(3.0f / (9.0f * s.cin));
      std::vector<float> w(static_cast<size_t>(s.cout) * s.cin * 9), b(s.cout);
      for (float& v : w) v = a * unit(rng);
      for (float& v : b) v = 0.1f * unit(rng);
      const std::vector<uint16_t> uh = transform_weights(w, s.cin, s.cout);
      upload(x, xh.data(), xh.size() * 2);
      upload(u, uh.data(), uh.size() * 2);
      upload(bias, b.data(), b.size() * 4);
      // Reference at sampled pixels.
      std::vector<std::pair<uint32_t, uint32_t>> samples(kSamples);
      for (auto& p : samples) p = {rng() % s.h, rng() % s.w};
      std::vector<double> ref(static_cast<size_t>(kSamples) * s.cout);
      for (uint32_t i = 0; i < kSamples; ++i)
        for (uint32_t co = 0; co < s.cout; ++co) {
          double acc = b[co];
          for (uint32_t ky = 0; ky < 3; ++ky)
            for (uint32_t kx = 0; kx < 3; ++kx)
              for (uint32_t ci = 0; ci < s.cin; ++ci)
                acc += denox::half_to_float(xh[(static_cast<size_t>(samples[i].first + ky) * wp + samples[i].second + kx) * s.cin + ci]) *
                       w[((static_cast<size_t>(co) * s.cin + ci) * 3 + ky) * 3 + kx];
          ref[static_cast<size_t>(i) * s.cout + co] = std::max(acc, 0.0);
        }

      const double flop = 2.0 * s.w * s.h * s.cin * s.cout * 9;
      double best = 1e30;
      std::string best_name;
      for (const Config& cfg : configs) {
        if (!fits(s, cfg)) continue;
        if (const char* only = std::getenv("WINO_ONLY"); only && describe(cfg).find(only) == std::string::npos) continue;
        VkResult pr = VK_SUCCESS;
        const VkPipeline pipe = h.pipeline(compile(source, s, cfg), &pr, g.stats);
        if (pr != VK_SUCCESS) {
          std::printf("%-30s %-34s pipeline creation failed (VkResult %d)\n", s.name, describe(cfg).c_str(), static_cast<int>(pr));
          continue;
        }
        const uint32_t tiles = (s.w / (2 * cfg.bw)) * (s.h / (2 * cfg.bh));
        const int regs = denox::probe::register_count(g, pipe);
        for (uint32_t grid : {132u, 264u}) {
          // The first measurement of a process: keep the GPU busy ~0.5 s first (its clock ramps up).
          static bool ramped = false;
          for (int r = 0; !ramped && r < 30; ++r)
            h.time_dispatches(pipe, std::array<uint32_t, 2>{s.h, s.w}.data(), grid, s.cout / cfg.nt, 1, kWarmup, kRuns, nullptr, nullptr);
          ramped = true;
          if (grid > tiles) continue;
          const uint32_t push[2] = {s.h, s.w};
          const double med = h.time_dispatches(
              pipe, push, grid, s.cout / cfg.nt, 1, kWarmup, kRuns,
              [&](VkCommandBuffer cmd) {
                vkCmdFillBuffer(cmd, y.buffer, 0, VK_WHOLE_SIZE, 0x7e007e00u);  // NaN: unwritten pixels show
                denox::probe::ComputeHarness::full_barrier(cmd);
              },
              [&](VkCommandBuffer cmd) {
                VkBufferCopy copy{0, 0, VkDeviceSize{s.w} * s.h * s.cout * 2};
                vkCmdCopyBuffer(cmd, y.buffer, stage.buffer, 1, &copy);
              });
          const auto bytes = h.read(stage, static_cast<size_t>(s.w) * s.h * s.cout * 2);
          const auto* out = reinterpret_cast<const uint16_t*>(bytes.data());
          double num = 0, den = 0;
          bool nan = false;
          for (uint32_t i = 0; i < kSamples; ++i)
            for (uint32_t co = 0; co < s.cout; ++co) {
              const float v = denox::half_to_float(out[(static_cast<size_t>(samples[i].first) * s.w + samples[i].second) * s.cout + co]);
              nan = nan || !std::isfinite(v);
              const double r = ref[static_cast<size_t>(i) * s.cout + co];
              num += (v - r) * (v - r), den += r * r;
            }
          const double rel = nan ? NAN : std::sqrt(num / den);
          char gname[16];
          std::snprintf(gname, sizeof gname, "%u", grid);
          std::printf("%-30s %-38s %9.3f %9.1f %9.2f %8s %5d %10.2e%s\n", s.name, describe(cfg).c_str(), med, flop / (med * 1e-3) * 1e-12,
                      s.plan_ms > 0 ? s.plan_ms / med : 0.0, grid == tiles ? "tiles" : gname, regs, rel,
                      (nan || rel > 2e-2) ? "  WRONG" : "");
          std::fflush(stdout);
          if (!nan && rel <= 2e-2 && med < best) best = med, best_name = describe(cfg) + " grid " + gname;
        }
        h.destroy(pipe);
      }
      if (!best_name.empty())
        std::printf("%-30s best: %s, %.3f ms, %.1f TFLOP/s (direct conv2d_coopmat %.3f ms)\n", s.name, best_name.c_str(), best,
                    flop / (best * 1e-3) * 1e-12, s.plan_ms);
    }
  }
  glslang::FinalizeProcess();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "denox_winograd_probe: %s\n", e.what());
  return 1;
}
