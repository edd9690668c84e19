#include "kernels/shader_source.hpp"

#include "common/error.hpp"

namespace denox::kernels {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

constexpr std::string_view kFamilySuffix = ".comp";

}  // namespace

std::vector<std::string> shader_families() {
  std::vector<std::string> families;
  for (const auto& f : detail::embedded_shader_files()) {
    if (ends_with(f.name, kFamilySuffix)) families.emplace_back(f.name.substr(0, f.name.size() - kFamilySuffix.size()));
  }
  return families;  // the generator emits files sorted by name
}

std::string_view shader_source(std::string_view family) {
  for (const auto& f : detail::embedded_shader_files()) {
    if (ends_with(f.name, kFamilySuffix) && f.name.substr(0, f.name.size() - kFamilySuffix.size()) == family) return f.text;
  }
  std::string known;
  for (const auto& name : shader_families()) known += (known.empty() ? "" : ", ") + name;
  fail(ErrorCode::InvalidArgument, "unknown shader family '" + std::string(family) + "' (shaders/ has: " + known + ")");
}

std::optional<std::string_view> shader_include(std::string_view name) {
  for (const auto& f : detail::embedded_shader_files()) {
    if (f.name == name && !ends_with(f.name, kFamilySuffix)) return f.text;
  }
  return std::nullopt;
}

std::vector<std::string_view> shader_include_names() {
  std::vector<std::string_view> names;
  for (const auto& f : detail::embedded_shader_files()) {
    if (!ends_with(f.name, kFamilySuffix)) names.push_back(f.name);
  }
  return names;
}

}  // namespace denox::kernels
