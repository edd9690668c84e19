// `denox make-model` and `denox make-image`: the OIDN U-Net with seeded random weights, and a
// procedural test image, so the demo, tests and benchmarks need no downloads.
#include <cmath>
#include <cstdio>
#include <random>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "io/npy.hpp"
#include "io/pfm.hpp"
#include "modelgen/oidn_unet.hpp"

namespace denox::cli {
namespace {

struct MakeModelOptions {
  std::string path, size = "balanced", static_size;
  int channels = 3, opset = 17;
  uint64_t seed = 1;
  bool pad_crop = false, external_data = false;
};

int make_model(const MakeModelOptions& o) {
  modelgen::OidnUnetOptions m;
  m.size = o.size == "small" ? modelgen::OidnUnetOptions::Size::Small : modelgen::OidnUnetOptions::Size::Balanced;
  m.input_channels = o.channels;
  m.seed = o.seed;
  m.opset = o.opset;
  m.pad_to_16_and_crop = o.pad_crop;
  m.external_data = o.external_data;
  m.dynamic_hw = o.static_size.empty();
  if (!m.dynamic_hw) std::tie(m.static_w, m.static_h) = parse_extent(o.static_size, "--static");
  modelgen::save_model(modelgen::build_oidn_unet(m), o.path, o.external_data);
  std::printf("wrote %s: OIDN U-Net %s, %d input channels, %s H/W%s, opset %d, seed %llu\n", o.path.c_str(), o.size.c_str(),
              o.channels, m.dynamic_hw ? "dynamic" : o.static_size.c_str(), o.pad_crop ? ", pad to 16 + crop" : "", o.opset,
              static_cast<unsigned long long>(o.seed));
  return 0;
}

// A smooth HDR-ish scene (gradients, a disc, stripes) plus per-pixel noise: something a person
// can look at, with no zero channels.
int make_image(const std::string& path, const std::string& size, int channels, uint64_t seed) {
  const auto [w, h] = parse_extent(size, "--size");
  HostTensor img;
  img.shape = {1, channels, h, w};
  img.f32.resize(img.element_count());
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.15f);
  for (int c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        double u = static_cast<double>(x) / static_cast<double>(w), v = static_cast<double>(y) / static_cast<double>(h);
        double disc = std::hypot(u - 0.6, v - 0.4) < 0.2 ? 2.0 : 0.0;
        double stripes = 0.25 * (1.0 + std::sin(40.0 * u + 3.0 * c));
        double base = 0.2 + 0.6 * (c % 3 == 0 ? u : c % 3 == 1 ? v : 1.0 - u) + stripes + disc;
        img.f32[static_cast<size_t>((c * h + y) * w + x)] = std::max(0.01f, static_cast<float>(base) * (1.0f + noise(rng)));
      }
    }
  }
  if (path.size() > 4 && path.substr(path.size() - 4) == ".pfm") io::write_pfm(path, img);
  else io::write_npy(path, img);
  std::printf("wrote %s: %lldx%lld, %d channels\n", path.c_str(), static_cast<long long>(w), static_cast<long long>(h), channels);
  return 0;
}

}  // namespace

Action register_make_model(CLI::App& app) {
  auto* cmd = app.add_subcommand("make-model", "Write an OIDN U-Net ONNX model with seeded random weights");
  auto o = std::make_shared<MakeModelOptions>();
  cmd->add_option("output", o->path, "Model file to write (.onnx)")->required();
  cmd->add_option("--arch", o->size, "balanced or small")->check(CLI::IsMember({"balanced", "small"}));
  cmd->add_option("--channels", o->channels, "Input channels: 3, 6 or 9")->check(CLI::IsMember({3, 6, 9}));
  cmd->add_option("--seed", o->seed, "Weight seed");
  cmd->add_option("--opset", o->opset, "ONNX opset (11 to 21)")->check(CLI::Range(11, 21));
  cmd->add_option("--static", o->static_size, "Static WxH instead of dynamic H and W");
  cmd->add_flag("--pad-crop", o->pad_crop, "Pad to a multiple of 16 and crop, as PyTorch exports of OIDN do");
  cmd->add_flag("--external-data", o->external_data, "Store the weights in <model>.data beside the model");
  return [o] { return make_model(*o); };
}

Action register_make_image(CLI::App& app) {
  auto* cmd = app.add_subcommand("make-image", "Write a procedural noisy test image (.pfm or .npy)");
  auto path = std::make_shared<std::string>();
  auto size = std::make_shared<std::string>("317x211");
  auto channels = std::make_shared<int>(3);
  auto seed = std::make_shared<uint64_t>(1);
  cmd->add_option("output", *path, "Image file to write (.pfm: 3 channels, or .npy)")->required();
  cmd->add_option("--size", *size, "WIDTHxHEIGHT");
  cmd->add_option("--channels", *channels, "Channels (.npy only; .pfm needs 3)")->check(CLI::Range(1, 1024));
  cmd->add_option("--seed", *seed, "Noise seed");
  return [=] { return make_image(*path, *size, *channels, *seed); };
}

}  // namespace denox::cli
