#include "runtime/cache/sqlite_db.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <thread>

#include "common/log.hpp"

namespace denox::cache::detail {

bool SqliteError::is_corruption() const { return primary() == SQLITE_NOTADB || primary() == SQLITE_CORRUPT; }
bool SqliteError::is_busy() const { return primary() == SQLITE_BUSY || primary() == SQLITE_LOCKED; }

namespace {

// "file://" + the absolute path, percent-encoded: a URI filename is the only way to pass
// mode=ro and immutable=1, and in one '?', '#' and '%' are syntax. Everything but unreserved
// characters and '/' is escaped, and the empty authority ("//") keeps a path starting with
// "//" from being read as a host name.
std::string uri_for(const std::string& path, OpenMode mode) {
  const std::string absolute = std::filesystem::absolute(path).string();
  std::string uri = "file://";
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const unsigned char c : absolute) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  uri += mode == OpenMode::Immutable ? "?mode=ro&immutable=1" : "?mode=ro";
  return uri;
}

}  // namespace

Db Db::open(const std::string& path, OpenMode mode) {
  sqlite3* raw = nullptr;
  // NOMUTEX: the cache serializes all use of a connection with its own mutex. Extended result
  // codes are turned on right after, so SqliteError can report e.g. SQLITE_IOERR_WRITE.
  const bool writable = mode == OpenMode::ReadWriteCreate;
  // A plain name: Debian's SQLite is built with SQLITE_USE_URI, so a relative path starting
  // with "file:" would be read as a URI ("file:x?mode=memory"); "./" keeps it a file name.
  const std::string plain = path.rfind("file:", 0) == 0 ? "./" + path : path;
  const std::string name = writable ? plain : uri_for(path, mode);
  const int flags = writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);  // sqlite hands out a handle even on failure; it must be closed either way
  if (rc != SQLITE_OK) {
    const std::string message = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    throw SqliteError(rc, "cannot open SQLite database '" + path + "': " + message);
  }
  const int ext = sqlite3_extended_result_codes(raw, 1);
  if (ext != SQLITE_OK) db.raise(ext, "enabling extended result codes");
  return db;
}

Db::~Db() { close(); }

Db& Db::operator=(Db&& other) noexcept {
  if (this != &other) {
    close();
    db_ = other.db_;
    other.db_ = nullptr;
  }
  return *this;
}

void Db::close() {
  if (db_ == nullptr) return;
  // close_v2 never leaves a zombie we could leak: unfinalized statements (there are none, all
  // are RAII) would only defer the close. A failure here can only be logged.
  const int rc = sqlite3_close_v2(db_);
  if (rc != SQLITE_OK) log::warn("denox cache: sqlite3_close_v2 failed: {}", sqlite3_errstr(rc));
  db_ = nullptr;
}

void Db::set_busy_timeout(int milliseconds) {
  const int rc = sqlite3_busy_timeout(db_, milliseconds);
  if (rc != SQLITE_OK) raise(rc, "setting the busy timeout");
}

bool Db::read_only() const {
  const int rc = sqlite3_db_readonly(db_, "main");
  if (rc < 0) raise(SQLITE_ERROR, "querying read-only state");
  return rc == 1;
}

Db::FilePrefix Db::read_file_prefix(std::size_t count) const {
  sqlite3_file* file = nullptr;
  const int rc = sqlite3_file_control(db_, "main", SQLITE_FCNTL_FILE_POINTER, &file);
  if (rc != SQLITE_OK) raise(rc, "getting the database file's handle");
  if (file == nullptr || file->pMethods == nullptr) raise(SQLITE_CANTOPEN, "getting the database file's handle");
  FilePrefix out;
  sqlite3_int64 size = 0;
  if (const int size_rc = file->pMethods->xFileSize(file, &size); size_rc != SQLITE_OK)
    throw SqliteError(size_rc, std::string("reading the database file's size failed (") + sqlite3_errstr(size_rc) + ")");
  out.file_size = static_cast<std::uint64_t>(size);
  out.bytes.resize(static_cast<std::size_t>(std::min<sqlite3_int64>(static_cast<sqlite3_int64>(count), size)));
  if (out.bytes.empty()) return out;
  // (A file that shrank in between reads short: SQLite fills the rest with zeros, which no
  // header matches.)
  const int read_rc = file->pMethods->xRead(file, out.bytes.data(), static_cast<int>(out.bytes.size()), 0);
  if (read_rc != SQLITE_OK && read_rc != SQLITE_IOERR_SHORT_READ)
    throw SqliteError(read_rc, std::string("reading the database file's header failed (") + sqlite3_errstr(read_rc) + ")");
  return out;
}

void Db::exec(const std::string& sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    throw SqliteError(rc, "'" + sql + "' failed: " + text + " (" + sqlite3_errstr(rc) + ")");
  }
}

void Db::raise(int rc, std::string_view what) const {
  std::string message(what);
  message += " failed: ";
  // errmsg describes the most recent failing call on this connection, which is the one we
  // are reporting; errstr is the generic text for the code.
  message += db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  message += " (";
  message += sqlite3_errstr(rc);
  message += ")";
  throw SqliteError(rc, message);
}

Statement::Statement(const Db& db, std::string_view sql) : db_(db), sql_(sql) {
  if (sql.size() > static_cast<std::size_t>(INT_MAX)) db.raise(SQLITE_TOOBIG, "preparing statement");
  const int rc = sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.raise(rc, "preparing '" + sql_ + "'");
}

Statement::~Statement() {
  // finalize repeats the error of the last failed step(), which was already thrown; nothing
  // new can be learned here, so its result is deliberately not acted upon.
  (void)sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, std::string_view text) {
  const int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) db_.raise(rc, "binding parameter " + std::to_string(index) + " of '" + sql_ + "'");
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_.raise(rc, "binding parameter " + std::to_string(index) + " of '" + sql_ + "'");
  return *this;
}

Statement& Statement::bind_blob(int index, const void* data, std::size_t size) {
  // sqlite binds a null pointer as SQL NULL; an empty payload must stay an (empty) blob.
  static const char empty = 0;
  const int rc = sqlite3_bind_blob64(stmt_, index, size == 0 ? &empty : data, size, SQLITE_STATIC);
  if (rc != SQLITE_OK) db_.raise(rc, "binding parameter " + std::to_string(index) + " of '" + sql_ + "'");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.raise(rc, "'" + sql_ + "'");
}

void Statement::run() {
  if (step()) throw SqliteError(SQLITE_MISUSE, "'" + sql_ + "' returned a row where none was expected");
}

std::int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) {
    // NULL value, or an out-of-memory while converting; only the latter is an error.
    if (sqlite3_errcode(db_.get()) == SQLITE_NOMEM) db_.raise(SQLITE_NOMEM, "reading a text column");
    return {};
  }
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::span<const std::uint8_t> Statement::column_blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size <= 0) {
    if (sqlite3_errcode(db_.get()) == SQLITE_NOMEM) db_.raise(SQLITE_NOMEM, "reading a blob column");
    return {};
  }
  return {static_cast<const std::uint8_t*>(data), static_cast<std::size_t>(size)};
}

std::string query_text(const Db& db, std::string_view sql) {
  Statement stmt(db, sql);
  if (!stmt.step()) return {};
  return stmt.column_text(0);
}

std::int64_t query_int(const Db& db, std::string_view sql) {
  Statement stmt(db, sql);
  if (!stmt.step()) return 0;
  return stmt.column_int(0);
}

namespace {

// Calls attempt() until it stops throwing SQLITE_BUSY or the deadline passes.
template <typename F>
void retry_busy(std::chrono::milliseconds timeout, F&& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    try {
      attempt();
      return;
    } catch (const SqliteError& e) {
      if (!e.is_busy() || std::chrono::steady_clock::now() >= deadline) throw;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

void rollback_quietly(Db& db) {
  // A failed COMMIT or statement may already have ended the transaction; autocommit tells.
  if (sqlite3_get_autocommit(db.get()) != 0) return;
  try {
    db.exec("ROLLBACK");
  } catch (const SqliteError& e) {
    // Nothing more can be done: sqlite rolls the journal back when the connection closes or
    // the next process opens the file.
    log::warn("denox cache: {}", e.what());
  }
}

}  // namespace

void write_transaction(Db& db, std::chrono::milliseconds timeout, const std::function<void()>& body) {
  retry_busy(timeout, [&] { db.exec("BEGIN IMMEDIATE"); });
  try {
    body();
    retry_busy(timeout, [&] { db.exec("COMMIT"); });
  } catch (...) {
    rollback_quietly(db);
    throw;
  }
}

}  // namespace denox::cache::detail
