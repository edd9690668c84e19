// denox::Error's messages are printable: names from a model or a file may hold any bytes.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>

#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "io/npy.hpp"
#include "modelgen/onnx_writer.hpp"

using denox::Error;
using denox::printable_message;

TEST_CASE("error messages escape control characters and bytes that are not UTF-8", "[error]") {
  CHECK(printable_message("plain\n\ttext") == "plain\n\ttext");  // multi-problem layout stays
  CHECK(printable_message("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
  CHECK(printable_message("stray \xff\xfe") == "stray \\xff\\xfe");
  CHECK(printable_message("escape \x1b[2J") == "escape \\x1b[2J");
  CHECK(printable_message("c1 \xc2\x9b") == "c1 \\xc2\\x9b");               // CSI as UTF-8
  CHECK(printable_message("overlong \xc0\xaf") == "overlong \\xc0\\xaf");
  CHECK(printable_message("surrogate \xed\xa0\x80") == "surrogate \\xed\\xa0\\x80");
  CHECK(printable_message("cut \xe2\x86") == "cut \\xe2\\x86");
  CHECK(printable_message("above U+10FFFF \xf4\x90\x80\x80") == "above U+10FFFF \\xf4\\x90\\x80\\x80");
  CHECK(printable_message("del \x7f\r") == "del \\x7f\\x0d");
  CHECK(printable_message(std::string("a\0b", 3)) == "a\\x00b");
  // Bidirectional controls and line separators reorder or break the line they are shown in.
  CHECK(printable_message("rlo \xe2\x80\xae'cba'") == "rlo \\xe2\\x80\\xae'cba'");
  CHECK(printable_message("isolates \xe2\x81\xa6\xe2\x81\xa9") == "isolates \\xe2\\x81\\xa6\\xe2\\x81\\xa9");
  CHECK(printable_message("marks \xe2\x80\x8e\xe2\x80\x8f\xd8\x9c") == "marks \\xe2\\x80\\x8e\\xe2\\x80\\x8f\\xd8\\x9c");
  CHECK(printable_message("separators \xe2\x80\xa8\xe2\x80\xa9") == "separators \\xe2\\x80\\xa8\\xe2\\x80\\xa9");
  // Their neighbours are ordinary text: an en dash (U+2013), a bullet (U+2022), U+2070, Arabic.
  CHECK(printable_message("\xe2\x80\x93 \xe2\x80\xa2 \xe2\x81\xb0 \xd8\xa8") == "\xe2\x80\x93 \xe2\x80\xa2 \xe2\x81\xb0 \xd8\xa8");
  CHECK(printable_message(printable_message("twice \x01")) == "twice \\x01");  // rethrown messages
  CHECK(std::string(Error(denox::ErrorCode::Io, std::string("x\0y", 3)).what()) == "x\\x00y");
}

TEST_CASE("a node name with a NUL, an escape and a stray byte is printed whole", "[error]") {
  using denox::modelgen::Dim;
  onnx::ModelProto m = denox::modelgen::make_model(17, "test");
  auto& g = *m.mutable_graph();
  denox::modelgen::add_graph_input(g, denox::modelgen::make_value_info("x", onnx::TensorProto::FLOAT,
                                                                       {Dim::fixed(1), Dim::fixed(3), Dim::symbolic("H"), Dim::symbolic("W")}));
  denox::modelgen::add_node(g, "Softmax", {"x"}, {"y"}, std::string("bad\0name\x1b[2J\xff", 13));
  g.add_output()->set_name("y");
  const std::string bytes = m.SerializeAsString();
  try {
    denox::compiler::import_onnx_bytes(bytes.data(), bytes.size());
    FAIL("imported");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("node 'bad\\x00name\\x1b[2J\\xff' (Softmax, opset 17)"));
  }
  // A .npy header with a NUL: the echo of the header goes past it.
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  const std::string header = std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': '\0'}", 65);
  npy += static_cast<char>(header.size());
  npy += '\0';
  npy += header;
  try {
    denox::io::parse_npy(npy, "nul.npy");
    FAIL("parsed");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("\\x00'}"));
  }
}
