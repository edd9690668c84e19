// Portable float maps (.pfm): the HDR image format OIDN's tools and many renderers write.
//
// Layout on disk: "PF" (3 channels) or "Pf" (1 channel), width, height, and a scale whose sign
// gives the byte order (negative = little endian), separated by whitespace; then float32 pixels,
// channels interleaved, rows from the BOTTOM of the image to the top. The magnitude of the scale
// is ignored (as OIDN and most readers do).
//
// In memory denox uses planar NCHW with the top row first: shape {1, C, H, W}.
#pragma once

#include <string>
#include <string_view>

#include "common/host_tensor.hpp"

namespace denox::io {

// Reads a .pfm file of either byte order into a {1, C, H, W} tensor (C = 3 or 1). Throws
// denox::Error (Io) naming the path and the problem for malformed or truncated files.
HostTensor read_pfm(const std::string& path);

// Parses .pfm bytes already in memory; `source_name` names them in error messages.
HostTensor parse_pfm(std::string_view bytes, const std::string& source_name);

// Serializes a {1, C, H, W} (or {C, H, W}) float tensor with C = 3 ("PF") or C = 1 ("Pf").
// Writes little endian unless `big_endian` is set (which exists so that tests can produce both
// byte orders). Throws InvalidArgument for other shapes or channel counts.
std::string encode_pfm(const HostTensor& image, bool big_endian = false);

// Writes a little-endian .pfm file atomically: a failed write leaves no partial file behind.
void write_pfm(const std::string& path, const HostTensor& image);

}  // namespace denox::io
