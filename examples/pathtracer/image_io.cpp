#include "image_io.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "io/npy.hpp"
#include "io/pfm.hpp"

namespace pathtracer {

void write_png(const std::string& path, const std::vector<uint32_t>& rgba8, uint32_t width, uint32_t height) {
  if (rgba8.size() != size_t{width} * height) throw std::logic_error("write_png: size mismatch");
  // libpng's simplified API: one call, errors reported in image.message.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = PNG_FORMAT_RGBA;  // the packed words are R, G, B, A bytes in memory (little endian)
  if (!png_image_write_to_file(&image, path.c_str(), 0, rgba8.data(), 0, nullptr))
    throw std::runtime_error("cannot write '" + path + "': " + image.message);
}

void write_pfm(const std::string& path, const std::vector<float>& rgba, uint32_t width, uint32_t height) {
  const size_t plane = size_t{width} * height;
  denox::HostTensor t;
  t.shape = {1, 3, height, width};  // planar, top row first: denox's in-memory layout of .pfm
  t.f32.resize(3 * plane);
  for (size_t p = 0; p < plane; ++p)
    for (size_t c = 0; c < 3; ++c) t.f32[c * plane + p] = rgba[4 * p + c];
  denox::io::write_pfm(path, t);
}

void write_npy_hwc(const std::string& path, const std::vector<const std::vector<float>*>& images, uint32_t width,
                   uint32_t height) {
  const size_t plane = size_t{width} * height, channels = 3 * images.size();
  denox::HostTensor t;
  t.shape = {height, width, static_cast<int64_t>(channels)};
  t.f32.resize(plane * channels);
  for (size_t i = 0; i < images.size(); ++i)
    for (size_t p = 0; p < plane; ++p)
      for (size_t c = 0; c < 3; ++c) t.f32[p * channels + 3 * i + c] = (*images[i])[4 * p + c];
  denox::io::write_npy(path, t);
}

float display(float radiance) {
  const float x = std::max(radiance, 0.0f);
  return std::pow(x / (1.0f + x), 1.0f / 2.2f);
}

double psnr(const std::vector<float>& rgba, const std::vector<float>& reference_rgba, float exposure) {
  if (rgba.size() != reference_rgba.size() || rgba.empty()) throw std::logic_error("psnr: size mismatch");
  double sum = 0;
  size_t n = 0;
  for (size_t i = 0; i < rgba.size(); ++i) {
    if (i % 4 == 3) continue;  // alpha
    const double d = display(rgba[i] * exposure) - display(reference_rgba[i] * exposure);
    sum += d * d;
    ++n;
  }
  const double mse = sum / static_cast<double>(n);
  return mse > 0 ? 10.0 * std::log10(1.0 / mse) : INFINITY;
}

}  // namespace pathtracer
