#include "manifest.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/import/node_context.hpp"

namespace denox::node_tests {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Every op type the importer has a converter for, in either form. A node test whose model
// uses only these ops is one denox claims to handle, so the manifest must say what it does.
bool op_is_claimed(const std::string& op) {
  return compiler::static_converters().count(op) || compiler::tensor_converters().count(op);
}

bool test_is_claimed(const ModelSummary& s) {
  return !s.op_types.empty() && std::all_of(s.op_types.begin(), s.op_types.end(), op_is_claimed);
}

std::vector<std::string> test_dirs(const fs::path& data_dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(data_dir)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string label(const Expectation& e) { return e.test + variant_suffix(e.variant); }

// Empty when the outcome is what `e` expects, else why not (one line per problem).
std::string check(const Expectation& e, const Outcome& o, const ModelSummary& s) {
  if (e.pass) {
    if (o.kind == OutcomeKind::Pass) return "";
    return std::string("expected pass, got ") + outcome_name(o.kind) + ": " + o.message;
  }
  if (o.kind == OutcomeKind::Pass) {
    return "expected unsupported (\"" + e.substring + "\") but it now PASSES: change the manifest line to 'pass'";
  }
  if (o.kind != OutcomeKind::Unsupported) {
    return std::string("expected an Unsupported error, got ") + outcome_name(o.kind) + ": " + o.message;
  }
  std::string why;
  if (o.message.find(e.substring) == std::string::npos) why += "the error does not contain \"" + e.substring + "\"; ";
  if (!e.model_level && !names_a_node(o.message, s)) why += "the error does not name the node (name, op type, opset); ";
  if (why.empty()) return "";
  return why + "error: " + o.message;
}

// Runs the entries, printing one line each; returns how many did not meet their expectation.
int run_entries(const std::vector<Expectation>& entries, const fs::path& data_dir) {
  int failed = 0, passed = 0, unsupported = 0;
  auto start = std::chrono::steady_clock::now();
  for (const auto& e : entries) {
    fs::path dir = data_dir / e.test;
    std::string why;
    if (!fs::is_directory(dir)) {
      why = "no such test directory " + dir.string();
    } else {
      try {
        ModelSummary s = summarize_model(dir);
        why = check(e, run_node_test(dir, e.variant), s);
      } catch (const std::exception& ex) {
        why = std::string("broken test data: ") + ex.what();
      }
    }
    if (why.empty()) {
      (e.pass ? passed : unsupported)++;
      std::cout << "  ok    " << label(e) << (e.pass ? "" : "  (unsupported, as expected)") << "\n";
    } else {
      ++failed;
      std::cout << "  FAIL  " << label(e) << " (expectations.txt:" << e.line << ")\n        " << why << "\n";
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << passed << " passed, " << unsupported << " unsupported as expected, " << failed << " failed (" << secs << " s)\n";
  return failed;
}

// Every claimed test is listed (as-is), every listed test exists, nothing is listed twice, and
// every +frozen/+static entry has its as-is entry (which records why the plain test cannot run).
int check_manifest(const std::vector<Expectation>& entries, const fs::path& data_dir) {
  int problems = 0;
  std::set<std::string> listed_as_is, labels;
  for (const auto& e : entries) {
    if (!labels.insert(label(e)).second) {
      std::cout << "  expectations.txt:" << e.line << ": " << label(e) << " is listed twice\n";
      ++problems;
    }
    if (e.variant == Variant::AsIs) listed_as_is.insert(e.test);
    if (!fs::is_directory(data_dir / e.test)) {
      std::cout << "  expectations.txt:" << e.line << ": no test directory " << e.test << "\n";
      ++problems;
    }
  }
  for (const auto& e : entries) {
    if (e.variant != Variant::AsIs && !listed_as_is.count(e.test)) {
      std::cout << "  expectations.txt:" << e.line << ": " << label(e) << " has no as-is entry for " << e.test << "\n";
      ++problems;
    }
  }
  size_t claimed = 0;
  for (const auto& name : test_dirs(data_dir)) {
    ModelSummary s = summarize_model(data_dir / name);
    if (!test_is_claimed(s)) continue;
    ++claimed;
    if (!listed_as_is.count(name)) {
      std::cout << "  " << name << " uses only ops the importer claims but is not in expectations.txt\n";
      ++problems;
    }
  }
  std::cout << claimed << " node tests use only claimed ops; " << entries.size() << " manifest entries; " << problems
            << " problem(s)\n";
  return problems;
}

// Tests of ops denox has no converter for are not listed; each must still fail with an
// Unsupported error that names a node with its op type and opset, never run or crash.
int check_unlisted(const std::vector<Expectation>& entries, const fs::path& data_dir) {
  std::set<std::string> listed;
  for (const auto& e : entries) listed.insert(e.test);
  int problems = 0, checked = 0;
  for (const auto& name : test_dirs(data_dir)) {
    if (listed.count(name)) continue;
    ModelSummary s = summarize_model(data_dir / name);
    if (test_is_claimed(s)) continue;  // check_manifest reports it
    ++checked;
    Outcome o = run_node_test(data_dir / name, Variant::AsIs);
    std::string why;
    if (o.kind != OutcomeKind::Unsupported) why = std::string("expected unsupported, got ") + outcome_name(o.kind);
    else if (!names_a_node(o.message, s)) why = "the error does not name the node (name, op type, opset)";
    if (!why.empty()) {
      ++problems;
      std::cout << "  FAIL  " << name << ": " << why << "\n        " << o.message << "\n";
    }
  }
  std::cout << checked << " tests of unclaimed ops checked, " << problems << " problem(s)\n";
  return problems;
}

}  // namespace

std::vector<Expectation> read_manifest(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::vector<Expectation> out;
  std::string family, line;
  for (int no = 1; std::getline(in, line); ++no) {
    std::string where = path.filename().string() + ":" + std::to_string(no) + ": ";
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') throw std::runtime_error(where + "malformed header " + line);
      family = line.substr(1, line.size() - 2);
      continue;
    }
    if (family.empty()) throw std::runtime_error(where + "entry before the first [Family] header");
    Expectation e;
    e.family = family;
    e.line = no;
    size_t gap = line.find_first_of(" \t");
    if (gap == std::string::npos) throw std::runtime_error(where + "expected '<test> pass' or '<test> unsupported: <text>'");
    e.test = line.substr(0, gap);
    std::string rest = trim(line.substr(gap));
    for (Variant v : {Variant::Frozen, Variant::Static, Variant::Dynamic}) {
      std::string suffix = variant_suffix(v);
      if (e.test.size() > suffix.size() && e.test.compare(e.test.size() - suffix.size(), suffix.size(), suffix) == 0) {
        e.test.resize(e.test.size() - suffix.size());
        e.variant = v;
      }
    }
    if (rest == "pass") {
      e.pass = true;
    } else if (rest.rfind("unsupported:", 0) == 0 || rest.rfind("unsupported-model:", 0) == 0) {
      e.pass = false;
      e.model_level = rest[11] == '-';
      e.substring = trim(rest.substr(rest.find(':') + 1));
      if (e.substring.empty()) throw std::runtime_error(where + "'unsupported:' needs the text the error must contain");
    } else {
      throw std::runtime_error(where + "unknown expectation '" + rest + "'");
    }
    out.push_back(std::move(e));
  }
  return out;
}

int run_manifest_mode(const std::vector<std::string>& args, const fs::path& data_dir, const fs::path& manifest) {
  std::vector<Expectation> entries;
  try {
    entries = read_manifest(manifest);
  } catch (const std::exception& e) {
    std::cerr << "FAIL: " << e.what() << "\n";
    return 1;
  }
  const std::string mode = args.empty() ? "--all" : args[0];
  if (mode == "--family" && args.size() == 2) {
    std::vector<Expectation> mine;
    for (const auto& e : entries) {
      if (e.family == args[1]) mine.push_back(e);
    }
    if (mine.empty()) {
      std::cerr << "FAIL: no [" << args[1] << "] entries in " << manifest.string() << "\n";
      return 1;
    }
    return run_entries(mine, data_dir) ? 1 : 0;
  }
  if (mode == "--all") return run_entries(entries, data_dir) ? 1 : 0;
  if (mode == "--check-manifest") return check_manifest(entries, data_dir) ? 1 : 0;
  if (mode == "--unlisted") return check_unlisted(entries, data_dir) ? 1 : 0;
  if (mode == "--list-families") {
    std::set<std::string> seen;
    for (const auto& e : entries) {
      if (seen.insert(e.family).second) std::cout << e.family << "\n";
    }
    return 0;
  }
  std::cerr << "usage: denox_onnx_node_tests [--all | --family NAME | --check-manifest | --unlisted | --list-families | "
               "--survey [FILTER]]\n";
  return 2;
}

}  // namespace denox::node_tests
