// place_scratch and derive_barriers: the two set_extent decisions that need no device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

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

// The placement as it was written first: every candidate offset (0 and the aligned end of each
// live tensor placed before) tried against every live tensor, the lowest that fits. Cubic in the
// tensor count; the sweep that replaced it must choose the same offsets.
ArenaLayout place_by_trying_every_candidate(const std::vector<ScratchLifetime>& tensors, uint64_t alignment) {
  ArenaLayout layout;
  layout.offsets.assign(tensors.size(), 0);
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].size > tensors[b].size; });
  std::vector<size_t> placed;
  const auto aligned = [&](uint64_t v) { return (v + alignment - 1) / alignment * alignment; };
  for (size_t t : order) {
    if (tensors[t].first < 0 || tensors[t].size == 0) continue;
    std::vector<size_t> live;
    for (size_t p : placed)
      if (tensors[p].first <= tensors[t].last && tensors[t].first <= tensors[p].last) live.push_back(p);
    std::vector<uint64_t> candidates{0};
    for (size_t p : live) candidates.push_back(aligned(layout.offsets[p] + tensors[p].size));
    std::sort(candidates.begin(), candidates.end());
    for (uint64_t c : candidates) {
      bool fits = true;
      for (size_t p : live) fits = fits && !(c < layout.offsets[p] + tensors[p].size && layout.offsets[p] < c + tensors[t].size);
      if (fits) {
        layout.offsets[t] = c;
        break;
      }
    }
    placed.push_back(t);
    layout.size = std::max(layout.size, aligned(layout.offsets[t] + tensors[t].size));
  }
  return layout;
}

TEST_CASE("the placement sweep chooses what trying every candidate chose", "[runtime][schedule]") {
  std::mt19937 rng(20261201);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 40;
    const int64_t steps = 1 + static_cast<int64_t>(rng() % 12);
    std::vector<ScratchLifetime> tensors(n);
    for (auto& t : tensors) {
      t.size = rng() % 5 == 0 ? 0 : 1 + rng() % 5000;
      t.first = rng() % 9 == 0 ? -1 : static_cast<int64_t>(rng() % steps);
      t.last = t.first < 0 ? -1 : t.first + static_cast<int64_t>(rng() % (steps - t.first + 1));
    }
    const uint64_t alignment = uint64_t{1} << (rng() % 9);
    INFO("trial " << trial);
    const ArenaLayout got = place_scratch(tensors, alignment), want = place_by_trying_every_candidate(tensors, alignment);
    CHECK(got.offsets == want.offsets);
    CHECK(got.size == want.size);
  }
  // 16384 tensors, all live at once (the most a plan may hold): quadratic, not cubic.
  std::vector<ScratchLifetime> wide(16384, ScratchLifetime{4096, 0, 1});
  const ArenaLayout layout = place_scratch(wide, 256);
  CHECK(layout.size == 16384u * 4096u);
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

// derive_barriers as it was written first: every access against every access since the last
// barrier (quadratic in a frame's accesses). The interval sets that replaced it must agree on
// every non-empty access.
std::vector<bool> barriers_by_scanning(const std::vector<std::vector<MemoryAccess>>& commands) {
  const auto overlap = [](const MemoryAccess& a, const MemoryAccess& b) { return a.space == b.space && a.begin < b.end && b.begin < a.end; };
  std::vector<bool> barrier(commands.size(), false);
  std::vector<MemoryAccess> reads, writes;
  for (size_t i = 0; i < commands.size(); ++i) {
    bool hazard = false;
    for (const auto& access : commands[i]) {
      for (const auto& w : writes) hazard = hazard || overlap(access, w);
      if (access.write)
        for (const auto& r : reads) hazard = hazard || overlap(access, r);
    }
    if (hazard) {
      barrier[i] = true;
      reads.clear();
      writes.clear();
    }
    for (const auto& access : commands[i]) (access.write ? writes : reads).push_back(access);
  }
  return barrier;
}

TEST_CASE("barriers from interval sets agree with scanning every access", "[runtime][schedule]") {
  std::mt19937 rng(1201);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::vector<MemoryAccess>> commands(1 + rng() % 30);
    for (auto& c : commands) {
      c.resize(1 + rng() % 5);
      for (auto& a : c) {
        a.space = rng() % 3;
        a.begin = rng() % 200;
        a.end = a.begin + 1 + rng() % 60;
        a.write = rng() % 3 == 0;
      }
    }
    INFO("trial " << trial);
    CHECK(derive_barriers(commands) == barriers_by_scanning(commands));
  }
  // 4096 commands of 256 disjoint accesses each, never a hazard: the old scan compared ~5 * 10^11
  // pairs.
  std::vector<std::vector<MemoryAccess>> many(4096, std::vector<MemoryAccess>(256));
  uint64_t at = 0;
  for (auto& c : many)
    for (auto& a : c) {
      a = {1, at, at + 4, true};
      at += 8;
    }
  const std::vector<bool> none = derive_barriers(many);
  CHECK(std::count(none.begin(), none.end(), true) == 0);
  // An empty range (a zero-sized weight range, an adapter of an empty image) touches nothing:
  // no barrier before it, none after it because of it. Ranges that only touch do not overlap.
  CHECK(derive_barriers({{{0, 0, 64, true}}, {{0, 32, 32, false}}, {{0, 16, 16, true}}}) == std::vector<bool>{false, false, false});
  CHECK(derive_barriers({{{0, 0, 64, true}}, {{0, 64, 128, false}}, {{0, 63, 64, false}}}) == std::vector<bool>{false, false, true});
}
