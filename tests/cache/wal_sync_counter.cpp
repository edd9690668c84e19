#include "wal_sync_counter.hpp"

#include <sqlite3.h>

#include <catch2/catch.hpp>

#include <atomic>

namespace denox::cache::test {

namespace {

sqlite3_vfs* g_real = nullptr;
sqlite3_vfs g_shim{};
std::atomic<int> g_syncs{0};

// The shim's file: its own header, then the real VFS's file.
struct alignas(16) ShimFile {
  sqlite3_file base;
  bool wal;
};
sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<sqlite3_file*>(reinterpret_cast<ShimFile*>(f) + 1); }
const sqlite3_io_methods& m(sqlite3_file* f) { return *real(f)->pMethods; }

int shim_close(sqlite3_file* f) { return m(f).xClose(real(f)); }
int shim_read(sqlite3_file* f, void* p, int n, sqlite3_int64 at) { return m(f).xRead(real(f), p, n, at); }
int shim_write(sqlite3_file* f, const void* p, int n, sqlite3_int64 at) { return m(f).xWrite(real(f), p, n, at); }
int shim_truncate(sqlite3_file* f, sqlite3_int64 size) { return m(f).xTruncate(real(f), size); }
int shim_sync(sqlite3_file* f, int flags) {
  if (reinterpret_cast<ShimFile*>(f)->wal) ++g_syncs;
  return m(f).xSync(real(f), flags);
}
int shim_file_size(sqlite3_file* f, sqlite3_int64* size) { return m(f).xFileSize(real(f), size); }
int shim_lock(sqlite3_file* f, int level) { return m(f).xLock(real(f), level); }
int shim_unlock(sqlite3_file* f, int level) { return m(f).xUnlock(real(f), level); }
int shim_check_reserved(sqlite3_file* f, int* out) { return m(f).xCheckReservedLock(real(f), out); }
int shim_file_control(sqlite3_file* f, int op, void* arg) {
  // SQLITE_FCNTL_FILE_POINTER is answered by SQLite itself with the shim's file, which
  // forwards; every other operation goes to the real file.
  return m(f).xFileControl(real(f), op, arg);
}
int shim_sector_size(sqlite3_file* f) { return m(f).xSectorSize(real(f)); }
int shim_characteristics(sqlite3_file* f) { return m(f).xDeviceCharacteristics(real(f)); }
int shim_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return m(f).xShmMap(real(f), region, size, extend, out);
}
int shim_shm_lock(sqlite3_file* f, int offset, int n, int flags) { return m(f).xShmLock(real(f), offset, n, flags); }
void shim_shm_barrier(sqlite3_file* f) { m(f).xShmBarrier(real(f)); }
int shim_shm_unmap(sqlite3_file* f, int remove) { return m(f).xShmUnmap(real(f), remove); }
int shim_fetch(sqlite3_file* f, sqlite3_int64 at, int n, void** out) { return m(f).xFetch(real(f), at, n, out); }
int shim_unfetch(sqlite3_file* f, sqlite3_int64 at, void* p) { return m(f).xUnfetch(real(f), at, p); }

const sqlite3_io_methods kShimMethods = {
    3,           shim_close,          shim_read,          shim_write,         shim_truncate,  shim_sync,     shim_file_size,
    shim_lock,   shim_unlock,         shim_check_reserved, shim_file_control, shim_sector_size, shim_characteristics,
    shim_shm_map, shim_shm_lock,      shim_shm_barrier,   shim_shm_unmap,     shim_fetch,     shim_unfetch,
};

int shim_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  auto* shim = reinterpret_cast<ShimFile*>(f);
  shim->base.pMethods = nullptr;
  shim->wal = (flags & SQLITE_OPEN_WAL) != 0;
  real(f)->pMethods = nullptr;
  const int rc = g_real->xOpen(g_real, name, real(f), flags, out_flags);
  // (SQLite calls xClose after a failed open whose file has methods: forward that too.)
  if (real(f)->pMethods != nullptr) shim->base.pMethods = &kShimMethods;
  return rc;
}
int shim_delete(sqlite3_vfs*, const char* name, int sync_dir) { return g_real->xDelete(g_real, name, sync_dir); }
int shim_access(sqlite3_vfs*, const char* name, int flags, int* out) { return g_real->xAccess(g_real, name, flags, out); }
int shim_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) { return g_real->xFullPathname(g_real, name, n, out); }

}  // namespace

WalSyncCounter::WalSyncCounter() {
  REQUIRE(g_real == nullptr);
  g_real = sqlite3_vfs_find(nullptr);
  REQUIRE(g_real != nullptr);
  REQUIRE(g_real->iVersion >= 1);
  g_shim = *g_real;  // (the rest, e.g. randomness and time, need no file and are taken as they are)
  g_shim.szOsFile = static_cast<int>(sizeof(ShimFile)) + g_real->szOsFile;
  g_shim.pNext = nullptr;
  g_shim.zName = "denox-test-wal-sync-counter";
  g_shim.xOpen = shim_open;
  g_shim.xDelete = shim_delete;
  g_shim.xAccess = shim_access;
  g_shim.xFullPathname = shim_full_pathname;
  g_syncs = 0;
  REQUIRE(sqlite3_vfs_register(&g_shim, 1) == SQLITE_OK);
}

WalSyncCounter::~WalSyncCounter() {
  sqlite3_vfs_unregister(&g_shim);
  sqlite3_vfs_register(g_real, 1);  // the default again
  g_real = nullptr;
}

int WalSyncCounter::syncs() const { return g_syncs.load(); }

}  // namespace denox::cache::test
