// A thin RAII layer over the sqlite3 C API, private to the cache module. Every sqlite3 call's
// return code is checked; failures throw SqliteError, which keeps the result code so the cache
// can tell "this file is not a database / is corrupt" (set it aside) from "the file system
// refused" (run without a cache) from "another process holds the lock" (retry).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace denox::cache::detail {

class SqliteError : public Error {
 public:
  SqliteError(int rc, const std::string& message) : Error(ErrorCode::Io, message), rc_(rc) {}
  int rc() const { return rc_; }
  // The primary result code (SQLITE_BUSY for SQLITE_BUSY_SNAPSHOT, ...).
  int primary() const { return rc_ & 0xff; }
  // The file's content is not a usable database (SQLITE_NOTADB, SQLITE_CORRUPT).
  bool is_corruption() const;
  // Another connection holds a lock we need (SQLITE_BUSY, SQLITE_LOCKED).
  bool is_busy() const;

 private:
  int rc_;
};

// How Db::open opens a file.
enum class OpenMode {
  // Read and write, creating the file if missing: the user's writable cache.
  ReadWriteCreate,
  // SQLite's mode=ro: never writes the database, but still takes file locks and, for a WAL
  // file, may create -wal/-shm beside it. For reading a cache other processes may be writing.
  ReadOnly,
  // mode=ro&immutable=1: no locks, no change detection, no file is ever created beside the
  // database (it may lie in a read-only directory or on read-only media). Only for files
  // nobody writes while they are open: a cache shipped with a game's install.
  Immutable,
};

class Db {
 public:
  // sqlite3_open_v2 in the given mode. Throws SqliteError if it fails (a missing file in the
  // read-only modes included).
  static Db open(const std::string& path, OpenMode mode = OpenMode::ReadWriteCreate);

  Db() = default;
  ~Db();
  Db(Db&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Db& operator=(Db&& other) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  explicit operator bool() const { return db_ != nullptr; }
  sqlite3* get() const { return db_; }
  // Closes now (sqlite3_close_v2); logs if sqlite reports a failure.
  void close();

  void set_busy_timeout(int milliseconds);
  bool read_only() const;
  // The first bytes of the main database file (count at most) and its size, read through
  // SQLite's own handle, without taking a lock. Never open the file beside SQLite instead:
  // closing any descriptor of a file drops every POSIX lock this process holds on it, those of
  // other connections included, while SQLite closes its own only once no lock needs them.
  struct FilePrefix {
    std::string bytes;
    std::uint64_t file_size = 0;
  };
  FilePrefix read_file_prefix(std::size_t count) const;
  // Runs SQL without results (may hold several statements).
  void exec(const std::string& sql);
  // Throws SqliteError for rc, naming what failed and sqlite's message for this connection.
  [[noreturn]] void raise(int rc, std::string_view what) const;

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

// One prepared statement. Parameters are 1-based, columns 0-based (as in sqlite).
class Statement {
 public:
  Statement(const Db& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Text and blobs are bound SQLITE_STATIC: the caller keeps them alive until the last step().
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  Statement& bind_blob(int index, const void* data, std::size_t size);

  // true: a row is available; false: done. Throws on every other result.
  bool step();
  // step() that must produce no row (INSERT, UPDATE, DELETE, DDL).
  void run();

  std::int64_t column_int(int column) const;
  std::string column_text(int column) const;
  // Valid until the next step() or the statement's end; empty for NULL or zero-length blobs.
  std::span<const std::uint8_t> column_blob(int column) const;

 private:
  const Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

// SELECT-style helper: the first column of the first row as text ("" if there is no row).
std::string query_text(const Db& db, std::string_view sql);
std::int64_t query_int(const Db& db, std::string_view sql);

// Runs body inside BEGIN IMMEDIATE ... COMMIT, so its writes land completely or not at all
// (a killed process leaves only a journal that sqlite rolls back). IMMEDIATE takes the write
// lock up front: a deferred transaction that reads and then writes can get SQLITE_BUSY without
// the busy handler ever being called, which is the classic two-writer failure under WAL.
// BEGIN and COMMIT are retried on SQLITE_BUSY until timeout has passed (the busy handler
// covers most waits; this covers the cases sqlite reports at once). If body throws, the
// transaction is rolled back and the exception propagates.
void write_transaction(Db& db, std::chrono::milliseconds timeout, const std::function<void()>& body);

}  // namespace denox::cache::detail
