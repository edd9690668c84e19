// Hidden (run with "[bench]"): GPU time of the OIDN balanced U-Net on the portable shaders, from
// timestamp queries (median of 20 runs after 3 warm-ups), the slowest dispatches, and the host
// time of one record(). DENOX_BENCH_SIZE=WxH (default 1920x1088), DENOX_BENCH_PRECISION=fp32|fp16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "../runtime/gpu_test_support.hpp"
#include "compiler/import/onnx_import.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/vulkan/vk_check.hpp"

using namespace denox;
using namespace denox::testing;

TEST_CASE("benchmark: OIDN balanced on the portable shaders", "[.][bench]") {
  uint32_t w = 1920, h = 1088;
  if (const char* s = std::getenv("DENOX_BENCH_SIZE")) std::sscanf(s, "%ux%u", &w, &h);
  const char* p = std::getenv("DENOX_BENCH_PRECISION");
  const plan::Precision precision = p && std::string(p) == "fp32" ? plan::Precision::F32 : plan::Precision::F16;
  modelgen::OidnUnetOptions options;
  options.pad_to_16_and_crop = true;
  std::string bytes;
  modelgen::build_oidn_unet(options).SerializeToString(&bytes);
  const compiler::Graph g = compiler::import_onnx_bytes(bytes.data(), bytes.size());
  runtime::ExecutableModel model(device(), compiled_plan(g, precision), VK_NULL_HANDLE, adapter_compiler(), false);
  // Inputs and outputs in fp16 HWC buffers, as an engine's render targets would be.
  model.set_extent(w, h);
  runtime::Buffer in = device_buffer(uint64_t{w} * h * 3 * 2 + 4), out = device_buffer(uint64_t{w} * h * 3 * 2 + 4);
  runtime::IoSource s;
  s.channel_count = 3;
  s.layout = runtime::TensorLayout::HWC;
  s.type = runtime::ElementType::F16;
  s.pixel_channels = 3;
  s.buffer = in.handle();
  model.bind_input(0, {s});
  s.buffer = out.handle();
  model.bind_output(0, {s});

  const auto& vk = device().vk();
  const uint32_t queries = static_cast<uint32_t>(model.command_count() + 1);
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = queries;
  VkQueryPool pool = VK_NULL_HANDLE;
  runtime::vk_check(vk.vkCreateQueryPool(device().device(), &info, nullptr, &pool), "vkCreateQueryPool");
  std::vector<double> totals;
  std::vector<std::vector<double>> per_command(model.command_count());
  double record_ms = 1e9;
  for (int run = 0; run < 23; ++run) {
    runtime::submit_and_wait(device(), "bench", [&](VkCommandBuffer cmd) {
      const auto t0 = std::chrono::steady_clock::now();
      model.record(cmd, pool, false);
      record_ms = std::min(record_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    });
    std::vector<uint64_t> stamps(queries);
    runtime::vk_check(vk.vkGetQueryPoolResults(device().device(), pool, 0, queries, stamps.size() * 8, stamps.data(), 8,
                                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                      "vkGetQueryPoolResults");
    if (run < 3) continue;
    const double ns = device().caps().timestamp_period_ns;
    totals.push_back((stamps.back() - stamps.front()) * ns * 1e-6);
    for (size_t i = 0; i + 1 < queries; ++i) per_command[i].push_back((stamps[i + 1] - stamps[i]) * ns * 1e-6);
  }
  vk.vkDestroyQueryPool(device().device(), pool, nullptr);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("%s, %ux%u, %s: median %.3f ms (min %.3f, max %.3f) over %zu runs; record() %.3f ms host; %zu commands, %zu barriers\n",
              device().caps().device_name.c_str(), w, h, plan::precision_name(precision), median(totals),
              *std::min_element(totals.begin(), totals.end()), *std::max_element(totals.begin(), totals.end()), totals.size(),
              record_ms, model.command_count(), model.barrier_count());
  const auto names = model.command_names();
  std::vector<std::pair<double, std::string>> rows;
  for (size_t i = 0; i < names.size(); ++i) rows.emplace_back(median(per_command[i]), names[i]);
  std::sort(rows.rbegin(), rows.rend());
  for (size_t i = 0; i < std::min<size_t>(rows.size(), 12); ++i) std::printf("  %8.3f ms  %s\n", rows[i].first, rows[i].second.c_str());
  CHECK(device().validation_errors() == 0);
}
