// Import: ONNX ModelProto -> graph IR + shape program (pipeline step 1 and 2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "compiler/ir/graph.hpp"

namespace denox::compiler {

// What one model's constants may add up to at import, in elements. Both forms count: a decoded
// value (8 bytes an element) and a graph constant (4 more), so a weight counts twice and the
// budget holds ~2^29 weights, twice the largest single tensor (tensor_data.hpp), ~6 GiB; far
// above any real-time denoiser (OIDN's largest has ~10^7 weights). Each other limit is per
// tensor; this one stops a chain of Identities of one large constant from holding a copy each.
constexpr int64_t kMaxImportedConstantElements = int64_t{1} << 30;

// Graph inputs and outputs a model may have (each becomes an io tensor of its plan).
constexpr size_t kMaxGraphIo = 256;

struct ImportOptions {
  // Where external data files live. import_onnx_file sets it to the model's directory; for
  // bytes it is empty unless the caller knows the directory, and external data is then an error.
  std::optional<std::filesystem::path> base_dir;
  // The budget above; tests lower it to reach it with small models.
  int64_t max_constant_elements = kMaxImportedConstantElements;
};

// Both throw denox::Error: InvalidModel for malformed files, Unsupported listing every
// unsupported node at once (name, op type, opset), Io for unreadable files.
Graph import_onnx_bytes(const void* data, size_t size, const ImportOptions& options = {});
Graph import_onnx_file(const std::filesystem::path& path);

// The bytes of an ONNX file (read_regular_file), refused with InvalidModel before anything is
// read when it is past protobuf's 2 GiB. import_onnx_file and the C API's file loads use it.
std::string read_onnx_file(const std::filesystem::path& path);

// Opsets of the default domain that denox reads; node semantics follow each op's version.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 22;

}  // namespace denox::compiler
