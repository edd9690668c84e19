// expectations.txt: what each ONNX node test of an op denox claims must do. See README.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "node_case.hpp"

namespace denox::node_tests {

struct Expectation {
  std::string family;  // the [Header] the entry is listed under
  std::string test;    // directory name
  Variant variant = Variant::AsIs;
  bool pass = true;
  std::string substring;  // !pass: the Unsupported message must contain it
  bool model_level = false;  // "unsupported-model:": no node is at fault, so none is named
  int line = 0;
};

// Throws std::runtime_error naming the line for anything malformed.
std::vector<Expectation> read_manifest(const std::filesystem::path& path);

// --family NAME | --check-manifest | --unlisted | --all | --list-families. Returns the exit code.
int run_manifest_mode(const std::vector<std::string>& args, const std::filesystem::path& data_dir,
                      const std::filesystem::path& manifest);

}  // namespace denox::node_tests
