// denox_onnx_node_tests: runs ONNX backend node tests against expectations.txt. See README.md
// next to this file for the manifest format and the modes.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "manifest.hpp"
#include "node_case.hpp"

namespace fs = std::filesystem;
using namespace denox::node_tests;

namespace {

fs::path data_dir() { return DENOX_ONNX_NODE_TEST_DIR; }
fs::path manifest_path() { return DENOX_ONNX_NODE_MANIFEST; }

bool require_data_dir() {
  if (fs::is_directory(data_dir())) return true;
  std::cerr << "FAIL: the ONNX node test data is missing: " << data_dir().string()
            << "\n  (scripts/setup-deps.sh unpacks Debian 13's libonnx-testdata there)\n";
  return false;
}

// The whole message on one line, for the survey's table.
std::string one_line(std::string s) {
  for (char& c : s) if (c == '\n' || c == '\t') c = ' ';
  return s;
}

std::vector<std::string> all_tests() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(data_dir())) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Prints every test's outcome in every variant: the raw material for expectations.txt.
int survey(const std::string& filter) {
  for (const auto& name : all_tests()) {
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    ModelSummary s = summarize_model(data_dir() / name);
    std::set<std::string> ops(s.op_types.begin(), s.op_types.end());
    std::string op_list;
    for (const auto& op : ops) op_list += (op_list.empty() ? "" : ",") + op;
    std::cout << name << "\t" << op_list << "\t" << s.opset << "\t" << s.node_names.size();
    for (Variant v : {Variant::AsIs, Variant::Frozen, Variant::Static, Variant::Dynamic}) {
      Outcome o = run_node_test(data_dir() / name, v);
      std::cout << "\t" << outcome_name(o.kind) << (o.kind == OutcomeKind::Unsupported && !names_a_node(o.message, s) ? "(unnamed)" : "")
                << "\t" << one_line(o.message);
    }
    std::cout << "\n" << std::flush;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!require_data_dir()) return 1;
  if (!args.empty() && args[0] == "--survey") return survey(args.size() > 1 ? args[1] : "");
  return run_manifest_mode(args, data_dir(), manifest_path());
}
