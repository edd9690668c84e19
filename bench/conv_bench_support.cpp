// bench/conv_bench_support.hpp's helpers for the [coop-bench] benchmark.
#include "conv_bench_support.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "../tests/runtime/gpu_test_support.hpp"
#include "common/half.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "runtime/vulkan/executable_model.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::bench {

using namespace denox::testing;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

runtime::IoSource f16_chw(const runtime::Buffer& b, uint32_t channels) {
  runtime::IoSource s;
  s.channel_count = channels;
  s.buffer = b.handle();
  s.pixel_channels = channels;
  s.type = runtime::ElementType::F16;
  return s;
}

}  // namespace

runtime::Buffer random_f16_buffer(const runtime::DeviceContext& ctx, size_t count, uint64_t seed) {
  std::vector<uint16_t> host(count);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& h : host) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float mag = 0.1f + 0.9f * static_cast<float>((s >> 40) & 0xffff) / 65535.0f;
    h = float_to_half((s >> 63) ? -mag : mag);
  }
  runtime::Buffer b = device_buffer_on(ctx, std::max<size_t>(count * 2, 4));
  runtime::upload(ctx, b.handle(), 0, host.data(), count * 2);
  return b;
}

Timing measure(const runtime::DeviceContext& ctx, plan::Plan plan, uint32_t w, uint32_t h, const std::vector<const runtime::Buffer*>& inputs,
               const runtime::Buffer& out, bool serialize, int submits, bool read_output, const DroppedBarriers& drop) {
  runtime::ExecutableModel model(ctx, std::move(plan), VK_NULL_HANDLE, adapter_compiler(), false);
  model.set_extent(w, h);
  for (size_t i = 0; i < inputs.size(); ++i) model.bind_input(i, {f16_chw(*inputs[i], model.input_channels(i))});
  model.bind_output(0, {f16_chw(out, model.output_channels(0))});
  const auto& vk = ctx.vk();
  const uint32_t queries = static_cast<uint32_t>(model.command_count() + 1);
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = queries;
  std::vector<VkQueryPool> pools(kRecords, VK_NULL_HANDLE);
  for (auto& pool : pools) runtime::vk_check(vk.vkCreateQueryPool(ctx.device(), &info, nullptr, &pool), "vkCreateQueryPool");
  std::vector<std::vector<double>> per(model.command_count());
  std::vector<double> totals;
  const auto names = model.command_names();
  // DENOX_BENCH_BRACKET=1: the end-to-end (not serialized) runs write only a first and a last
  // timestamp around record(), no timestamp between commands: the NVIDIA driver makes commands
  // after a timestamp wait for it, so per-command timestamps would order dispatches that no
  // barrier orders (bench.overlap_warm). The per-command times then read 0 but the last, the whole.
  const bool bracket = !serialize && std::getenv("DENOX_BENCH_BRACKET") && std::string(std::getenv("DENOX_BENCH_BRACKET")) == "1";
  std::vector<std::string> dropped;  // bench.skip_barrier: what it did, for the variant's line
  if (drop.any() && !serialize) {
    if (!bracket) throw std::runtime_error("bench.no_barriers / bench.skip_barrier need DENOX_BENCH_BRACKET=1");
    const size_t k = static_cast<size_t>(drop.before_command);
    if (drop.all)
      for (size_t i = 0; i < model.command_count(); ++i) model.drop_barrier_for_testing(i);
    else if (k < names.size() && model.drop_barrier_for_testing(k))
      dropped.push_back("the barrier before " + names[k] + " dropped");
    else  // a K that drops nothing says so: its frame is the plain one
      dropped.push_back((k < names.size() ? "no barrier before " + names[k] : "no command " + std::to_string(k)) + ": nothing dropped");
  }
  auto submit_records = [&] {
    runtime::submit_and_wait(ctx, "bench", [&](VkCommandBuffer cmd) {
      for (VkQueryPool pool : pools) {
        if (!bracket) {
          model.record(cmd, pool, serialize);
          continue;
        }
        vk.vkCmdResetQueryPool(cmd, pool, 0, queries);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, 0);
        model.record(cmd);
        vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, queries - 1);
      }
    });
  };
  // Warm-up: the clock drops while the host builds a model (new pipelines compile for seconds),
  // and one submit did not bring it back (an int8 plan read 5.3, 3.1, 3.0, 1.86 ms in a row,
  // bench/RESULTS.md 2026-11-26 fourth session): keep the GPU busy for 0.3 s of wall time first.
  const auto warm_start = std::chrono::steady_clock::now();
  do submit_records();
  while (std::chrono::steady_clock::now() - warm_start < std::chrono::milliseconds(300));
  for (int submit = 0; submit < submits; ++submit) {
    submit_records();
    for (VkQueryPool pool : pools) {
      std::vector<uint64_t> stamps(queries);
      if (bracket) {  // only the first and the last query were written; the others read as the first
        for (uint32_t q : {0u, queries - 1})
          runtime::vk_check(vk.vkGetQueryPoolResults(ctx.device(), pool, q, 1, 8, &stamps[q], 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                            "vkGetQueryPoolResults");
        for (uint32_t q = 1; q + 1 < queries; ++q) stamps[q] = stamps[0];
      } else {
        runtime::vk_check(vk.vkGetQueryPoolResults(ctx.device(), pool, 0, queries, stamps.size() * 8, stamps.data(), 8,
                                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                          "vkGetQueryPoolResults");
      }
      const double ns = ctx.caps().timestamp_period_ns;
      double sum = 0;
      for (size_t i = 0; i + 1 < queries; ++i) {
        const double ms = static_cast<double>(stamps[i + 1] - stamps[i]) * ns * 1e-6;
        per[i].push_back(ms);
        if (names[i].rfind("input '", 0) != 0 && names[i].rfind("output '", 0) != 0 && names[i].rfind("mk", 0) != 0) sum += ms;
      }
      totals.push_back(serialize ? sum : static_cast<double>(stamps.back() - stamps.front()) * ns * 1e-6);
    }
  }
  for (VkQueryPool pool : pools) vk.vkDestroyQueryPool(ctx.device(), pool, nullptr);
  Timing t;
  t.ms = median(totals);
  t.barriers = model.barrier_count();
  t.dropped = std::move(dropped);
  for (size_t i = 0; i < per.size(); ++i) t.commands.emplace_back(names[i], median(per[i]));
  if (read_output) {
    const auto shape = model.output_shape(0);
    t.output.resize(static_cast<size_t>(shape[0] * shape[1] * shape[2] * shape[3]));
    runtime::download(ctx, out.handle(), 0, t.output.data(), t.output.size() * 2);
  }
  return t;
}

double rel_l2(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = half_to_float(a[i]), y = half_to_float(b[i]);
    d += (x - y) * (x - y);
    n += y * y;
  }
  if (std::isnan(d)) return INFINITY;
  return n == 0 ? std::sqrt(d) : std::sqrt(d / n);
}

int64_t divisor_of(const std::string& name) {
  if (name == "enc_conv0" || name == "enc_conv1" || name == "dec_conv1a" || name == "dec_conv1b" || name == "dec_conv0") return 1;
  if (name == "enc_conv2" || name.rfind("dec_conv2", 0) == 0) return 2;
  if (name == "enc_conv3" || name.rfind("dec_conv3", 0) == 0) return 4;
  if (name == "enc_conv4" || name.rfind("dec_conv4", 0) == 0) return 8;
  return 16;
}

kernels::CoopConvConfig parse_config(const std::string& text) {
  kernels::CoopConvConfig c;
  std::istringstream in(text);
  std::string tok;
  bool tile = false;
  while (in >> tok) {
    long long a = 0, b = 0, d = 0;
    char x = 0, y = 0;
    if (!tile && std::sscanf(tok.c_str(), "%lld%c%lld", &a, &x, &b) == 3 && x == 'x' && tok.find('x', tok.find('x') + 1) == std::string::npos)
      c.tile_h = a, c.tile_w = b, tile = true;
    else if (std::sscanf(tok.c_str(), "nt%lld", &a) == 1) c.nt = a;
    else if (std::sscanf(tok.c_str(), "ck%lld", &a) == 1) c.ck = a;
    else if (std::sscanf(tok.c_str(), "sg%lldx%lld", &a, &b) == 2) c.sg_m = a, c.sg_n = b;
    else if (std::sscanf(tok.c_str(), "%lld%c%lld%c%lld", &a, &x, &b, &y, &d) == 5) c.cm_n = b;
    else if (tok == "f16acc" || tok == "f32acc") c.acc_f16 = tok == "f16acc";
    else if (tok == "bglobal") c.b_global = true;
    else if (tok == "up2") c.up2 = true;
    else if (tok == "1ph") c.one_phase = true;
    else if (std::sscanf(tok.c_str(), "ep%lld", &a) == 1) c.epi_passes = a;
    else if (tok == "tapsum") c.tap_sum = true;
    else if (tok == "adirect") c.a_direct = true;
    else if (tok == "q8") c.q8 = true, c.acc_f16 = false;  // conv2d_coopmat_q8 (16x16x32 int8 fragments)
    else if (tok == "i32acc") c.acc_f16 = false;
    else throw std::runtime_error("bad configuration token '" + tok + "' in '" + text + "'");
  }
  if (!tile || !(c.q8 ? kernels::q8_config_valid(c) : c.valid())) throw std::runtime_error("invalid configuration '" + text + "'");
  return c;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace denox::bench
