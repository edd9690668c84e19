// NumPy .npy files: the format the CLI and the tests use to exchange tensors with PyTorch/NumPy.
//
// Reading accepts what numpy.save writes for the dtypes denox cares about: float32, float64 and
// float16 (converted to float32), int64 and int32 (converted to int64, HostTensor::is_int64),
// either byte order, format versions 1.0, 2.0 and 3.0, any rank (rank 0 = shape {}). Fortran
// order and structured dtypes are rejected with a clear error, as are headers that lie about
// the data size (checked against the file size before anything large is allocated).
//
// Writing produces version 1.0 C-order files (float32, or int64 for is_int64 tensors) with the
// header padded so that the data starts at a 64-byte boundary, as numpy >= 1.14 does.
#pragma once

#include <string>
#include <string_view>

#include "common/host_tensor.hpp"

namespace denox::io {

// Reads a .npy file. Throws denox::Error (Io for unreadable/malformed files, naming the path).
HostTensor read_npy(const std::string& path);

// Parses the bytes of a .npy file already in memory; `source_name` names it in error messages.
HostTensor parse_npy(std::string_view bytes, const std::string& source_name);

// Serializes a tensor to .npy bytes. Throws InvalidArgument when the tensor's data does not
// match its shape.
std::string encode_npy(const HostTensor& tensor);

// Writes a .npy file atomically (see write_file_atomically).
void write_npy(const std::string& path, const HostTensor& tensor);

// Writes `bytes` to a temporary file in the directory of `path` and renames it over `path` once
// everything is on disk, so that readers (and a crash) never see a half-written file and a
// failed write leaves any previous file untouched. Shared by the .npy and .pfm writers.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace denox::io
