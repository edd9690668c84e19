// Shared by the cooperative-matrix tests (test_coop.cpp) and the per-layer benchmark
// (bench/conv_layers.cpp): a device without the validation layer, plan compilation for a
// LoweringTarget, and running a plan on any context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "graph_builder.hpp"
#include "kernels/lower_portable.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/executable_model.hpp"

namespace denox::testing {

// What the H100 reports: fp16 16x16x16, 16x8x16, 16x8x8 with fp16 or fp32 accumulators,
// subgroup 32, 48 KiB shared memory (plans for it can be built and checked anywhere).
kernels::CoopTarget h100_like();

// The OIDN U-Net of src/modelgen, imported (pad-to-16 and crop unless pad_crop is false).
compiler::Graph oidn(modelgen::OidnUnetOptions::Size size, bool pad_crop = true, int channels = 3);

// Dispatches per shader family.
std::map<std::string, int> families(const plan::Plan& plan);
// The value of macro `name` in pipeline `p`'s defines; empty where it has none.
std::string define(const plan::Pipeline& p, const std::string& name);
// Dispatches of the cooperative-matrix convolutions (conv2d_coopmat and conv2d_coopmat_up2).
int coop_dispatches(const plan::Plan& plan);

// The device of the [coop] tests and benchmarks: the first discrete GPU. Validation is off unless
// DENOX_COOP_VALIDATION=1: Debian 12's Khronos layer predates SPV_KHR_cooperative_matrix and
// cannot check these shaders; `bench/conv_layers.sh run --validation` stages a 1.4 layer and sets
// it (timings taken under the layer mean nothing).
runtime::DeviceContext& coop_device();
// Whether DENOX_COOP_VALIDATION=1 asks for the layer on coop_device().
bool coop_validation_requested();
// The layer's errors on coop_device() so far; 0 while it has not been created. The kernel tests'
// main fails the run when this is not 0 at its end, naming each test case that added some; 0
// again once destroy_coop_device() ran.
uint64_t coop_validation_errors();
// Destroys coop_device() if it was made (before exit, as destroy_device()).
void destroy_coop_device();
// One slice of a sweep, for parallel runs (GPU-AV makes the [sweep] test cases take over an hour
// in one process; its cost is on the host, so `bench/conv_layers.sh run --validation` with SHARDS=n
// runs n processes). DENOX_TEST_SHARD=i/n (0 <= i < n) keeps the combinations whose index modulo n
// is i; unset, every one. A malformed value throws std::invalid_argument naming it (the kernel
// tests' main checks it before any test runs).
struct TestShard {
  size_t index = 0, count = 1;
};
TestShard test_shard();
// A sweep's walk through its combinations in this process's shard: take() before each one
// (false: another shard runs it), report() after the last, which prints "<sweep>: k of n
// combinations (shard i/n)" when sharded, so the logs show every combination ran in some shard.
class ShardedSweep {
 public:
  explicit ShardedSweep(const char* name) : name_(name), shard_(test_shard()) {}
  bool take();
  void report() const;

 private:
  const char* name_;
  TestShard shard_;
  size_t combinations_ = 0, taken_ = 0;
};

// Whether coop_device() has usable cooperative matrices; if not, a visible Catch2 WARN.
bool coop_available();
// Whether `caps` has usable fp16 storage (emulated coop and int8 plans are fp16 plans); if not,
// a visible Catch2 WARN.
bool fp16_available(const runtime::DeviceCapabilities& caps);

// build_portable_plan(g, p, target) with its SPIR-V.
plan::Plan compile(const compiler::Graph& g, plan::Precision p, const kernels::LoweringTarget& target);

// Sets `defines` on every pipeline of the shader `families` in `p` (a value replaces the
// lowering's) and recompiles those: benchmark variants, and tests that switch a macro.
void add_coop_defines(plan::Plan& p, const std::vector<std::pair<std::string, std::string>>& defines,
                      const std::vector<std::string>& families);

// Random inputs (random_tensor) for every graph input of `b` at the H and W symbol values h, w.
std::vector<HostTensor> random_graph_inputs(const GraphBuilder& b, int64_t h, int64_t w, uint64_t seed);

// Runs a plan once on `ctx` (run_model_on: fp32 NCHW caller buffers).
std::vector<HostTensor> run_on(const runtime::DeviceContext& ctx, plan::Plan plan, const std::vector<HostTensor>& inputs);

}  // namespace denox::testing
