// Run-time compilation of the embedded shaders (shaders/<family>.comp) to SPIR-V with the
// glslang library, for Vulkan 1.3 / SPIR-V 1.6, with a pluggable cache so that a cache hit
// compiles nothing (and the stats show it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/plan/plan.hpp"

namespace denox::kernels {

// -D name=value pairs, as in plan::Pipeline::defines.
using Defines = std::vector<std::pair<std::string, std::string>>;

// The macro set a pipeline is compiled with: `defines` sorted by name plus STORAGE_F16=1 for
// fp16 precision. Throws InvalidArgument for a name that is not an identifier, a value with a
// line break, a duplicate name, or a define of STORAGE_F16 itself.
Defines effective_defines(const Defines& defines, plan::Precision precision);

// Splits STORAGE_F16=1 off a macro set (the form the runtime's io adapters use, see
// runtime::AdapterCompiler) into a precision.
std::pair<Defines, plan::Precision> split_storage_define(const Defines& defines);

// Hex digest (XXH3-128 over length-prefixed fields) of everything that determines the SPIR-V: a format tag, the
// glslang version and target environment, the family's text and every include's text, and the
// effective defines. Equal hashes mean equal SPIR-V, so a cache may skip compiling.
std::string shader_source_hash(std::string_view family, const Defines& defines,
                               plan::Precision precision = plan::Precision::F32);

// "glslang 15.2.0" (what the hash includes).
std::string glslang_version_string();

struct ShaderCompileStats {
  uint64_t compiled = 0;    // glslang runs
  uint64_t cache_hits = 0;  // lookups that returned usable SPIR-V
  uint64_t cache_stores = 0;
};

class ShaderCompiler {
 public:
  // Returns the SPIR-V stored under `hash`, or nullopt. A result that is not SPIR-V (empty, bad
  // magic number) is ignored and the shader is compiled (and stored) again.
  using CacheLookup = std::function<std::optional<std::vector<uint32_t>>(const std::string& hash)>;
  using CacheStore = std::function<void(const std::string& hash, const std::vector<uint32_t>& spirv)>;

  ShaderCompiler() = default;
  void set_cache(CacheLookup lookup, CacheStore store);

  // Thread-safe: several threads may compile at once (the cache functions are then called
  // concurrently too). Throws denox::Error: InvalidArgument for an unknown family or bad
  // defines, Internal with glslang's log, the family and the defines when the shader does not
  // compile.
  std::vector<uint32_t> compile(std::string_view family, const Defines& defines, plan::Precision precision);
  // The same with the precision given as STORAGE_F16=1 among the defines (or absent for fp32):
  // what runtime::AdapterCompiler calls, e.g.
  //   [&](const auto& family, const auto& defines) { return compiler.compile_with_storage_define(family, defines); }
  std::vector<uint32_t> compile_with_storage_define(std::string_view family, const Defines& defines);

  ShaderCompileStats stats() const;
  void reset_stats();

 private:
  CacheLookup lookup_;
  CacheStore store_;
  std::atomic<uint64_t> compiled_{0}, cache_hits_{0}, cache_stores_{0};
};

// Compiles without any cache (tools, tests). Same errors as ShaderCompiler::compile.
std::vector<uint32_t> compile_shader(std::string_view family, const Defines& defines, plan::Precision precision);

// Fills every pipeline's spirv (those already filled are kept), compiling on up to
// `threads` threads (0: hardware concurrency).
// `before_each` runs before each compile, on the thread that does it (a background job's cancel
// check: what it throws stops the workers taking more and is rethrown).
void compile_pipelines(plan::Plan& plan, ShaderCompiler& compiler, unsigned threads = 0,
                       const std::function<void()>& before_each = {});

}  // namespace denox::kernels
