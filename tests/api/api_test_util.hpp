// What the C API tests share: one engine-side Vulkan device (lavapipe in CI) with the Khronos
// validation layer, OIDN models written to a temp dir, random inputs, the CPU reference, and a
// helper that runs a model on caller buffers like an engine frame would.
#pragma once

#include "vkhost/vk_host.hpp"  // volk before denox.h

#include <denox/denox.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/host_tensor.hpp"
#include "modelgen/oidn_unet.hpp"

namespace denox::test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// The engine's device (validation on), created once per process.
vkhost::Device& engine_device();
// Destroys engine_device() if it was made; the test main calls it before returning (see
// tests/runtime/gpu_test_support.hpp's destroy_device()).
void destroy_engine_device();

// Fails the test (REQUIRE) with denox_last_error() when r is not DENOX_SUCCESS.
void require_ok(denox_result r, const char* what);

// A context on engine_device() (or on `device`, the engine's device as the caller altered it)
// with the cache at `cache_path` (empty: cache off).
denox_context make_context(const fs::path& cache_path, const denox_vulkan_device* device = nullptr);

// Writes an OIDN U-Net (random seeded weights) and returns its path.
fs::path write_oidn(const fs::path& dir, modelgen::OidnUnetOptions::Size size, int channels, bool pad_to_16, uint64_t seed = 7);

// 1 x c x h x w, values in [0.05, 1.05): never zero.
HostTensor random_image(int c, int h, int w, uint32_t seed);

// The CPU reference's output 0 for `input`.
HostTensor reference_output(const fs::path& model, const HostTensor& input);

double relative_l2(const std::vector<float>& got, const std::vector<float>& want);

// denox_model_schedule_report, parsed (REQUIREs success).
nlohmann::json report_of(denox_model model);

// Binds `input` (CHW) from one caller buffer of `dtype` and the output to another, records
// input barrier + model + output barrier, submits, waits, reads back (CHW fp32). `device`: the
// device ctx runs on (null: engine_device(); a headless context's through vkhost::Device::wrap).
// `input_buffer_bytes` (0: the input's size): a larger input buffer, bound with that range, as
// an engine binding part of a pooled buffer would.
std::vector<float> run_on_buffers(denox_context ctx, denox_model model, const HostTensor& input, denox_dtype dtype,
                                  denox_layout layout = DENOX_LAYOUT_CHW, vkhost::Device* device = nullptr,
                                  VkDeviceSize input_buffer_bytes = 0);

// Collects denox's log lines at `min_level` and above (from any thread) while alive.
struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  explicit LogLines(denox_log_level min_level = DENOX_LOG_INFO) {
    denox_set_log_callback(
        [](denox_log_level, const char* m, void* user) {
          auto* self = static_cast<LogLines*>(user);
          std::lock_guard lock(self->mutex);
          self->lines.emplace_back(m);
        },
        this, min_level);
  }
  ~LogLines() { denox_set_log_callback(nullptr, nullptr, DENOX_LOG_WARN); }
  // The first line containing `part`, or "".
  std::string first_containing(const std::string& part) {
    std::lock_guard lock(mutex);
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return l;
    return {};
  }
  bool any_containing(const std::string& part) { return !first_containing(part).empty(); }
};

// (key_text, result) of every row of a cache file's measurements table, by key_text.
std::vector<std::pair<std::string, std::string>> measurement_rows(const fs::path& cache);

// Sets the test hook DENOX_TEST_COOP_EMULATE (api_compile.cpp: COOP_EMULATE shaders, the
// cooperative-matrix data flow in plain arithmetic, on lavapipe) for the scope; each test case
// runs in its own process.
struct EmulatedCoop {
  EmulatedCoop() { setenv("DENOX_TEST_COOP_EMULATE", "1", 1); }
  ~EmulatedCoop() { unsetenv("DENOX_TEST_COOP_EMULATE"); }
};

}  // namespace denox::test
