#include "runtime/vulkan/schedule.hpp"

#include <algorithm>
#include <numeric>

#include "common/error.hpp"

namespace denox::runtime {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool overlaps(const MemoryAccess& a, const MemoryAccess& b) {
  return a.space == b.space && a.begin < b.end && b.begin < a.end;
}

}  // namespace

ArenaLayout place_scratch(const std::vector<ScratchLifetime>& tensors, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) fail(ErrorCode::Internal, "scratch alignment must be a power of two");
  ArenaLayout layout;
  layout.offsets.assign(tensors.size(), 0);
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].size > tensors[b].size; });

  struct Placed {
    uint64_t begin, end;
    int64_t first, last;
  };
  std::vector<Placed> placed;
  for (size_t t : order) {
    const auto& tensor = tensors[t];
    if (tensor.first < 0 || tensor.size == 0) continue;
    // Candidate offsets: 0 and the aligned end of every live-overlapping placed tensor; take the
    // lowest one that collides with none of them.
    std::vector<const Placed*> live;
    for (const auto& p : placed)
      if (p.first <= tensor.last && tensor.first <= p.last) live.push_back(&p);
    std::vector<uint64_t> candidates{0};
    for (const Placed* p : live) candidates.push_back(align_up(p->end, alignment));
    std::sort(candidates.begin(), candidates.end());
    uint64_t chosen = candidates.back();
    for (uint64_t c : candidates) {
      const uint64_t end = c + tensor.size;
      if (std::none_of(live.begin(), live.end(), [&](const Placed* p) { return c < p->end && p->begin < end; })) {
        chosen = c;
        break;
      }
    }
    layout.offsets[t] = chosen;
    placed.push_back({chosen, chosen + tensor.size, tensor.first, tensor.last});
    layout.size = std::max(layout.size, align_up(chosen + tensor.size, alignment));
  }
  return layout;
}

std::vector<bool> derive_barriers(const std::vector<std::vector<MemoryAccess>>& commands) {
  std::vector<bool> barrier(commands.size(), false);
  std::vector<MemoryAccess> reads, writes;  // since the last barrier
  for (size_t i = 0; i < commands.size(); ++i) {
    bool hazard = false;
    for (const auto& access : commands[i]) {
      for (const auto& w : writes) hazard = hazard || overlaps(access, w);                    // RAW, WAW
      if (access.write)
        for (const auto& r : reads) hazard = hazard || overlaps(access, r);                   // WAR
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

}  // namespace denox::runtime
