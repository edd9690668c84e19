#include "options.hpp"

#include <charconv>
#include <cstring>

#include "scene.hpp"

namespace pathtracer {

namespace {

template <typename T>
T number(const std::string& text, const char* flag, T lo, T hi) {
  T v{};
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || v < lo || v > hi)
    throw UsageError(std::string(flag) + ": '" + text + "' is not a number in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  return v;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

Size size(const std::string& text, const char* flag) {
  const auto wh = split(text, 'x');
  if (wh.size() != 2) throw UsageError(std::string(flag) + ": '" + text + "' is not WIDTHxHEIGHT");
  return {number<uint32_t>(wh[0], flag, 8, 8192), number<uint32_t>(wh[1], flag, 8, 8192)};
}

}  // namespace

const char* usage() {
  return "usage: denox_pathtracer --model M.onnx [--scene N] [--seed N] [--spp S] [--size WxH]\n"
         "                        [--size-sequence WxH,WxH,...] [--frames F] [--accumulate]\n"
         "                        [--reference-spp R] [--out DIR] [--exposure E] [--max-depth D]\n"
         "                        [--precision auto|fp32|fp16|int8 [--calibration CAL.json]]\n"
         "                        [--device N] [--validation]\n"
         "                        [--edit-model-at FRAME]\n"
         "       denox_pathtracer --dataset DIR --count N [--size WxH] [--dataset-spp 1,2,4,8]\n"
         "                        [--reference-spp R] [--seed N] [--max-depth D] [--device N]\n"
         "\n"
         "Render mode path-traces scene N (0 cornell, 1 boxes, 2 spheres, 3 glossy; --seed varies it)\n"
         "at S samples per pixel, denoises every frame with the ONNX model through denox in the same\n"
         "command buffer, and writes noisy/denoised/reference .png and .pfm, albedo.png and\n"
         "normal.png into DIR (default out/pathtracer) for the last frame. It prints the GPU time of\n"
         "rendering and denoising per frame (timestamp queries) and PSNR against the reference.\n"
         "The model file is watched: when it changes it is reloaded in the background and swapped\n"
         "in when ready. --size-sequence cycles the resolution per frame. --edit-model-at bumps the\n"
         "model file's time before that frame (a test of the reload path).\n"
         "\n"
         "Dataset mode renders N random scene variations: for each spp of --dataset-spp,\n"
         "NNNNN_sppS.npy (float32 H x W x 9: color, albedo, normal) and NNNNN_ref.npy (H x W x 3, R\n"
         "samples, default 1024), for tools/train/train.py.\n";
}

Options parse_options(int argc, char** argv, bool& help) {
  Options o;
  help = false;
  bool have_reference = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      help = true;
      return o;
    }
    if (flag == "--validation") {
      o.validation = true;
      continue;
    }
    if (flag == "--accumulate") {
      o.accumulate = true;
      continue;
    }
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    const std::string v = argv[++i];
    const char* f = flag.c_str();
    if (flag == "--scene") o.scene = number<int>(v, f, 0, kSceneCount - 1);
    else if (flag == "--seed") o.seed = number<uint32_t>(v, f, 0, UINT32_MAX);
    else if (flag == "--spp") o.spp = number<uint32_t>(v, f, 1, 1 << 16);
    else if (flag == "--size") o.sizes = {size(v, f)};
    else if (flag == "--size-sequence") {
      o.sizes.clear();
      for (const auto& s : split(v, ',')) o.sizes.push_back(size(s, f));
    } else if (flag == "--frames") o.frames = number<int>(v, f, 1, 1 << 20);
    else if (flag == "--model") o.model = v;
    else if (flag == "--out") o.out = v;
    else if (flag == "--reference-spp") {
      o.reference_spp = number<uint32_t>(v, f, 0, 1 << 20);
      have_reference = true;
    } else if (flag == "--exposure") o.exposure = static_cast<float>(number<double>(v, f, 1e-6, 1e6));
    else if (flag == "--max-depth") o.max_depth = number<int>(v, f, 1, 64);
    else if (flag == "--device") o.device = number<int>(v, f, 0, 64);
    else if (flag == "--precision") {
      if (v == "auto") o.precision = DENOX_PRECISION_AUTO;
      else if (v == "fp32") o.precision = DENOX_PRECISION_FP32;
      else if (v == "fp16") o.precision = DENOX_PRECISION_FP16;
      else if (v == "int8") o.precision = DENOX_PRECISION_INT8;
      else throw UsageError("--precision: '" + v + "' is not auto, fp32, fp16 or int8");
    } else if (flag == "--calibration") {
      o.calibration = v;
    } else if (flag == "--edit-model-at") o.edit_model_at = number<int>(v, f, 0, 1 << 20);
    else if (flag == "--dataset") o.dataset = v;
    else if (flag == "--count") o.count = number<uint32_t>(v, f, 1, 1000000);
    else if (flag == "--dataset-spp") {
      o.dataset_spp.clear();
      for (const auto& s : split(v, ',')) o.dataset_spp.push_back(number<uint32_t>(s, f, 1, 1 << 16));
    } else throw UsageError("unknown option '" + flag + "'");
  }
  if (!o.dataset.empty()) {
    if (o.count == 0) throw UsageError("--dataset needs --count N");
    if (o.sizes.size() != 1) throw UsageError("--dataset renders one size (--size WxH)");
    if (!have_reference) o.reference_spp = 1024;
    if (o.reference_spp == 0) throw UsageError("--dataset needs a reference (--reference-spp > 0)");
  } else if (o.model.empty()) {
    throw UsageError("--model M.onnx is required (or --dataset DIR --count N)");
  }
  if ((o.precision == DENOX_PRECISION_INT8) != !o.calibration.empty())
    throw UsageError("--precision int8 and --calibration CAL.json go together (make CAL.json with `denox calibrate`)");
  return o;
}

}  // namespace pathtracer
