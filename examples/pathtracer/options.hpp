// The command line of denox_pathtracer (usage text in options.cpp).
#pragma once

// volk before vulkan.h (which denox.h includes): the program calls Vulkan through volk.
#include "vkhost/vk_host.hpp"

#include <denox/denox.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathtracer {

struct Size {
  uint32_t width = 0, height = 0;
};

struct Options {
  // Render mode: frames of one scene, denoised by the model.
  int scene = 0;
  uint32_t seed = 1;
  uint32_t spp = 4;
  std::vector<Size> sizes{{320, 240}};  // frame i renders at sizes[i % sizes.size()]
  int frames = 1;
  bool accumulate = false;  // frames at an unchanged size keep adding samples
  std::string model;
  std::string out = "out/pathtracer";
  uint32_t reference_spp = 0;  // 0: no reference (render mode); dataset mode defaults to 1024
  float exposure = 1.0f;
  int max_depth = 6;
  int device = -1;
  bool validation = false;
  denox_precision precision = DENOX_PRECISION_AUTO;
  std::string calibration;  // --precision int8: the model's calibration file (`denox calibrate`)
  int edit_model_at = -1;  // frame before which the model file's mtime is bumped (exercises reload)

  // Dataset mode: random scene variations at low spp plus a reference, as .npy.
  std::string dataset;
  uint32_t count = 0;
  std::vector<uint32_t> dataset_spp{1, 2, 4, 8};
};

// Bad or missing arguments; main prints the message and the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws UsageError. `help` is set (and nothing else checked) for -h/--help.
Options parse_options(int argc, char** argv, bool& help);
const char* usage();

}  // namespace pathtracer
