// runtime::read_spirv_requirements on the shaders denox compiles for an H100-like target (no
// device needed): the shared memory and cooperative-matrix types a plan's SPIR-V asks for, which
// a plan load checks against the device (api_compile.cpp's check_plan_runs_here).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <random>

#include "../runtime/gpu_test_support.hpp"
#include "common/error.hpp"
#include "compiler/cost_model/cost_model.hpp"
#include "compiler/schedule/schedule.hpp"
#include "compiler/supergraph/edge_graph.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lowering_target.hpp"
#include "coop_support.hpp"
#include "kernels/shader_compiler.hpp"
#include "q8_support.hpp"
#include "runtime/vulkan/spirv_requirements.hpp"

using namespace denox;
using namespace denox::testing;

namespace {

// A subgroup shape: A and B of `ab`, C and the result of `c`.
runtime::CoopMatrixShape shape(uint32_t m, uint32_t n, uint32_t k, VkComponentTypeKHR ab, VkComponentTypeKHR c) {
  return {m, n, k, ab, ab, c, c};
}

// What an H100 reports: the fp16 shapes (fp16 or fp32 accumulators) and int8 16x16x32 -> int32,
// subgroup scope, 48 KiB of shared memory per workgroup.
runtime::DeviceCapabilities h100_caps() {
  runtime::DeviceCapabilities caps;
  caps.cooperative_matrix = true;
  caps.shader_float16 = caps.storage_buffer_16bit = caps.shader_int8 = caps.vulkan_memory_model = true;
  caps.max_compute_shared_memory = 49152;
  for (const kernels::CoopMatrixShape& s : kernels::h100_coop_shapes())
    caps.coop_matrix_shapes.push_back(shape(s.m, s.n, s.k, VK_COMPONENT_TYPE_FLOAT16_KHR,
                                            s.acc_f16 ? VK_COMPONENT_TYPE_FLOAT16_KHR : VK_COMPONENT_TYPE_FLOAT32_KHR));
  caps.coop_matrix_shapes.push_back(shape(16, 16, 32, VK_COMPONENT_TYPE_SINT8_KHR, VK_COMPONENT_TYPE_SINT32_KHR));
  return caps;
}

plan::Plan with_spirv(plan::Plan plan) {
  kernels::ShaderCompiler compiler;
  kernels::compile_pipelines(plan, compiler, 0);
  return plan;
}

bool is_coop(const plan::Pipeline& p) {
  return p.family.find("coopmat") != std::string::npos;
}

// Every edge the tuner would time, lowered as measure.cpp lowers it; its pipelines kept by key.
class CollectingMeasurer : public autotune::Measurer {
 public:
  std::map<std::string, plan::Pipeline> pipelines;
  std::vector<autotune::Measured> measure(const compiler::Graph& graph, const std::vector<const kernels::Implementation*>& impls,
                                          plan::Precision precision, uint32_t width, uint32_t height, const autotune::Progress&) override {
    const std::vector<int64_t> values = *autotune::values_at_extent(graph, width, height);
    std::vector<autotune::Measured> out(impls.size());
    for (size_t i = 0; i < impls.size(); ++i) {
      const autotune::EdgeGraph edge = autotune::extract_edge_graph(graph, *impls[i], values, precision);
      for (const plan::Pipeline& p : kernels::lower_implementations(edge.graph, precision, {&edge.impl}).pipelines)
        pipelines.emplace(plan::pipeline_key(p), p);
      out[i].ok = true;
      out[i].ms = 1.0 + 0.001 * static_cast<double>(i % 7);
    }
    return out;
  }
};

// Every pipeline a tune of OIDN balanced (fp16 with A_DIRECT, and int8) over `space` could put in
// a plan for an H100-like target reads back as running there: a plan the tuner made on the H100
// must not be refused by the load's SPIR-V check.
void check_space(kernels::ConfigSpace space) {
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  const runtime::DeviceCapabilities h100 = h100_caps();
  for (const bool int8 : {false, true}) {
    autotune::ScheduleOptions o;
    o.precision = plan::Precision::F16;
    o.target = h100_int8_target(g, int8 ? std::vector<HostTensor>{random_tensor({1, 3, 40, 48}, 5)} : std::vector<HostTensor>{});
    o.target.coop.a_rows = true;
    o.space = space;
    CollectingMeasurer m;
    o.measurer = &m;
    autotune::schedule_graph(g, o);
    INFO((int8 ? "int8: " : "fp16: ") << m.pipelines.size() << " pipelines");
    REQUIRE(m.pipelines.size() > 10);
    plan::Plan all;
    all.precision = plan::Precision::F16;
    for (const auto& [key, p] : m.pipelines) all.pipelines.push_back(p);
    all = with_spirv(std::move(all));
    for (const plan::Pipeline& p : all.pipelines) {
      const runtime::SpirvRequirements r = runtime::read_spirv_requirements(p.spirv, p.family);
      INFO(plan::pipeline_key(p) << ": " << r.workgroup_bytes << " bytes");
      CHECK(runtime::unmet_spirv_requirement(r, h100) == "");
      CHECK(runtime::spirv_interface_mismatch(r, p.local_size, p.binding_count, p.push_constant_count * 4) == "");
    }
  }
}

}  // namespace

TEST_CASE("every pipeline a MEASURE tune could choose for the H100 passes the load's SPIR-V check", "[kernels][spirv-requirements]") {
  check_space(kernels::ConfigSpace::Pruned);
}

// Minutes of glslang on a 2-core machine: run by hand (`"[.spirv-exhaustive]"`) after a change to
// the configuration space or the shaders' shared arrays.
TEST_CASE("every pipeline an EXHAUSTIVE tune could choose for the H100 passes the load's SPIR-V check", "[.spirv-exhaustive]") {
  check_space(kernels::ConfigSpace::Full);
}

TEST_CASE("a plan's SPIR-V says what shared memory and cooperative matrices it needs", "[kernels][spirv-requirements]") {
  kernels::LoweringTarget fp16 = {};
  fp16.coop = h100_like();
  fp16.coop.a_rows = true;  // (A_DIRECT convolutions too)
  const plan::Plan fp16_plan = with_spirv(build_portable_plan(oidn(modelgen::OidnUnetOptions::Size::Small), plan::Precision::F16, fp16));
  const plan::Plan int8_plan = with_spirv(oidn_heuristic_plan(3, true, modelgen::OidnUnetOptions::Size::Small));
  const runtime::DeviceCapabilities h100 = h100_caps();

  int coop_pipelines = 0, int8_pipelines = 0;
  uint64_t largest = 0;
  std::set<uint32_t> capabilities;
  for (const plan::Plan* plan : {&fp16_plan, &int8_plan}) {
    for (const plan::Pipeline& p : plan->pipelines) {
      INFO(p.family);
      const runtime::SpirvRequirements r = runtime::read_spirv_requirements(p.spirv, p.family);
      // Every plan built for the H100 runs there, and within the shared memory its lowering
      // budgeted (a reader that over- or under-counted would break one of these).
      CHECK(runtime::unmet_spirv_requirement(r, h100) == "");
      // The module is the one its pipeline describes, and each way it could differ is named.
      const uint32_t push = p.push_constant_count * 4;
      CHECK(runtime::spirv_interface_mismatch(r, p.local_size, p.binding_count, push) == "");
      auto other = p.local_size;
      other[0] += 1;
      CHECK(runtime::spirv_interface_mismatch(r, other, p.binding_count, push).find("declares workgroups of") != std::string::npos);
      if (p.binding_count > 0)
        CHECK(runtime::spirv_interface_mismatch(r, p.local_size, p.binding_count - 1, push).find("uses descriptor set 0 binding") != std::string::npos);
      // The push-constant block is read to its end: the pipeline's whole range, no more (a
      // block one word longer than its range is refused).
      CHECK(r.push_constant_bytes == push);
      if (push > 0)
        CHECK(runtime::spirv_interface_mismatch(r, p.local_size, p.binding_count, push - 4) ==
              "reads " + std::to_string(push) + " bytes of push constants; its pipeline's range has " + std::to_string(push - 4));
      // A capability whose feature denox never enables (Float64); one it has no feature for,
      // refused in SPIR-V from elsewhere and passed in SPIR-V compiled here (another glslang
      // may declare it); and one whose feature is off.
      runtime::SpirvRequirements doubles = r;
      doubles.capabilities.push_back(10);
      CHECK(runtime::unmet_spirv_requirement(doubles, h100) ==
            "declares SPIR-V capability Float64, but VkPhysicalDeviceFeatures::shaderFloat64 is not enabled (denox never enables it)");
      runtime::SpirvRequirements unknown = r;
      unknown.capabilities.push_back(99999);
      CHECK(runtime::unmet_spirv_requirement(unknown, h100) ==
            "declares SPIR-V capability 99999, which denox cannot check against the device (no denox shader declares it)");
      CHECK(runtime::unmet_spirv_requirement(unknown, h100, false) == "");
      capabilities.insert(r.capabilities.begin(), r.capabilities.end());
      runtime::DeviceCapabilities no_fp16 = h100;
      no_fp16.shader_float16 = false;
      const bool float16 = std::find(r.capabilities.begin(), r.capabilities.end(), 9u) != r.capabilities.end();
      CHECK(runtime::unmet_spirv_requirement(r, no_fp16).find("declares SPIR-V capability Float16, but VkPhysicalDeviceVulkan12Features::shaderFloat16 is not enabled") ==
            (float16 ? 0 : std::string::npos));
      // The cooperative-matrix shaders declare the Vulkan memory model (glslang's
      // GL_KHR_memory_scope_semantics): a device without vulkanMemoryModel enabled refuses them.
      runtime::DeviceCapabilities no_memory_model = h100;
      no_memory_model.vulkan_memory_model = false;
      CHECK(runtime::unmet_spirv_requirement(r, no_memory_model) ==
            (is_coop(p) ? "declares SPIR-V capability VulkanMemoryModel, but VkPhysicalDeviceVulkan12Features::vulkanMemoryModel is not enabled" : ""));
      CHECK(r.entry_points == 1);
      CHECK(r.workgroup_bytes <= 49152);
      largest = std::max(largest, r.workgroup_bytes);
      CHECK(is_coop(p) == !r.coop_matrices.empty());
      if (!is_coop(p)) continue;
      ++coop_pipelines;
      CHECK(r.workgroup_bytes > 0);
      bool int8 = false;
      for (const runtime::SpirvCoopMatrix& m : r.coop_matrices) {
        INFO(runtime::describe(m));
        CHECK(m.scope == 3);  // subgroup
        CHECK((m.use == 1 || m.rows == 16));  // (B is K x N: K 8, 16 or 32)
        int8 = int8 || m.component == VK_COMPONENT_TYPE_SINT8_KHR;
      }
      int8_pipelines += int8 ? 1 : 0;

      // The same shader on a device with a byte less shared memory, or without its shapes.
      runtime::DeviceCapabilities less = h100;
      less.max_compute_shared_memory = static_cast<uint32_t>(r.workgroup_bytes - 1);
      CHECK(runtime::unmet_spirv_requirement(r, less).find("declares " + std::to_string(r.workgroup_bytes) + " bytes of shared memory") !=
            std::string::npos);
      runtime::DeviceCapabilities no_coop = h100;
      no_coop.cooperative_matrix = false;
      CHECK(runtime::unmet_spirv_requirement(r, no_coop).find("VK_KHR_cooperative_matrix is not enabled") != std::string::npos);
      // A device with 16x16x16 fp16 only, fp32 accumulators: any 16x16 fp16 or fp32 matrix type
      // matches one of its A, B, C or result (the use does not matter), nothing else does.
      runtime::DeviceCapabilities other_shapes = h100;
      other_shapes.coop_matrix_shapes = {shape(16, 16, 16, VK_COMPONENT_TYPE_FLOAT16_KHR, VK_COMPONENT_TYPE_FLOAT32_KHR)};
      bool fits_other = true;
      for (const runtime::SpirvCoopMatrix& m : r.coop_matrices)
        fits_other = fits_other && m.rows == 16 && m.cols == 16 &&
                     (m.component == VK_COMPONENT_TYPE_FLOAT16_KHR || m.component == VK_COMPONENT_TYPE_FLOAT32_KHR);
      const std::string unmet = runtime::unmet_spirv_requirement(r, other_shapes);
      CHECK(unmet.empty() == fits_other);
      if (!fits_other) CHECK(unmet.find("a shape the device does not report") != std::string::npos);
    }
  }
  CHECK(coop_pipelines >= 4);
  CHECK(int8_pipelines >= 1);
  CHECK(largest > 16384);  // the big tiles stage tens of KB: arrays and structs are counted
  // Shader, Float16, Int8, GroupNonUniform, StorageBuffer16BitAccess, VulkanMemoryModel,
  // CooperativeMatrixKHR: each feature-gated one is what the load compares with the device.
  CHECK(capabilities == std::set<uint32_t>{1, 9, 39, 61, 4433, 5345, 6022});
}

TEST_CASE("an fp32 plan's SPIR-V needs no optional feature: it loads on a device with none enabled", "[kernels][spirv-requirements]") {
  // The portable shaders share sources with the fp16 ones (16-bit storage extensions included):
  // their fp32 variants must declare nothing a device without fp16, int8, cooperative matrices
  // or the memory model lacks, or a plan file of them would be refused there.
  const plan::Plan fp32 = with_spirv(kernels::build_portable_plan(oidn(modelgen::OidnUnetOptions::Size::Small), plan::Precision::F32, {}));
  runtime::DeviceCapabilities bare;
  bare.max_compute_shared_memory = 16384;  // (the least Vulkan promises)
  REQUIRE(!fp32.pipelines.empty());
  for (const plan::Pipeline& p : fp32.pipelines) {
    INFO(p.family);
    const runtime::SpirvRequirements r = runtime::read_spirv_requirements(p.spirv, p.family);
    CHECK(runtime::unmet_spirv_requirement(r, bare) == "");
    CHECK(runtime::spirv_interface_mismatch(r, p.local_size, p.binding_count, p.push_constant_count * 4) == "");
  }
}

TEST_CASE("cooperative matrices are lowered for only where the Vulkan memory model is enabled", "[kernels][spirv-requirements]") {
  // Their shaders declare VulkanMemoryModel: without the feature a device must not create them.
  runtime::DeviceCapabilities caps = h100_caps();
  caps.subgroup_size = 32;
  CHECK(kernels::lowering_target(caps).uses_coop());
  CHECK(kernels::lowering_target(caps).coop.int8);
  caps.vulkan_memory_model = false;
  CHECK_FALSE(kernels::lowering_target(caps).uses_coop());
  CHECK_FALSE(kernels::lowering_target(caps).coop.int8);
}

TEST_CASE("malformed SPIR-V is refused by the requirement reader with a message, never a crash", "[kernels][spirv-requirements]") {
  kernels::LoweringTarget t = {};
  t.coop = h100_like();
  const plan::Plan plan = with_spirv(build_portable_plan(oidn(modelgen::OidnUnetOptions::Size::Small), plan::Precision::F16, t));
  std::vector<uint32_t> words;
  for (const plan::Pipeline& p : plan.pipelines)
    if (is_coop(p)) words = p.spirv;
  REQUIRE(!words.empty());

  auto refused = [](const std::vector<uint32_t>& w) {
    try {
      runtime::read_spirv_requirements(w, "the test's shader");
      return std::string();
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidModel);
      return std::string(e.what());
    }
  };
  CHECK(refused({}).find("not a SPIR-V module") != std::string::npos);
  // The module's first half, its last instruction there claiming more words than are left.
  size_t last = 5;
  for (size_t at = 5; at < words.size() / 2; at += words[at] >> 16) last = at;
  std::vector<uint32_t> cut(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(last + 1));
  cut[last] = (1000u << 16) | (cut[last] & 0xffffu);
  CHECK(refused(cut) == "the test's shader: malformed SPIR-V at word " + std::to_string(last) +
                            ": an instruction runs past the end of the module");

  // Random damage: each result is a reading or an Error, never a crash or a hang.
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint32_t> w = words;
    for (int k = 0; k < 4; ++k) {
      const size_t at = 5 + rng() % (w.size() - 5);
      w[at] = (i % 3 == 0) ? rng() : (w[at] ^ (1u << (rng() % 32)));
    }
    refused(w);
  }
}
