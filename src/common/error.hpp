// denox's one exception type. Every failure a caller can cause (bad model, bad shapes, missing
// files, unsupported features) becomes a denox::Error with a code and a message that names the
// cause: node name, op type, opset, tensor, path.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace denox {

enum class ErrorCode {
  InvalidModel,    // malformed protobuf, dangling tensor names, inconsistent graph
  Unsupported,     // valid ONNX that denox does not implement
  ShapeMismatch,   // shapes that do not fit together (at import or for a given resolution)
  InvalidArgument, // a caller passed something wrong (sizes, options, files)
  Io,              // a file could not be read or written
  MissingFeature,  // the Vulkan device lacks a feature or extension denox needs
  Vulkan,          // a Vulkan call failed (device lost, out of device memory, ...)
  Internal,        // a broken invariant inside denox
  OutOfHostMemory, // an allocation failed (std::bad_alloc caught where it can be named)
};

const char* error_code_name(ErrorCode code);

// Messages name what callers gave (node and tensor names, paths, file headers), which can hold
// any bytes. Control characters and bytes that are not UTF-8 are written as \xNN, so a message
// is one readable string: a NUL no longer cuts it short, a name cannot drive the terminal.
// Newlines and tabs stay (multi-problem messages are laid out with them); so does valid UTF-8,
// except the bidirectional controls (U+061C, U+200E/F, U+202A..E, U+2066..9) and the line and
// paragraph separators (U+2028/9), which would reorder or break what a log shows around a
// hostile name ("Trojan Source"); their bytes are escaped. A backslash is not escaped, so that
// the function is idempotent: rethrown messages pass again.
inline std::string printable_message(std::string_view text);

class Error : public std::runtime_error {
 public:
  // `vk_result`: the failing VkResult (a negative value, or VK_TIMEOUT for a wait denox gave up
  // on) behind an ErrorCode::Vulkan, so that callers can act on VK_ERROR_DEVICE_LOST without
  // parsing the message; 0 (VK_SUCCESS) otherwise. An int, so that this header needs no Vulkan.
  Error(ErrorCode code, const std::string& message, int vk_result = 0)
      : std::runtime_error(printable_message(message)), code_(code), vk_result_(vk_result) {}
  // The same failure with a new message (context prepended): keeps the code and the VkResult.
  Error(const Error& cause, const std::string& message)
      : std::runtime_error(printable_message(message)), code_(cause.code_), vk_result_(cause.vk_result_) {}
  ErrorCode code() const { return code_; }
  int vk_result() const { return vk_result_; }

 private:
  ErrorCode code_;
  int vk_result_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }
// Rethrows `cause` with a new message, keeping its code and VkResult.
[[noreturn]] inline void fail(const Error& cause, const std::string& message) { throw Error(cause, message); }

namespace detail {

// Whether the 2- or 3-byte sequence at text[i] (well formed) is a bidirectional control or a
// line or paragraph separator.
inline bool utf8_reorders_text(std::string_view text, std::size_t i, std::size_t length) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  if (length == 2) return at(0) == 0xD8 && at(1) == 0x9C;           // U+061C
  if (length != 3 || at(0) != 0xE2) return false;
  if (at(1) == 0x80) return at(2) == 0x8E || at(2) == 0x8F ||       // U+200E/F
                            (at(2) >= 0xA8 && at(2) <= 0xAE);        // U+2028/9, U+202A..E
  return at(1) == 0x81 && at(2) >= 0xA6 && at(2) <= 0xA9;           // U+2066..9
}

// Length of the well-formed UTF-8 sequence of a printable character at text[i] (lead byte >=
// 0x80): 2 to 4, or 0 for anything else (a stray byte, an overlong form, a surrogate, past
// U+10FFFF, a C1 control character U+0080..U+009F, a character utf8_reorders_text names).
inline std::size_t utf8_printable_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const unsigned lead = at(0);
  std::size_t length = 0;
  unsigned low = 0x80, high = 0xBF;  // the second byte's range; later ones are always 80..BF
  if (lead == 0xC2) { length = 2; low = 0xA0; }  // C2 80..9F: C1 controls
  else if (lead >= 0xC3 && lead <= 0xDF) length = 2;
  else if (lead == 0xE0) { length = 3; low = 0xA0; }
  else if (lead == 0xED) { length = 3; high = 0x9F; }
  else if (lead >= 0xE1 && lead <= 0xEF) length = 3;
  else if (lead == 0xF0) { length = 4; low = 0x90; }
  else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
  else if (lead == 0xF4) { length = 4; high = 0x8F; }
  else return 0;
  if (at(1) < low || at(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (at(k) < 0x80 || at(k) > 0xBF) return 0;
  return utf8_reorders_text(text, i, length) ? 0 : length;
}

}  // namespace detail

inline std::string printable_message(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool plain = c >= 0x20 ? c != 0x7F : c == '\n' || c == '\t';
    const std::size_t length = c < 0x80 ? (plain ? 1 : 0) : detail::utf8_printable_length(text, i);
    if (length == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

inline const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidModel: return "invalid model";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::ShapeMismatch: return "shape mismatch";
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::Io: return "i/o error";
    case ErrorCode::MissingFeature: return "missing device feature";
    case ErrorCode::Vulkan: return "vulkan error";
    case ErrorCode::Internal: return "internal error";
    case ErrorCode::OutOfHostMemory: return "out of host memory";
  }
  return "error";
}

}  // namespace denox
