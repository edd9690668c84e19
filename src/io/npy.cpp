#include "io/npy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <system_error>

#include "common/error.hpp"
#include "common/half.hpp"
#include "common/read_file.hpp"

namespace denox::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

[[noreturn]] void fail_io(const std::string& path, const std::string& problem) {
  fail(ErrorCode::Io, path + ": " + problem);
}

uint64_t load_unsigned(const unsigned char* p, size_t size, bool little_endian) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) {
    const size_t byte = little_endian ? size - 1 - i : i;
    v = (v << 8) | p[byte];
  }
  return v;
}

void store_unsigned(std::string& out, uint64_t v, size_t size) {  // always little endian
  for (size_t i = 0; i < size; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// ---- The header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// parsed with a tiny tokenizer rather than string searches, so that key order, spacing, quote
// style and Python 2 "3L" dimensions do not matter.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader header;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() != '\'' && peek() != '"')
          bad("structured dtypes (descr is not a plain type string) are not supported");
        header.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        header.shape = parse_shape();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "' in the header");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') bad("expected ',' or '}' in the header");
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) bad("trailing characters after the header dict");
    if (!have_descr || !have_order || !have_shape)
      bad("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

 private:
  [[noreturn]] void bad(const std::string& problem) {
    // The header as far as it helps to read (it may be megabytes: version 2 gives it 4 GB).
    const size_t shown = 200;
    fail_io(path_, "malformed .npy header (" + problem + "): " + std::string(text_.substr(0, shown)) + (text_.size() > shown ? " ..." : ""));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a quoted string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool parse_bool() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("shape entries must be non-negative integers");
      int64_t d = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int digit = peek() - '0';
        if (d > (std::numeric_limits<int64_t>::max() - digit) / 10) bad("shape entry overflows int64");
        d = d * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literal
      // numpy 2 allows 64 (NPY_MAXDIMS); a header of 20001 dimensions was printed whole in the error.
      if (shape.size() == 64) bad("more than 64 dimensions");
      shape.push_back(d);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in the shape");
    }
    ++pos_;
    return shape;
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

enum class ElementKind { Float16, Float32, Float64, Int32, Int64 };

struct ElementType {
  ElementKind kind;
  size_t size;
  bool little_endian;
};

ElementType element_type_from_descr(const std::string& descr, const std::string& path) {
  if (descr.size() != 3) fail_io(path, "unsupported dtype '" + descr + "' (expected f2, f4, f8, i4 or i8)");
  const char order = descr[0];
  bool little;
  if (order == '<') little = true;
  else if (order == '>') little = false;
  else if (order == '=') little = std::endian::native == std::endian::little;
  else fail_io(path, "unsupported byte order in dtype '" + descr + "'");
  const std::string code = descr.substr(1);
  if (code == "f4") return {ElementKind::Float32, 4, little};
  if (code == "f8") return {ElementKind::Float64, 8, little};
  if (code == "f2") return {ElementKind::Float16, 2, little};
  if (code == "i8") return {ElementKind::Int64, 8, little};
  if (code == "i4") return {ElementKind::Int32, 4, little};
  fail_io(path, "unsupported dtype '" + descr + "' (expected f2, f4, f8, i4 or i8)");
}

// Element count of `shape`, or nullopt when it does not fit in size_t together with the element
// size (a lying header must not wrap around into a small, plausible byte count).
std::optional<size_t> checked_byte_count(const std::vector<int64_t>& shape, size_t element_size) {
  size_t bytes = element_size;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && bytes > std::numeric_limits<size_t>::max() / static_cast<size_t>(d)) return std::nullopt;
    bytes *= static_cast<size_t>(d);
  }
  return bytes;
}

}  // namespace

HostTensor parse_npy(std::string_view bytes, const std::string& path) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kMagicSize + 2 || bytes.substr(0, kMagicSize) != std::string_view(kMagic, kMagicSize))
    fail_io(path, "not a .npy file (bad magic)");
  const int major = u[kMagicSize];
  size_t header_offset, header_len;
  if (major == 1) {
    if (bytes.size() < 10) fail_io(path, "truncated .npy preamble");
    header_len = load_unsigned(u + 8, 2, true);
    header_offset = 10;
  } else if (major == 2 || major == 3) {  // 3.0 only differs in allowing utf-8 in the header
    if (bytes.size() < 12) fail_io(path, "truncated .npy preamble");
    header_len = load_unsigned(u + 8, 4, true);
    header_offset = 12;
  } else {
    fail_io(path, "unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > bytes.size() - header_offset)
    fail_io(path, "truncated .npy header (header length " + std::to_string(header_len) + " exceeds the file)");

  const NpyHeader header = HeaderParser(bytes.substr(header_offset, header_len), path).parse();
  const ElementType type = element_type_from_descr(header.descr, path);
  const size_t data_offset = header_offset + header_len;
  const std::string shape = shape_string(header.shape);
  // A Fortran-order array of rank <= 1 has the same bytes as C order; anything else would need a
  // transpose that denox's callers never expect, so refuse it loudly.
  if (header.fortran_order && header.shape.size() > 1)
    fail_io(path, "fortran_order=True arrays are not supported (save with np.ascontiguousarray)");

  const std::optional<size_t> data_bytes = checked_byte_count(header.shape, type.size);
  if (!data_bytes) fail_io(path, "shape " + shape + " overflows the addressable size");
  const size_t available = bytes.size() - data_offset;
  if (*data_bytes != available)
    fail_io(path, "data size mismatch: shape " + shape + " of " + header.descr + " needs " +
                      std::to_string(*data_bytes) + " bytes, the file has " + std::to_string(available));

  HostTensor tensor;
  tensor.shape = header.shape;
  const size_t count = *data_bytes / type.size;
  const unsigned char* data = u + data_offset;
  const bool is_int = type.kind == ElementKind::Int32 || type.kind == ElementKind::Int64;
  tensor.is_int64 = is_int;
  if (is_int) tensor.i64.resize(count);
  else tensor.f32.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t raw = load_unsigned(data + i * type.size, type.size, type.little_endian);
    switch (type.kind) {
      case ElementKind::Float16: tensor.f32[i] = half_to_float(static_cast<uint16_t>(raw)); break;
      case ElementKind::Float32: {
        const uint32_t bits = static_cast<uint32_t>(raw);
        std::memcpy(&tensor.f32[i], &bits, 4);
        break;
      }
      case ElementKind::Float64: {
        double d;
        std::memcpy(&d, &raw, 8);
        tensor.f32[i] = static_cast<float>(d);
        break;
      }
      case ElementKind::Int32: tensor.i64[i] = static_cast<int32_t>(static_cast<uint32_t>(raw)); break;
      case ElementKind::Int64: tensor.i64[i] = static_cast<int64_t>(raw); break;
    }
  }
  return tensor;
}

HostTensor read_npy(const std::string& path) { return parse_npy(read_regular_file(path), path); }

std::string encode_npy(const HostTensor& tensor) {
  const std::optional<size_t> expected = checked_byte_count(tensor.shape, 1);
  if (!expected) fail(ErrorCode::InvalidArgument, "npy: tensor shape " + shape_string(tensor.shape) + " is invalid");
  const size_t have = tensor.is_int64 ? tensor.i64.size() : tensor.f32.size();
  if (have != *expected)
    fail(ErrorCode::InvalidArgument, "npy: tensor of shape " + shape_string(tensor.shape) + " holds " +
                                         std::to_string(have) + " elements, expected " + std::to_string(*expected));

  std::string dict = std::string("{'descr': '") + (tensor.is_int64 ? "<i8" : "<f4") +
                     "', 'fortran_order': False, 'shape': (";
  for (int64_t d : tensor.shape) dict += std::to_string(d) + ", ";
  if (tensor.shape.size() > 1) dict.resize(dict.size() - 2);  // "(2, 3)" but "(5,)"
  else if (tensor.shape.size() == 1) dict.resize(dict.size() - 1);
  dict += "), }";

  // Pad with spaces and a final newline so that preamble + header is a multiple of 64 bytes.
  size_t preamble = 10;
  size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  int major = 1;
  if (total - preamble > std::numeric_limits<uint16_t>::max()) {  // only for absurd ranks
    preamble = 12;
    major = 2;
    total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  }
  const size_t header_len = total - preamble;
  dict.append(header_len - dict.size() - 1, ' ');
  dict.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  store_unsigned(out, header_len, major == 1 ? 2 : 4);
  out += dict;
  out.reserve(out.size() + have * (tensor.is_int64 ? 8 : 4));
  for (size_t i = 0; i < have; ++i) {
    if (tensor.is_int64) {
      store_unsigned(out, static_cast<uint64_t>(tensor.i64[i]), 8);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &tensor.f32[i], 4);
      store_unsigned(out, bits, 4);
    }
  }
  return out;
}

void write_npy(const std::string& path, const HostTensor& tensor) {
  std::string bytes;
  try {
    bytes = encode_npy(tensor);
  } catch (const Error& e) {
    fail(e, path + ": " + e.what());
  }
  write_file_atomically(path, bytes);
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.filename().empty()) fail_io(path, "not a file path");
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");

  // A hidden name beside the target (rename is only atomic within one file system). open() with
  // O_EXCL rather than mkstemp so that the final file gets the usual 0666 & ~umask permissions.
  static std::atomic<uint64_t> counter{0};
  std::random_device entropy;
  std::string temp_path;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    std::string temp_name = ".";
    temp_name += target.filename().string();
    temp_name += ".tmp-" + std::to_string(::getpid());
    temp_name += "-" + std::to_string(counter++);
    temp_name += "-" + std::to_string(entropy());
    temp_path = (directory / temp_name).string();
    fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail_io(path, std::string("cannot create a temporary file in its directory: ") + std::strerror(errno));

  auto abandon = [&](const std::string& problem) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temp_path.c_str());
    fail_io(path, problem + ": " + std::strerror(saved));
  };
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed");
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temp_path.c_str());
    fail_io(path, std::string("close failed: ") + std::strerror(saved));
  }
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp_path.c_str());
    fail_io(path, std::string("cannot rename the temporary file into place: ") + std::strerror(saved));
  }
}

}  // namespace denox::io
