#include "runtime/cache/layered_cache.hpp"

#include <algorithm>
#include <set>

namespace denox::cache {

namespace {

// Tries the writable layer, then the shipped one (a disabled layer is a plain miss).
template <typename Load>
auto load_layered(PlanCache& writable, PlanCache& shipped, CacheLayer* from, Load&& load) {
  auto value = load(writable);
  CacheLayer layer = value ? CacheLayer::Writable : CacheLayer::None;
  if (!value && shipped.enabled()) {
    value = load(shipped);
    if (value) layer = CacheLayer::Shipped;
  }
  if (from != nullptr) *from = layer;
  return value;
}

std::string join(const std::set<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace

LayeredCache::LayeredCache() : shipped_(PlanCache::disabled("no shipped cache")) {}

LayeredCache::LayeredCache(PlanCache writable, PlanCache shipped) : writable_(std::move(writable)), shipped_(std::move(shipped)) {}

std::optional<std::vector<std::uint8_t>> LayeredCache::load_plan(const CacheKey& key, CacheLayer* from) {
  return load_layered(writable_, shipped_, from, [&](PlanCache& c) { return c.load_plan(key); });
}

std::optional<std::vector<std::uint32_t>> LayeredCache::load_spirv(std::string_view source_hash, CacheLayer* from) {
  return load_layered(writable_, shipped_, from, [&](PlanCache& c) { return c.load_spirv(source_hash); });
}

std::optional<std::string> LayeredCache::load_measurement(const std::string& key_text, CacheLayer* from) {
  return load_layered(writable_, shipped_, from, [&](PlanCache& c) { return c.load_measurement(key_text); });
}

std::vector<LayeredCache::PipelineCacheData> LayeredCache::load_pipeline_caches(const DeviceIdentity& device) {
  std::vector<PipelineCacheData> out;
  if (auto data = writable_.load_pipeline_cache(device)) out.push_back({CacheLayer::Writable, std::move(*data)});
  if (shipped_.enabled())
    if (auto data = shipped_.load_pipeline_cache(device)) out.push_back({CacheLayer::Shipped, std::move(*data)});
  return out;
}

bool LayeredCache::store_plan(const CacheKey& key, std::span<const std::uint8_t> plan) {
  return writable_.enabled() && writable_.store_plan(key, plan);
}

bool LayeredCache::store_spirv(std::string_view source_hash, std::span<const std::uint32_t> words) {
  return writable_.enabled() && writable_.store_spirv(source_hash, words);
}

bool LayeredCache::store_pipeline_cache(const DeviceIdentity& device, std::span<const std::uint8_t> data) {
  return writable_.enabled() && writable_.store_pipeline_cache(device, data);
}

bool LayeredCache::store_measurement(const std::string& key_text, std::string_view result, PlanCache::Durability durability) {
  return writable_.enabled() && writable_.store_measurement(key_text, result, durability);
}

std::optional<LayeredCache::OtherDriverPlan> LayeredCache::load_shipped_for_other_driver(const CacheKey& wanted) {
  if (!shipped_.enabled()) return std::nullopt;
  std::vector<CacheKey> held = shipped_.plan_keys_for_model(wanted.model_hash);
  const auto same_gpu = [&](const CacheKey& k) {
    return k.device.vendor_id == wanted.device.vendor_id && k.device.device_id == wanted.device.device_id &&
           k.device.driver_name == wanted.device.driver_name && k.denox_version == wanted.denox_version &&
           k.options == wanted.options && !(k.device == wanted.device);
  };
  std::erase_if(held, [&](const CacheKey& k) { return !same_gpu(k); });
  // Newest driver first; a row that fails its checksum is a miss (warned), so try the next.
  std::sort(held.begin(), held.end(), [](const CacheKey& a, const CacheKey& b) { return a.device.driver_version > b.device.driver_version; });
  for (const CacheKey& k : held)
    if (auto plan = shipped_.load_plan(k)) return OtherDriverPlan{k, std::move(*plan)};
  return std::nullopt;
}

std::optional<std::string> LayeredCache::explain_shipped_miss(const CacheKey& wanted) {
  if (!shipped_.enabled()) return std::nullopt;
  const std::vector<CacheKey> held = shipped_.plan_keys_for_model(wanted.model_hash);
  if (held.empty()) return std::nullopt;
  // Each key is put under the first field that differs, in the order a player's machine is
  // most likely to differ from the one the cache was made on: device and driver, then the
  // denox build, then the options (precision, lowering target, tuning).
  std::set<std::string> devices, versions, options;
  for (const CacheKey& k : held) {
    if (k.device != wanted.device) {
      devices.insert("[" + k.device.describe() + "]");
    } else if (k.denox_version != wanted.denox_version) {
      versions.insert("'" + k.denox_version + "'");
    } else if (k.options != wanted.options) {
      options.insert("'" + k.options + "'");
    }
  }
  std::string why;
  const auto add = [&](const std::string& part) { why += (why.empty() ? "" : "; ") + part; };
  if (!devices.empty())
    add("made for other devices or drivers: " + join(devices, ", ") + "; this one is [" + wanted.device.describe() + "]");
  if (!versions.empty()) add("made by another denox build: " + join(versions, ", ") + "; this one is '" + wanted.denox_version + "'");
  if (!options.empty()) add("made with other options: " + join(options, ", ") + "; wanted '" + wanted.options + "'");
  if (why.empty()) return std::nullopt;  // only the wanted key itself, unusable (damaged row): warned at load
  return "it holds " + std::to_string(held.size()) + " plan(s) of this model, " + why;
}

}  // namespace denox::cache
