// denox_pathtracer: the main job of denox shown end to end. A small Vulkan compute path tracer
// renders a noisy frame with albedo and normal AOVs, and in the SAME command buffer denox's
// dispatches denoise it and a tonemap pass prepares it for display:
//
//   [trace] -> denox_cmd_input_barrier -> denox_model_record -> denox_cmd_output_barrier -> [tonemap]
//
// It integrates denox the way an engine would, through the public C API only (denoiser.cpp):
// its own device (src/vkhost), its own images and memory, its own barriers and timestamps.
// See README.md next to this file for the command line and what it prints.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "denoiser.hpp"
#include "image_io.hpp"
#include "modes.hpp"

namespace pathtracer {

namespace {

namespace fs = std::filesystem;

// Host-visible RGBA8 target of the tonemap pass, read back for PNG.
std::vector<uint32_t> read_ldr(const Buffer& b, uint32_t w, uint32_t h) {
  std::vector<uint32_t> px(size_t{w} * h);
  b.read(px.data(), px.size() * 4);
  return px;
}

void tonemap_to_png(const Device& dev, const Renderer& r, const Image& src, uint32_t w, uint32_t h, Tonemap mode, float exposure,
                    const fs::path& path) {
  Buffer ldr(dev, VkDeviceSize{w} * h * 4);
  dev.submit([&](VkCommandBuffer cmd) {
    compute_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_READ_BIT);
    r.record_tonemap(cmd, src.view(), w, h, ldr, mode, exposure);
    compute_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                    VK_ACCESS_HOST_READ_BIT);
  });
  write_png(path.string(), read_ldr(ldr, w, h), w, h);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int run_render(const Device& dev, const Options& o) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw std::runtime_error("cannot create '" + o.out + "': " + ec.message());
  const fs::path out(o.out);
  Renderer renderer(dev);
  const Scene scene = make_scene(o.scene, o.seed, o.max_depth);
  renderer.set_scene(scene.gpu);
  std::printf("scene %d: %s\n", o.scene, scene.description.c_str());
  Denoiser denoiser(dev, o.model, o.precision, o.calibration);
  std::printf("model %s: %u input channels, %s\n", o.model.c_str(), denoiser.input_channels(), denoiser.precision_name());

  // Timestamps: 0 frame start, 1 after tracing, 2 after denox, 3 after tonemapping.
  FrameTimer timer(dev, 4);
  if (!timer.supported()) std::printf("this queue family has no timestamps: no GPU times\n");
  std::unique_ptr<Aovs> aovs;
  std::unique_ptr<Image> denoised;
  std::unique_ptr<Buffer> ldr_noisy, ldr_denoised;
  std::vector<double> render_ms, denoise_ms, tonemap_ms;
  uint32_t accumulated = 0;
  for (int f = 0; f < o.frames; ++f) {
    const Size s = o.sizes[static_cast<size_t>(f) % o.sizes.size()];
    const uint32_t w = s.width, h = s.height;
    if (!aovs || aovs->width != w || aovs->height != h) {
      // A resolution change: new images, then denox's extent, memory and bindings (no compile).
      ldr_noisy.reset();
      ldr_denoised.reset();
      denoised.reset();
      aovs.reset();
      aovs = std::make_unique<Aovs>(dev, w, h);
      denoised = std::make_unique<Image>(dev, w, h, Aovs::kFormat);
      ldr_noisy = std::make_unique<Buffer>(dev, VkDeviceSize{w} * h * 4);
      ldr_denoised = std::make_unique<Buffer>(dev, VkDeviceSize{w} * h * 4);
      denoiser.configure(*aovs, *denoised);
      accumulated = 0;
    }
    if (f == o.edit_model_at) fs::last_write_time(o.model, fs::file_time_type::clock::now());
    // The last frame, whose images are written, waits for a reload in flight.
    denoiser.poll(f == o.frames - 1);

    const uint32_t before = o.accumulate ? accumulated : 0;
    dev.submit([&](VkCommandBuffer cmd) {
      timer.reset(cmd);
      timer.stamp(cmd, 0);
      // Last frame's reads of these images (denox, tonemap) come before this frame's writes.
      compute_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      renderer.record_trace(cmd, *aovs, before, o.spp, mix_seed(o.seed, static_cast<uint32_t>(f) + 1));
      timer.stamp(cmd, 1);
      denoiser.record(cmd);  // input barrier + denox's dispatches
      timer.stamp(cmd, 2);
      denoiser.record_output_barrier(cmd);
      renderer.record_tonemap(cmd, denoised->view(), w, h, *ldr_denoised, Tonemap::Hdr, o.exposure);
      renderer.record_tonemap(cmd, aovs->color.view(), w, h, *ldr_noisy, Tonemap::Hdr, o.exposure);
      timer.stamp(cmd, 3);
      compute_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                      VK_ACCESS_HOST_READ_BIT);
    });
    accumulated = before + o.spp;
    const auto ms = timer.read_ms();
    if (ms.size() == 4) {
      render_ms.push_back(ms[1] - ms[0]);
      denoise_ms.push_back(ms[2] - ms[1]);
      tonemap_ms.push_back(ms[3] - ms[2]);
      std::printf("frame %d: %ux%u, %u spp: render %.2f ms, denoise %.2f ms, tonemap %.2f ms (GPU)\n", f, w, h, accumulated,
                  render_ms.back(), denoise_ms.back(), tonemap_ms.back());
    } else {
      std::printf("frame %d: %ux%u, %u spp\n", f, w, h, accumulated);
    }
    std::fflush(stdout);
  }
  if (!render_ms.empty())
    std::printf("GPU time per frame (median of %zu): render %.2f ms, denoise %.2f ms, tonemap %.2f ms\n", render_ms.size(),
                median(render_ms), median(denoise_ms), median(tonemap_ms));
  // A GPU that idled before the run starts at low clocks and takes a few hundred milliseconds to
  // raise them (on an H200, about 17 frames at 1920x1080 ran 5x slower), which the median of
  // every frame includes; the second half's is what a running engine sees.
  if (render_ms.size() >= 4) {
    const auto second_half = [](const std::vector<double>& v) { return median({v.begin() + static_cast<long>(v.size() / 2), v.end()}); };
    std::printf("GPU time per frame, frames %zu-%zu (median): render %.2f ms, denoise %.2f ms, tonemap %.2f ms\n", render_ms.size() / 2,
                render_ms.size() - 1, second_half(render_ms), second_half(denoise_ms), second_half(tonemap_ms));
  }
  if (denoiser.reloads() > 0) std::printf("model reloads: %d\n", denoiser.reloads());

  // The last frame's images.
  const uint32_t w = aovs->width, h = aovs->height;
  write_png((out / "noisy.png").string(), read_ldr(*ldr_noisy, w, h), w, h);
  write_png((out / "denoised.png").string(), read_ldr(*ldr_denoised, w, h), w, h);
  tonemap_to_png(dev, renderer, aovs->albedo, w, h, Tonemap::Albedo, 1, out / "albedo.png");
  tonemap_to_png(dev, renderer, aovs->normal, w, h, Tonemap::Normal, 1, out / "normal.png");
  const auto noisy_hdr = aovs->color.download(), denoised_hdr = denoised->download();
  write_pfm((out / "noisy.pfm").string(), noisy_hdr, w, h);
  write_pfm((out / "denoised.pfm").string(), denoised_hdr, w, h);
  if (o.reference_spp > 0) {
    Aovs reference(dev, w, h);
    const auto start = std::chrono::steady_clock::now();
    render_progressive(dev, renderer, reference, o.reference_spp, mix_seed(o.seed, 0));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tonemap_to_png(dev, renderer, reference.color, w, h, Tonemap::Hdr, o.exposure, out / "reference.png");
    const auto ref_hdr = reference.color.download();
    write_pfm((out / "reference.pfm").string(), ref_hdr, w, h);
    std::printf("reference: %u spp in %.1f s\n", o.reference_spp, s);
    std::printf("PSNR vs reference (display curve): noisy %.2f dB, denoised %.2f dB\n", psnr(noisy_hdr, ref_hdr, o.exposure),
                psnr(denoised_hdr, ref_hdr, o.exposure));
  }
  std::printf("wrote %s/{noisy,denoised%s}.{png,pfm}, albedo.png, normal.png\n", o.out.c_str(),
              o.reference_spp > 0 ? ",reference" : "");
  return 0;
}

}  // namespace pathtracer

int main(int argc, char** argv) {
  using namespace pathtracer;
  try {
    bool help = false;
    const Options o = parse_options(argc, argv, help);
    if (help) {
      std::fputs(usage(), stdout);
      return 0;
    }
    if (o.dataset.empty() && !std::filesystem::is_regular_file(o.model))
      throw std::runtime_error("model '" + o.model + "' is not a readable file");
    auto dev = Device::create(o.device, o.validation);
    std::printf("device: %s\n", dev->properties().deviceName);
    int rc = o.dataset.empty() ? run_render(*dev, o) : run_dataset(*dev, o);
    if (dev->validation_errors() > 0) {
      std::fprintf(stderr, "denox_pathtracer: %llu validation errors\n", static_cast<unsigned long long>(dev->validation_errors()));
      rc = 1;
    }
    return rc;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "denox_pathtracer: %s\n\n%s", e.what(), usage());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "denox_pathtracer: error: %s\n", e.what());
    return 1;
  }
}
