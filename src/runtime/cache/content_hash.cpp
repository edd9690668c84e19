#include "runtime/cache/content_hash.hpp"

#include <xxhash.h>

#include <array>
#include <new>

#include "common/error.hpp"

namespace denox::cache {

namespace {

std::array<std::uint8_t, 8> little_endian(std::uint64_t value) {
  std::array<std::uint8_t, 8> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
  return out;
}

Hash128 from_xxh(XXH128_hash_t h) { return Hash128{h.high64, h.low64}; }

}  // namespace

std::string Hash128::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  // Big-endian: high word first, most significant nibble first (XXH128_canonical_t order).
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(15 - i)] = digits[(high >> (4 * i)) & 0xf];
    out[static_cast<std::size_t>(31 - i)] = digits[(low >> (4 * i)) & 0xf];
  }
  return out;
}

Hash128 hash_bytes(const void* data, std::size_t size) {
  // XXH3 accepts a null pointer only together with size 0; an empty span may carry one.
  static const char empty = 0;
  return from_xxh(XXH3_128bits(size == 0 ? &empty : data, size));
}

std::string content_hash_hex(const void* data, std::size_t size) { return hash_bytes(data, size).hex(); }

// The xxhash state lives on the heap (XXH3_createState) because its layout is only public with
// XXH_STATIC_LINKING_ONLY, which ties us to the exact library version we compiled against.
struct ContentHasher::State {
  XXH3_state_t* xxh = nullptr;
  State() : xxh(XXH3_createState()) {
    if (xxh == nullptr) throw std::bad_alloc();
    // Cannot fail for a freshly created state; the return code is checked anyway.
    if (XXH3_128bits_reset(xxh) != XXH_OK) {
      XXH3_freeState(xxh);
      fail(ErrorCode::Internal, "XXH3_128bits_reset failed");
    }
  }
  ~State() { XXH3_freeState(xxh); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

ContentHasher::ContentHasher() : state_(std::make_unique<State>()) {}
ContentHasher::~ContentHasher() = default;
ContentHasher::ContentHasher(ContentHasher&&) noexcept = default;
ContentHasher& ContentHasher::operator=(ContentHasher&&) noexcept = default;

ContentHasher& ContentHasher::update(const void* data, std::size_t size) {
  if (size == 0) return *this;
  if (XXH3_128bits_update(state_->xxh, data, size) != XXH_OK) fail(ErrorCode::Internal, "XXH3_128bits_update failed");
  return *this;
}

ContentHasher& ContentHasher::field(const void* data, std::size_t size) {
  const auto length = little_endian(size);
  update(length.data(), length.size());
  return update(data, size);
}

ContentHasher& ContentHasher::field(std::uint64_t value) {
  const auto bytes = little_endian(value);
  return field(bytes.data(), bytes.size());
}

Hash128 ContentHasher::digest() const { return from_xxh(XXH3_128bits_digest(state_->xxh)); }

}  // namespace denox::cache
