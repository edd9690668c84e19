// Opening the cache file: validation, setting damaged files aside, schema creation. Private to
// the cache module; PlanCache::open() is the public entry.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <utility>

#include "runtime/cache/plan_cache.hpp"
#include "runtime/cache/sqlite_db.hpp"

namespace denox::cache::detail {

// The checksum stored with every row. It covers the key too, so a payload that ended up under
// the wrong key (a tool that edited the file, a bug in a future migration) is caught like
// flipped bits are.
std::string row_checksum(std::string_view key, std::span<const std::uint8_t> payload);

// A shared lock on byte 0 of `<cache>.lock`, held by every open writable cache: a file some
// process has open is never moved aside (its writes would go to the renamed file, and SQLite
// would later delete the -wal and -shm by name from under the fresh cache). A Linux open file
// description lock (F_OFD_SETLK): per descriptor, so two caches of one process are two users.
// Not on the database: closing our descriptor would drop SQLite's POSIX locks of this process.
// Byte 1 of the same file serializes opening (cache_open.cpp). Where the file system has no such
// locks it is not held and nobody counts as a user (the behaviour before it existed).
class UsersLock {
 public:
  UsersLock() = default;
  static UsersLock shared(const std::filesystem::path& database);
  // Whether a UsersLock is held for `database` (the exclusive lock cannot be taken now).
  static bool held_by_others(const std::filesystem::path& database);
  UsersLock(UsersLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UsersLock& operator=(UsersLock&& other) noexcept;
  ~UsersLock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct OpenedCache {
  Db db;                                  // open and ready; empty when disabled
  UsersLock users;                        // held while db is open
  std::string disabled_reason;            // set when db is empty
  std::optional<CacheRecovery> recovery;  // set when a previous file was moved aside
  bool always_synced = false;             // synchronous=FULL for every commit (a network file system)
};

// The network file system the file at `path` (or, while it does not exist, its directory) lies
// on ("nfs", "smb", "ceph", "fuse.sshfs", ...), or empty for a local one (or where statfs cannot
// tell). SQLite's write-ahead log keeps its index in shared memory
// (the -shm file, mapped by every process using the cache), which processes on two hosts of one
// network mount do not share: their writes would corrupt the file. There the cache uses the
// rollback journal, which needs only the file locks the network file system forwards.
std::string network_file_system(const std::filesystem::path& path);
// The file system type of the mount holding `path` ("fuse.sshfs", "ext4"), from
// /proc/self/mountinfo: the longest mount point that contains it. Empty where unknown.
std::string mount_type(const std::filesystem::path& path);

// Never throws (except std::bad_alloc): every failure ends in a disabled result with a
// warning logged.
OpenedCache open_cache_file(const std::filesystem::path& path, const CacheOpenOptions& options);

// Opens a denox cache that must already exist, for tools and for a shipped cache: nothing is
// created, repaired or moved aside (the file is not ours to fix). With OpenMode::Immutable no
// file is ever created beside it. Throws denox::Error (ErrorCode::Io) whose message starts
// with the quoted path and says why: it does not exist, cannot be read, is not a denox cache
// (not SQLite, another application's database, an empty database), has another schema
// version, or (quick_check) is damaged.
Db open_existing_cache(const std::filesystem::path& path, OpenMode mode, bool quick_check, std::chrono::milliseconds busy_timeout);

}  // namespace denox::cache::detail
