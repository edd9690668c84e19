// ONNX models of Open Image Denoise's U-Net (docs/DESIGN.md, "The OIDN U-Net") with seeded
// random weights: what the tests, the benchmarks and the quick-start demo run without needing
// PyTorch. With pad_to_16_and_crop the graph also carries the shape subgraph that PyTorch 1.13's
// TorchScript exporter emits for "pad H and W to a multiple of 16, crop the output", node for
// node (tests/python/export_oidn_torch.py exports the real thing for comparison).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace denox::modelgen {

struct OidnUnetOptions {
  enum class Size { Balanced, Small } size = Size::Balanced;
  int input_channels = 3;  // 3 (color), 6 (+albedo) or 9 (+normal)
  uint64_t seed = 1;       // same seed, same weights, on every platform
  bool dynamic_hw = true;  // input/output H and W are dim_params "H"/"W"
  // Pad the input to a multiple of 16 and crop the output (any H, W then works); without it,
  // H and W must be multiples of 16 (four 2x2 max-pools).
  bool pad_to_16_and_crop = false;
  int opset = 17;               // 11..21; 11 and 12 give Resize an empty roi tensor
  bool external_data = false;   // for callers that pass the options on to save_model
  int64_t static_h = 0, static_w = 0;  // used when !dynamic_hw
};

// One 3x3 convolution of the network, in forward order.
struct OidnConvLayer {
  std::string name;  // "enc_conv0" ... "dec_conv0"; initializers are "<name>.weight"/"<name>.bias"
  int in_channels;
  int out_channels;
  bool relu;  // every conv but dec_conv0
};

// The 16 convolutions of the chosen size for `input_channels` inputs (3 outputs).
std::vector<OidnConvLayer> oidn_unet_conv_layers(OidnUnetOptions::Size size, int input_channels);

// Builds the model. Throws denox::Error (InvalidArgument) for unsupported options.
onnx::ModelProto build_oidn_unet(const OidnUnetOptions& options);

// Saves a model; with external_data, initializers over 1 KiB go to "<path file name>.data" beside
// it. Throws denox::Error (Io) when a file cannot be written; never leaves partial files.
void save_model(const onnx::ModelProto& model, const std::string& path, bool external_data);

}  // namespace denox::modelgen
