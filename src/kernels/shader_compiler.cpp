#include "kernels/shader_compiler.hpp"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <thread>

#include "common/error.hpp"
#include "common/run_on_threads.hpp"
#include "kernels/shader_source.hpp"
#include "runtime/cache/content_hash.hpp"

namespace denox::kernels {

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203u;
constexpr const char* kPrecisionDefine = "STORAGE_F16";

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string describe(std::string_view family, const Defines& defines) {
  std::string s = "shader '" + std::string(family) + "'";
  for (const auto& [name, value] : defines) s += " -D" + name + "=" + value;
  return s;
}

// glslang's process-wide tables: initialized once, on first use, from any thread. Never
// finalized: other threads may still compile while the process exits.
void ensure_glslang() {
  static std::once_flag once;
  std::call_once(once, [] { glslang::InitializeProcess(); });
}

// Resolves #include "x.glsl" from the embedded files only: shaders never read the disk.
class EmbeddedIncluder : public glslang::TShader::Includer {
 public:
  IncludeResult* includeLocal(const char* name, const char*, size_t) override { return find(name); }
  IncludeResult* includeSystem(const char* name, const char*, size_t) override { return find(name); }
  void releaseInclude(IncludeResult* result) override { delete result; }

 private:
  static IncludeResult* find(const char* name) {
    auto text = shader_include(name);
    if (!text) return nullptr;
    return new IncludeResult(name, text->data(), text->size(), nullptr);
  }
};

std::vector<uint32_t> run_glslang(std::string_view family, const Defines& effective) {
  ensure_glslang();
  const std::string_view source = shader_source(family);
  std::string preamble;
  for (const auto& [name, value] : effective) preamble += "#define " + name + " " + value + "\n";
  const std::string file_name = std::string(family) + ".comp";

  glslang::TShader shader(EShLangCompute);
  const char* text = source.data();
  const int length = static_cast<int>(source.size());
  const char* name = file_name.c_str();
  shader.setStringsWithLengthsAndNames(&text, &length, &name, 1);
  shader.setPreamble(preamble.c_str());
  shader.setEntryPoint("main");
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_3);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_6);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  EmbeddedIncluder includer;
  auto failure = [&](const char* stage, const std::string& log) {
    fail(ErrorCode::Internal, describe(family, effective) + " failed to " + stage + ":\n" + log);
  };
  if (!shader.parse(GetDefaultResources(), 450, ECoreProfile, false, false, messages, includer)) {
    failure("compile", std::string(shader.getInfoLog()) + shader.getInfoDebugLog());
  }
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) failure("link", std::string(program.getInfoLog()) + program.getInfoDebugLog());

  std::vector<uint32_t> spirv;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  options.generateDebugInfo = false;
  options.disableOptimizer = true;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
  const std::string log = logger.getAllMessages();
  if (spirv.empty() || spirv[0] != kSpirvMagic) failure("generate SPIR-V", log);
  return spirv;
}

}  // namespace

Defines effective_defines(const Defines& defines, plan::Precision precision) {
  Defines out = defines;
  std::sort(out.begin(), out.end());
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& [name, value] = out[i];
    if (!is_identifier(name)) fail(ErrorCode::InvalidArgument, "shader define name '" + name + "' is not an identifier");
    // Values are numbers or names (every define denox makes is); a value of several tokens
    // could make a plan file's defines expand exponentially inside glslang ("A1 A1", "A2 A2", ...).
    const bool token = value.size() <= 64 && std::all_of(value.begin(), value.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' || c == '-';
                       });
    if (!token) fail(ErrorCode::InvalidArgument, "shader define " + name + " has a value that is not one number or name of at most 64 characters");
    if (name == kPrecisionDefine) {
      fail(ErrorCode::InvalidArgument, std::string(kPrecisionDefine) + " is set from the plan's precision, not by a define");
    }
    if (i > 0 && out[i - 1].first == name) fail(ErrorCode::InvalidArgument, "shader define " + name + " is given twice");
  }
  if (precision == plan::Precision::F16) {
    out.emplace_back(kPrecisionDefine, "1");
    std::sort(out.begin(), out.end());
  }
  return out;
}

std::string glslang_version_string() {
  return "glslang " + std::to_string(GLSLANG_VERSION_MAJOR) + "." + std::to_string(GLSLANG_VERSION_MINOR) + "." +
         std::to_string(GLSLANG_VERSION_PATCH) + GLSLANG_VERSION_FLAVOR;
}

std::string shader_source_hash(std::string_view family, const Defines& defines, plan::Precision precision) {
  const Defines effective = effective_defines(defines, precision);
  // Length-prefixed fields, so that ("ab", "c") and ("a", "bc") differ.
  cache::ContentHasher h;
  h.field("denox-shader-v2");
  h.field(glslang_version_string());
  h.field("vulkan1.3 spirv1.6");
  h.field(family);
  h.field(shader_source(family));
  for (std::string_view include : shader_include_names()) {
    h.field(include);
    h.field(*shader_include(include));
  }
  for (const auto& [name, value] : effective) {
    h.field(name);
    h.field(value);
  }
  return h.hex();
}

void ShaderCompiler::set_cache(CacheLookup lookup, CacheStore store) {
  lookup_ = std::move(lookup);
  store_ = std::move(store);
}

std::vector<uint32_t> ShaderCompiler::compile(std::string_view family, const Defines& defines, plan::Precision precision) {
  const Defines effective = effective_defines(defines, precision);
  std::string hash;
  if (lookup_ || store_) hash = shader_source_hash(family, defines, precision);
  if (lookup_) {
    if (auto cached = lookup_(hash); cached && !cached->empty() && (*cached)[0] == kSpirvMagic) {
      ++cache_hits_;
      return std::move(*cached);
    }
  }
  std::vector<uint32_t> spirv = run_glslang(family, effective);
  ++compiled_;
  if (store_) {
    store_(hash, spirv);
    ++cache_stores_;
  }
  return spirv;
}

std::pair<Defines, plan::Precision> split_storage_define(const Defines& defines) {
  Defines rest;
  plan::Precision precision = plan::Precision::F32;
  for (const auto& [name, value] : defines) {
    if (name != kPrecisionDefine) {
      rest.emplace_back(name, value);
    } else if (value == "1") {
      precision = plan::Precision::F16;
    } else {
      fail(ErrorCode::InvalidArgument, std::string(kPrecisionDefine) + " must be 1 when given, not '" + value + "'");
    }
  }
  return {std::move(rest), precision};
}

std::vector<uint32_t> ShaderCompiler::compile_with_storage_define(std::string_view family, const Defines& defines) {
  const auto [rest, precision] = split_storage_define(defines);
  return compile(family, rest, precision);
}

ShaderCompileStats ShaderCompiler::stats() const { return {compiled_.load(), cache_hits_.load(), cache_stores_.load()}; }

void ShaderCompiler::reset_stats() {
  compiled_ = 0;
  cache_hits_ = 0;
  cache_stores_ = 0;
}

std::vector<uint32_t> compile_shader(std::string_view family, const Defines& defines, plan::Precision precision) {
  return run_glslang(family, effective_defines(defines, precision));
}

void compile_pipelines(plan::Plan& plan, ShaderCompiler& compiler, unsigned threads, const std::function<void()>& before_each) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < plan.pipelines.size(); ++i) {
    if (plan.pipelines[i].spirv.empty()) todo.push_back(i);
  }
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, todo.size()));
  // Each thread takes the next pipeline; the first error is rethrown after all have joined.
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  run_on_threads(threads, failed, [&] {
    for (size_t k; !failed && (k = next++) < todo.size();) {
      auto& p = plan.pipelines[todo[k]];
      if (before_each) before_each();
      p.spirv = compiler.compile(p.family, p.defines, plan.precision);
    }
  });
}

}  // namespace denox::kernels
