// The two decisions set_extent makes for one resolution, kept free of Vulkan so they can be
// unit-tested: where each scratch tensor lives in the arena, and before which commands a
// pipeline barrier is needed.
#pragma once

#include <cstdint>
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
// so after a barrier the tracked sets start empty.
std::vector<bool> derive_barriers(const std::vector<std::vector<MemoryAccess>>& commands);

}  // namespace denox::runtime
