// Whether a process that wrote a crash-journal marker is still alive, where its pid cannot tell
// (it lives in another PID namespace: a containerised game sharing a cache with a host editor).
// A measuring process holds an exclusive lock on one byte ("slot") of `<cache>.lock` and names
// the slot in its markers; the kernel drops the lock when the process dies, however it dies.
// Linux open file description locks, like the cache's users lock: per descriptor, held across
// PID namespaces on a shared file, and on bytes 16 and up, clear of the users lock (byte 0)
// and the opening lock (byte 1).
#pragma once

#include <filesystem>
#include <optional>
#include <utility>

namespace denox::cache {

class LivenessLock {
 public:
  LivenessLock() = default;
  // The first free slot of `database`'s lock file, held until destroyed; not held (slot() -1)
  // where the file or its locks are unavailable, or all 4096 slots are taken.
  static LivenessLock take(const std::filesystem::path& database);
  // Whether `slot` is held now: true or false, nullopt where that cannot be told.
  static std::optional<bool> held(const std::filesystem::path& database, int slot);

  LivenessLock(LivenessLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), slot_(std::exchange(other.slot_, -1)) {}
  LivenessLock& operator=(LivenessLock&& other) noexcept;
  ~LivenessLock();
  int slot() const { return slot_; }

  static constexpr int kSlots = 4096;

 private:
  int fd_ = -1;
  int slot_ = -1;
};

}  // namespace denox::cache
