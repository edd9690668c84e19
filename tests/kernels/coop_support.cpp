#include "coop_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "../runtime/gpu_test_support.hpp"
#include "compiler/import/onnx_import.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/shader_compiler.hpp"

namespace denox::testing {

using kernels::lowering_target;

kernels::CoopTarget h100_like() {
  kernels::CoopTarget t;
  t.shapes = kernels::h100_coop_shapes();
  t.subgroup_size = 32;
  t.max_shared_bytes = 49152;
  return t;
}

compiler::Graph oidn(modelgen::OidnUnetOptions::Size size, bool pad_crop, int channels) {
  modelgen::OidnUnetOptions options;
  options.size = size;
  options.pad_to_16_and_crop = pad_crop;
  options.input_channels = channels;
  std::string bytes;
  modelgen::build_oidn_unet(options).SerializeToString(&bytes);
  return compiler::import_onnx_bytes(bytes.data(), bytes.size());
}

std::string define(const plan::Pipeline& p, const std::string& name) {
  for (const auto& [k, v] : p.defines)
    if (k == name) return v;
  return "";
}

std::map<std::string, int> families(const plan::Plan& plan) {
  std::map<std::string, int> n;
  for (const auto& d : plan.dispatches) n[plan.pipelines[d.pipeline].family]++;
  return n;
}

int coop_dispatches(const plan::Plan& plan) {
  const auto f = families(plan);
  int n = 0;
  for (const char* family : {"conv2d_coopmat", "conv2d_coopmat_up2", "conv2d_coopmat_tapsum"})
    if (auto it = f.find(family); it != f.end()) n += it->second;
  return n;
}

namespace {
// Not a function-local static: destroy_coop_device() ends it before exit (destroy_device()).
std::unique_ptr<runtime::DeviceContext> shared_coop_device;
std::once_flag shared_coop_device_once;
}  // namespace

bool coop_validation_requested() {
  const char* v = std::getenv("DENOX_COOP_VALIDATION");
  return v != nullptr && std::string(v) == "1";
}

TestShard test_shard() {
  const char* v = std::getenv("DENOX_TEST_SHARD");
  if (v == nullptr || *v == '\0') return {};
  unsigned long long index = 0, count = 0;
  char rest = 0;
  if (std::sscanf(v, "%llu/%llu%c", &index, &count, &rest) != 2 || count == 0 || index >= count)
    throw std::invalid_argument(std::string("DENOX_TEST_SHARD='") + v + "': expected i/n with 0 <= i < n, e.g. 0/4");
  return {static_cast<size_t>(index), static_cast<size_t>(count)};
}

bool ShardedSweep::take() {
  const bool mine = combinations_++ % shard_.count == shard_.index;
  taken_ += mine;
  return mine;
}

void ShardedSweep::report() const {
  if (shard_.count > 1)
    std::printf("%s: %zu of %zu combinations (shard %zu/%zu)\n", name_, taken_, combinations_, shard_.index, shard_.count);
}

runtime::DeviceContext& coop_device() {
  std::call_once(shared_coop_device_once, [] {
    runtime::OwnDeviceOptions options;
    options.validation = coop_validation_requested();
    shared_coop_device = runtime::DeviceContext::create_own(options);
  });
  return *shared_coop_device;
}

uint64_t coop_validation_errors() { return shared_coop_device ? shared_coop_device->validation_errors() : 0; }

void destroy_coop_device() { shared_coop_device.reset(); }

bool coop_available() {
  const auto& caps = coop_device().caps();
  if (lowering_target(caps).uses_coop()) return true;
  WARN("SKIPPED: '" << caps.device_name << "' has no cooperative matrices (VK_KHR_cooperative_matrix with fp16 shapes); "
                    << "the [coop] tests need such a GPU (the H100 of bench/RESULTS.md)");
  return false;
}

bool fp16_available(const runtime::DeviceCapabilities& caps) {
  if (caps.fp16_usable()) return true;
  WARN("SKIPPED: the test device has no fp16 storage");
  return false;
}

plan::Plan compile(const compiler::Graph& g, plan::Precision p, const kernels::LoweringTarget& target) {
  plan::Plan plan = build_portable_plan(g, p, target);
  kernels::compile_pipelines(plan, shader_compiler(), 0);
  return plan;
}

void add_coop_defines(plan::Plan& p, const std::vector<std::pair<std::string, std::string>>& defines,
                      const std::vector<std::string>& families) {
  if (defines.empty()) return;
  for (auto& pipe : p.pipelines) {
    if (std::find(families.begin(), families.end(), pipe.family) == families.end()) continue;
    for (const auto& d : defines) {
      std::erase_if(pipe.defines, [&](const auto& e) { return e.first == d.first; });
      pipe.defines.push_back(d);
    }
    std::sort(pipe.defines.begin(), pipe.defines.end());
    pipe.spirv.clear();
  }
  kernels::compile_pipelines(p, shader_compiler(), 0);
}

std::vector<HostTensor> random_graph_inputs(const GraphBuilder& b, int64_t h, int64_t w, uint64_t seed) {
  const std::vector<int64_t> values = b.g.program.evaluate({h, w});
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < b.g.inputs.size(); ++i) {
    std::vector<int64_t> shape;
    for (compiler::ValueId v : b.g.tensor(b.g.inputs[i]).shape) shape.push_back(values.at(v));
    inputs.push_back(random_tensor(shape, seed + i));
  }
  return inputs;
}

std::vector<HostTensor> run_on(const runtime::DeviceContext& ctx, plan::Plan plan, const std::vector<HostTensor>& inputs) {
  runtime::ExecutableModel model(ctx, std::move(plan), VK_NULL_HANDLE, adapter_compiler(), false);
  return run_model_on(ctx, model, inputs);
}

}  // namespace denox::testing
