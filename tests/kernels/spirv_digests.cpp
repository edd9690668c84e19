// [.spirv-digests] (hidden; ~9 minutes on 2 cores): a digest of the SPIR-V of every pipeline the
// tuner can lower for OIDN balanced and small (3 channels, pad/crop, shapes at 320x200), fp16
// and int8 (one fixed random calibration: its zero points are macros), real and emulated coop,
// over the whole configuration space (ConfigSpace::Full), one line per pipeline key, sorted,
// written to $DENOX_SPIRV_DIGESTS. For shader refactors that must not change what runs: run it
// before and after and `cmp` the two files (2026-11-28: 41348 pipelines). Macro combinations
// no OIDN edge reaches are not covered.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "../runtime/gpu_test_support.hpp"
#include "common/error.hpp"
#include "compiler/cost_model/cost_model.hpp"
#include "compiler/supergraph/edge_graph.hpp"
#include "coop_support.hpp"
#include "kernels/shader_compiler.hpp"
#include "q8_support.hpp"

using namespace denox;
using namespace denox::testing;

TEST_CASE("SPIR-V digests of every pipeline the tuner can lower for OIDN", "[.spirv-digests]") {
  const char* path = std::getenv("DENOX_SPIRV_DIGESTS");
  REQUIRE(path);
  using Size = modelgen::OidnUnetOptions::Size;
  std::map<std::string, plan::Pipeline> pipelines;  // by pipeline_key: sorted, each once
  for (Size size : {Size::Balanced, Size::Small})
    for (bool int8 : {false, true})
      for (bool emulate : {false, true}) {
        const compiler::Graph g = oidn(size);
        kernels::LoweringTarget t =
            h100_int8_target(g, int8 ? std::vector<HostTensor>{random_tensor({1, 3, 40, 48}, 5)} : std::vector<HostTensor>{});
        t.coop_emulate = emulate;
        const std::vector<int64_t> values = *autotune::values_at_extent(g, 320, 200);
        for (const kernels::Implementation& impl :
             kernels::enumerate_implementations(g, plan::Precision::F16, t, kernels::ConfigSpace::Full)) {
          if (impl.kind == kernels::Implementation::Kind::Free) continue;
          try {
            const autotune::EdgeGraph edge = autotune::extract_edge_graph(g, impl, values, plan::Precision::F16);
            for (const plan::Pipeline& p : kernels::lower_implementations(edge.graph, plan::Precision::F16, {&edge.impl}).pipelines)
              pipelines.emplace(plan::pipeline_key(p), p);
          } catch (const Error&) {
            // an implementation that does not lower alone is not one the tuner times either
          }
        }
      }
  kernels::ShaderCompiler compiler;
  FILE* out = std::fopen(path, "w");
  REQUIRE(out);
  for (const auto& [key, p] : pipelines) {
    const std::vector<uint32_t> spirv = compiler.compile(p.family, p.defines, plan::Precision::F16);
    uint64_t digest = 1469598103934665603ull;  // FNV-1a over the words: a change detector, not a hash for storage
    for (uint32_t word : spirv) digest = (digest ^ word) * 1099511628211ull;
    std::fprintf(out, "%016llx %zu %s\n", static_cast<unsigned long long>(digest), spirv.size(), key.c_str());
  }
  CHECK(std::fclose(out) == 0);
  CHECK(pipelines.size() > 1000);
}
