#include "api_test_util.hpp"

#include <sqlite3.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <mutex>
#include <random>

#include "compiler/import/onnx_import.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace denox::test {

TempDir::TempDir() {
  std::random_device entropy;
  path_ = fs::temp_directory_path() / ("denox-api-test-" + std::to_string(entropy()) + std::to_string(entropy()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

namespace {
// Not a function-local static: destroy_engine_device() must be able to end it before exit.
std::unique_ptr<vkhost::Device> shared_engine_device;
std::once_flag shared_engine_device_once;
}  // namespace

vkhost::Device& engine_device() {
  std::call_once(shared_engine_device_once, [] { shared_engine_device = vkhost::Device::create(-1, true); });
  return *shared_engine_device;
}

void destroy_engine_device() { shared_engine_device.reset(); }

void require_ok(denox_result r, const char* what) {
  INFO(what << ": " << denox_result_name(r) << ": " << denox_last_error());
  REQUIRE(r == DENOX_SUCCESS);
}

denox_context make_context(const fs::path& cache_path, const denox_vulkan_device* device) {
  const denox_vulkan_device dev = device != nullptr ? *device : engine_device().as_denox();
  const std::string path = cache_path.string();
  denox_context_options options{};
  options.cache_path = path.c_str();
  options.disable_cache = cache_path.empty() ? 1 : 0;
  denox_context ctx = nullptr;
  require_ok(denox_context_create(&dev, &options, &ctx), "denox_context_create");
  return ctx;
}

fs::path write_oidn(const fs::path& dir, modelgen::OidnUnetOptions::Size size, int channels, bool pad_to_16, uint64_t seed) {
  modelgen::OidnUnetOptions o;
  o.size = size;
  o.input_channels = channels;
  o.pad_to_16_and_crop = pad_to_16;
  o.seed = seed;
  const fs::path path = dir / ("oidn-" + std::to_string(channels) + "-" + std::to_string(seed) + ".onnx");
  modelgen::save_model(modelgen::build_oidn_unet(o), path.string(), false);
  return path;
}

HostTensor random_image(int c, int h, int w, uint32_t seed) {
  HostTensor t;
  t.shape = {1, c, h, w};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.05f, 1.05f);
  t.f32.resize(t.element_count());
  for (auto& v : t.f32) v = dist(rng);
  return t;
}

HostTensor reference_output(const fs::path& model, const HostTensor& input) {
  const compiler::Graph g = compiler::import_onnx_file(model);
  return reference::run_reference(g, {input}).at(0);
}

double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

std::vector<float> run_on_buffers(denox_context ctx, denox_model model, const HostTensor& input, denox_dtype dtype,
                                  denox_layout layout, vkhost::Device* device, VkDeviceSize input_buffer_bytes) {
  auto& dev = device != nullptr ? *device : engine_device();
  const uint32_t c = static_cast<uint32_t>(input.shape[1]), h = static_cast<uint32_t>(input.shape[2]),
                 w = static_cast<uint32_t>(input.shape[3]);
  require_ok(denox_model_set_extent(model, w, h), "set_extent");
  denox_tensor_info out_info{};
  require_ok(denox_model_get_tensor_info(model, DENOX_OUTPUT, 0, &out_info), "output info");
  const uint32_t oc = out_info.channels, oh = out_info.height, ow = out_info.width;
  const size_t elem = dtype == DENOX_DTYPE_F16 ? 2 : 4;
  vkhost::Buffer in_buf(dev, input_buffer_bytes != 0 ? input_buffer_bytes : input.element_count() * elem),
      out_buf(dev, size_t{oc} * oh * ow * elem);

  // Caller layout: CHW as given, or HWC interleaved.
  std::vector<float> in_values(input.element_count());
  for (uint32_t ch = 0; ch < c; ++ch)
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x) {
        const float v = input.f32[(size_t{ch} * h + y) * w + x];
        in_values[layout == DENOX_LAYOUT_HWC ? (size_t{y} * w + x) * c + ch : (size_t{ch} * h + y) * w + x] = v;
      }
  if (dtype == DENOX_DTYPE_F16) {
    std::vector<uint16_t> half(in_values.size());
    for (size_t i = 0; i < half.size(); ++i) half[i] = vkhost::to_half(in_values[i]);
    in_buf.write(half.data(), half.size() * 2);
  } else {
    in_buf.write(in_values.data(), in_values.size() * 4);
  }
  denox_binding in{}, out{};
  in.first_channel = 0;
  in.channel_count = c;
  in.buffer = in_buf.handle();
  in.range = input_buffer_bytes != 0 ? input_buffer_bytes : VK_WHOLE_SIZE;
  in.layout = layout;
  in.dtype = dtype;
  in.pixel_channels = c;
  out = in;
  out.range = VK_WHOLE_SIZE;
  out.channel_count = oc;
  out.buffer = out_buf.handle();
  out.pixel_channels = oc;
  require_ok(denox_model_bind_input(model, 0, &in, 1), "bind_input");
  require_ok(denox_model_bind_output(model, 0, &out, 1), "bind_output");
  dev.submit([&](VkCommandBuffer cmd) {
    denox_cmd_input_barrier(ctx, cmd, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_WRITE_BIT);
    require_ok(denox_model_record(model, cmd), "record");
    denox_cmd_output_barrier(ctx, cmd, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
  });
  std::vector<float> raw(size_t{oc} * oh * ow);
  if (dtype == DENOX_DTYPE_F16) {
    std::vector<uint16_t> half(raw.size());
    out_buf.read(half.data(), half.size() * 2);
    for (size_t i = 0; i < half.size(); ++i) raw[i] = vkhost::from_half(half[i]);
  } else {
    out_buf.read(raw.data(), raw.size() * 4);
  }
  if (layout == DENOX_LAYOUT_CHW) return raw;
  std::vector<float> chw(raw.size());
  for (uint32_t ch = 0; ch < oc; ++ch)
    for (uint32_t y = 0; y < oh; ++y)
      for (uint32_t x = 0; x < ow; ++x) chw[(size_t{ch} * oh + y) * ow + x] = raw[(size_t{y} * ow + x) * oc + ch];
  return chw;
}

nlohmann::json report_of(denox_model model) {
  size_t size = 0;
  require_ok(denox_model_schedule_report(model, nullptr, &size), "report size");
  std::string text(size, '\0');
  require_ok(denox_model_schedule_report(model, text.data(), &size), "report");
  text.resize(size - 1);
  return nlohmann::json::parse(text);
}

std::vector<std::pair<std::string, std::string>> measurement_rows(const fs::path& cache) {
  // Owned by unique_ptrs: a failing REQUIRE throws, and the handle must not stay open (the
  // test's TempDir removes the file next).
  sqlite3* raw_db = nullptr;
  const int opened = sqlite3_open_v2(cache.string().c_str(), &raw_db, SQLITE_OPEN_READONLY, nullptr);
  const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw_db, sqlite3_close);
  REQUIRE(opened == SQLITE_OK);
  sqlite3_stmt* raw_st = nullptr;
  const int prepared = sqlite3_prepare_v2(db.get(), "SELECT key_text, result FROM measurements ORDER BY key_text", -1, &raw_st, nullptr);
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw_st, sqlite3_finalize);
  REQUIRE(prepared == SQLITE_OK);
  std::vector<std::pair<std::string, std::string>> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW) {
    auto text = [&](int col) {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(st.get(), col));
      return std::string(p ? p : "", static_cast<size_t>(sqlite3_column_bytes(st.get(), col)));
    };
    out.emplace_back(text(0), text(1));
  }
  return out;
}

}  // namespace denox::test
