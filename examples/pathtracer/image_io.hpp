// Files the path tracer writes: PNG through libpng, HDR as PFM and training data as .npy through
// denox's io module (src/io, the formats `denox run` reads), plus the display curve and PSNR.
// Images arrive as RGBA floats (vkhost::Image::download) or packed RGBA8 (the tonemap pass).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pathtracer {

void write_png(const std::string& path, const std::vector<uint32_t>& rgba8, uint32_t width, uint32_t height);
// The RGB of RGBA floats as a 3-channel .pfm.
void write_pfm(const std::string& path, const std::vector<float>& rgba, uint32_t width, uint32_t height);
// The RGB of each RGBA image side by side per pixel: float32 (H, W, 3 * images.size()).
void write_npy_hwc(const std::string& path, const std::vector<const std::vector<float>*>& images, uint32_t width,
                   uint32_t height);

// The display curve of tonemap.comp and tools/train: Reinhard, then gamma 1/2.2.
float display(float radiance);
// PSNR in dB of the displayed RGB of two RGBA float images (peak 1).
double psnr(const std::vector<float>& rgba, const std::vector<float>& reference_rgba, float exposure);

}  // namespace pathtracer
