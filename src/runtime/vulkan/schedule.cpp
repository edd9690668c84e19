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

std::optional<std::array<uint64_t, 2>> copy_write_range(const std::vector<uint32_t>& push, const std::array<uint32_t, 3>& groups,
                                                        uint32_t element_size) {
  constexpr size_t kWords = 13, kDstOffset = 8, kDstStrides = 9;
  if (push.size() != kWords || push[0] == 0) return std::nullopt;
  const auto word = [&](size_t i) { return static_cast<int64_t>(static_cast<int32_t>(push[i])); };
  const std::array<int64_t, 4> extents = {groups[2] / push[0], push[0], push[1], push[2]};
  int64_t lo = word(kDstOffset), hi = word(kDstOffset);
  for (size_t k = 0; k < 4; ++k) {
    if (extents[k] == 0) return std::array<uint64_t, 2>{0, 0};
    const int64_t span = (extents[k] - 1) * word(kDstStrides + k);
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0) return std::nullopt;
  return std::array<uint64_t, 2>{static_cast<uint64_t>(lo) * element_size, static_cast<uint64_t>(hi + 1) * element_size};
}

}  // namespace denox::runtime
