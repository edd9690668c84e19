// How open() decides what to do with the file at the cache path:
//
//   usable denox cache of our schema version   -> use it
//   no file, empty file, empty SQLite database -> create the schema
//   anything else that is readable             -> "corrupt": move it aside, start fresh
//   cannot read/write/lock it at all           -> run without a cache
//
// "Anything else" is: bytes that are not an SQLite database (garbage, truncated header),
// SQLITE_NOTADB/SQLITE_CORRUPT from any validation step, a database of another application
// (application_id, or tables without our meta table), another schema version (older or newer:
// there are no migrations, a cache is cheap to rebuild), missing tables/columns, or a failing
// PRAGMA quick_check. The file is renamed, never deleted, so a user who pointed the cache at
// the wrong file loses nothing. I/O problems (permissions, disk full, lock timeouts) are never
// taken for corruption: renaming a healthy cache because the disk was briefly full would
// throw away every other process's work. Nor is a file moved aside while another process has it
// open (UsersLock), or when a newer denox made it (a newer schema version): then this process
// runs without a cache and the file stays as it is, so two denox versions sharing a path do not
// take turns throwing each other's cache away.
#include "runtime/cache/cache_open.hpp"
#include "runtime/cache/liveness_lock.hpp"
#include "runtime/cache/content_hash.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/log.hpp"

namespace denox::cache::detail {

std::string row_checksum(std::string_view key, std::span<const std::uint8_t> payload) {
  return ContentHasher().field(key).field(payload).hex();
}

namespace fs = std::filesystem;

namespace {

// The whole schema (version 2 added measurements). IF NOT EXISTS / OR IGNORE make it idempotent, so a process
// racing another one through creation (see create_schema) ends with the same file.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plans (
  key_digest TEXT PRIMARY KEY NOT NULL,
  key_text TEXT NOT NULL,
  plan BLOB NOT NULL,
  checksum TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS spirv (
  source_hash TEXT PRIMARY KEY NOT NULL,
  words BLOB NOT NULL,
  checksum TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS pipeline_caches (
  device_key TEXT PRIMARY KEY NOT NULL,
  device_text TEXT NOT NULL,
  data BLOB NOT NULL,
  checksum TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
  key_digest TEXT PRIMARY KEY NOT NULL,
  key_text TEXT NOT NULL,
  result BLOB NOT NULL,
  checksum TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
)sql";

// One SELECT per table naming every column the cache uses: preparing it fails if a table or
// column is missing, which is how a same-version file with a wrong shape is recognized.
constexpr std::array<const char*, 5> kColumnProbes = {
    "SELECT key, value FROM meta LIMIT 0",
    "SELECT key_digest, key_text, plan, checksum, created_at, last_used_at FROM plans LIMIT 0",
    "SELECT source_hash, words, checksum, created_at FROM spirv LIMIT 0",
    "SELECT device_key, device_text, data, checksum, updated_at FROM pipeline_caches LIMIT 0",
    "SELECT key_digest, key_text, result, checksum, created_at FROM measurements LIMIT 0",
};

// Thrown by validation for content problems; caught in try_open and turned into a verdict.
struct CorruptFile {
  std::string cause;
  bool newer_schema = false;  // a denox cache a newer denox made: not ours to replace
};

std::string hex32(std::int64_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", static_cast<unsigned>(value & 0xffffffff));
  return buffer;
}

// The locks on `<cache>.lock` (never on the database: closing any descriptor of a file drops
// every POSIX lock this process holds on it, SQLite's included). All are Linux open file
// description locks (F_OFD_SETLK: per descriptor, so two caches of one process count apart, and
// closing another descriptor drops nothing) on separate bytes, so they never conflict with each
// other, on NFS neither (which would emulate a flock with a whole-file lock).
constexpr off_t kUsersByte = 0;           // shared while a cache is open for writing
constexpr off_t kOpeningByte = 1;         // exclusive while one process validates, repairs or creates
constexpr off_t kFirstLivenessByte = 16;  // and up: one exclusive slot per measuring journal (liveness_lock.hpp)

// F_OFD_SETLK of one byte of `fd`: true when taken; errno says why not.
bool ofd_lock(int fd, off_t byte, short type) {
  struct flock range {};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = byte;
  range.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &range) == 0;
}

fs::path lock_file_of(const fs::path& database) { return database.string() + ".lock"; }

// A descriptor of `database`'s lock file, created if missing; -1 with errno set when it cannot be.
int open_lock_file(const fs::path& database) { return ::open(lock_file_of(database).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644); }

// An exclusive lock held while one process validates, repairs or creates the file. Without it
// two processes that both find a damaged file would both rename "it" aside, and the second
// would move away the fresh cache the first had just created. SQLite's own locks cannot do
// this: they live inside the file that is being replaced.
class OpenLock {
 public:
  OpenLock(const fs::path& database, std::chrono::milliseconds timeout) {
    const fs::path path = lock_file_of(database);
    fd_ = open_lock_file(database);
    if (fd_ < 0) {
      error_ = "cannot create lock file '" + path.string() + "': " + std::strerror(errno);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ofd_lock(fd_, kOpeningByte, F_WRLCK)) {
      if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
        error_ = "cannot lock '" + path.string() + "': " + std::strerror(errno);
        return;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        error_ = "timed out waiting for another process to finish opening the cache (lock '" + path.string() + "')";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    locked_ = true;
  }
  ~OpenLock() {
    // (Closing the descriptor releases its lock.)
    if (fd_ >= 0 && ::close(fd_) != 0) log::debug("denox cache: closing lock file failed: {}", std::strerror(errno));
  }
  OpenLock(const OpenLock&) = delete;
  OpenLock& operator=(const OpenLock&) = delete;

  bool locked() const { return locked_; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
  std::string error_;
};

// Looks at the first bytes before any query: sqlite happily "opens" any file and only fails
// on first use, and a file shorter than the 100-byte header is garbage we want named as such.
// Read through the connection's own handle (see Db::read_file_prefix): the file may be this
// process's writable cache too, whose locks a descriptor of our own would drop when closed.
void check_header(const Db& db) {
  static constexpr char kMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  const Db::FilePrefix header = db.read_file_prefix(sizeof kMagic);
  if (header.file_size == 0) return;  // empty: the callers' inspect() names it
  if (header.file_size < 100 || header.bytes != std::string_view(kMagic, sizeof kMagic))
    throw CorruptFile{"not an SQLite database (" + std::to_string(header.file_size) + " bytes without an SQLite header)"};
}

// Returns true if the database holds no schema at all (fresh), false if it is a valid denox
// cache; throws CorruptFile otherwise.
bool inspect(const Db& db, bool quick_check) {
  const std::int64_t app_id = query_int(db, "PRAGMA application_id");
  std::vector<std::string> tables;
  {
    Statement list(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (list.step()) tables.push_back(list.column_text(0));
  }
  const std::int64_t objects = query_int(db, "SELECT count(*) FROM sqlite_master");
  if (objects == 0) {
    if (app_id != 0 && app_id != PlanCache::kApplicationId)
      throw CorruptFile{"foreign SQLite database (application_id " + hex32(app_id) + ")"};
    return true;
  }
  if (app_id != PlanCache::kApplicationId) {
    std::string names;
    for (const auto& t : tables) names += (names.empty() ? "" : ", ") + t;
    throw CorruptFile{"foreign SQLite database (application_id " + hex32(app_id) + ", tables: " + names + ")"};
  }
  // A newer denox's cache before its tables are probed: a newer schema may have other columns.
  if (const std::int64_t header_version = query_int(db, "PRAGMA user_version");
      header_version > PlanCache::kSchemaVersion && std::find(tables.begin(), tables.end(), "meta") != tables.end()) {
    std::string meta_version;
    try {
      meta_version = query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    } catch (const SqliteError& e) {
      if (e.is_corruption() || e.is_busy()) throw;
    }
    if (meta_version == std::to_string(header_version))
      throw CorruptFile{"schema version " + meta_version + "; this denox uses " + std::to_string(PlanCache::kSchemaVersion), true};
  }
  try {
    for (const char* probe : kColumnProbes) Statement stmt(db, probe);
  } catch (const SqliteError& e) {
    if (e.is_corruption() || e.is_busy()) throw;
    throw CorruptFile{std::string("denox cache with unexpected tables: ") + e.what()};
  }
  const std::string version = query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'");
  const std::int64_t user_version = query_int(db, "PRAGMA user_version");
  if (version != std::to_string(PlanCache::kSchemaVersion) || user_version != PlanCache::kSchemaVersion) {
    // Both say the version (the meta row and the header's user_version); name the one that differs.
    const std::string want = std::to_string(PlanCache::kSchemaVersion);
    throw CorruptFile{"schema version " + (version.empty() ? std::string("(none)") : version) + " in its meta table, user_version " +
                      std::to_string(user_version) + " in its header; this denox uses " + want + " in both"};
  }
  if (quick_check) {
    // quick_check skips the index/content cross-checks of integrity_check but reads every
    // page, so truncation and damaged b-trees show up here rather than in a later load.
    Statement check(db, "PRAGMA quick_check");
    const std::string first = check.step() ? check.column_text(0) : std::string("no result");
    if (first != "ok") throw CorruptFile{"PRAGMA quick_check: " + first};
  }
  return false;
}

// A cache on a network file system (see network_file_system): the rollback journal instead of
// WAL, and every commit synced (NORMAL there may leave a damaged file after a power loss of the
// server or a dropped connection). A file left in WAL mode can only leave it while no other
// connection has it open; then this process runs without a cache rather than join it.
void use_rollback_journal(Db& db, const fs::path& path, const std::string& file_system, std::chrono::milliseconds busy_timeout) {
  std::string mode;
  db.set_busy_timeout(0);  // (another process's connection stays open: waiting does not help)
  try {
    mode = query_text(db, "PRAGMA journal_mode=DELETE");
  } catch (const SqliteError& e) {
    if (!e.is_busy()) throw;  // (corruption and I/O errors are judged as at any other step)
    mode = e.what();
  }
  db.set_busy_timeout(static_cast<int>(busy_timeout.count()));
  if (mode != "delete")
    throw Error(ErrorCode::Io, "it lies on a network file system (" + file_system +
                                   "), where SQLite's write-ahead log is unsafe, and is in WAL mode while another process has it "
                                   "open, so it cannot leave that mode now (" + mode + ")");
  db.exec("PRAGMA synchronous=FULL");
  log::warn("denox cache: '{}' lies on a network file system ({}): using SQLite's rollback journal, as its write-ahead log is "
            "unsafe there; processes using the cache wait for each other's writes", path.string(), file_system);
}

void enable_wal(Db& db) {
  // WAL lets readers run while another process writes; the mode is stored in the file, so
  // this is a no-op read after the first time. File systems without shared memory (some
  // network mounts) refuse it; the rollback journal still works, only with less concurrency.
  const std::string mode = query_text(db, "PRAGMA journal_mode=WAL");
  if (mode != "wal") log::warn("denox cache: WAL mode unavailable (journal_mode is '{}'); concurrent use is slower", mode);
  // NORMAL is durable against process crashes in WAL mode (only a power loss can drop the
  // last commits, which for a cache just means recompiling) and avoids an fsync per store.
  db.exec("PRAGMA synchronous=NORMAL");
}

void create_schema(Db& db, std::chrono::milliseconds timeout) {
  write_transaction(db, timeout, [&] {
    db.exec(kSchemaSql);
    db.exec("PRAGMA application_id = " + std::to_string(PlanCache::kApplicationId));
    db.exec("PRAGMA user_version = " + std::to_string(PlanCache::kSchemaVersion));
    db.exec("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '" +
            std::to_string(PlanCache::kSchemaVersion) + "'), ('magic', 'denox-cache')");
  });
}

enum class Verdict { Ok, Corrupt, Unusable };

struct Attempt {
  Verdict verdict = Verdict::Unusable;
  Db db;
  std::string cause;
};

Attempt try_open(const fs::path& path, const CacheOpenOptions& options, const std::string& network_fs) {
  Attempt result;
  try {
    // No check_header here: a file that is not SQLite fails its first query with SQLITE_NOTADB,
    // named below, and is set aside like any other unusable file.
    result.db = Db::open(path.string());
    result.db.set_busy_timeout(static_cast<int>(options.busy_timeout.count()));
    // sqlite silently opens a file it may not write read-only; stores would then fail one by
    // one, so say it once here instead.
    if (result.db.read_only()) {
      result.cause = "the cache file is read-only";
      return result;
    }
    const bool fresh = inspect(result.db, options.verify_on_open);
    if (network_fs.empty()) enable_wal(result.db);
    else use_rollback_journal(result.db, path, network_fs, options.busy_timeout);
    if (fresh) {
      create_schema(result.db, options.busy_timeout);
      // Check what is there now: another process (of another denox version, not holding our
      // lock) may have created its own schema in between.
      inspect(result.db, false);
    }
    result.verdict = Verdict::Ok;
  } catch (const CorruptFile& e) {
    result.verdict = e.newer_schema ? Verdict::Unusable : Verdict::Corrupt;
    result.cause = e.newer_schema ? "it was made by a newer denox (" + e.cause + "), so it is left as it is" : e.cause;
  } catch (const SqliteError& e) {
    result.verdict = e.is_corruption() ? Verdict::Corrupt : Verdict::Unusable;
    // (The size by stat: no descriptor of the file is opened, see above.)
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    const bool short_file = !ec && size < 100;  // shorter than SQLite's header
    result.cause = e.primary() == SQLITE_NOTADB || short_file ? "not an SQLite database (" + std::string(e.what()) + ")" : e.what();
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    result.verdict = Verdict::Unusable;
    result.cause = e.what();
  }
  if (result.verdict != Verdict::Ok) result.db.close();
  return result;
}

fs::path aside_path(const fs::path& path) {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &parts);
  fs::path candidate = path.string() + ".corrupt-" + stamp;
  for (int n = 1; fs::exists(candidate) || fs::exists(candidate.string() + "-wal"); ++n)
    candidate = path.string() + ".corrupt-" + stamp + "-" + std::to_string(n);
  return candidate;
}

// Moves the database and its WAL aside and drops the shared-memory index. The WAL must go with
// it: sqlite would otherwise replay the old file's frames into the fresh database.
void set_aside(const fs::path& path, const fs::path& aside) {
  fs::rename(path, aside);
  for (const char* suffix : {"-wal", "-journal"}) {
    const fs::path side = path.string() + suffix;
    if (fs::exists(side)) fs::rename(side, aside.string() + suffix);
  }
  const fs::path shm = path.string() + "-shm";
  std::error_code ec;
  fs::remove(shm, ec);
  if (ec) throw fs::filesystem_error("cannot remove stale shared-memory file", shm, ec);
}

OpenedCache disabled(const fs::path& path, std::string reason) {
  log::warn("denox cache: running without a cache: {} ('{}')", reason, path.string());
  OpenedCache out;
  out.disabled_reason = std::move(reason);
  return out;
}

// FUSE file systems that reach other machines, by the subtype /proc/self/mountinfo names
// ("fuse.sshfs"). FUSE without a lock operation gets local kernel locks and a local page cache,
// so SQLite's WAL runs there, unsafely across hosts.
bool networked_fuse(std::string_view subtype) {
  static constexpr std::string_view kNetworked[] = {"sshfs",   "glusterfs", "ceph-fuse", "rclone",    "s3fs",       "gcsfuse",
                                                    "goofys",  "juicefs",   "mfs",       "lizardfs",  "seaweedfs",  "gvfsd-fuse",
                                                    "smbnetfs", "curlftpfs", "davfs",     "blobfuse",  "blobfuse2",  "cvmfs"};
  return std::find(std::begin(kNetworked), std::end(kNetworked), subtype) != std::end(kNetworked);
}

// A mount point as mountinfo writes it: space, tab, newline and backslash as octal escapes.
std::string unescape_mount_point(std::string_view text) {
  const auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && octal(text[i + 1]) && octal(text[i + 2]) && octal(text[i + 3])) {
      out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0'));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string mount_type(const fs::path& path) {
  std::error_code ec;
  const std::string target = fs::weakly_canonical(path, ec).string();
  if (ec) return {};
  std::ifstream info("/proc/self/mountinfo");
  std::string line, best_type;
  size_t best_length = 0;
  while (std::getline(info, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point, field;
    if (!(fields >> id >> parent >> device >> root >> mount_point)) continue;
    while (fields >> field && field != "-") {
    }
    std::string type;
    if (field != "-" || !(fields >> type)) continue;
    const std::string point = unescape_mount_point(mount_point);
    const bool contains = target == point || point == "/" ||
                          (target.size() > point.size() && target.compare(0, point.size(), point) == 0 && target[point.size()] == '/');
    if (contains && point.size() >= best_length) {
      best_length = point.size();
      best_type = type;
    }
  }
  return best_type;
}

std::string network_file_system(const fs::path& path) {
  // The file itself where it exists (statfs follows a symbolic link into another mount), else
  // its directory.
  std::error_code ec;
  const fs::path probe = fs::exists(path, ec) ? path : path.has_parent_path() ? path.parent_path() : fs::path(".");
  struct statfs info {};
  if (::statfs(probe.c_str(), &info) != 0) return {};
  // Magic numbers of linux/magic.h and the file systems' own headers (not all are in the
  // former).
  switch (static_cast<std::uint32_t>(info.f_type)) {
    case 0x6969: return "nfs";
    case 0x517B: return "smb";
    case 0xFF534D42: return "cifs";
    case 0xFE534D42: return "smb2";
    case 0x00C36400: return "ceph";
    case 0x5346414F: return "afs";
    case 0x6B414653: return "kafs";
    case 0x73757245: return "coda";
    case 0x564C: return "ncp";
    case 0x01021997: return "9p";
    case 0x47504653: return "gpfs";
    case 0x0BD00BD0: return "lustre";
    case 0x013111A8: return "ibrix";
    case 0x19830326: return "beegfs";
    case 0x20030528: return "orangefs";
    case 0xAAD7AAEA: return "panfs";
    case 0x65735546: {  // FUSE: most are local; the mount's subtype tells
      const std::string type = mount_type(probe);
      const std::string_view subtype = std::string_view(type).substr(type.rfind("fuse.", 0) == 0 ? 5 : type.size());
      return networked_fuse(subtype) ? type : std::string();
    }
    default: return {};
  }
}

UsersLock UsersLock::shared(const fs::path& database) {
  UsersLock lock;
  const int fd = open_lock_file(database);
  if (fd < 0) return lock;
  if (!ofd_lock(fd, kUsersByte, F_RDLCK)) {
    log::debug("denox cache: no users lock on '{}': {}", lock_file_of(database).string(), std::strerror(errno));
    ::close(fd);
    return lock;
  }
  lock.fd_ = fd;
  return lock;
}

bool UsersLock::held_by_others(const fs::path& database) {
  const int fd = open_lock_file(database);
  if (fd < 0) return false;
  const bool taken = ofd_lock(fd, kUsersByte, F_WRLCK);
  const bool busy = !taken && (errno == EAGAIN || errno == EACCES);
  ::close(fd);  // (drops the exclusive lock if it was taken)
  return busy;
}

UsersLock& UsersLock::operator=(UsersLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UsersLock::~UsersLock() {
  if (fd_ >= 0) ::close(fd_);
}

Db open_existing_cache(const fs::path& path, OpenMode mode, bool quick_check, std::chrono::milliseconds busy_timeout) {
  const auto failure = [&](const std::string& cause) -> Error {
    return Error(ErrorCode::Io, "'" + path.string() + "' " + cause);
  };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) throw failure("does not exist");
  if (ec) throw failure("cannot be examined: " + ec.message());
  if (!fs::is_regular_file(status)) throw failure("is not a regular file");
  // sqlite's "unable to open database file" does not say why; the OS does.
  if (::access(path.c_str(), R_OK) != 0) throw failure(std::string("cannot be read: ") + std::strerror(errno));
  try {
    // Immutable opening never reads a -wal beside the file: rows still in it (a copy taken while
    // a process had the cache open) would be missing without a word.
    if (mode == OpenMode::Immutable) {
      const fs::path wal = path.string() + "-wal";
      if (const auto size = fs::file_size(wal, ec); !ec && size > 0)
        throw failure("has a write-ahead log beside it ('" + wal.string() + "', " + std::to_string(size) +
                      " bytes) that read-only opening cannot read, so rows in it would be missing: it was copied while a process "
                      "had it open. Let that process close it (SQLite then folds the log into the file), or make the file with "
                      "`denox cache export`");
      ec.clear();
    }
    Db db = Db::open(path.string(), mode);
    check_header(db);
    db.set_busy_timeout(static_cast<int>(busy_timeout.count()));
    if (inspect(db, quick_check)) throw failure("is not a denox cache (an empty database)");
    return db;
  } catch (const CorruptFile& e) {
    throw failure("is not a usable denox cache: " + e.cause);
  } catch (const SqliteError& e) {
    throw failure(e.is_corruption() ? "is not a usable denox cache: " + std::string(e.what())
                                    : "cannot be read: " + std::string(e.what()));
  }
}

OpenedCache open_cache_file(const fs::path& path, const CacheOpenOptions& options) {
  try {
    std::error_code ec;
    if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
    if (ec) return disabled(path, "cannot create directory '" + path.parent_path().string() + "': " + ec.message());

    OpenLock lock(path, options.busy_timeout);
    if (!lock.locked()) return disabled(path, lock.error());

    const std::string network_fs = !options.assume_network_file_system_for_testing.empty()
                                       ? options.assume_network_file_system_for_testing
                                       : network_file_system(path);
    Attempt first = try_open(path, options, network_fs);
    if (first.verdict == Verdict::Ok) return OpenedCache{std::move(first.db), UsersLock::shared(path), {}, {}, !network_fs.empty()};
    if (first.verdict == Verdict::Unusable) return disabled(path, first.cause);
    if (UsersLock::held_by_others(path))
      return disabled(path, "the cache file is unusable (" + first.cause + "), and another process has it open, so it is left in place");

    OpenedCache out;
    out.recovery = CacheRecovery{first.cause, aside_path(path)};
    try {
      set_aside(path, out.recovery->set_aside_path);
    } catch (const fs::filesystem_error& e) {
      // Never fall back to using the damaged file.
      return disabled(path, "cache file is unusable (" + first.cause + ") and could not be moved aside: " + e.what());
    }
    log::warn("denox cache: '{}' is unusable ({}); moved it to '{}' and started a fresh cache", path.string(),
                 first.cause, out.recovery->set_aside_path.string());

    Attempt second = try_open(path, options, network_fs);
    if (second.verdict != Verdict::Ok) {
      auto result = disabled(path, "cannot create a fresh cache: " + second.cause);
      result.recovery = out.recovery;
      return result;
    }
    out.db = std::move(second.db);
    out.users = UsersLock::shared(path);
    out.always_synced = !network_fs.empty();
    return out;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return disabled(path, e.what());
  }
}

}  // namespace denox::cache::detail

namespace denox::cache {

LivenessLock LivenessLock::take(const std::filesystem::path& database) {
  LivenessLock lock;
  const int fd = detail::open_lock_file(database);
  if (fd < 0) return lock;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (detail::ofd_lock(fd, detail::kFirstLivenessByte + slot, F_WRLCK)) {
      lock.fd_ = fd;
      lock.slot_ = slot;
      return lock;
    }
    if (errno != EAGAIN && errno != EACCES) break;  // no such locks here
  }
  ::close(fd);
  return lock;
}

std::optional<bool> LivenessLock::held(const std::filesystem::path& database, int slot) {
  if (slot < 0 || slot >= kSlots) return std::nullopt;
  const int fd = detail::open_lock_file(database);
  if (fd < 0) return std::nullopt;
  std::optional<bool> out;
  if (detail::ofd_lock(fd, detail::kFirstLivenessByte + slot, F_WRLCK)) out = false;  // (dropped by the close below)
  else if (errno == EAGAIN || errno == EACCES) out = true;
  ::close(fd);
  return out;
}

LivenessLock& LivenessLock::operator=(LivenessLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    slot_ = std::exchange(other.slot_, -1);
  }
  return *this;
}

LivenessLock::~LivenessLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace denox::cache
