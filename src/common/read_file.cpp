#include "common/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "common/error.hpp"

namespace denox {
namespace {

[[noreturn]] void fail_read(const std::filesystem::path& path, const std::string& problem) {
  fail(ErrorCode::Io, path.string() + ": " + problem);
}

std::string errno_text() { return std::generic_category().message(errno); }  // (strerror is not thread-safe)

// A descriptor closed on every path out.
class OpenFile {
 public:
  explicit OpenFile(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) {}
  ~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OpenFile(OpenFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  OpenFile& operator=(OpenFile&&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Refuses, naming what it is instead, anything but a regular file.
void require_regular(const std::filesystem::path& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) fail_read(path, "is a directory");
  if (!S_ISREG(st.st_mode)) fail_read(path, "not a regular file (a device, FIFO or socket)");
}

// The status of the regular file open as `fd`.
struct stat checked_status(const std::filesystem::path& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_read(path, "cannot read its size: " + errno_text());
  require_regular(path, st);
  return st;
}

std::uintmax_t checked_size(const std::filesystem::path& path, int fd) { return static_cast<std::uintmax_t>(checked_status(path, fd).st_size); }

// Opens without blocking (a FIFO would wait for a writer) and checks what was opened, not the
// name again: the path may change between a check and the open. The name is checked first too,
// so that a device is refused without being opened (opening a tty or a tape can act).
OpenFile open_regular(const std::filesystem::path& path) {
  struct stat named {};
  if (::stat(path.c_str(), &named) == 0) require_regular(path, named);
  OpenFile file(path);
  if (file.fd() < 0) fail_read(path, "cannot open for reading: " + errno_text());
  return file;
}

}  // namespace

std::uintmax_t regular_file_size(const std::filesystem::path& path) {
  const OpenFile file = open_regular(path);
  return checked_size(path, file.fd());
}

std::string read_regular_file(const std::filesystem::path& path, const std::function<void(std::uintmax_t)>& check_size) {
  const OpenFile file = open_regular(path);
  const std::uintmax_t size = checked_size(path, file.fd());
  if (check_size) check_size(size);
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t got = 0;
  // One byte more than the size: a file that grew while being read is caught.
  char extra = 0;
  while (true) {
    char* into = got < bytes.size() ? bytes.data() + got : &extra;
    const size_t want = got < bytes.size() ? bytes.size() - got : 1;
    const ssize_t n = ::read(file.fd(), into, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_read(path, "read error: " + errno_text());
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > bytes.size()) break;
  }
  if (got != bytes.size())
    fail_read(path, "its size changed while it was read (" + std::to_string(size) + " bytes when opened, " +
                        (got > bytes.size() ? std::string("more") : std::to_string(got)) + " read): is it still being written?");
  return bytes;
}

std::string read_regular_file_range(const std::filesystem::path& path, std::uintmax_t offset, size_t length,
                                    const std::function<void(const OpenedFile&)>& check) {
  const OpenFile file = open_regular(path);
  OpenedFile opened;
  const struct stat st = checked_status(path, file.fd());
  opened.size = static_cast<std::uintmax_t>(st.st_size);
  opened.device = static_cast<std::uint64_t>(st.st_dev);
  opened.inode = static_cast<std::uint64_t>(st.st_ino);
  // The kernel's name for the descriptor: the file that will be read, whatever the path's
  // components point to by now.
  std::error_code ec;
  opened.resolved = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(file.fd()), ec);
  if (ec) opened.resolved.clear();
  check(opened);
  if (offset > opened.size || length > opened.size - offset)
    fail_read(path, "bytes [" + std::to_string(offset) + ", +" + std::to_string(length) + ") lie beyond its end (" +
                        std::to_string(opened.size) + " bytes)");
  std::string bytes(length, '\0');
  size_t got = 0;
  while (got < length) {
    const ssize_t n = ::pread(file.fd(), bytes.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_read(path, "read error: " + errno_text());
    if (n == 0)
      fail_read(path, "it ended after " + std::to_string(offset + got) + " bytes while it was read (" +
                          std::to_string(opened.size) + " when opened): is it still being written?");
    got += static_cast<size_t>(n);
  }
  return bytes;
}

}  // namespace denox
