// The shader texts of shaders/, embedded into the library at build time (kernels.cmake,
// embed_shaders.cmake): a shader family is the name of a shaders/<family>.comp file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace denox::kernels {

// The GLSL text of shaders/<family>.comp. Throws denox::Error (InvalidArgument) naming the
// known families when there is no such file.
std::string_view shader_source(std::string_view family);

// The text of a file the shaders #include (e.g. "common.glsl"); nullopt when there is none.
std::optional<std::string_view> shader_include(std::string_view name);

// Every embedded file that is not a family (the includes), for hashing.
std::vector<std::string_view> shader_include_names();

// Every family (the .comp files), sorted.
std::vector<std::string> shader_families();

namespace detail {
struct EmbeddedShaderFile {
  std::string_view name;  // file name, e.g. "conv2d.comp"
  std::string_view text;
};
// Defined in the generated embedded_shaders.cpp.
const std::vector<EmbeddedShaderFile>& embedded_shader_files();
}  // namespace detail

}  // namespace denox::kernels
