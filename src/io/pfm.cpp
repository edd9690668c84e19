#include "io/pfm.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "common/error.hpp"
#include "common/host_tensor.hpp"  // shape_string
#include "common/read_file.hpp"
#include "io/npy.hpp"  // write_file_atomically

namespace denox::io {
namespace {

[[noreturn]] void fail_io(const std::string& path, const std::string& problem) {
  fail(ErrorCode::Io, path + ": " + problem);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Splits the three header tokens after the magic, remembering where the last one ends.
class HeaderTokens {
 public:
  HeaderTokens(std::string_view bytes, size_t pos, const std::string& path) : bytes_(bytes), pos_(pos), path_(path) {}

  std::string next(const char* what) {
    const size_t start = pos_;
    while (pos_ < bytes_.size() && is_space(bytes_[pos_])) ++pos_;
    if (pos_ == start) fail_io(path_, std::string("malformed .pfm header: expected whitespace before the ") + what);
    const size_t token_start = pos_;
    // Header tokens are short; a cap keeps a binary file from being scanned as one huge token.
    while (pos_ < bytes_.size() && !is_space(bytes_[pos_]) && pos_ - token_start < 64) ++pos_;
    if (pos_ == token_start || pos_ >= bytes_.size())
      fail_io(path_, std::string("truncated .pfm header: missing or unterminated ") + what);
    return std::string(bytes_.substr(token_start, pos_ - token_start));
  }
  size_t position() const { return pos_; }

 private:
  std::string_view bytes_;
  size_t pos_;
  const std::string& path_;
};

int64_t parse_dimension(const std::string& token, const char* what, const std::string& path) {
  int64_t value = 0;
  for (char c : token) {
    if (c < '0' || c > '9' || value > (std::numeric_limits<int32_t>::max() - (c - '0')) / 10)
      fail_io(path, std::string("malformed .pfm header: ") + what + " '" + token + "' is not a positive integer");
    value = value * 10 + (c - '0');
  }
  if (value <= 0) fail_io(path, std::string("malformed .pfm header: ") + what + " must be positive, got " + token);
  return value;
}

uint32_t load_u32(const unsigned char* p, bool little_endian) {
  return little_endian ? (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24)
                       : (uint32_t(p[3]) | uint32_t(p[2]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[0]) << 24);
}

}  // namespace

HostTensor parse_pfm(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != 'F' && bytes[1] != 'f'))
    fail_io(path, "not a .pfm file (expected \"PF\" or \"Pf\")");
  const int64_t channels = bytes[1] == 'F' ? 3 : 1;

  HeaderTokens tokens(bytes, 2, path);
  const int64_t width = parse_dimension(tokens.next("width"), "width", path);
  const int64_t height = parse_dimension(tokens.next("height"), "height", path);
  const std::string scale_text = tokens.next("scale");
  char* end = nullptr;
  const double scale = std::strtod(scale_text.c_str(), &end);
  if (end != scale_text.c_str() + scale_text.size() || !std::isfinite(scale) || scale == 0.0)
    fail_io(path, "malformed .pfm header: scale '" + scale_text + "' is not a finite non-zero number");
  const bool little_endian = scale < 0;

  // width, height < 2^31: width * height fits in 64 bits, times 12 might not. Compare with the
  // file size by division before multiplying or allocating, so a lying header cannot wrap
  // around or request gigabytes.
  const size_t header_end = tokens.position();
  const size_t available = bytes.size() - header_end - 1;  // the header ends with one whitespace character
  const uint64_t pixels = static_cast<uint64_t>(width) * static_cast<uint64_t>(height);
  const std::string size_text = std::to_string(width) + "x" + std::to_string(height) + "x" + std::to_string(channels);
  if (pixels > available / (static_cast<uint64_t>(channels) * 4))
    fail_io(path, "truncated .pfm data: " + size_text + " floats do not fit in the " + std::to_string(available) +
                      " bytes after the header");
  const uint64_t data_bytes = pixels * static_cast<uint64_t>(channels) * 4;
  // The data is the last data_bytes of the file. Writers put exactly one whitespace character
  // after the scale; tolerate a few more (e.g. "\r\n") but nothing else, so trailing garbage or
  // a wrong size is reported instead of silently shifting every pixel.
  const size_t data_offset = bytes.size() - static_cast<size_t>(data_bytes);
  for (size_t i = header_end; i < data_offset; ++i) {
    if (!is_space(bytes[i]) || data_offset - header_end > 4)
      fail_io(path, "data size mismatch: " + size_text + " floats need " + std::to_string(data_bytes) +
                        " bytes, the file has " + std::to_string(available) + " after the header");
  }

  HostTensor image;
  image.shape = {1, channels, height, width};
  image.f32.resize(static_cast<size_t>(width * height * channels));
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + data_offset;
  const size_t plane = static_cast<size_t>(width * height);
  for (int64_t file_row = 0; file_row < height; ++file_row) {
    const int64_t y = height - 1 - file_row;  // the file stores the bottom row first
    for (int64_t x = 0; x < width; ++x) {
      for (int64_t c = 0; c < channels; ++c) {
        const size_t src = static_cast<size_t>(((file_row * width + x) * channels + c) * 4);
        const uint32_t bits = load_u32(data + src, little_endian);
        std::memcpy(&image.f32[static_cast<size_t>(c) * plane + static_cast<size_t>(y * width + x)], &bits, 4);
      }
    }
  }
  return image;
}

HostTensor read_pfm(const std::string& path) { return parse_pfm(read_regular_file(path), path); }

std::string encode_pfm(const HostTensor& image, bool big_endian) {
  const auto& s = image.shape;
  const bool nchw = s.size() == 4 && s[0] == 1;
  if (!(nchw || s.size() == 3) || image.is_int64)
    fail(ErrorCode::InvalidArgument, "pfm: expected a float tensor of shape 1xCxHxW, got " + shape_string(image.shape));
  const int64_t channels = s[s.size() - 3], height = s[s.size() - 2], width = s[s.size() - 1];
  if (channels != 1 && channels != 3)
    fail(ErrorCode::InvalidArgument, "pfm: only 1 or 3 channels can be stored, got " + std::to_string(channels) +
                                         " (shape " + shape_string(image.shape) + ")");
  if (height <= 0 || width <= 0 || height > std::numeric_limits<int32_t>::max() ||
      width > std::numeric_limits<int32_t>::max())
    fail(ErrorCode::InvalidArgument, "pfm: invalid image size " + shape_string(image.shape));
  const size_t plane = static_cast<size_t>(width * height);
  if (image.f32.size() != plane * static_cast<size_t>(channels))
    fail(ErrorCode::InvalidArgument, "pfm: tensor of shape " + shape_string(image.shape) + " holds " +
                                         std::to_string(image.f32.size()) + " floats");

  std::string out = std::string(channels == 3 ? "PF" : "Pf") + "\n" + std::to_string(width) + " " +
                    std::to_string(height) + "\n" + (big_endian ? "1.0" : "-1.0") + "\n";
  const size_t header_size = out.size();
  out.resize(header_size + plane * static_cast<size_t>(channels) * 4);
  auto* dst = reinterpret_cast<unsigned char*>(out.data()) + header_size;
  for (int64_t file_row = 0; file_row < height; ++file_row) {
    const int64_t y = height - 1 - file_row;
    for (int64_t x = 0; x < width; ++x) {
      for (int64_t c = 0; c < channels; ++c) {
        uint32_t bits;
        std::memcpy(&bits, &image.f32[static_cast<size_t>(c) * plane + static_cast<size_t>(y * width + x)], 4);
        for (int b = 0; b < 4; ++b) *dst++ = static_cast<unsigned char>(bits >> (8 * (big_endian ? 3 - b : b)));
      }
    }
  }
  return out;
}

void write_pfm(const std::string& path, const HostTensor& image) {
  std::string bytes;
  try {
    bytes = encode_pfm(image);
  } catch (const Error& e) {
    fail(e, path + ": " + e.what());
  }
  write_file_atomically(path, bytes);
}

}  // namespace denox::io
