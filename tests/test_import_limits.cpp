// The importer against hostile numbers and sizes: values a type cannot hold, attributes out of
// range, repeated names, and a model whose constants add up past memory one copy at a time.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include "common/error.hpp"
#include "common/read_file.hpp"
#include "compiler/import/tensor_data.hpp"
#include "compiler/import/onnx_import.hpp"
#include "import_test_util.hpp"
#include "modelgen/onnx_writer.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::modelgen;
using namespace denox::test;

namespace {

// Input x [1,3,H,W] -> Relu -> y, the graph output; tests add the nodes they need.
onnx::ModelProto relu_model(int64_t opset = 17) {
  auto m = make_model(opset, "limits");
  auto& g = *m.mutable_graph();
  add_graph_input(g, make_value_info("x", onnx::TensorProto::FLOAT, {Dim::fixed(1), Dim::fixed(3), Dim::symbolic("H"), Dim::symbolic("W")}));
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  add_graph_output(g, make_value_info("y", onnx::TensorProto::FLOAT, {}));
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return m;
}

// A static graph output named `name` (materialized as a graph constant).
void add_static_output(onnx::ModelProto& m, const std::string& name) {
  add_graph_output(*m.mutable_graph(), make_value_info(name, onnx::TensorProto::INT64, {}));
  m.mutable_graph()->mutable_output()->rbegin()->mutable_type()->mutable_tensor_type()->clear_shape();
}

// An integer initializer of `type` whose data sits in the typed field ONNX keeps it in.
onnx::TensorProto& add_typed_initializer(onnx::GraphProto& g, const std::string& name, onnx::TensorProto::DataType type,
                                         const std::vector<int64_t>& values) {
  auto& t = add_int64_initializer(g, name, {static_cast<int64_t>(values.size())}, std::vector<int64_t>(values.size(), 0));
  t.set_data_type(type);
  t.clear_int64_data();
  t.clear_raw_data();
  for (int64_t v : values) {
    if (type == onnx::TensorProto::UINT64 || type == onnx::TensorProto::UINT32) t.add_uint64_data(static_cast<uint64_t>(v));
    else t.add_int32_data(static_cast<int32_t>(v));
  }
  return t;
}

}  // namespace

TEST_CASE("import: tensor data a type cannot hold is refused, never wrapped") {
  ErrorCode code{};
  SECTION("uint64 above 2^63 - 1, in raw data and in uint64_data") {
    for (bool raw : {true, false}) {
      auto m = relu_model();
      auto& g = *m.mutable_graph();
      auto& t = add_typed_initializer(g, "big", onnx::TensorProto::UINT64, {});
      const uint64_t value = (uint64_t{1} << 63) + 5;
      if (raw) t.set_raw_data(std::string(reinterpret_cast<const char*>(&value), sizeof value));
      else t.add_uint64_data(value);
      t.set_dims(0, 1);
      add_node(g, "Identity", {"big"}, {"b"}, "keep");
      add_static_output(m, "b");
      INFO("raw " << raw);
      const std::string msg = error_of([&] { import_model(m); }, &code);
      CHECK(contains(msg, "node 'keep' (Identity, opset 17): reads initializer 'big', which holds the uint64 value 9223372036854775813, above 2^63 - 1"));
      CHECK(code == ErrorCode::Unsupported);
    }
  }
  SECTION("narrow integers and 16-bit float bits outside their type in int32_data") {
    const std::vector<std::tuple<onnx::TensorProto::DataType, int64_t, std::string>> cases{
        {onnx::TensorProto::UINT8, 1000, "holds 1000 in its uint8 data"},
        {onnx::TensorProto::INT8, -129, "holds -129 in its int8 data"},
        {onnx::TensorProto::UINT16, -1, "holds -1 in its uint16 data"},
        {onnx::TensorProto::INT16, 40000, "holds 40000 in its int16 data"},
        {onnx::TensorProto::UINT32, int64_t{1} << 32, "holds 4294967296 in its uint32 data"},
        {onnx::TensorProto::FLOAT16, 70000, "holds 70000 as the bits of a 16-bit float"}};
    for (const auto& [type, value, expected] : cases) {
      auto m = relu_model();
      auto& g = *m.mutable_graph();
      add_typed_initializer(g, "v", type, {1, value});
      add_node(g, "Identity", {"v"}, {"w"}, "keep");
      add_static_output(m, "w");
      INFO(expected);
      CHECK(contains(error_of([&] { import_model(m); }, &code), "initializer 'v' " + expected));
      CHECK(code == ErrorCode::InvalidModel);
    }
    // In range, each type still reads (the checks are not off by one).
    auto m = relu_model();
    auto& g = *m.mutable_graph();
    add_typed_initializer(g, "u8", onnx::TensorProto::UINT8, {0, 255});
    add_typed_initializer(g, "i8", onnx::TensorProto::INT8, {-128, 127});
    add_typed_initializer(g, "u16", onnx::TensorProto::UINT16, {0, 65535});
    add_typed_initializer(g, "i16", onnx::TensorProto::INT16, {-32768, 32767});
    add_typed_initializer(g, "u32", onnx::TensorProto::UINT32, {0, 4294967295});
    for (const char* name : {"u8", "i8", "u16", "i16", "u32"}) {
      add_node(g, "Identity", {name}, {std::string(name) + "_out"}, std::string("keep_") + name);
      add_static_output(m, std::string(name) + "_out");
    }
    CHECK(import_model(m).outputs.size() == 6);
  }
}

TEST_CASE("import: Cast's 'to' and the constants it casts are checked") {
  ErrorCode code{};
  auto cast_model = [](int64_t value, std::optional<int64_t> to) {
    auto m = relu_model();
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "v", {1}, {value});
    auto& cast = add_node(g, "Cast", {"v"}, {"c"}, "cast");
    if (to) set_int_attribute(cast, "to", *to);
    add_static_output(m, "c");
    return m;
  };
  // A 'to' of 2^32 + 1 was truncated to 1 (float).
  CHECK(contains(error_of([&] { import_model(cast_model(7, (int64_t{1} << 32) + 1)); }, &code),
                 "node 'cast' (Cast, opset 17): 'to' = 4294967297 is not an ONNX element type"));
  CHECK(code == ErrorCode::InvalidModel);
  CHECK(contains(error_of([&] { import_model(cast_model(7, std::nullopt)); }, &code), "node 'cast' (Cast, opset 17): has no 'to' attribute"));
  CHECK(code == ErrorCode::InvalidModel);
  CHECK(contains(error_of([&] { import_model(cast_model(7, 99)); }, &code), "Cast to unknown-type (element type 99)"));
  CHECK(code == ErrorCode::Unsupported);
  // A constant the integer type cannot hold: ONNX leaves wrap or saturation to the runtime.
  CHECK(contains(error_of([&] { import_model(cast_model(300, onnx::TensorProto::UINT8)); }, &code),
                 "node 'cast' (Cast, opset 17): casts 300 to uint8, which cannot hold it"));
  CHECK(code == ErrorCode::Unsupported);
  CHECK(contains(error_of([&] { import_model(cast_model(-1, onnx::TensorProto::UINT32)); }), "casts -1 to uint32"));
  CHECK(contains(error_of([&] { import_model(cast_model(int64_t{1} << 31, onnx::TensorProto::INT32)); }), "casts 2.14748e+09 to int32"));
  // Each type's ends still cast.
  CHECK(import_model(cast_model(255, onnx::TensorProto::UINT8)).outputs.size() == 2);
  CHECK(import_model(cast_model(-(int64_t{1} << 31), onnx::TensorProto::INT32)).outputs.size() == 2);
  CHECK(import_model(cast_model(4294967295, onnx::TensorProto::UINT32)).outputs.size() == 2);
}

TEST_CASE("import: a repeated graph input, an integer Conv bias and a float list of integers are named") {
  ErrorCode code{};
  {
    // More outputs than a plan holds: refused at import, not as a "damaged plan" after compiling.
    auto m = relu_model();
    for (int k = 0; k < 256; ++k) *m.mutable_graph()->add_output() = m.graph().output(0);
    CHECK(contains(error_of([&] { import_model(m); }, &code), "the model has 257 outputs; denox runs at most 256"));
    CHECK(code == ErrorCode::Unsupported);
  }
  {
    auto m = relu_model();
    const onnx::ValueInfoProto again = m.graph().input(0);  // (a copy: adding may move the list)
    add_graph_input(*m.mutable_graph(), again);
    CHECK(contains(error_of([&] { import_model(m); }, &code), "graph input 'x' is listed twice"));
    CHECK(code == ErrorCode::InvalidModel);
  }
  {
    auto m = relu_model();
    auto& g = *m.mutable_graph();
    add_float_initializer(g, "w", {4, 3, 3, 3}, std::vector<float>(108, 0.25f));
    add_int64_initializer(g, "b", {4}, {1, 2, 3, 4});
    add_node(g, "Conv", {"x", "w", "b"}, {"z"}, "conv_int_bias");
    g.mutable_output(0)->set_name("z");
    CHECK(contains(error_of([&] { import_model(m); }, &code),
                   "node 'conv_int_bias' (Conv, opset 17): the bias is an integer tensor; ONNX gives it the input's floating-point type"));
    CHECK(code == ErrorCode::InvalidModel);
  }
  {
    // Slice steps as floats (constant_ints reads dense floats without the shape program).
    auto slice_model = [](float step) {
      auto m = relu_model();
      auto& g = *m.mutable_graph();
      add_int64_initializer(g, "starts", {1}, {0});
      add_int64_initializer(g, "ends", {1}, {2});
      add_int64_initializer(g, "axes", {1}, {1});
      add_float_initializer(g, "steps", {1}, {step});
      add_node(g, "Slice", {"x", "starts", "ends", "axes", "steps"}, {"z"}, "float_steps");
      g.mutable_output(0)->set_name("z");
      return m;
    };
    CHECK(contains(error_of([&] { import_model(slice_model(1.5f)); }, &code), "node 'float_steps' (Slice, opset 17): steps must be integers, got 1.5"));
    CHECK(code == ErrorCode::Unsupported);
    CHECK(import_model(slice_model(1.0f)).outputs.size() == 1);  // an integral float still reads
  }
  {
    // A list read as shape-program values longer than any rank needs.
    auto m = relu_model();
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "pads", {5000}, std::vector<int64_t>(5000, 1));
    add_node(g, "Pad", {"x", "pads"}, {"z"}, "long_pads");
    g.mutable_output(0)->set_name("z");
    CHECK(contains(error_of([&] { import_model(m); }, &code), "node 'long_pads' (Pad, opset 17): pads holds 5000 values; denox reads at most 4096"));
    CHECK(code == ErrorCode::Unsupported);
  }
}

TEST_CASE("import: a model's constants share one budget, and a constant read twice is one graph tensor") {
  // 4096 weights, then Identities that each held a copy: the second copy passes a budget of 10000.
  auto chain = [] {
    auto m = relu_model();
    auto& g = *m.mutable_graph();
    add_float_initializer(g, "w", {4096}, std::vector<float>(4096, 0.5f));
    add_node(g, "Identity", {"w"}, {"a"}, "copy_a");
    add_node(g, "Identity", {"a"}, {"b"}, "copy_b");
    add_node(g, "Shape", {"b"}, {"s"}, "shape_of_b");
    add_static_output(m, "s");
    return m;
  };
  ImportOptions small;
  small.max_constant_elements = 10000;
  ErrorCode code{};
  CHECK(contains(error_of([&] { import_model(chain(), small); }, &code),
                 "node 'copy_b' (Identity, opset 17): the model's constants add up to more than 10000 elements at import (8192 before this one of 4096)"));
  CHECK(code == ErrorCode::Unsupported);
  small.max_constant_elements = 20000;
  CHECK(import_model(chain(), small).outputs.size() == 2);
  // The budget counts initializers too.
  small.max_constant_elements = 4000;
  CHECK(contains(error_of([&] { import_model(chain(), small); }), "initializer 'w': the model's constants add up to more than 4000"));

  // Two Convs reading one weight, and two ops reading one scalar: one graph tensor each.
  auto m = relu_model();
  auto& g = *m.mutable_graph();
  add_float_initializer(g, "w", {3, 3, 3, 3}, std::vector<float>(81, 0.125f));
  add_float_initializer(g, "k", {}, {2.0f});
  add_node(g, "Conv", {"y", "w"}, {"c1"}, "conv1");
  add_node(g, "Conv", {"c1", "w"}, {"c2"}, "conv2");
  add_node(g, "Mul", {"c2", "k"}, {"m1"}, "mul1");
  add_node(g, "Add", {"m1", "k"}, {"z"}, "add1");
  g.mutable_output(0)->set_name("z");
  const Graph graph = import_model(m);
  int weights = 0, scalars = 0;
  for (const auto& t : graph.tensors) {
    weights += t.name == "w";
    scalars += t.name == "k";
  }
  CHECK(weights == 1);
  CHECK(scalars == 1);
  std::vector<TensorId> conv_weights;
  for (const auto& op : graph.ops)
    if (op.onnx_op == "Conv") conv_weights.push_back(op.inputs.at(1));
  REQUIRE(conv_weights.size() == 2);
  CHECK(conv_weights[0] == conv_weights[1]);
}

TEST_CASE("import: an external data file swapped after its name was checked is refused") {
  namespace fs = std::filesystem;
  const fs::path base = fs::temp_directory_path() / ("denox_swap_" + std::to_string(::getpid()));
  fs::create_directories(base / "model");
  std::ofstream(base / "model" / "w.data") << "inside";
  std::ofstream(base / "elsewhere.data") << "outside";
  const fs::path dir = fs::canonical(base / "model"), inside = fs::canonical(base / "model" / "w.data"),
                 outside = fs::canonical(base / "elsewhere.data");
  auto opened_as = [](const fs::path& file, bool with_proc) {
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    denox::OpenedFile f;
    f.resolved = with_proc ? file : fs::path();
    f.size = static_cast<std::uintmax_t>(st.st_size);
    f.device = static_cast<uint64_t>(st.st_dev);
    f.inode = static_cast<uint64_t>(st.st_ino);
    return f;
  };
  // With /proc: the kernel's path for the descriptor. Without: the file's identity against the
  // name as resolved before the open.
  CHECK(opened_file_outside(opened_as(inside, true), dir, inside) == "");
  CHECK(opened_file_outside(opened_as(outside, true), dir, inside) == "opened as '" + outside.string() + "', outside the model's directory");
  CHECK(opened_file_outside(opened_as(inside, false), dir, inside) == "");
  CHECK(opened_file_outside(opened_as(outside, false), dir, inside) == "was replaced between the check of its name and its opening");
  fs::remove_all(base);
}
