#include "kernels/quant.hpp"

#include <cstdio>

#include "runtime/cache/content_hash.hpp"

namespace denox::kernels {

std::string quant_table_key(const QuantTable& table) {
  // Every entry as "name scale zero-point" with the scale's exact digits (%a), in name order.
  std::string text;
  for (const auto& [name, q] : table) {
    char numbers[64];
    std::snprintf(numbers, sizeof numbers, " %a %d\n", static_cast<double>(q.scale), q.zero_point);
    text += name + numbers;
  }
  return "q8:" + std::to_string(table.size()) + ":" + cache::content_hash_hex(text);
}

}  // namespace denox::kernels
