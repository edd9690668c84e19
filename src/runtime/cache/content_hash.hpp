// Content hashes for the cache: XXH3 128-bit, printed as 32 lowercase hex digits.
//
// XXH3 is not cryptographic. That is fine here: the cache is a local, per-user file whose keys
// only have to tell models/options/devices apart and whose checksums only have to catch bit
// rot, torn writes and tools that edited the file. 128 bits make accidental collisions
// irrelevant, and XXH3 runs at memory bandwidth, so hashing a 100 MB model costs ~10 ms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace denox::cache {

// A 128-bit digest. hex() is the canonical (big-endian) XXH128 form, the same digits the
// `xxh128sum` tool prints, so a model's hash can be checked from a shell.
struct Hash128 {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  std::string hex() const;
  bool operator==(const Hash128&) const = default;
};

// One-shot hash of a byte range.
Hash128 hash_bytes(const void* data, std::size_t size);
inline Hash128 hash_bytes(std::span<const std::uint8_t> bytes) { return hash_bytes(bytes.data(), bytes.size()); }
inline Hash128 hash_bytes(std::string_view text) { return hash_bytes(text.data(), text.size()); }

// hash_bytes(...).hex(), the form stored in the cache.
std::string content_hash_hex(const void* data, std::size_t size);
inline std::string content_hash_hex(std::span<const std::uint8_t> bytes) {
  return content_hash_hex(bytes.data(), bytes.size());
}
inline std::string content_hash_hex(std::string_view text) { return content_hash_hex(text.data(), text.size()); }

// Incremental XXH3-128, for hashing several parts (model bytes, then external weight files,
// then options) without concatenating them first.
//
// update() feeds raw bytes: update("ab"); update("c") equals update("abc"), the same digest as
// hash_bytes("abc"). field() feeds a length prefix before the bytes, so a sequence of fields
// is unambiguous: field("ab"), field("c") differs from field("a"), field("bc"). Use field()
// whenever the parts are separate values, update() for streaming one value in chunks.
class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(ContentHasher&&) noexcept;
  ContentHasher& operator=(ContentHasher&&) noexcept;
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  ContentHasher& update(const void* data, std::size_t size);
  ContentHasher& update(std::span<const std::uint8_t> bytes) { return update(bytes.data(), bytes.size()); }
  ContentHasher& update(std::string_view text) { return update(text.data(), text.size()); }

  ContentHasher& field(const void* data, std::size_t size);
  ContentHasher& field(std::span<const std::uint8_t> bytes) { return field(bytes.data(), bytes.size()); }
  ContentHasher& field(std::string_view text) { return field(text.data(), text.size()); }
  // An integer as a field of 8 little-endian bytes (independent of the host's byte order).
  ContentHasher& field(std::uint64_t value);

  // The digest of everything fed so far; the hasher stays usable (more updates may follow).
  Hash128 digest() const;
  std::string hex() const { return digest().hex(); }

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace denox::cache
