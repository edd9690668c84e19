#include "common/read_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "common/error.hpp"

namespace denox {
namespace {

[[noreturn]] void fail_read(const std::filesystem::path& path, const std::string& problem) {
  fail(ErrorCode::Io, path.string() + ": " + problem);
}

}  // namespace

std::uintmax_t regular_file_size(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) fail_read(path, "cannot open for reading: " + ec.message());
  if (std::filesystem::is_directory(status)) fail_read(path, "is a directory");
  if (!std::filesystem::is_regular_file(status)) fail_read(path, "not a regular file (a device, FIFO or socket)");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail_read(path, "cannot read its size: " + ec.message());
  return size;
}

std::string read_regular_file(const std::filesystem::path& path) {
  const std::uintmax_t size = regular_file_size(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_read(path, std::string("cannot open for reading: ") + std::strerror(errno));
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  const auto got = static_cast<std::uintmax_t>(in.gcount());
  if (in.bad()) fail_read(path, std::string("read error: ") + std::strerror(errno));
  // Fewer bytes than its size, or more left after them: it was written while being read.
  if (got != size || in.peek() != std::char_traits<char>::eof())
    fail_read(path, "its size changed while it was read (" + std::to_string(size) + " bytes when opened, " +
                        (got != size ? std::to_string(got) : "more") + " read): is it still being written?");
  return bytes;
}

}  // namespace denox
