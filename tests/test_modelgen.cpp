// The OIDN U-Net generator: structure per size and opset, the PyTorch-style pad/crop shape
// subgraph, determinism, and external data files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "common/error.hpp"
#include "modelgen/oidn_unet.hpp"
#include "modelgen/onnx_writer.hpp"

namespace fs = std::filesystem;
using denox::modelgen::build_oidn_unet;
using denox::modelgen::OidnUnetOptions;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device entropy;
    path = fs::temp_directory_path() / ("denox-test-modelgen-" + std::to_string(entropy()) + std::to_string(entropy()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::map<std::string, int> op_counts(const onnx::ModelProto& model) {
  std::map<std::string, int> counts;
  for (const onnx::NodeProto& node : model.graph().node()) ++counts[node.op_type()];
  return counts;
}

const onnx::TensorProto& initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const onnx::TensorProto& t : model.graph().initializer())
    if (t.name() == name) return t;
  FAIL("no initializer " << name);
  throw;
}

std::vector<int64_t> dims_of(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

std::vector<std::string> shape_of(const onnx::ValueInfoProto& value) {
  std::vector<std::string> dims;
  for (const auto& d : value.type().tensor_type().shape().dim())
    dims.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  return dims;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("U-Net structure for balanced and small", "[modelgen]") {
  for (auto size : {OidnUnetOptions::Size::Balanced, OidnUnetOptions::Size::Small}) {
    OidnUnetOptions options;
    options.size = size;
    const onnx::ModelProto model = build_oidn_unet(options);
    const auto counts = op_counts(model);
    CHECK(counts == std::map<std::string, int>{{"Conv", 16}, {"Relu", 15}, {"MaxPool", 4}, {"Resize", 4}, {"Concat", 4}});
    CHECK(model.graph().initializer_size() == 33);  // 16 weights + 16 biases + Resize scales
    CHECK(model.opset_import(0).version() == 17);
    CHECK(model.graph().node(model.graph().node_size() - 1).output(0) == "output");
    CHECK(shape_of(model.graph().input(0)) == std::vector<std::string>{"1", "3", "H", "W"});
    CHECK(shape_of(model.graph().output(0)) == std::vector<std::string>{"1", "3", "H", "W"});
  }
  const onnx::ModelProto balanced = build_oidn_unet({});
  CHECK(dims_of(initializer(balanced, "enc_conv2.weight")) == std::vector<int64_t>{48, 32, 3, 3});
  CHECK(dims_of(initializer(balanced, "dec_conv4a.weight")) == std::vector<int64_t>{112, 96 + 64, 3, 3});
  CHECK(dims_of(initializer(balanced, "dec_conv1a.weight")) == std::vector<int64_t>{64, 64 + 3, 3, 3});
  CHECK(dims_of(initializer(balanced, "dec_conv0.weight")) == std::vector<int64_t>{3, 32, 3, 3});
  OidnUnetOptions small_nine;
  small_nine.size = OidnUnetOptions::Size::Small;
  small_nine.input_channels = 9;
  const onnx::ModelProto small = build_oidn_unet(small_nine);
  CHECK(dims_of(initializer(small, "enc_conv0.weight")) == std::vector<int64_t>{32, 9, 3, 3});
  CHECK(dims_of(initializer(small, "dec_conv2a.weight")) == std::vector<int64_t>{64, 64 + 32, 3, 3});
  CHECK(dims_of(initializer(small, "dec_conv1a.weight")) == std::vector<int64_t>{32, 32 + 9, 3, 3});
}

TEST_CASE("Resize follows the opset: empty roi tensor before 13, omitted from 13", "[modelgen]") {
  for (int opset : {11, 12, 13, 17}) {
    OidnUnetOptions options;
    options.opset = opset;
    const onnx::ModelProto model = build_oidn_unet(options);
    CHECK(model.graph().initializer_size() == (opset < 13 ? 34 : 33));
    for (const onnx::NodeProto& node : model.graph().node()) {
      if (node.op_type() != "Resize") continue;
      REQUIRE(node.input_size() == 3);
      CHECK(node.input(1) == (opset < 13 ? "upsample_roi" : ""));
      CHECK(node.input(2) == "upsample_scales");
    }
  }
}

TEST_CASE("pad-to-16 and crop emit PyTorch 1.13's shape subgraph", "[modelgen]") {
  for (int opset : {11, 13, 17}) {
    OidnUnetOptions options;
    options.pad_to_16_and_crop = true;
    options.opset = opset;
    const onnx::ModelProto model = build_oidn_unet(options);
    const auto counts = op_counts(model);
    // The numbers torch.onnx.export gives for the same forward() (its Resize constants aside).
    CHECK(counts == std::map<std::string, int>{
                        {"Cast", 2},     {"Concat", 7},  {"Constant", opset >= 13 ? 32 : 26},
                        {"ConstantOfShape", 1},          {"Conv", 16},   {"Gather", 3},
                        {"MaxPool", 4},  {"Mod", 4},     {"Pad", 1},     {"Relu", 15},
                        {"Reshape", 2},  {"Resize", 4},  {"Shape", 3},   {"Slice", 3},
                        {"Sub", 3},      {"Transpose", 1},               {"Unsqueeze", 6}});
    for (const onnx::NodeProto& node : model.graph().node()) {
      if (node.op_type() == "Unsqueeze") CHECK(node.input_size() == (opset >= 13 ? 2 : 1));
      if (node.op_type() == "Pad") {
        CHECK(node.input(0) == "input");
        CHECK(node.input(2).empty());
      }
    }
    const onnx::NodeProto& last = model.graph().node(model.graph().node_size() - 1);
    CHECK(last.op_type() == "Slice");
    CHECK(last.output(0) == "output");
  }
}

TEST_CASE("static sizes and option validation", "[modelgen]") {
  OidnUnetOptions options;
  options.dynamic_hw = false;
  options.static_h = 64;
  options.static_w = 96;
  options.input_channels = 6;
  const onnx::ModelProto model = build_oidn_unet(options);
  CHECK(shape_of(model.graph().input(0)) == std::vector<std::string>{"1", "6", "64", "96"});
  CHECK(shape_of(model.graph().output(0)) == std::vector<std::string>{"1", "3", "64", "96"});

  auto code = [](OidnUnetOptions o) {
    try {
      build_oidn_unet(o);
    } catch (const denox::Error& e) {
      return e.code();
    }
    return denox::ErrorCode::Internal;
  };
  OidnUnetOptions bad = options;
  bad.static_w = 37;  // not a multiple of 16 without padding
  CHECK(code(bad) == denox::ErrorCode::InvalidArgument);
  bad.pad_to_16_and_crop = true;
  CHECK_NOTHROW(build_oidn_unet(bad));
  bad = options;
  bad.input_channels = 4;
  CHECK(code(bad) == denox::ErrorCode::InvalidArgument);
  bad = options;
  bad.opset = 10;
  CHECK(code(bad) == denox::ErrorCode::InvalidArgument);
}

TEST_CASE("weights are deterministic per seed, He-scaled, with non-zero biases", "[modelgen]") {
  OidnUnetOptions options;
  options.seed = 42;
  std::string a, b, c;
  build_oidn_unet(options).SerializeToString(&a);
  build_oidn_unet(options).SerializeToString(&b);
  options.seed = 43;
  build_oidn_unet(options).SerializeToString(&c);
  CHECK(a == b);
  CHECK(a != c);

  const onnx::ModelProto model = build_oidn_unet({});
  for (const std::string layer : {"enc_conv0", "dec_conv1a", "dec_conv0"}) {
    const onnx::TensorProto& w = initializer(model, layer + ".weight");
    std::vector<float> weights(w.raw_data().size() / 4);
    std::memcpy(weights.data(), w.raw_data().data(), w.raw_data().size());
    const float bound = std::sqrt(6.0f / static_cast<float>(w.dims(1) * 9));
    double sum_sq = 0;
    float largest = 0;
    for (float v : weights) {
      largest = std::max(largest, std::fabs(v));
      sum_sq += double(v) * v;
    }
    CHECK(largest <= bound);
    // Uniform(-bound, bound) has variance bound^2 / 3 = 2 / fan_in.
    CHECK(sum_sq / static_cast<double>(weights.size()) == Approx(bound * bound / 3.0).epsilon(0.15));
    const onnx::TensorProto& bias = initializer(model, layer + ".bias");
    std::vector<float> biases(bias.raw_data().size() / 4);
    std::memcpy(biases.data(), bias.raw_data().data(), bias.raw_data().size());
    const auto [smallest_bias, largest_bias] = std::minmax_element(
        biases.begin(), biases.end(), [](float x, float y) { return std::fabs(x) < std::fabs(y); });
    CHECK(std::fabs(*smallest_bias) >= 0.01f);
    CHECK(std::fabs(*largest_bias) <= 0.1f);
  }
}

TEST_CASE("save_model writes external data next to the model", "[modelgen]") {
  TempDir dir;
  const onnx::ModelProto model = build_oidn_unet({});
  const fs::path path = dir.path / "unet.onnx";
  denox::modelgen::save_model(model, path.string(), true);
  const fs::path data_path = dir.path / "unet.onnx.data";
  REQUIRE(fs::exists(data_path));
  const std::string data = read_all(data_path);

  onnx::ModelProto saved;
  REQUIRE(saved.ParseFromString(read_all(path)));
  CHECK(fs::file_size(path) < 64 * 1024);  // the weights are not inline any more
  int external = 0;
  for (int i = 0; i < saved.graph().initializer_size(); ++i) {
    const onnx::TensorProto& t = saved.graph().initializer(i);
    const onnx::TensorProto& original = model.graph().initializer(i);
    REQUIRE(t.name() == original.name());
    if (original.raw_data().size() <= 1024) {  // biases and the scales stay inline
      CHECK(t.data_location() == onnx::TensorProto::DEFAULT);
      CHECK(t.raw_data() == original.raw_data());
      continue;
    }
    ++external;
    CHECK(t.data_location() == onnx::TensorProto::EXTERNAL);
    CHECK_FALSE(t.has_raw_data());
    std::map<std::string, std::string> entries;
    for (const auto& e : t.external_data()) entries[e.key()] = e.value();
    CHECK(entries["location"] == "unet.onnx.data");
    const size_t offset = std::stoull(entries["offset"]);
    const size_t length = std::stoull(entries["length"]);
    CHECK(offset % 64 == 0);
    REQUIRE(offset + length <= data.size());
    CHECK(data.compare(offset, length, original.raw_data()) == 0);
  }
  CHECK(external == 16);  // every conv weight; the smallest, enc_conv0 (3x32x9 floats), is 3456 bytes

  // Without external data the model is self-contained and no data file appears.
  const fs::path inline_path = dir.path / "inline.onnx";
  denox::modelgen::save_model(model, inline_path.string(), false);
  CHECK_FALSE(fs::exists(dir.path / "inline.onnx.data"));
  onnx::ModelProto reread;
  REQUIRE(reread.ParseFromString(read_all(inline_path)));
  CHECK(reread.SerializeAsString() == model.SerializeAsString());
  CHECK(std::distance(fs::directory_iterator(dir.path), {}) == 3);  // no temporary files left
}

TEST_CASE("save_model into a missing directory fails with an Io error", "[modelgen]") {
  TempDir dir;
  const std::string path = (dir.path / "missing" / "unet.onnx").string();
  try {
    denox::modelgen::save_model(build_oidn_unet({}), path, true);
    FAIL("save into a missing directory succeeded");
  } catch (const denox::Error& e) {
    CHECK(e.code() == denox::ErrorCode::Io);
    CHECK_THAT(e.what(), Catch::Contains("unet.onnx"));
  }
  CHECK(std::distance(fs::directory_iterator(dir.path), {}) == 0);
}
