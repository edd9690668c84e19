// The caches one denox context reads: the user's writable cache and, optionally, a read-only
// cache shipped with the game (made by `denox cache export`, opened with
// PlanCache::open_read_only). Lookups try the writable cache first, then the shipped one;
// stores only ever go to the writable cache.
//
// Hits in the shipped cache are not copied into the writable one: the shipped file stays next
// to the game and answers the same lookup next time, so a copy would only duplicate it on
// every player's disk. (The API's VkPipelineCache is the exception: it is seeded from both
// caches' data for this device, and what the driver then holds is written back to the
// writable cache. See src/runtime/cache/README.md, "Shipped cache".)
//
// Either layer may be disabled (no writable cache: disable_cache, or one that could not be
// opened; no shipped cache: none was asked for, or SQLite found it corrupt mid-run); the
// other still works. Thread safety is that of PlanCache: every call may come from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cache/plan_cache.hpp"

namespace denox::cache {

// Which layer answered a lookup.
enum class CacheLayer { None, Writable, Shipped };

class LayeredCache {
 public:
  // Both layers disabled.
  LayeredCache();
  // `shipped` is a read-only cache or a disabled one (none).
  LayeredCache(PlanCache writable, PlanCache shipped);

  PlanCache& writable() { return writable_; }
  const PlanCache& writable() const { return writable_; }
  PlanCache& shipped() { return shipped_; }
  const PlanCache& shipped() const { return shipped_; }

  // Writable first, then shipped. `from`, when given, is set to the layer that answered.
  std::optional<std::vector<std::uint8_t>> load_plan(const CacheKey& key, CacheLayer* from = nullptr);
  std::optional<std::vector<std::uint32_t>> load_spirv(std::string_view source_hash, CacheLayer* from = nullptr);
  std::optional<std::string> load_measurement(const std::string& key_text, CacheLayer* from = nullptr);

  // VkPipelineCache data for this device from each layer that has some, writable first: the
  // caller merges them (vkMergePipelineCaches), as one driver cache serves every pipeline.
  struct PipelineCacheData {
    CacheLayer from = CacheLayer::None;
    std::vector<std::uint8_t> data;
  };
  std::vector<PipelineCacheData> load_pipeline_caches(const DeviceIdentity& device);

  // To the writable cache only; false when it is disabled or the store failed.
  bool store_plan(const CacheKey& key, std::span<const std::uint8_t> plan);
  bool store_spirv(std::string_view source_hash, std::span<const std::uint32_t> words);
  bool store_pipeline_cache(const DeviceIdentity& device, std::span<const std::uint8_t> data);
  bool store_measurement(const std::string& key_text, std::string_view result,
                         PlanCache::Durability durability = PlanCache::Durability::Normal);

  // Why the shipped cache had no plan for `wanted` although it holds plans of the same model:
  // each of its other keys for the model, described by what differs from `wanted` (the device
  // and driver it was made for, the denox version, the options), e.g. "made for vendor 0x10de
  // device 0x2330 driver 'NVIDIA' 0x91060400 uuid ..., this device is vendor 0x10005 ...".
  // nullopt when the shipped cache is off or holds no plan of this model at all.
  std::optional<std::string> explain_shipped_miss(const CacheKey& wanted);

  // A shipped plan for `wanted` made on the same GPU (vendor, device, driver name) by the same
  // denox with the same options, under another driver version or pipeline cache UUID: what a
  // player's machine holds after a driver update. The newest such driver's; nullopt if none.
  struct OtherDriverPlan {
    CacheKey key;
    std::vector<std::uint8_t> plan;
  };
  std::optional<OtherDriverPlan> load_shipped_for_other_driver(const CacheKey& wanted);

 private:
  PlanCache writable_;
  PlanCache shipped_;
};

}  // namespace denox::cache
