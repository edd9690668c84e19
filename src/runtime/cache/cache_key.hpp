// What a cached plan depends on, as plain data (no Vulkan headers, so the cache builds and is
// tested without Vulkan). The Vulkan runtime fills DeviceIdentity from
// VkPhysicalDeviceProperties (vendorID, deviceID, pipelineCacheUUID, driverVersion) and
// VkPhysicalDeviceDriverProperties::driverName.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace denox::cache {

struct DeviceIdentity {
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  // VkPhysicalDeviceProperties::pipelineCacheUUID: changes whenever the driver's compiled
  // pipeline format changes, which is exactly when cached pipelines (and tuning) go stale.
  std::array<std::uint8_t, 16> pipeline_cache_uuid{};
  std::uint32_t driver_version = 0;
  std::string driver_name;

  // Canonical text, one "name=value" per line (see CacheKey::canonical()).
  std::string canonical() const;
  // XXH3-128 hex of canonical(): the key of the pipeline_caches table.
  std::string digest() const;
  // For people: "vendor 0x10de device 0x2330 driver 'NVIDIA' 0x91060400 uuid 0123...".
  std::string describe() const;

  bool operator==(const DeviceIdentity&) const = default;
};

struct CacheKey {
  // content_hash_hex() of the model bytes (plus external data; the caller decides what the
  // model's content is, typically with a ContentHasher).
  std::string model_hash;
  DeviceIdentity device;
  // denox's version: a new denox may compile differently, so it never reuses an old plan.
  std::string denox_version;
  // Everything else the plan depends on (precision, layouts, shader set, ...), as a string the
  // caller builds deterministically, e.g. "precision=fp16;input_layout=hwc".
  std::string options;

  // The canonical key text. It starts with a format tag ("denox-plan-key/1") and has one
  // "name=value" line per field, strings written as "<byte length>:<bytes>" so that no value
  // (a driver name or option string with '\n' or '=' in it) can be confused with another
  // field. Stored next to each plan so a cache can be inspected with the sqlite3 tool, and
  // compared on load as a guard against digest collisions.
  std::string canonical() const;
  // XXH3-128 hex of canonical(): the primary key of the plans table.
  std::string digest() const;
  // The inverse of canonical(): nullopt for text that is not exactly a key of this format
  // (parse(k.canonical()) == k for every key). Used to tell which devices a cache holds a
  // model for, from the key texts stored beside the plans.
  static std::optional<CacheKey> parse(std::string_view canonical);

  bool operator==(const CacheKey&) const = default;
};

}  // namespace denox::cache
