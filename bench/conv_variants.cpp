// DENOX_BENCH_VARIANTS=FILE of the [coop-bench] benchmark (bench/conv_layers.cpp): kernel
// experiments on the fused (heuristic) plan, side by side.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "../tests/kernels/coop_support.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "conv_bench_support.hpp"

namespace denox::bench {

using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

// DENOX_BENCH_VARIANTS=FILE: kernel experiments on the fused (heuristic) plan. Each line of
// FILE: "label ; DEF=V DEF=V ; /layer/Conv=config, /layer/Conv=config" (both parts may be
// empty; '#' starts a comment): the defines are added to every conv2d_coopmat,
// conv2d_coopmat_up2, conv2d_coopmat_q8 and conv_tail_ring pipeline, or with FAMILY:DEF=V to
// that family's only (target.coop_head=0 and the like switch
// the LoweringTarget instead; target.int8=1 compiles the "coop int8" plan's precision;
// bench.twice=1 runs every dispatch twice in a row, the second named "again ...";
// bench.prewarm=1 runs it on one workgroup first, named "warm ..."; bench.overlap_warm=1 runs
// the next one on one workgroup right after it, with no barrier between them;
// bench.no_barriers=1 runs the end-to-end frames with no barrier at all, bench.skip_barrier=K
// without the one before command K only: DroppedBarriers in conv_bench_support.hpp), the
// configurations replace the heuristic's for those convs.
// Per variant: end-to-end time (not serialized), relative L2 against the first variant's
// output, the barriers the frame recorded (the derived ones less any dropped), and a
// per-dispatch column (serialized). With DENOX_BENCH_PLAN_DIR each variant's
// plan is written there as LABEL.plan (for denox_pipeline_stats).
void run_variants(const char* file_name, const runtime::DeviceContext& ctx, const compiler::Graph& g, const LoweringTarget& coop,
                  const std::shared_ptr<QuantTable>& int8_table, uint32_t W, uint32_t H, const runtime::Buffer& in,
                  const runtime::Buffer& out) {
  std::ifstream file(file_name);
  REQUIRE(file.good());
  const char* plan_dir = std::getenv("DENOX_BENCH_PLAN_DIR");
  std::vector<std::string> labels;
  std::vector<Timing> serial;
  std::vector<uint16_t> first_out;
  std::printf("\n## variants (DENOX_BENCH_VARIANTS=%s): end to end median of 24 (not serialized), rel L2 vs the first\n", file_name);
  for (std::string line; std::getline(file, line);) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
      const size_t semi = line.find(';', at);
      parts.push_back(trim(line.substr(at, semi == std::string::npos ? std::string::npos : semi - at)));
      if (semi == std::string::npos) break;
      at = semi + 1;
    }
    parts.resize(3);
    LoweringTarget t = coop;
    for (size_t at = 0; !parts[2].empty() && at <= parts[2].size();) {
      const size_t comma = std::min(parts[2].find(',', at), parts[2].size());
      const std::string item = trim(parts[2].substr(at, comma - at));
      const size_t eq = item.find('=');
      REQUIRE(eq != std::string::npos);
      t.conv_configs[trim(item.substr(0, eq))] = parse_config(item.substr(eq + 1));
      at = comma + 1;
    }
    std::istringstream defs(parts[1]);
    std::vector<std::pair<std::string, std::string>> extra;
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> extra_of_family;
    bool twice = false, prewarm = false, overlap_warm = false;
    DroppedBarriers drop;
    for (std::string d; defs >> d;) {
      const size_t eq = d.find('=');
      const std::string key = d.substr(0, eq), value = eq == std::string::npos ? "1" : d.substr(eq + 1);
      // target.coop_head=0 (likewise coop_tail, coop_up2, nhwc): a LoweringTarget switch, not a define.
      if (key == "target.coop_head") t.coop_head = value != "0";
      else if (key == "target.coop_tail") t.coop_tail = value != "0";
      else if (key == "target.coop_up2") t.coop_up2 = value != "0";
      else if (key == "target.nhwc") t.nhwc = value != "0";
      else if (key == "target.int8") t.int8 = value != "0" ? int8_table : nullptr;  // the "coop int8" plan's table (conv_layers.cpp)
      else if (key == "bench.twice") twice = value != "0";
      else if (key == "bench.prewarm") prewarm = value != "0";
      else if (key == "bench.overlap_warm") overlap_warm = value != "0";
      else if (key == "bench.no_barriers") drop.all = value != "0";
      else if (key == "bench.skip_barrier") {  // before command K
        drop.before_command = std::stoi(value);
        REQUIRE(drop.before_command >= 0);
      }
      else if (const size_t colon = key.find(':'); colon != std::string::npos)
        extra_of_family[key.substr(0, colon)].push_back({key.substr(colon + 1), value});
      else extra.push_back({key, value});
    }
    plan::Plan p = compile(g, plan::Precision::F16, t);
    add_coop_defines(p, extra, {"conv2d_coopmat", "conv2d_coopmat_up2", "conv2d_coopmat_q8", "conv_tail_ring"});
    for (const auto& [family, defines] : extra_of_family) add_coop_defines(p, defines, {family});
    // bench.twice=1: every dispatch runs twice in a row, the second as "again <name>" (timing
    // only: a tail's ring adds into its output twice), so that the second shows what the
    // first paid for its start (instructions and weights not yet cached).
    if (twice) {
      std::vector<plan::Dispatch> doubled;
      for (const plan::Dispatch& d : p.dispatches) {
        doubled.push_back(d);
        doubled.push_back(d);
        doubled.back().name = "again " + d.name;
      }
      p.dispatches = std::move(doubled);
    }
    // bench.prewarm=1: before every dispatch the same dispatch on one workgroup, named "warm
    // <name>" (timing only): whether one workgroup's run leaves the full dispatch as fast as a
    // second run (its code and weights then cached), the question for warming them early.
    if (prewarm) {
      const ValueId one = p.inputs.at(0).shape[0];  // the batch: a constant 1
      std::vector<plan::Dispatch> warmed;
      for (const plan::Dispatch& d : p.dispatches) {
        warmed.push_back(d);
        warmed.back().name = "warm " + d.name;
        warmed.back().groups = {one, one, one};
        warmed.push_back(d);
      }
      p.dispatches = std::move(warmed);
    }
    // bench.overlap_warm=1 (experiment): right after every dispatch, the next one on one
    // workgroup with every scratch binding moved to a shadow tensor nobody else touches, so
    // record() derives no barrier between it and the dispatch before it where that dispatch
    // starts a barrier window (every dispatch of a chain like OIDN's; the variant line prints
    // the barrier count, which must not grow): does warming code and weights while the
    // previous dispatch drains pay end to end? Named "warm <name>". Time it with
    // DENOX_BENCH_BRACKET=1 (measure, conv_bench_support.cpp).
    if (overlap_warm) {
      const ValueId one = p.inputs.at(0).shape[0];
      ValueId biggest = p.scratch.at(0).size_bytes;
      for (const plan::ScratchTensor& s : p.scratch) biggest = p.program.max(biggest, s.size_bytes);
      const uint32_t shadow = static_cast<uint32_t>(p.scratch.size());
      p.scratch.push_back({"warm shadow", biggest});
      std::vector<plan::Dispatch> warmed;
      for (size_t i = 0; i < p.dispatches.size(); ++i) {
        warmed.push_back(p.dispatches[i]);
        if (i + 1 == p.dispatches.size()) break;
        plan::Dispatch w = p.dispatches[i + 1];
        w.name = "warm " + w.name;
        w.groups = {one, one, one};
        for (plan::Binding& b : w.bindings)
          if (b.resource == plan::Resource::Scratch) b.index = shadow;
        warmed.push_back(w);
      }
      p.dispatches = std::move(warmed);
    }
    if (plan_dir) {
      const std::vector<uint8_t> bytes = plan::serialize_plan(p);
      std::ofstream(std::string(plan_dir) + "/" + parts[0] + ".plan", std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    const Timing e2e = measure(ctx, p, W, H, {&in}, out, false, 3, true, drop);
    if (first_out.empty()) first_out = e2e.output;
    std::printf("%-24s %8.3f ms  rel L2 %.1e  %zu barriers  (%s | %s)\n", parts[0].c_str(), e2e.ms, rel_l2(e2e.output, first_out),
                e2e.barriers, parts[1].c_str(), parts[2].c_str());
    for (const std::string& note : e2e.dropped) std::printf("  (%s)\n", note.c_str());
    std::fflush(stdout);
    labels.push_back(parts[0]);
    serial.push_back(measure(ctx, std::move(p), W, H, {&in}, out, true, 3, false));
  }
  std::printf("\nper dispatch (serialized ms):\n%-48s", "dispatch");
  for (const auto& l : labels) std::printf(" %12.12s", l.c_str());
  std::printf("\n");
  // One row per dispatch name, in the order the variants first list them, so that plans with
  // other dispatches (an fp16 plan beside an int8 one: a head instead of enc_conv0 apart) line
  // up by name; "-" where a variant has no such dispatch.
  std::vector<std::string> rows;
  for (const Timing& v : serial)
    for (const auto& [name, ms] : v.commands)
      if (std::find(rows.begin(), rows.end(), name) == rows.end()) rows.push_back(name);
  for (const std::string& row : rows) {
    std::printf("%-48.48s", row.c_str());
    for (const Timing& v : serial) {
      const auto it = std::find_if(v.commands.begin(), v.commands.end(), [&](const auto& c) { return c.first == row; });
      if (it == v.commands.end()) std::printf(" %12s", "-");
      else std::printf(" %12.4f", it->second);
    }
    std::printf("\n");
  }
}

}  // namespace denox::bench
