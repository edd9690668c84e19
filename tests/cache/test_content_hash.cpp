// Content hashes and cache keys.
#include <xxhash.h>

#include <catch2/catch.hpp>

#include <set>

#include "cache_test_util.hpp"
#include "runtime/cache/cache_key.hpp"
#include "runtime/cache/content_hash.hpp"

using namespace denox::cache;
using namespace denox::cache::test;

namespace {

// The canonical XXH128 digits straight from libxxhash, to check our own formatting against.
std::string reference_hex(const std::string& text) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(text.data(), text.size()));
  std::string out;
  char digits[3];
  for (unsigned char byte : canonical.digest) {
    std::snprintf(digits, sizeof digits, "%02x", byte);
    out += digits;
  }
  return out;
}

}  // namespace

TEST_CASE("content hash is XXH3-128 in canonical hex", "[cache][hash]") {
  for (const std::string& text : std::vector<std::string>{"", "a", "abc", std::string(1000, 'x'), std::string("\0\1\2", 3)}) {
    const std::string hex = content_hash_hex(text);
    CHECK(hex.size() == 32);
    CHECK(hex == reference_hex(text));
    CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  CHECK(content_hash_hex(std::string_view("abc")) != content_hash_hex(std::string_view("abd")));
  const std::vector<std::uint8_t> bytes = {'a', 'b', 'c'};
  CHECK(content_hash_hex(bytes) == content_hash_hex(std::string_view("abc")));
  CHECK(hash_bytes(bytes) == hash_bytes(std::string_view("abc")));
  // An empty span may carry a null pointer.
  CHECK(content_hash_hex(std::span<const std::uint8_t>()) == reference_hex(""));
}

TEST_CASE("incremental hashing matches one-shot hashing and fields are unambiguous", "[cache][hash]") {
  const auto data = sample_bytes(100000, 7);
  ContentHasher chunked;
  for (std::size_t at = 0; at < data.size(); at += 4093)
    chunked.update(std::span(data).subspan(at, std::min<std::size_t>(4093, data.size() - at)));
  CHECK(chunked.digest() == hash_bytes(data));
  // digest() does not end the hasher.
  chunked.update(std::string_view("more"));
  CHECK(chunked.digest() != hash_bytes(data));

  CHECK(ContentHasher().update("ab").update("c").hex() == content_hash_hex(std::string_view("abc")));
  CHECK(ContentHasher().field("ab").field("c").hex() != ContentHasher().field("a").field("bc").hex());
  CHECK(ContentHasher().field("").field("x").hex() != ContentHasher().field("x").field("").hex());
  CHECK(ContentHasher().field(std::uint64_t{1}).hex() != ContentHasher().field(std::uint64_t{256}).hex());

  ContentHasher moved = std::move(chunked);
  CHECK(moved.hex().size() == 32);
}

TEST_CASE("cache key: canonical text names every field, any change changes the digest", "[cache][key]") {
  const CacheKey base = sample_key();
  const std::string text = base.canonical();
  CHECK(text.rfind("denox-plan-key/1\n", 0) == 0);
  for (const char* field : {"model_hash=", "vendor_id=0x000010de", "device_id=0x00002330",
                            "pipeline_cache_uuid=03142536", "driver_version=0x91000000", "driver_name=6:NVIDIA",
                            "denox_version=5:0.1.0", "options=14:precision=fp16"})
    CHECK(text.find(field) != std::string::npos);
  CHECK(base.digest() == content_hash_hex(text));
  CHECK(base.digest() == sample_key().digest());  // deterministic

  std::vector<CacheKey> variants(9, base);
  variants[0].model_hash = "other";
  variants[1].device.vendor_id ^= 1;
  variants[2].device.device_id ^= 1;
  variants[3].device.pipeline_cache_uuid[15] ^= 1;
  variants[4].device.driver_version ^= 1;
  variants[5].device.driver_name = "NVIDIA ";
  variants[6].denox_version = "0.1.1";
  variants[7].options = "precision=fp32";
  // Moving text from one string field into the next must not produce the same key.
  variants[8].denox_version = "0.1.0\noptions=14:precision=fp16";
  variants[8].options = "";
  std::set<std::string> digests = {base.digest()};
  for (const auto& v : variants) digests.insert(v.digest());
  CHECK(digests.size() == variants.size() + 1);
}

TEST_CASE("device identity digest depends only on the device", "[cache][key]") {
  const DeviceIdentity a = sample_device(1);
  CHECK(a.digest() == sample_device(1).digest());
  CHECK(a.digest() != sample_device(2).digest());
  CHECK(a.canonical().rfind("denox-device-key/1\n", 0) == 0);
  CacheKey k1 = sample_key("m1"), k2 = sample_key("m2");
  CHECK(k1.device.digest() == k2.device.digest());
}
