// Counts the fsyncs SQLite asks for on write-ahead logs, to test what a store puts on the disk.
#pragma once

namespace denox::cache::test {

// While alive, SQLite's default VFS is a shim that forwards everything to the one before it
// and counts xSync calls on files opened as write-ahead logs. Connections opened before it
// existed keep the old VFS; every connection it saw must be closed before it is destroyed.
// One at a time per process.
class WalSyncCounter {
 public:
  WalSyncCounter();
  ~WalSyncCounter();
  WalSyncCounter(const WalSyncCounter&) = delete;
  WalSyncCounter& operator=(const WalSyncCounter&) = delete;
  int syncs() const;
};

}  // namespace denox::cache::test
