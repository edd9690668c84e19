// The two decisions set_extent makes for one resolution, kept free of Vulkan so they can be
// unit-tested: where each scratch tensor lives in the arena, and before which commands a
// pipeline barrier is needed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace denox::runtime {

// A scratch tensor's size and the commands (indices in recording order) that touch it.
struct ScratchLifetime {
  uint64_t size = 0;
  int64_t first = -1, last = -1;  // -1: no command touches it (it gets no memory)
};

struct ArenaLayout {
  std::vector<uint64_t> offsets;  // per tensor; tensors nobody touches get offset 0 and no bytes
  uint64_t size = 0;
};

// Places tensors so that two tensors share bytes only when their lifetimes do not overlap.
// Greedy: largest first, lowest aligned offset that fits. Deterministic for equal inputs.
ArenaLayout place_scratch(const std::vector<ScratchLifetime>& tensors, uint64_t alignment);

// One memory access of a command: a byte range in one memory "space" (the scratch arena, the
// weights, or one of the caller's buffers or images).
struct MemoryAccess {
  uint32_t space = 0;
  uint64_t begin = 0, end = 0;
  bool write = false;
};

// barrier[i] is true when command i must wait for earlier commands: it reads what an earlier
// command wrote (RAW), or writes what an earlier command read or wrote (WAR, WAW), since the
// last barrier. commands[i] lists command i's accesses. One barrier orders everything before it,
// so after a barrier the tracked sets start empty. An empty range [x, x) touches no memory: it
// neither needs nor causes a barrier (since 0.4.3; the first version counted one inside another
// range as an overlap). Interval sets per address space: a frame's accesses cost n log n.
std::vector<bool> derive_barriers(const std::vector<std::vector<MemoryAccess>>& commands);

// The byte range [begin, end) of its destination that a dispatch of shaders/copy.comp writes,
// relative to the destination tensor, from its push constants (e1, e2, e3, src_off, src strides,
// dst_off, dst strides; e0 = groups.z / e1). Concat runs one copy per input into disjoint
// channel ranges of one tensor: with the exact ranges those copies need no barrier between
// them. nullopt when the push constants do not have the copy layout.
//
// Interim: a plan binding carries no byte range yet, so this is the one family whose written
// range the runtime derives itself; once plan::Binding has an optional range it replaces this.
std::optional<std::array<uint64_t, 2>> copy_write_range(const std::vector<uint32_t>& push, const std::array<uint32_t, 3>& groups,
                                                        uint32_t element_size);

}  // namespace denox::runtime
