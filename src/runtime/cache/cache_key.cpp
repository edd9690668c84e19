#include "runtime/cache/cache_key.hpp"

#include <charconv>
#include <cstdio>

#include "runtime/cache/content_hash.hpp"

namespace denox::cache {

namespace {

// Bumped whenever the canonical form changes, so old and new keys can never coincide.
constexpr const char* kKeyFormat = "denox-plan-key/1";

void put_string(std::string& out, const char* name, const std::string& value) {
  out += name;
  out += '=';
  out += std::to_string(value.size());
  out += ':';
  out += value;
  out += '\n';
}

void put_hex32(std::string& out, const char* name, std::uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", value);
  out += name;
  out += '=';
  out += buffer;
  out += '\n';
}

void put_device(std::string& out, const DeviceIdentity& device) {
  put_hex32(out, "vendor_id", device.vendor_id);
  put_hex32(out, "device_id", device.device_id);
  static constexpr char digits[] = "0123456789abcdef";
  out += "pipeline_cache_uuid=";
  for (std::uint8_t byte : device.pipeline_cache_uuid) {
    out += digits[byte >> 4];
    out += digits[byte & 0xf];
  }
  out += '\n';
  put_hex32(out, "driver_version", device.driver_version);
  put_string(out, "driver_name", device.driver_name);
}

// Reads canonical() back, field by field in the order it writes them; every read fails
// (returns false) unless the text is exactly what canonical() would have produced.
class KeyReader {
 public:
  explicit KeyReader(std::string_view text) : rest_(text) {}

  bool line(std::string_view expected) {
    if (rest_.substr(0, expected.size()) != expected || rest_.size() == expected.size() || rest_[expected.size()] != '\n')
      return false;
    rest_.remove_prefix(expected.size() + 1);
    return true;
  }
  bool string(std::string_view name, std::string& out) {
    if (!prefix(name)) return false;
    std::size_t length = 0;
    const auto [end, ec] = std::from_chars(rest_.data(), rest_.data() + rest_.size(), length);
    if (ec != std::errc() || end == rest_.data() || *end != ':') return false;
    rest_.remove_prefix(static_cast<std::size_t>(end - rest_.data()) + 1);
    if (length >= rest_.size() || rest_[length] != '\n') return false;  // (length + 1 could wrap)
    out.assign(rest_.substr(0, length));
    rest_.remove_prefix(length + 1);
    return true;
  }
  bool hex32(std::string_view name, std::uint32_t& out) {
    if (!prefix(name) || rest_.size() < 11 || rest_.substr(0, 2) != "0x" || rest_[10] != '\n') return false;
    const auto [end, ec] = std::from_chars(rest_.data() + 2, rest_.data() + 10, out, 16);
    if (ec != std::errc() || end != rest_.data() + 10) return false;
    rest_.remove_prefix(11);
    return true;
  }
  bool uuid(std::array<std::uint8_t, 16>& out) {
    if (!prefix("pipeline_cache_uuid") || rest_.size() < 33 || rest_[32] != '\n') return false;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto [end, ec] = std::from_chars(rest_.data() + 2 * i, rest_.data() + 2 * i + 2, out[i], 16);
      if (ec != std::errc() || end != rest_.data() + 2 * i + 2) return false;
    }
    rest_.remove_prefix(33);
    return true;
  }
  bool device(DeviceIdentity& d) {
    return hex32("vendor_id", d.vendor_id) && hex32("device_id", d.device_id) && uuid(d.pipeline_cache_uuid) &&
           hex32("driver_version", d.driver_version) && string("driver_name", d.driver_name);
  }
  bool at_end() const { return rest_.empty(); }

 private:
  bool prefix(std::string_view name) {
    if (rest_.size() <= name.size() || rest_.substr(0, name.size()) != name || rest_[name.size()] != '=') return false;
    rest_.remove_prefix(name.size() + 1);
    return true;
  }
  std::string_view rest_;
};

}  // namespace

std::string DeviceIdentity::canonical() const {
  std::string out = "denox-device-key/1\n";
  put_device(out, *this);
  return out;
}

std::string DeviceIdentity::digest() const { return content_hash_hex(canonical()); }

std::string DeviceIdentity::describe() const {
  char ids[96];
  std::snprintf(ids, sizeof ids, "vendor 0x%04x device 0x%04x driver '", vendor_id, device_id);
  char version[16];
  std::snprintf(version, sizeof version, "0x%08x", driver_version);
  static constexpr char digits[] = "0123456789abcdef";
  std::string uuid;
  for (std::uint8_t byte : pipeline_cache_uuid) {
    uuid += digits[byte >> 4];
    uuid += digits[byte & 0xf];
  }
  return ids + driver_name + "' " + version + " uuid " + uuid;
}

std::string CacheKey::canonical() const {
  std::string out = kKeyFormat;
  out += '\n';
  put_string(out, "model_hash", model_hash);
  put_device(out, device);
  put_string(out, "denox_version", denox_version);
  put_string(out, "options", options);
  return out;
}

std::string CacheKey::digest() const { return content_hash_hex(canonical()); }

std::optional<CacheKey> CacheKey::parse(std::string_view canonical) {
  KeyReader in(canonical);
  CacheKey key;
  if (in.line(kKeyFormat) && in.string("model_hash", key.model_hash) && in.device(key.device) &&
      in.string("denox_version", key.denox_version) && in.string("options", key.options) && in.at_end())
    return key;
  return std::nullopt;
}

}  // namespace denox::cache
