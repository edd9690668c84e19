#pragma once
// One JSON object on stdout for the CLI's --json flags. nlohmann escapes what model and cache
// paths, device names and cache rows may hold (quotes, backslashes); bytes that are not UTF-8 (a
// Linux path may have them) become U+FFFD instead of throwing mid-output. ordered_json keeps the
// keys in the order each command lists them.
#include <cstdio>

#include <nlohmann/json.hpp>

namespace denox::cli {

inline void print_json(const nlohmann::ordered_json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

}  // namespace denox::cli
