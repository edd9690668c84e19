#include "runtime/vulkan/schedule.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>

#include "common/error.hpp"

namespace denox::runtime {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

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
    // The lowest offset (0 or the aligned end of a live-overlapping placed tensor) that collides
    // with none of them: sweep the live tensors by where they begin, moving past each one the
    // tensor would overlap. (Trying every candidate against every live tensor was cubic in a
    // plan's tensor count; this is quadratic.)
    // (`placed` is kept sorted by where each tensor begins, so no per-tensor sort is needed.)
    uint64_t chosen = 0;
    for (const Placed& p : placed) {
      if (p.first > tensor.last || tensor.first > p.last) continue;  // not live at the same time
      if (chosen + tensor.size <= p.begin) break;  // fits before p, and so before every later one
      chosen = std::max(chosen, align_up(p.end, alignment));
    }
    layout.offsets[t] = chosen;
    const Placed here{chosen, chosen + tensor.size, tensor.first, tensor.last};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), here, [](const Placed& a, const Placed& b) { return a.begin < b.begin; }), here);
    layout.size = std::max(layout.size, align_up(chosen + tensor.size, alignment));
  }
  return layout;
}

namespace {

// The bytes of one address space touched since the last barrier, as disjoint intervals (touching
// ones merged), so that "does [begin, end) overlap anything here" is a lookup rather than a scan:
// the scan made barrier derivation quadratic in a frame's accesses.
class TouchedBytes {
 public:
  bool overlaps(uint64_t begin, uint64_t end) const {
    if (begin >= end) return false;  // (an empty range overlaps nothing)
    auto it = spans_.lower_bound(end);  // the first span beginning at or after `end` cannot overlap
    if (it == spans_.begin()) return false;
    return std::prev(it)->second > begin;  // spans are disjoint: only the last one before can
  }
  void add(uint64_t begin, uint64_t end) {
    if (begin >= end) return;
    auto it = spans_.upper_bound(begin);
    if (it != spans_.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != spans_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = spans_.erase(it);
    }
    spans_.emplace(begin, end);
  }

 private:
  std::map<uint64_t, uint64_t> spans_;  // begin -> end
};

struct TouchedSince {
  std::map<uint32_t, TouchedBytes> reads, writes;  // by address space
  bool overlaps(const std::map<uint32_t, TouchedBytes>& in, const MemoryAccess& a) const {
    const auto it = in.find(a.space);
    return it != in.end() && it->second.overlaps(a.begin, a.end);
  }
};

}  // namespace

std::vector<bool> derive_barriers(const std::vector<std::vector<MemoryAccess>>& commands) {
  std::vector<bool> barrier(commands.size(), false);
  TouchedSince touched;  // since the last barrier
  for (size_t i = 0; i < commands.size(); ++i) {
    bool hazard = false;
    for (const auto& access : commands[i]) {
      hazard = hazard || touched.overlaps(touched.writes, access);                  // RAW, WAW
      if (access.write) hazard = hazard || touched.overlaps(touched.reads, access);  // WAR
    }
    if (hazard) {
      barrier[i] = true;
      touched = {};
    }
    for (const auto& access : commands[i]) (access.write ? touched.writes : touched.reads)[access.space].add(access.begin, access.end);
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
