#include "modelgen/oidn_unet.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "common/error.hpp"
#include "modelgen/onnx_writer.hpp"

namespace denox::modelgen {
namespace {

constexpr int kOutputChannels = 3;

// Names nodes the way torch.onnx does ("<scope>/<Op>", "<scope>/<Op>_1", ...; outputs
// "<node>_output_0") so that generated and exported graphs read alike in a diff or a log.
class GraphWriter {
 public:
  GraphWriter(onnx::GraphProto& graph, int64_t opset) : graph_(graph), opset_(opset) {}

  // Adds a node with one output and returns the node; `scope` is "" or e.g. "/enc_conv0".
  onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::string& scope = "", const std::string& output_name = "") {
    std::string base = scope + "/" + op_type;
    int& count = name_counts_[base];
    const std::string name = count == 0 ? base : base + "_" + std::to_string(count);
    ++count;
    return add_node(graph_, op_type, inputs, {output_name.empty() ? name + "_output_0" : output_name}, name);
  }
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs) {
    return node(op_type, inputs).output(0);
  }

  // An int64 Constant node; dims {} is a scalar.
  std::string constant(const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    onnx::NodeProto& constant_node = node("Constant", {});
    set_tensor_attribute(constant_node, "value", make_int64_tensor("", dims, values));
    return constant_node.output(0);
  }

  // [x] from a scalar x: the axes are an attribute before opset 13 and an input from 13 on.
  std::string unsqueeze_scalar(const std::string& x) {
    if (opset_ >= 13) {
      const std::string axes = constant({1}, {0});
      return op("Unsqueeze", {x, axes});
    }
    onnx::NodeProto& unsqueeze = node("Unsqueeze", {x});
    set_ints_attribute(unsqueeze, "axes", {0});
    return unsqueeze.output(0);
  }

  std::string gather0(const std::string& data, const std::string& indices) {
    onnx::NodeProto& gather = node("Gather", {data, indices});
    set_int_attribute(gather, "axis", 0);
    return gather.output(0);
  }

  std::string mod(const std::string& a, const std::string& b) {
    onnx::NodeProto& mod_node = node("Mod", {a, b});
    set_int_attribute(mod_node, "fmod", 0);
    return mod_node.output(0);
  }

  std::string reshape(const std::string& x, const std::string& shape) {
    onnx::NodeProto& reshape_node = node("Reshape", {x, shape});
    if (opset_ >= 14) set_int_attribute(reshape_node, "allowzero", 0);  // the attribute exists from 14
    return reshape_node.output(0);
  }

  std::string cast_to_int64(const std::string& x) {
    onnx::NodeProto& cast = node("Cast", {x});
    set_int_attribute(cast, "to", onnx::TensorProto::INT64);
    return cast.output(0);
  }

 private:
  onnx::GraphProto& graph_;
  int64_t opset_;
  std::map<std::string, int> name_counts_;
};

// Portable uniform floats in [-1, 1): std::uniform_real_distribution differs between standard
// libraries, and the same seed must give the same model everywhere.
class WeightRng {
 public:
  explicit WeightRng(uint64_t seed) : engine_(seed) {}
  float symmetric() { return static_cast<float>(engine_() >> 40) * 0x1p-23f - 1.0f; }

 private:
  std::mt19937_64 engine_;
};

struct PaddedInput {
  std::string padded;  // the input padded bottom/right to a multiple of 16
  std::string height;  // int64 scalars: the original H and W, for the final crop
  std::string width;
};

// torch 1.13 exports `h, w = x.shape[2:]; ph = (16 - h % 16) % 16; pw = ...;
// F.pad(x, (0, pw, 0, ph))` as this node sequence (see tests/python/export_oidn_torch.py).
PaddedInput add_pad_to_multiple_of_16(GraphWriter& g, const std::string& input) {
  const std::string shape_h = g.op("Shape", {input});
  const std::string h = g.gather0(shape_h, g.constant({}, {2}));
  const std::string shape_w = g.op("Shape", {input});
  const std::string w = g.gather0(shape_w, g.constant({}, {3}));
  auto pad_amount = [&](const std::string& size) {  // (16 - size % 16) % 16
    const std::string rem = g.mod(size, g.constant({}, {16}));
    const std::string to_go = g.op("Sub", {g.constant({}, {16}), rem});
    return g.mod(to_go, g.constant({}, {16}));
  };
  const std::string ph = pad_amount(h);
  const std::string pw = pad_amount(w);

  // PyTorch's pad list (0, pw, 0, ph) as a 1-D tensor -- built twice, as the exporter does: one
  // copy only feeds Shape (to count the pads), the other is the data.
  auto torch_pad_list = [&] {
    const std::string zero0 = g.constant({1}, {0});
    const std::string pw1 = g.unsqueeze_scalar(pw);
    const std::string zero1 = g.constant({1}, {0});
    const std::string ph1 = g.unsqueeze_scalar(ph);
    onnx::NodeProto& concat = g.node("Concat", {zero0, pw1, zero1, ph1});
    set_int_attribute(concat, "axis", 0);
    return concat.output(0);
  };
  const std::string list_for_length = torch_pad_list();
  const std::string list = torch_pad_list();

  // Extend to 2 * rank = 8 entries with zeros, then turn torch's "last dim first, (begin, end)
  // pairs" order into ONNX's "all begins, then all ends": reshape to pairs, reverse the pairs
  // (Slice with step -1), transpose, flatten.
  const std::string index0 = g.constant({1}, {0});
  const std::string count = g.gather0(g.op("Shape", {list_for_length}), index0);
  const std::string missing = g.op("Sub", {g.constant({}, {8}), count});
  const std::string list_int64 = g.cast_to_int64(list);
  onnx::NodeProto& zeros_node = g.node("ConstantOfShape", {missing});
  set_tensor_attribute(zeros_node, "value", make_int64_tensor("", {1}, {0}));
  const std::string zeros = zeros_node.output(0);
  onnx::NodeProto& full_node = g.node("Concat", {list_int64, zeros});
  set_int_attribute(full_node, "axis", 0);
  const std::string full = full_node.output(0);
  const std::string pairs = g.reshape(full, g.constant({2}, {-1, 2}));
  const std::string axes = g.constant({1}, {0});
  const std::string starts = g.constant({1}, {-1});
  const std::string ends = g.constant({1}, {std::numeric_limits<int64_t>::min() + 1});
  const std::string steps = g.constant({1}, {-1});
  const std::string reversed = g.op("Slice", {pairs, starts, ends, axes, steps});
  onnx::NodeProto& transpose = g.node("Transpose", {reversed});
  set_ints_attribute(transpose, "perm", {1, 0});
  const std::string transposed = transpose.output(0);
  const std::string flat = g.reshape(transposed, g.constant({1}, {-1}));
  const std::string pads = g.cast_to_int64(flat);

  onnx::NodeProto& pad = g.node("Pad", {input, pads, ""});  // constant_value omitted: zeros
  set_string_attribute(pad, "mode", "constant");
  return {pad.output(0), h, w};
}

// y[:, :, :h, :w] as torch exports it: one Slice per axis, ends from the original sizes.
std::string add_crop(GraphWriter& g, const std::string& x, const std::string& h, const std::string& w,
                     const std::string& output_name) {
  const std::string starts_h = g.constant({1}, {0});
  const std::string ends_h = g.unsqueeze_scalar(h);
  const std::string axes_h = g.constant({1}, {2});
  const std::string steps_h = g.constant({1}, {1});
  const std::string cropped_h = g.op("Slice", {x, starts_h, ends_h, axes_h, steps_h});
  const std::string starts_w = g.constant({1}, {0});
  const std::string ends_w = g.unsqueeze_scalar(w);
  const std::string axes_w = g.constant({1}, {3});
  const std::string steps_w = g.constant({1}, {1});
  return g.node("Slice", {cropped_h, starts_w, ends_w, axes_w, steps_w}, "", output_name).output(0);
}

void validate(const OidnUnetOptions& o) {
  auto invalid = [](const std::string& what) { fail(ErrorCode::InvalidArgument, "build_oidn_unet: " + what); };
  if (o.input_channels != 3 && o.input_channels != 6 && o.input_channels != 9)
    invalid("input_channels must be 3, 6 or 9, got " + std::to_string(o.input_channels));
  if (o.opset < 11 || o.opset > 21)
    invalid("opset must be in 11..21 (Pad takes pads as an input from 11), got " + std::to_string(o.opset));
  if (!o.dynamic_hw) {
    if (o.static_h <= 0 || o.static_w <= 0)
      invalid("static_h and static_w must be positive when dynamic_hw is off, got " + std::to_string(o.static_h) +
              "x" + std::to_string(o.static_w));
    if (!o.pad_to_16_and_crop && (o.static_h % 16 != 0 || o.static_w % 16 != 0))
      invalid("without pad_to_16_and_crop, H and W must be multiples of 16, got " + std::to_string(o.static_h) + "x" +
              std::to_string(o.static_w));
  }
}

}  // namespace

std::vector<OidnConvLayer> oidn_unet_conv_layers(OidnUnetOptions::Size size, int input_channels) {
  const bool small = size == OidnUnetOptions::Size::Small;
  // enc_conv0, enc_conv1, enc_conv2, enc_conv3, enc_conv4, enc_conv5a, enc_conv5b
  const int enc[7] = {32, 32, small ? 32 : 48, small ? 32 : 64, small ? 32 : 80, small ? 32 : 96, small ? 32 : 96};
  // dec_conv4a, dec_conv4b, dec_conv3a, dec_conv3b, dec_conv2a, dec_conv2b, dec_conv1a, dec_conv1b
  const int dec[8] = {small ? 64 : 112, small ? 64 : 112, small ? 64 : 96, small ? 64 : 96, 64, small ? 32 : 64,
                      small ? 32 : 64, 32};
  const int ic = input_channels;
  // Decoder convs read concat(upsampled, skip): pool3 = enc_conv3's output, pool2 = enc_conv2's,
  // pool1 = enc_conv1's, and the (padded) network input.
  return {
      {"enc_conv0", ic, enc[0], true},           {"enc_conv1", enc[0], enc[1], true},
      {"enc_conv2", enc[1], enc[2], true},       {"enc_conv3", enc[2], enc[3], true},
      {"enc_conv4", enc[3], enc[4], true},       {"enc_conv5a", enc[4], enc[5], true},
      {"enc_conv5b", enc[5], enc[6], true},      {"dec_conv4a", enc[6] + enc[3], dec[0], true},
      {"dec_conv4b", dec[0], dec[1], true},      {"dec_conv3a", dec[1] + enc[2], dec[2], true},
      {"dec_conv3b", dec[2], dec[3], true},      {"dec_conv2a", dec[3] + enc[1], dec[4], true},
      {"dec_conv2b", dec[4], dec[5], true},      {"dec_conv1a", dec[5] + ic, dec[6], true},
      {"dec_conv1b", dec[6], dec[7], true},      {"dec_conv0", dec[7], kOutputChannels, false},
  };
}

onnx::ModelProto build_oidn_unet(const OidnUnetOptions& options) {
  validate(options);
  const bool small = options.size == OidnUnetOptions::Size::Small;
  onnx::ModelProto model = make_model(options.opset, small ? "oidn_unet_small" : "oidn_unet_balanced");
  onnx::GraphProto& graph = *model.mutable_graph();
  GraphWriter g(graph, options.opset);

  const Dim h = options.dynamic_hw ? Dim::symbolic("H") : Dim::fixed(options.static_h);
  const Dim w = options.dynamic_hw ? Dim::symbolic("W") : Dim::fixed(options.static_w);
  add_graph_input(graph, make_value_info("input", onnx::TensorProto::FLOAT,
                                         {Dim::fixed(1), Dim::fixed(options.input_channels), h, w}));
  add_graph_output(graph, make_value_info("output", onnx::TensorProto::FLOAT, {Dim::fixed(1), Dim::fixed(3), h, w}));

  // Weights: He-uniform (bound sqrt(6 / fan_in), variance 2 / fan_in) keeps the second moment of
  // ReLU activations roughly constant through all 16 convs, so outputs stay O(1) and fp16 paths
  // neither overflow nor flush to zero. Biases are small but never zero, so a dropped bias shows.
  WeightRng rng(options.seed);
  const std::vector<OidnConvLayer> layers = oidn_unet_conv_layers(options.size, options.input_channels);
  std::map<std::string, const OidnConvLayer*> layer_by_name;
  for (const OidnConvLayer& layer : layers) {
    const int64_t fan_in = int64_t{layer.in_channels} * 9;
    const float bound = std::sqrt(6.0f / static_cast<float>(fan_in));
    std::vector<float> weights(static_cast<size_t>(layer.out_channels * fan_in));
    for (float& v : weights) v = rng.symmetric() * bound;
    std::vector<float> bias(static_cast<size_t>(layer.out_channels));
    for (float& v : bias) {
      const float u = rng.symmetric();
      v = std::copysign(0.01f + 0.09f * std::fabs(u), u);
    }
    add_float_initializer(graph, layer.name + ".weight", {layer.out_channels, layer.in_channels, 3, 3}, weights);
    add_float_initializer(graph, layer.name + ".bias", {layer.out_channels}, bias);
    layer_by_name[layer.name] = &layer;
  }

  // Resize's scales (and, before opset 13, its then mandatory roi) are shared initializers.
  const std::string scales = "upsample_scales";
  add_float_initializer(graph, scales, {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  std::string roi;  // "" = omitted optional input (opset >= 13)
  if (options.opset < 13) {
    roi = "upsample_roi";
    add_float_initializer(graph, roi, {0}, {});
  }

  std::string network_input = "input";
  PaddedInput padded{"input", "", ""};
  if (options.pad_to_16_and_crop) {
    padded = add_pad_to_multiple_of_16(g, "input");
    network_input = padded.padded;
  }

  auto conv = [&](const std::string& name, const std::string& x, const std::string& output_name = "") {
    const OidnConvLayer& layer = *layer_by_name.at(name);
    onnx::NodeProto& node = g.node("Conv", {x, name + ".weight", name + ".bias"}, "/" + name,
                                   layer.relu ? "" : output_name);
    set_ints_attribute(node, "dilations", {1, 1});
    set_int_attribute(node, "group", 1);
    set_ints_attribute(node, "kernel_shape", {3, 3});
    set_ints_attribute(node, "pads", {1, 1, 1, 1});
    set_ints_attribute(node, "strides", {1, 1});
    const std::string y = node.output(0);
    return layer.relu ? g.node("Relu", {y}, "/" + name).output(0) : y;
  };
  auto pool = [&](const std::string& scope, const std::string& x) {
    onnx::NodeProto& node = g.node("MaxPool", {x}, "/" + scope);
    set_int_attribute(node, "ceil_mode", 0);
    set_ints_attribute(node, "kernel_shape", {2, 2});
    set_ints_attribute(node, "pads", {0, 0, 0, 0});
    set_ints_attribute(node, "strides", {2, 2});
    return node.output(0);
  };
  auto upsample_concat = [&](const std::string& scope, const std::string& x, const std::string& skip) {
    onnx::NodeProto& resize = g.node("Resize", {x, roi, scales}, "/" + scope);
    set_string_attribute(resize, "coordinate_transformation_mode", "asymmetric");
    set_float_attribute(resize, "cubic_coeff_a", -0.75f);  // unused for nearest; torch writes it
    set_string_attribute(resize, "mode", "nearest");
    set_string_attribute(resize, "nearest_mode", "floor");
    const std::string upsampled = resize.output(0);
    onnx::NodeProto& concat = g.node("Concat", {upsampled, skip}, "/" + scope);
    set_int_attribute(concat, "axis", 1);
    return concat.output(0);
  };

  const bool crop = options.pad_to_16_and_crop;
  std::string x = conv("enc_conv0", network_input);
  x = conv("enc_conv1", x);
  const std::string pool1 = x = pool("pool1", x);
  x = conv("enc_conv2", x);
  const std::string pool2 = x = pool("pool2", x);
  x = conv("enc_conv3", x);
  const std::string pool3 = x = pool("pool3", x);
  x = conv("enc_conv4", x);
  x = pool("pool4", x);
  x = conv("enc_conv5a", x);
  x = conv("enc_conv5b", x);
  x = upsample_concat("up4", x, pool3);
  x = conv("dec_conv4a", x);
  x = conv("dec_conv4b", x);
  x = upsample_concat("up3", x, pool2);
  x = conv("dec_conv3a", x);
  x = conv("dec_conv3b", x);
  x = upsample_concat("up2", x, pool1);
  x = conv("dec_conv2a", x);
  x = conv("dec_conv2b", x);
  x = upsample_concat("up1", x, network_input);
  x = conv("dec_conv1a", x);
  x = conv("dec_conv1b", x);
  x = conv("dec_conv0", x, crop ? "" : "output");
  if (crop) add_crop(g, x, padded.height, padded.width, "output");
  return model;
}

void save_model(const onnx::ModelProto& model, const std::string& path, bool external_data) {
  SaveOptions options;
  options.external_data = external_data;
  write_model(model, path, options);
}

}  // namespace denox::modelgen
