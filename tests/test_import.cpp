// The ONNX importer: symbolic shapes through PyTorch-style shape subgraphs, opset variants,
// and clear errors for everything malformed, unsupported or hostile.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "compiler/import/tensor_data.hpp"
#include "import_test_util.hpp"
#include "modelgen/oidn_unet.hpp"
#include "modelgen/onnx_writer.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::modelgen;
using namespace denox::test;
namespace fs = std::filesystem;

namespace {

// Extents of a tensor at a resolution, through the shape program.
std::vector<int64_t> extents(const Graph& g, TensorId t, int64_t h, int64_t w) {
  std::vector<int64_t> symbols;
  for (const auto& name : g.program.symbol_names()) symbols.push_back(name == "H" ? h : name == "W" ? w : 1);
  auto values = g.program.evaluate(symbols);
  std::vector<int64_t> out;
  for (ValueId v : g.tensor(t).shape) out.push_back(values[v]);
  return out;
}

// input [1,C,H,W] -> Relu -> output, at the given opset, for building small test graphs.
onnx::ModelProto single_input_model(int64_t opset, int64_t channels = 3) {
  auto m = make_model(opset, "test");
  add_graph_input(*m.mutable_graph(), make_value_info("x", onnx::TensorProto::FLOAT,
                                                      {Dim::fixed(1), Dim::fixed(channels), Dim::symbolic("H"), Dim::symbolic("W")}));
  return m;
}

void add_output(onnx::ModelProto& m, const std::string& name) {
  add_graph_output(*m.mutable_graph(), make_value_info(name, onnx::TensorProto::FLOAT, {}));
  m.mutable_graph()->mutable_output()->rbegin()->mutable_type()->mutable_tensor_type()->clear_shape();
}

}  // namespace

TEST_CASE("import: OIDN U-Net with pad-to-16 and crop runs at any size, every opset form") {
  for (int opset : {11, 12, 13, 17, 18, 19, 21}) {
    for (auto size : {OidnUnetOptions::Size::Balanced, OidnUnetOptions::Size::Small}) {
      OidnUnetOptions o;
      o.size = size;
      o.opset = opset;
      o.input_channels = 9;
      o.pad_to_16_and_crop = true;
      Graph g = import_model(build_oidn_unet(o));
      INFO("opset " << opset);
      CHECK(g.inputs.size() == 1);
      REQUIRE(g.outputs.size() == 1);
      CHECK(g.shape_string(g.outputs[0]) == "1x3xHxW");
      for (auto [h, w] : {std::pair<int64_t, int64_t>{37, 53}, {1, 1}, {1088, 1920}, {17, 16}}) {
        CHECK(extents(g, g.outputs[0], h, w) == std::vector<int64_t>{1, 3, h, w});
      }
      size_t convs = 0;
      for (const auto& op : g.ops) convs += std::holds_alternative<ConvAttrs>(op.attrs);
      CHECK(convs == 16);
    }
  }
}

TEST_CASE("import: without padding, sizes that are not multiples of 16 fail with the concat node named") {
  OidnUnetOptions o;
  o.size = OidnUnetOptions::Size::Small;
  Graph g = import_model(build_oidn_unet(o));
  CHECK(extents(g, g.outputs[0], 64, 32) == std::vector<int64_t>{1, 3, 64, 32});
  ErrorCode code{};
  std::string msg = error_of([&] { extents(g, g.outputs[0], 37, 53); }, &code);
  CHECK(code == ErrorCode::ShapeMismatch);
  CHECK(contains(msg, "Concat"));
}

TEST_CASE("import: static shapes fold to constants") {
  OidnUnetOptions o;
  o.size = OidnUnetOptions::Size::Small;
  o.dynamic_hw = false;
  o.static_h = 48;
  o.static_w = 80;
  Graph g = import_model(build_oidn_unet(o));
  CHECK(g.shape_string(g.outputs[0]) == "1x3x48x80");
  CHECK(g.program.symbol_names().empty());
}

TEST_CASE("import: PyTorch-style float size arithmetic (Cast, Div, Floor, Cast) is exact") {
  auto m = single_input_model(13);
  auto& g = *m.mutable_graph();
  add_node(g, "Shape", {"x"}, {"shape"}, "shape");
  add_int64_initializer(g, "idx2", {}, {2});
  add_node(g, "Gather", {"shape", "idx2"}, {"h"}, "gather_h");
  auto& cast = add_node(g, "Cast", {"h"}, {"hf"}, "cast_f");
  set_int_attribute(cast, "to", onnx::TensorProto::FLOAT);
  add_float_initializer(g, "four", {}, {4.0f});
  add_node(g, "Div", {"hf", "four"}, {"q"}, "div");
  add_node(g, "Ceil", {"q"}, {"qc"}, "ceil");
  auto& back = add_node(g, "Cast", {"qc"}, {"qi"}, "cast_i");
  set_int_attribute(back, "to", onnx::TensorProto::INT64);
  add_int64_initializer(g, "four_i", {}, {4});
  add_node(g, "Mul", {"qi", "four_i"}, {"hp"}, "mul");
  add_node(g, "Sub", {"hp", "h"}, {"pad_h"}, "sub");
  add_int64_initializer(g, "axes0", {1}, {0});
  add_node(g, "Unsqueeze", {"pad_h", "axes0"}, {"pad_h1"}, "unsq");
  add_int64_initializer(g, "zeros6", {6}, {0, 0, 0, 0, 0, 0});
  add_int64_initializer(g, "zero1", {1}, {0});
  add_node(g, "Concat", {"zeros6", "pad_h1", "zero1"}, {"pads"}, "concat_pads");
  set_int_attribute(g.mutable_node()->at(g.node_size() - 1), "axis", 0);
  add_node(g, "Pad", {"x", "pads"}, {"y"}, "pad");
  add_output(m, "y");
  Graph graph = import_model(m);
  for (int64_t h : {1, 4, 5, 37, 1081}) {
    CHECK(extents(graph, graph.outputs[0], h, 7)[2] == (h + 3) / 4 * 4);
  }
}

TEST_CASE("import: Resize with symbolic sizes and Upsample/Resize in every opset form") {
  auto m = single_input_model(13);
  auto& g = *m.mutable_graph();
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_int64_initializer(g, "two", {4}, {1, 1, 2, 3});
  add_node(g, "Mul", {"s", "two"}, {"sizes"}, "mul");
  add_node(g, "Resize", {"x", "", "", "sizes"}, {"y"}, "resize");
  add_output(m, "y");
  Graph graph = import_model(m);
  CHECK(extents(graph, graph.outputs[0], 5, 7) == std::vector<int64_t>{1, 3, 10, 21});

  for (int opset : {7, 9, 10, 11, 18, 19}) {
    INFO("opset " << opset);
    auto u = single_input_model(opset);
    auto& ug = *u.mutable_graph();
    if (opset < 10) {
      auto& n = add_node(ug, "Upsample", opset < 9 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "scales"}, {"y"}, "up");
      if (opset < 9) set_floats_attribute(n, "scales", {1, 1, 2, 2});
    } else if (opset < 11) {
      add_node(ug, "Resize", {"x", "scales"}, {"y"}, "up");
    } else if (opset < 18) {
      add_node(ug, "Resize", {"x", "roi", "scales"}, {"y"}, "up");
    } else {
      auto& n = add_node(ug, "Resize", {"x", "", "scales"}, {"y"}, "up");
      set_ints_attribute(n, "axes", {2, 3});
    }
    if (opset >= 9) add_float_initializer(ug, "scales", {opset >= 18 ? 2 : 4}, opset >= 18 ? std::vector<float>{2, 2} : std::vector<float>{1, 1, 2, 2});
    if (opset >= 11 && opset < 18) add_float_initializer(ug, "roi", {0}, {});
    add_output(u, "y");
    Graph ugraph = import_model(u);
    CHECK(extents(ugraph, ugraph.outputs[0], 5, 7) == std::vector<int64_t>{1, 3, 10, 14});
  }
}

TEST_CASE("import: every unsupported node is reported at once with name, op type and opset") {
  auto m = single_input_model(17);
  auto& g = *m.mutable_graph();
  add_node(g, "Relu", {"x"}, {"a"}, "ok_relu");
  add_node(g, "LSTM", {"a"}, {"b"}, "my_lstm");
  add_node(g, "Softmax", {"a"}, {"c"}, "my_softmax");
  add_float_initializer(g, "w", {4, 1, 3, 3}, std::vector<float>(36, 0.5f));
  auto& conv = add_node(g, "Conv", {"a", "w"}, {"d"}, "grouped_conv");
  set_int_attribute(conv, "group", 3);
  add_node(g, "Relu", {"b"}, {"e"}, "after_lstm");  // not reported again: its input already failed
  add_node(g, "Conv", {"e", "w"}, {"f"}, "reads_bad");
  add_output(m, "d");
  ErrorCode code{};
  std::string msg = error_of([&] { import_model(m); }, &code);
  CHECK(code == ErrorCode::Unsupported);
  CHECK(contains(msg, "node 'my_lstm' (LSTM, opset 17)"));
  CHECK(contains(msg, "node 'my_softmax' (Softmax, opset 17)"));
  CHECK(contains(msg, "node 'grouped_conv' (Conv, opset 17)"));
  CHECK(contains(msg, "group=3"));
  CHECK(contains(msg, "3 unsupported features"));
  CHECK_FALSE(contains(msg, "after_lstm"));
}

TEST_CASE("import: an initializer of an unreadable type is reported on the node that reads it") {
  auto m = single_input_model(21);
  auto& g = *m.mutable_graph();
  // Types by number: float8 is newer than the onnx.proto denox builds against.
  auto add_float8 = [&](const std::string& name, int type) {
    auto& t = add_float_initializer(g, name, {1}, {0.5f});
    t.set_data_type(type);
    t.clear_float_data();
    t.set_raw_data(std::string(1, '\x30'));
  };
  add_float8("scale8", 17);   // FLOAT8E4M3FN
  add_float8("unused8", 19);  // FLOAT8E5M2
  add_node(g, "Mul", {"x", "scale8"}, {"y"}, "scale_by_f8");
  add_output(m, "y");
  ErrorCode code{};
  std::string msg = error_of([&] { import_model(m); }, &code);
  CHECK(code == ErrorCode::Unsupported);
  CHECK(contains(msg, "node 'scale_by_f8' (Mul, opset 21): reads initializer 'scale8', which has element type float8e4m3fn"));
  CHECK(contains(msg, "1 unsupported feature"));  // the unread one is dead weight, not a problem
  CHECK_FALSE(contains(msg, "unused8"));

  // An initializer's name with a control character: still said once, printable.
  g.mutable_initializer(0)->set_name("scale\x01");
  g.mutable_node(0)->set_input(1, "scale\x01");
  msg = error_of([&] { import_model(m); }, &code);
  CHECK(contains(msg, "reads initializer 'scale\\x01', which has element type float8e4m3fn"));
}

TEST_CASE("import: an initializer nothing reads is not decoded") {
  // Dead weight that decoding would refuse (external data in a file that does not exist, a
  // lying length): ignored, the graph imports. The same initializers read by a node fail.
  auto m = single_input_model(17);
  auto& g = *m.mutable_graph();
  auto& missing = add_float_initializer(g, "dead_external", {4}, {1, 2, 3, 4});
  missing.clear_float_data();
  missing.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = missing.add_external_data();
  location->set_key("location");
  location->set_value("no_such_file.data");
  auto& lying = add_float_initializer(g, "dead_lying", {4}, {1, 2, 3, 4});
  lying.clear_float_data();
  lying.set_raw_data(std::string(3, '\x01'));
  add_float_initializer(g, "used", {1}, {0.5f});
  add_node(g, "Mul", {"x", "used"}, {"y"}, "scale");
  add_output(m, "y");
  ImportOptions options;
  options.base_dir = fs::temp_directory_path();
  const Graph graph = import_model(m, options);
  for (const auto& t : graph.tensors) CHECK(t.name.rfind("dead_", 0) != 0);

  g.mutable_node(0)->set_input(1, "dead_external");
  CHECK(contains(error_of([&] { import_model(m, options); }), "no_such_file.data"));
  g.mutable_node(0)->set_input(1, "dead_lying");
  CHECK(contains(error_of([&] { import_model(m, options); }), "initializer 'dead_lying'"));
  // Still one name per value: an unread initializer defined twice is refused.
  g.mutable_node(0)->set_input(1, "used");
  add_float_initializer(g, "dead_lying", {1}, {1.0f});
  CHECK(contains(error_of([&] { import_model(m, options); }), "initializer 'dead_lying' is defined twice"));
}

TEST_CASE("import: malformed files give clear errors, never a crash") {
  std::mt19937 rng(3);
  OidnUnetOptions o;
  o.size = OidnUnetOptions::Size::Small;
  std::string good = build_oidn_unet(o).SerializeAsString();
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes = good;
    if (trial < 100) {
      bytes.resize(rng() % bytes.size());  // truncated
    } else {
      for (int k = 0; k < 20; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());  // corrupted
    }
    try {
      Graph g = import_onnx_bytes(bytes.data(), bytes.size());
      (void)g;  // a corruption may still be a valid model; it just must not crash
    } catch (const Error&) {
    }
  }
  ErrorCode code{};
  std::string garbage = "this is not an onnx file at all \x01\x02\x03";
  CHECK(contains(error_of([&] { import_onnx_bytes(garbage.data(), garbage.size()); }, &code), "not a valid ONNX model"));
  CHECK(code == ErrorCode::InvalidModel);
  CHECK(contains(error_of([] { import_onnx_file("/nonexistent/model.onnx"); }, &code), "/nonexistent/model.onnx"));
  CHECK(code == ErrorCode::Io);
  // A directory, and /dev/zero (read until memory ran out before the readers were shared).
  CHECK(contains(error_of([] { import_onnx_file("/tmp"); }, &code), "/tmp: is a directory"));
  CHECK(code == ErrorCode::Io);
  CHECK(contains(error_of([] { import_onnx_file("/dev/zero"); }, &code), "/dev/zero: not a regular file"));
  CHECK(code == ErrorCode::Io);
}

TEST_CASE("import: nodes with too few or too many inputs or outputs are named, never read past") {
  // Converters index their inputs by position; libonnx's schemas say how many each node has.
  struct Case {
    const char* op;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"Add", {"pads"}, {"p"}, "has 1 input, but Add takes 2 inputs (ONNX schema, opset 14)"},
      {"Max", {}, {"p"}, "has 0 inputs, but Max takes at least 1 input"},
      {"Neg", {}, {"p"}, "has 0 inputs, but Neg takes 1 input"},
      {"Where", {"pads", "pads"}, {"p"}, "has 2 inputs, but Where takes 3 inputs"},
      {"Add", {"pads", "pads", "pads"}, {"p"}, "has 3 inputs, but Add takes 2 inputs"},
      {"Identity", {"pads"}, {"p", "q"}, "has 2 outputs, but Identity makes 1 output"},
      {"Clip", {"pads", "", "", ""}, {"p"}, "has 4 inputs, but Clip takes 1 to 3 inputs"},
  };
  for (const auto& c : cases) {
    INFO(c.op << " " << c.says);
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    add_node(g, c.op, c.inputs, c.outputs, "odd");
    add_node(g, "Pad", {"x", "p"}, {"y"}, "pad");
    add_output(m, "y");
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(m); }, &code);
    CHECK(contains(msg, std::string("node 'odd' (") + c.op + ", opset 17): " + c.says));
    CHECK(code == ErrorCode::InvalidModel);
  }
  // Past the opsets libonnx knows (Debian 12: 17), only the minimum counts hold: newer versions
  // add optional inputs (Pad's axes in opset 18).
  auto newer = single_input_model(18);
  add_int64_initializer(*newer.mutable_graph(), "pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  add_node(*newer.mutable_graph(), "Add", {"pads"}, {"p"}, "odd");
  add_node(*newer.mutable_graph(), "Pad", {"x", "p"}, {"y"}, "pad");
  add_output(newer, "y");
  CHECK(contains(error_of([&] { import_model(newer); }), "node 'odd' (Add, opset 18): has 1 input, but Add takes at least 2 inputs (ONNX schema, opset 14)"));
  // A constant Concat whose inputs differ outside the axis (its result held fewer elements than
  // its shape said, and a shader read past them).
  auto cat = single_input_model(17);
  add_int64_initializer(*cat.mutable_graph(), "a", {2, 2}, {0, 0, 1, 1});
  add_int64_initializer(*cat.mutable_graph(), "b", {2, 1}, {0, 1});
  auto& concat = add_node(*cat.mutable_graph(), "Concat", {"a", "b"}, {"p"}, "ccat");
  set_int_attribute(concat, "axis", 0);
  add_node(*cat.mutable_graph(), "Pad", {"x", "p"}, {"y"}, "pad");
  add_output(cat, "y");
  CHECK(contains(error_of([&] { import_model(cat); }),
                 "node 'ccat' (Concat, opset 17): input 1 has 1 in dimension 1 where input 0 has 2 (only the concat axis, 0, may differ)"));
  // Repeated axes (Unsqueeze read past its input's dimensions) and a step of 2^63 - 1.
  for (const char* op : {"Unsqueeze", "Squeeze", "Transpose"}) {
    INFO(op);
    auto dup = single_input_model(17);
    auto& g = *dup.mutable_graph();
    add_int64_initializer(g, "pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    add_int64_initializer(g, "one_one", {1, 1}, {1});
    add_int64_initializer(g, "axes", {2}, {0, 0});
    if (std::string(op) == "Transpose") {
      auto& t = add_node(g, op, {"one_one"}, {"q"}, "odd");
      set_ints_attribute(t, "perm", {0, 0});
    } else {
      add_node(g, op, {std::string(op) == "Squeeze" ? "one_one" : "pads", "axes"}, {"q"}, "odd");
    }
    add_node(g, "Shape", {"q"}, {"qs"}, "qs");
    add_node(g, "Pad", {"x", "pads"}, {"y"}, "pad");
    add_node(g, "Concat", {"y", "y"}, {"z"}, "keep");
    set_int_attribute(g.mutable_node()->at(g.node_size() - 1), "axis", 1);
    add_output(dup, "z");
    add_output(dup, "qs");
    CHECK(contains(error_of([&] { import_model(dup); }), std::string("node 'odd' (") + op + ", opset 17): " +
                                                            (std::string(op) == "Transpose" ? "perm" : "axes") + " names axis 0 twice"));
  }
  // The same counts on a network tensor's node.
  auto m = single_input_model(17);
  add_node(*m.mutable_graph(), "Relu", {"x", "x"}, {"y"}, "relu");
  add_output(m, "y");
  CHECK(contains(error_of([&] { import_model(m); }), "node 'relu' (Relu, opset 17): has 2 inputs, but Relu takes 1 input"));
}

TEST_CASE("import: scalars that must be constants are refused when they depend on the size, or are empty") {
  // The width as a float: Clip's min, Pad's value and Range's start read it as a number, and
  // got 1.0 (a symbol's index) before.
  const auto with_width = [](onnx::GraphProto& g) {
    add_node(g, "Shape", {"x"}, {"shape"}, "shape");
    add_int64_initializer(g, "idx3", {}, {3});
    add_node(g, "Gather", {"shape", "idx3"}, {"w"}, "gather_w");
    auto& cast = add_node(g, "Cast", {"w"}, {"wf"}, "cast_f");
    set_int_attribute(cast, "to", onnx::TensorProto::FLOAT);
  };
  {
    auto m = single_input_model(17);
    with_width(*m.mutable_graph());
    add_node(*m.mutable_graph(), "Clip", {"x", "wf"}, {"y"}, "clip");
    add_output(m, "y");
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(m); }, &code);
    CHECK(contains(msg, "node 'clip' (Clip, opset 17): a value that must be a constant depends on the input size"));
    CHECK(code == ErrorCode::Unsupported);
  }
  {
    auto m = single_input_model(17);
    with_width(*m.mutable_graph());
    add_int64_initializer(*m.mutable_graph(), "pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    add_node(*m.mutable_graph(), "Pad", {"x", "pads", "wf"}, {"y"}, "pad");
    add_output(m, "y");
    CHECK(contains(error_of([&] { import_model(m); }), "node 'pad' (Pad, opset 17): a value that must be a constant depends on the input size"));
  }
  {
    auto m = single_input_model(17);
    with_width(*m.mutable_graph());
    add_float_initializer(*m.mutable_graph(), "eight", {}, {8.0f});
    add_float_initializer(*m.mutable_graph(), "one", {}, {1.0f});
    add_node(*m.mutable_graph(), "Range", {"wf", "eight", "one"}, {"r"}, "range");
    add_node(*m.mutable_graph(), "Add", {"x", "r"}, {"y"}, "add");
    add_output(m, "y");
    CHECK(contains(error_of([&] { import_model(m); }), "node 'range' (Range, opset 17): a value that must be a constant depends on the input size"));
  }
  {
    // An empty min: named, not std::out_of_range's "internal error".
    auto m = single_input_model(17);
    add_float_initializer(*m.mutable_graph(), "empty", {0}, {});
    add_node(*m.mutable_graph(), "Clip", {"x", "empty"}, {"y"}, "clip");
    add_output(m, "y");
    ErrorCode code{};
    CHECK(contains(error_of([&] { import_model(m); }, &code), "node 'clip' (Clip, opset 17): reads element 0 of a constant of 0 elements"));
    CHECK(code == ErrorCode::InvalidModel);
  }
}

TEST_CASE("import: missing initializers, lying headers and bad shapes are named") {
  auto m = single_input_model(17);
  auto& g = *m.mutable_graph();
  add_node(g, "Conv", {"x", "missing_weight"}, {"y"}, "conv0");
  add_output(m, "y");
  std::string msg = error_of([&] { import_model(m); });
  CHECK(contains(msg, "conv0"));
  CHECK(contains(msg, "missing_weight"));
  // A converter's own error on a node with a control character in its name: labelled once,
  // printable (the label is compared with the message as Error wrote it).
  auto odd = single_input_model(17);
  add_node(*odd.mutable_graph(), "Conv", {"x", ""}, {"y"}, "conv\x01");
  add_output(odd, "y");
  msg = error_of([&] { import_model(odd); });
  CHECK(contains(msg, "node 'conv\\x01' (Conv, opset 17): input 1 is required but missing"));
  CHECK(msg.find("node 'conv") == msg.rfind("node 'conv"));

  auto lying = single_input_model(17);
  auto& lg = *lying.mutable_graph();
  auto& w = add_float_initializer(lg, "w", {4, 3, 3, 3}, std::vector<float>(108, 1.0f));
  w.clear_dims();
  for (int64_t d : {int64_t{1} << 20, int64_t{1} << 20, int64_t{3}, int64_t{3}}) w.add_dims(d);
  add_node(lg, "Conv", {"x", "w"}, {"y"}, "conv0");
  add_output(lying, "y");
  msg = error_of([&] { import_model(lying); });
  CHECK(contains(msg, "initializer 'w'"));

  auto wrong_channels = single_input_model(17, 5);
  auto& wg = *wrong_channels.mutable_graph();
  add_float_initializer(wg, "w", {4, 3, 3, 3}, std::vector<float>(108, 1.0f));
  add_node(wg, "Conv", {"x", "w"}, {"y"}, "conv_mismatch");
  add_output(wrong_channels, "y");
  msg = error_of([&] { import_model(wrong_channels); });
  CHECK(contains(msg, "conv_mismatch"));
  CHECK(contains(msg, "channels"));

  auto frac = single_input_model(17);
  auto& fg = *frac.mutable_graph();
  add_float_initializer(fg, "scales", {4}, {1, 1, 1.5f, 2});
  add_node(fg, "Resize", {"x", "", "scales"}, {"y"}, "resize_frac");
  add_output(frac, "y");
  ErrorCode code{};
  msg = error_of([&] { import_model(frac); }, &code);
  CHECK(code == ErrorCode::Unsupported);
  CHECK(contains(msg, "resize_frac"));
  CHECK(contains(msg, "non-integer scale"));

  // Shape arithmetic on static extents that overflows is named by its node (the shape program,
  // which fails it, does not know nodes).
  auto overflow = make_model(17, "test");
  auto& og = *overflow.mutable_graph();
  add_graph_input(og, make_value_info("x", onnx::TensorProto::FLOAT, {Dim::fixed(1), Dim::fixed(3), Dim::fixed(int64_t{1} << 30), Dim::symbolic("W")}));
  add_node(og, "Shape", {"x"}, {"shape"}, "shape");
  add_int64_initializer(og, "idx2", {1}, {2});
  add_int64_initializer(og, "big", {1}, {int64_t{1} << 40});
  add_node(og, "Gather", {"shape", "idx2"}, {"h"}, "gather_h");
  add_node(og, "Mul", {"h", "big"}, {"h_big"}, "mul_overflow");
  add_node(og, "Relu", {"x"}, {"y"}, "relu");
  add_output(overflow, "y");
  add_output(overflow, "h_big");
  msg = error_of([&] { import_model(overflow); }, &code);
  CHECK(code == ErrorCode::InvalidModel);
  CHECK(contains(msg, "node 'mul_overflow' (Mul, opset 17): shape arithmetic overflows"));
}

// Attribute values at the ends of int64 (found by fuzzing the importer under UBSan): each is
// refused by name or taken, and none reaches signed overflow or a huge allocation.
TEST_CASE("import: extreme kernel, stride, dilation, slice step and resize scale values") {
  const int64_t huge = std::numeric_limits<int64_t>::max(), tiny = std::numeric_limits<int64_t>::min();
  auto conv_with = [](const std::string& attr, std::vector<int64_t> values) {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_float_initializer(g, "w", {4, 3, 3, 3}, std::vector<float>(108, 0.5f));
    set_ints_attribute(add_node(g, "Conv", {"x", "w"}, {"y"}, "conv_extreme"), attr, values);
    add_output(m, "y");
    return m;
  };
  for (const auto& [attr, values] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"dilations", {huge, 1}}, {"strides", {1, huge}}, {"dilations", {4097, 1}}, {"strides", {int64_t{1} << 40, 1}}}) {
    INFO(attr << " " << values[0] << " " << values[1]);
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(conv_with(attr, values)); }, &code);
    CHECK(code == ErrorCode::Unsupported);
    CHECK(contains(msg, "conv_extreme"));
    CHECK(contains(msg, "at most 4096"));
  }
  CHECK_NOTHROW(import_model(conv_with("dilations", {4096, 2})));  // the largest taken

  // A slice step beyond any extent takes one element, from either end.
  for (const int64_t step : {huge, tiny, tiny + 1}) {
    INFO("step " << step);
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "starts", {1}, {step > 0 ? 0 : -1});
    add_int64_initializer(g, "ends", {1}, {step > 0 ? huge : tiny});
    add_int64_initializer(g, "axes", {1}, {2});
    add_int64_initializer(g, "steps", {1}, {step});
    add_node(g, "Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "slice_extreme");
    add_output(m, "y");
    const Graph graph = import_model(m);
    CHECK(extents(graph, graph.outputs.at(0), 37, 5) == std::vector<int64_t>{1, 3, 1, 5});
  }

  // Scales above 64 (the factors a sizes input is matched against), inf and NaN.
  for (const float scale : {65.0f, 1e18f, -2.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    INFO("scale " << scale);
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_float_initializer(g, "scales", {4}, {1, 1, scale, 2});
    add_node(g, "Resize", {"x", "", "scales"}, {"y"}, "resize_extreme");
    add_output(m, "y");
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(m); }, &code);
    CHECK(code == ErrorCode::Unsupported);
    CHECK(contains(msg, "resize_extreme"));
    CHECK((contains(msg, "above 64") || contains(msg, "below 1") || contains(msg, "non-integer scale")));
  }

  // Constants computed at import: at most 2^24 elements (a ConstantOfShape of 2^27 took 4 GB),
  // and a Range of infinite length is refused before its count is cast.
  // 2^30 is past the general 2^28-element check too: still this limit's "unsupported".
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{int64_t{1} << 25}, std::vector<int64_t>{int64_t{1} << 15, int64_t{1} << 15}}) {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "shape", {static_cast<int64_t>(shape.size())}, shape);
    add_node(g, "ConstantOfShape", {"shape"}, {"y"}, "zeros_extreme");
    add_output(m, "y");
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(m); }, &code);
    INFO(msg);
    CHECK(code == ErrorCode::Unsupported);
    CHECK(contains(msg, "zeros_extreme"));
    CHECK(contains(msg, shape.size() == 1 ? "a constant of 3.35544e+07 elements" : "a constant of 1.07374e+09 elements"));
    CHECK(contains(msg, "denox computes at most 16777216"));
  }
  {  // an integer Range whose first value is INT64_MAX: 2^63 as a double, outside int64
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "start", {}, {huge});
    add_int64_initializer(g, "limit", {}, {0});
    add_int64_initializer(g, "delta", {}, {-(int64_t{1} << 62)});
    add_node(g, "Range", {"start", "limit", "delta"}, {"y"}, "range_int_extreme");
    add_output(m, "y");
    const std::string msg = error_of([&] { import_model(m); });
    CHECK(contains(msg, "range_int_extreme"));
    CHECK(contains(msg, "leave int64"));
  }
  for (const float limit : {1e30f, std::numeric_limits<float>::infinity()}) {
    INFO("limit " << limit);
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_float_initializer(g, "start", {}, {0});
    add_float_initializer(g, "limit", {}, {limit});
    add_float_initializer(g, "delta", {}, {1});
    add_node(g, "Range", {"start", "limit", "delta"}, {"y"}, "range_extreme");
    add_output(m, "y");
    const std::string msg = error_of([&] { import_model(m); });
    CHECK(contains(msg, "range_extreme"));
    CHECK(contains(msg, "denox computes at most 16777216"));
  }
}

// Nodes out of order are sorted (ONNX requires order; sloppy writers exist), in linear time: a
// chain written backwards imports as the same graph as written forwards. A cycle is named.
TEST_CASE("import: nodes out of topological order are sorted and a cycle names its node") {
  auto chain = [](bool backwards, size_t length) {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    std::vector<onnx::NodeProto> nodes;
    for (size_t k = 0; k < length; ++k) {
      onnx::GraphProto scratch;
      const std::string in = k == 0 ? "x" : "t" + std::to_string(k - 1), out = k + 1 == length ? "y" : "t" + std::to_string(k);
      // Every third node also reads the chain's input: a DAG, not only a line.
      nodes.push_back(add_node(scratch, k % 3 == 2 ? "Add" : "Relu", k % 3 == 2 ? std::vector<std::string>{in, "x"} : std::vector<std::string>{in},
                               {out}, "n" + std::to_string(k)));
    }
    if (backwards) std::reverse(nodes.begin(), nodes.end());
    for (auto& n : nodes) *g.add_node() = std::move(n);
    add_output(m, "y");
    return m;
  };
  const Graph forwards = import_model(chain(false, 3000)), backwards = import_model(chain(true, 3000));
  REQUIRE(forwards.ops.size() == backwards.ops.size());
  for (size_t k = 0; k < forwards.ops.size(); ++k) CHECK(forwards.ops[k].name == backwards.ops[k].name);
  CHECK(extents(backwards, backwards.outputs.at(0), 7, 5) == std::vector<int64_t>{1, 3, 7, 5});

  auto cyclic = chain(false, 5);
  cyclic.mutable_graph()->mutable_node(1)->set_input(0, "t3");  // n1 reads n3's output, which needs n1
  const std::string msg = error_of([&] { import_model(cyclic); });
  CHECK(contains(msg, "node 'n1' (Relu) reads 't3'"));
  CHECK(contains(msg, "cycle"));
}

TEST_CASE("import: external data is read beside the model and refused outside it") {
  fs::path dir = fs::temp_directory_path() / ("denox_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir / "models");
  OidnUnetOptions o;
  o.size = OidnUnetOptions::Size::Small;
  auto model = build_oidn_unet(o);
  save_model(model, (dir / "models" / "m.onnx").string(), true);
  REQUIRE(fs::exists(dir / "models" / "m.onnx.data"));
  Graph g = import_onnx_file(dir / "models" / "m.onnx");
  CHECK(g.ops.size() == import_model(model).ops.size());
  const Tensor* weight = nullptr;
  for (const auto& t : g.tensors) if (t.name == "enc_conv1.weight") weight = &t;
  REQUIRE(weight);
  REQUIRE(weight->f32_data);

  // From bytes without a base directory: a clear error naming the file.
  std::ifstream in(dir / "models" / "m.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::string msg = error_of([&] { import_onnx_bytes(bytes.data(), bytes.size()); });
  CHECK(contains(msg, "base directory"));

  // Locations that leave the model's directory, and spans beyond the file.
  auto tamper = [&](const std::string& key, const std::string& value) {
    onnx::ModelProto m;
    m.ParseFromString(bytes);
    for (auto& init : *m.mutable_graph()->mutable_initializer()) {
      for (auto& kv : *init.mutable_external_data()) {
        if (kv.key() == key) kv.set_value(value);
      }
    }
    std::string path = (dir / "models" / "tampered.onnx").string();
    write_model(m, path);
    return error_of([&] { import_onnx_file(path); });
  };
  CHECK(contains(tamper("location", "../secret.data"), "leaves the model's directory"));
  CHECK(contains(tamper("location", "/etc/passwd"), "relative path"));
  CHECK(contains(tamper("offset", "99999999999"), "beyond the end"));
  CHECK(contains(tamper("length", "12"), "does not match"));
  CHECK(contains(tamper("location", "nope.data"), "nope.data"));
  fs::create_symlink("/etc", dir / "models" / "link");
  CHECK(contains(tamper("location", "link/passwd"), "outside the model's directory"));
  fs::remove_all(dir);
}

TEST_CASE("import: model-local functions are inlined") {
  auto m = single_input_model(17);
  auto& g = *m.mutable_graph();
  auto* fn = m.add_functions();
  fn->set_name("ConvRelu");
  fn->set_domain("custom");
  fn->add_input("a");
  fn->add_input("w");
  fn->add_output("out");
  auto* opset = fn->add_opset_import();
  opset->set_version(17);
  auto* c = fn->add_node();
  c->set_op_type("Conv");
  c->add_input("a");
  c->add_input("w");
  c->add_output("tmp");
  auto* pads = c->add_attribute();
  pads->set_name("pads");
  pads->set_ref_attr_name("conv_pads");
  pads->set_type(onnx::AttributeProto::INTS);
  auto* r = fn->add_node();
  r->set_op_type("Relu");
  r->add_input("tmp");
  r->add_output("out");
  auto* dom = m.add_opset_import();
  dom->set_domain("custom");
  dom->set_version(1);
  add_float_initializer(g, "w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
  auto& call = add_node(g, "ConvRelu", {"x", "w"}, {"y"}, "call0");
  call.set_domain("custom");
  set_ints_attribute(call, "conv_pads", {1, 1, 1, 1});
  add_output(m, "y");
  Graph graph = import_model(m);
  REQUIRE(graph.ops.size() == 2);
  CHECK(extents(graph, graph.outputs[0], 9, 11) == std::vector<int64_t>{1, 4, 9, 11});
  // A body written for another opset of the default domain: accepted where its operators have
  // the same schema at both (Conv: 11, Relu: 14 at opsets 16 and 17), refused where one differs,
  // not converted at the model's opset (where it could mean something else: Clip's attributes).
  opset->set_version(16);
  CHECK(import_model(m).ops.size() == 2);
  opset->set_version(6);
  ErrorCode code{};
  CHECK(contains(error_of([&] { import_model(m); }, &code),
                 "function 'ConvRelu' (called by node 'call0') imports opset 6 of the default ONNX domain, the model opset 17, and its "
                 "node '' (Conv) differs between them (versions 1 and 11)"));
  CHECK(code == ErrorCode::Unsupported);
}

// A function of domain "custom" from input "a" to output "out", its body left to the caller.
static onnx::FunctionProto* add_unary_function(onnx::ModelProto& m, const std::string& name) {
  auto* fn = m.add_functions();
  fn->set_name(name);
  fn->set_domain("custom");
  fn->add_input("a");
  fn->add_output("out");
  fn->add_opset_import()->set_version(17);
  fn->add_opset_import()->set_domain("custom");
  return fn;
}

// Functions each calling the next 8 times, 8 levels: within the depth limit, but 8^8 nodes
// inlined. Refused before inlining (counted per function), by name, where it grew until bad_alloc.
TEST_CASE("import: functions that fan out past 2^20 inlined nodes are refused") {
  auto m = single_input_model(17);
  const int levels = 8;
  for (int level = 0; level < levels; ++level) {
    auto* fn = add_unary_function(m, "F" + std::to_string(level));
    for (int k = 0; k < 8; ++k) {
      auto* n = fn->add_node();
      n->set_op_type(level + 1 < levels ? "F" + std::to_string(level + 1) : "Relu");
      if (level + 1 < levels) n->set_domain("custom");
      n->set_name("n" + std::to_string(k));
      n->add_input(k == 0 ? "a" : "t" + std::to_string(k - 1));
      n->add_output(k == 7 ? "out" : "t" + std::to_string(k));
    }
  }
  auto* dom = m.add_opset_import();
  dom->set_domain("custom");
  dom->set_version(1);
  add_node(*m.mutable_graph(), "F0", {"x"}, {"y"}, "fan_out").set_domain("custom");
  add_output(m, "y");
  ErrorCode code{};
  const std::string msg = error_of([&] { import_model(m); }, &code);
  CHECK(code == ErrorCode::InvalidModel);
  CHECK(contains(msg, "more than 1048576 nodes once its functions are inlined (passed at the call of function 'F0' by node 'fan_out')"));

  // The same fan-out onto a function with an empty body adds no node, only calls: capped too.
  auto* last = m.mutable_functions(levels - 1);
  last->clear_node();
  const std::string calls = error_of([&] { import_model(m); }, &code);
  CHECK(code == ErrorCode::InvalidModel);
  CHECK(contains(calls, "more than 1048576 function calls"));

  // One call per level: 17 levels are inlined, 18 are refused (the depth limit), and so is a
  // chain of 100 000 (on the way down: it recursed that deep before); a function that calls
  // itself through another is named.
  auto chain = [&](int depth, bool recursive) {
    auto c = single_input_model(17);
    for (int level = 0; level < depth; ++level) {
      auto* fn = add_unary_function(c, "G" + std::to_string(level));
      auto* n = fn->add_node();
      const bool calls_next = level + 1 < depth || recursive;
      n->set_op_type(calls_next ? "G" + std::to_string(level + 1 < depth ? level + 1 : 0) : "Relu");
      if (calls_next) n->set_domain("custom");
      n->add_input("a");
      n->add_output("out");
    }
    auto* d = c.add_opset_import();
    d->set_domain("custom");
    d->set_version(1);
    add_node(*c.mutable_graph(), "G0", {"x"}, {"y"}, "chain").set_domain("custom");
    add_output(c, "y");
    return c;
  };
  CHECK(import_model(chain(17, false)).ops.size() == 1);
  for (const int depth : {18, 100000}) {
    CHECK(contains(error_of([&] { import_model(chain(depth, false)); }, &code),
                   "function 'G0' nests function calls more than 17 levels deep; denox inlines at most 17"));
    CHECK(code == ErrorCode::InvalidModel);
  }
  CHECK(contains(error_of([&] { import_model(chain(3, true)); }, &code), "calls itself, directly or through other functions"));
  CHECK(code == ErrorCode::InvalidModel);

  // A 17-level chain counted first (memoized), then reached again one level deeper through K:
  // refused after K's body is counted, naming K.
  auto through = chain(17, false);
  auto* k = add_unary_function(through, "K");
  auto* call = k->add_node();
  call->set_op_type("G0");
  call->set_domain("custom");
  call->add_input("a");
  call->add_output("out");
  add_node(*through.mutable_graph(), "K", {"y"}, {"z"}, "through_k").set_domain("custom");
  add_output(through, "z");
  CHECK(contains(error_of([&] { import_model(through); }, &code), "function 'K' nests function calls more than 17 levels deep"));
  CHECK(code == ErrorCode::InvalidModel);
}

TEST_CASE("import: repeated axes, dimensions past the limit after a 0, amplifying Concats and out-of-range doubles") {
  // Pad and Slice with an axis named twice: an invalid model, not "the last one wins".
  {
    auto m = single_input_model(18);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "pads", {4}, {1, 1, 1, 1});
    add_int64_initializer(g, "axes", {2}, {2, 2});
    add_node(g, "Pad", {"x", "pads", "", "axes"}, {"y"}, "pad_twice");
    add_output(m, "y");
    CHECK(contains(error_of([&] { import_model(m); }), "node 'pad_twice' (Pad, opset 18): axes names axis 2 twice"));
  }
  {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "starts", {2}, {0, 1});
    add_int64_initializer(g, "ends", {2}, {4, 5});
    add_int64_initializer(g, "axes", {2}, {3, -1});
    add_node(g, "Slice", {"x", "starts", "ends", "axes"}, {"y"}, "slice_twice");
    add_output(m, "y");
    CHECK(contains(error_of([&] { import_model(m); }), "node 'slice_twice' (Slice, opset 17): axes names axis 3 twice"));
  }
  // A dimension past the tensor limit after a 0 (the product is 0, but sums and strides of such
  // dimensions would overflow).
  {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    auto& e = add_float_initializer(g, "e", {0}, {});
    e.clear_dims();
    for (int64_t d : {int64_t{0}, int64_t{1} << 62, int64_t{1} << 62}) e.add_dims(d);
    add_node(g, "Concat", {"e", "e"}, {"ee"}, "cat_empty");
    set_int_attribute(g.mutable_node()->at(g.node_size() - 1), "axis", 1);
    add_node(g, "Shape", {"ee"}, {"s"}, "shape_of_it");
    add_node(g, "Relu", {"x"}, {"y"}, "relu");
    add_output(m, "y");
    add_output(m, "s");
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(m); }, &code);
    CHECK(code == ErrorCode::InvalidModel);
    CHECK(contains(msg, "has a dimension of 4611686018427387904"));
  }
  // One initializer listed 1024 times: 2^26 elements from a 256 KiB file.
  {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_float_initializer(g, "w", {1 << 16}, std::vector<float>(1 << 16, 0.25f));
    auto& cat = add_node(g, "Concat", std::vector<std::string>(1024, "w"), {"big"}, "amplify");
    set_int_attribute(cat, "axis", 0);
    add_node(g, "Shape", {"big"}, {"s"}, "shape_of_big");
    add_node(g, "Relu", {"x"}, {"y"}, "relu");
    add_output(m, "y");
    add_output(m, "s");
    ErrorCode code{};
    const std::string msg = error_of([&] { import_model(m); }, &code);
    CHECK(code == ErrorCode::Unsupported);
    CHECK(contains(msg, "node 'amplify' (Concat, opset 17): concatenates its inputs into a constant of"));
  }
  // Coverage (the old code gave the same results on x86 without _GLIBCXX_ASSERTIONS or a
  // float-cast sanitizer): an empty constant sliced backwards stays empty; Clip bounds and a Pad
  // value beyond float's range become infinities (a plain conversion is undefined behaviour).
  {
    auto m = single_input_model(17);
    auto& g = *m.mutable_graph();
    add_int64_initializer(g, "empty", {0}, {});
    add_int64_initializer(g, "start", {1}, {0});
    add_int64_initializer(g, "end", {1}, {-10});
    add_int64_initializer(g, "axis0", {1}, {0});
    add_int64_initializer(g, "back", {1}, {-1});
    add_node(g, "Slice", {"empty", "start", "end", "axis0", "back"}, {"none"}, "slice_empty");
    add_int64_initializer(g, "base", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    add_node(g, "Concat", {"base", "none"}, {"pads"}, "pads");
    set_int_attribute(g.mutable_node()->at(g.node_size() - 1), "axis", 0);
    const auto add_double_scalar = [&](const std::string& name, double value) {
      auto& t = add_float_initializer(g, name, {}, {0.0f});
      t.set_data_type(onnx::TensorProto::DOUBLE);
      t.clear_float_data();
      t.clear_raw_data();
      t.add_double_data(value);
    };
    add_double_scalar("huge", 1e300);
    add_double_scalar("minus_huge", -1e300);
    add_node(g, "Clip", {"x", "minus_huge", "huge"}, {"c"}, "clip_wide");
    add_node(g, "Pad", {"c", "pads"}, {"y"}, "pad");
    add_output(m, "y");
    const Graph graph = import_model(m);
    CHECK(extents(graph, graph.outputs.at(0), 9, 11) == std::vector<int64_t>{1, 3, 11, 13});
  }
}

TEST_CASE("import: a Constant's value must be a tensor") {
  auto m = single_input_model(17);
  auto& g = *m.mutable_graph();
  auto& c = add_node(g, "Constant", {}, {"k"}, "not_a_tensor");
  auto* value = c.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::FLOAT);
  value->set_f(2.0f);
  add_node(g, "Mul", {"x", "k"}, {"y"}, "scale");
  add_output(m, "y");
  ErrorCode code{};
  CHECK(contains(error_of([&] { import_model(m); }, &code), "node 'not_a_tensor' (Constant, opset 17): attribute 'value' is not a tensor"));
  CHECK(code == ErrorCode::InvalidModel);
}

TEST_CASE("import: a network tensor's empty axis sliced backwards stays empty, and doubles saturate as rounding does") {
  // H sliced to nothing, then backwards: the clamped start (0) and end (-1) span one element,
  // which the old shape program gave the second slice (a read of index 0 of nothing).
  auto m = single_input_model(17);
  auto& g = *m.mutable_graph();
  add_int64_initializer(g, "zero", {1}, {0});
  add_int64_initializer(g, "h_axis", {1}, {2});
  add_node(g, "Slice", {"x", "zero", "zero", "h_axis"}, {"none"}, "to_nothing");
  add_int64_initializer(g, "minus_one", {1}, {-1});
  add_int64_initializer(g, "far_back", {1}, {std::numeric_limits<int64_t>::min()});
  add_node(g, "Slice", {"none", "minus_one", "far_back", "h_axis", "minus_one"}, {"y"}, "backwards");
  add_output(m, "y");
  const Graph graph = import_model(m);
  CHECK(extents(graph, graph.outputs.at(0), 9, 11) == std::vector<int64_t>{1, 3, 0, 11});

  CHECK(saturate_to_float(1e300) == std::numeric_limits<float>::infinity());
  CHECK(saturate_to_float(-1e300) == -std::numeric_limits<float>::infinity());
  CHECK(saturate_to_float(0x1.ffffffp+127) == std::numeric_limits<float>::infinity());  // half an ulp above FLT_MAX: rounds up
  CHECK(saturate_to_float(0x1.fffffefp+127) == FLT_MAX);                               // below it: rounds down
  CHECK(saturate_to_float(-0x1.fffffefp+127) == -FLT_MAX);
  CHECK(saturate_to_float(0.1) == 0.1f);
  CHECK(std::isnan(saturate_to_float(std::nan(""))));
}
