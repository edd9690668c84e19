// Helpers shared by the importer's tests (test_import.cpp, test_import_limits.cpp).
#pragma once

#include <functional>
#include <string>

#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "modelgen/onnx_writer.hpp"

namespace denox::test {

inline compiler::Graph import_model(const onnx::ModelProto& m, const compiler::ImportOptions& options = {}) {
  const std::string bytes = m.SerializeAsString();
  return compiler::import_onnx_bytes(bytes.data(), bytes.size(), options);
}

// The message of the denox::Error that `f` throws ("" if none), and its code.
inline std::string error_of(const std::function<void()>& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace denox::test
