#include "runtime/cache/cache_key.hpp"

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

}  // namespace

std::string DeviceIdentity::canonical() const {
  std::string out = "denox-device-key/1\n";
  put_device(out, *this);
  return out;
}

std::string DeviceIdentity::digest() const { return content_hash_hex(canonical()); }

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

}  // namespace denox::cache
