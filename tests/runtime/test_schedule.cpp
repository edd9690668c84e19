// place_scratch and derive_barriers: the two set_extent decisions that need no device.
#include <catch2/catch.hpp>

#include "runtime/vulkan/schedule.hpp"

using namespace denox::runtime;

TEST_CASE("scratch tensors share memory only when their lifetimes do not overlap", "[runtime][schedule]") {
  // A chain a -> b -> c -> d: a and c may share, b and d may share.
  const std::vector<ScratchLifetime> chain = {{1000, 0, 1}, {3000, 1, 2}, {1000, 2, 3}, {500, 3, 4}};
  const ArenaLayout layout = place_scratch(chain, 256);
  for (size_t i = 0; i < chain.size(); ++i) {
    CHECK(layout.offsets[i] % 256 == 0);
    for (size_t j = i + 1; j < chain.size(); ++j) {
      const bool live_together = chain[i].first <= chain[j].last && chain[j].first <= chain[i].last;
      const bool bytes_overlap = layout.offsets[i] < layout.offsets[j] + chain[j].size && layout.offsets[j] < layout.offsets[i] + chain[i].size;
      CHECK_FALSE((live_together && bytes_overlap));
    }
  }
  // Two live tensors at a time: the arena is the largest adjacent pair, not the sum of all.
  CHECK(layout.size <= 3072 + 1024);
  CHECK(layout.size < 1000 + 3000 + 1000 + 500);
}

TEST_CASE("untouched and empty tensors get no memory", "[runtime][schedule]") {
  const ArenaLayout layout = place_scratch({{4096, -1, -1}, {0, 0, 3}, {100, 0, 0}}, 256);
  CHECK(layout.size == 256);
}

TEST_CASE("barriers: read after write, write after read, write after write, none between independent work",
          "[runtime][schedule]") {
  auto r = [](uint64_t b, uint64_t e) { return MemoryAccess{0, b, e, false}; };
  auto w = [](uint64_t b, uint64_t e) { return MemoryAccess{0, b, e, true}; };
  // 0 writes A; 1 writes B (independent); 2 reads A (RAW); 3 writes A (WAR on 2's read);
  // 4 writes a disjoint part of C; 5 another disjoint part of C; 6 reads all of C.
  const std::vector<std::vector<MemoryAccess>> commands = {
      {w(0, 100)}, {w(100, 200)}, {r(0, 100), w(200, 300)}, {w(0, 100)}, {w(300, 350)}, {w(350, 400)}, {r(300, 400)}};
  const std::vector<bool> expected = {false, false, true, true, false, false, true};
  CHECK(derive_barriers(commands) == expected);
  // Another memory space never conflicts.
  CHECK(derive_barriers({{w(0, 10)}, {MemoryAccess{1, 0, 10, false}}}) == std::vector<bool>{false, false});
}
