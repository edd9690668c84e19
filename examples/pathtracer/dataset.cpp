// Dataset mode: training data for tools/train/train.py. Each entry is one random scene variation
// (scene id and seed drawn from --seed and the index), rendered at every --dataset-spp with its
// own sample stream, plus a high-spp reference. Inputs keep their noisy first-hit albedo and
// normal (averaged over the same few samples), as a renderer would hand them to the denoiser.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "image_io.hpp"
#include "modes.hpp"
#include "scene.hpp"

namespace pathtracer {

uint32_t mix_seed(uint32_t a, uint32_t b) {
  // splitmix-style finalizer of the pair: nearby inputs give unrelated streams.
  uint64_t z = (uint64_t{a} << 32 | b) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

void render_progressive(const Device& dev, const Renderer& renderer, const Aovs& aovs, uint32_t spp, uint32_t seed) {
  const uint64_t pixels = uint64_t{aovs.width} * aovs.height;
  const uint32_t pass = static_cast<uint32_t>(std::clamp<uint64_t>((uint64_t{1} << 25) / pixels, 1, 64));
  for (uint32_t done = 0; done < spp;) {
    const uint32_t n = std::min(pass, spp - done);
    dev.submit([&](VkCommandBuffer cmd) {
      compute_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      renderer.record_trace(cmd, aovs, done, n, seed);
    });
    done += n;
  }
}

int run_dataset(const Device& dev, const Options& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(o.dataset, ec);
  if (ec) throw std::runtime_error("cannot create '" + o.dataset + "': " + ec.message());
  const uint32_t w = o.sizes[0].width, h = o.sizes[0].height;
  Renderer renderer(dev);
  Aovs noisy(dev, w, h), reference(dev, w, h);
  const std::string index_path = (fs::path(o.dataset) / "index.txt").string();
  std::ofstream index(index_path, std::ios::app);
  if (!index) throw std::runtime_error("cannot write '" + index_path + "'");
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < o.count; ++i) {
    const uint32_t draw = mix_seed(o.seed, i);
    const int id = static_cast<int>(draw % kSceneCount);
    const Scene scene = make_scene(id, mix_seed(draw, 1), o.max_depth);
    renderer.set_scene(scene.gpu);
    char stem[32];
    std::snprintf(stem, sizeof(stem), "%05u", i);
    const fs::path base = fs::path(o.dataset) / stem;
    for (uint32_t spp : o.dataset_spp) {
      render_progressive(dev, renderer, noisy, spp, mix_seed(draw, 100 + spp));
      const auto color = noisy.color.download(), albedo = noisy.albedo.download(), normal = noisy.normal.download();
      write_npy_hwc(base.string() + "_spp" + std::to_string(spp) + ".npy", {&color, &albedo, &normal}, w, h);
    }
    render_progressive(dev, renderer, reference, o.reference_spp, mix_seed(draw, 2));
    const auto ref = reference.color.download();
    write_npy_hwc(base.string() + "_ref.npy", {&ref}, w, h);
    index << stem << " " << scene.description << "\n";
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %s (%.1f s so far)\n", stem, scene.description.c_str(), s);
    std::fflush(stdout);
  }
  if (!index.flush()) throw std::runtime_error("cannot write '" + index_path + "'");
  std::printf("dataset: %u entries of %ux%u in %s (spp", o.count, w, h, o.dataset.c_str());
  for (uint32_t spp : o.dataset_spp) std::printf(" %u", spp);
  std::printf(", reference %u spp)\n", o.reference_spp);
  return 0;
}

}  // namespace pathtracer
