// Reading a whole file into memory, for every reader of denox's inputs (ONNX models, int8
// calibrations, .npy and .pfm tensors). One place that refuses what is not a regular file: a
// directory made the stream throw without the path, and /dev/zero or a FIFO was read until
// memory ran out (both found by fuzzing).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace denox {

// The size of a regular file. Throws Error(Io) naming the path: "PATH: is a directory", "PATH:
// not a regular file (a device, FIFO or socket)", "PATH: cannot open for reading: <cause>".
// Opens it without blocking and checks what was opened (not the name a second time).
std::uintmax_t regular_file_size(const std::filesystem::path& path);

// The whole of a regular file (the checks above), read to the size it had when opened. A file
// that changes size while it is read fails naming both sizes rather than returning a part.
// `check_size`, if given, sees that size before anything is read, and may throw to refuse it.
std::string read_regular_file(const std::filesystem::path& path, const std::function<void(std::uintmax_t)>& check_size = {});

// What a range read found when it opened the file: the path the kernel resolved for the open
// descriptor (every link followed; empty where /proc is not mounted), the size then, and the
// file's identity (st_dev, st_ino), to compare with what a name resolves to.
struct OpenedFile {
  std::filesystem::path resolved;
  std::uintmax_t size = 0;
  std::uint64_t device = 0, inode = 0;
};

// `length` bytes at `offset` of a regular file (the checks above). `check` sees the file that
// was opened before anything is read, and may throw to refuse it: a caller that limits where
// files may lie checks `resolved`, so a link swapped in after it checked the name is caught, and
// checks the range against `size`. A file that shrinks while it is read fails naming the path.
std::string read_regular_file_range(const std::filesystem::path& path, std::uintmax_t offset, size_t length,
                                    const std::function<void(const OpenedFile&)>& check);

}  // namespace denox
