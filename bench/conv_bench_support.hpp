// What the [coop-bench] benchmark (bench/conv_layers.cpp) and its kernel-variant runner
// (bench/conv_variants.cpp) share: random fp16 inputs, the timestamped measurement of a plan,
// output comparison, and the text forms of configurations and variant lines.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/quant.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/device_context.hpp"

namespace denox::bench {

// fp16 CHW buffer of `count` random values in +-[0.1, 1] (never zero).
runtime::Buffer random_f16_buffer(const runtime::DeviceContext& ctx, size_t count, uint64_t seed);

struct Timing {
  double ms = 0;  // sum over the commands but the io adapters and "mk*" (serialized), or the total
  std::vector<std::pair<std::string, double>> commands;  // per command, adapters included
  std::vector<uint16_t> output;      // fp16 CHW output 0, when asked for
  size_t barriers = 0;               // the barriers record() derives (serialize adds more), less those dropped
  std::vector<std::string> dropped;  // bench.skip_barrier: which barrier was dropped, or that none was
};

// Which derived barriers a not-serialized measure() drops (bench.no_barriers=1 /
// bench.skip_barrier=K in conv_variants.cpp; experiments, timing only): all of them, or only the
// one before command `before_command`. The dispatches then overlap and the output is garbage.
// Such a frame's time bounds what scheduling across dispatches (stripes, persistent kernels,
// per-tile handoffs) could save, barrier by barrier. Only with DENOX_BENCH_BRACKET=1:
// per-command timestamps would order the dispatches themselves (measure() throws otherwise).
struct DroppedBarriers {
  bool all = false;
  int before_command = -1;  // >= 0: only this one (ignored with `all`)
  bool any() const { return all || before_command >= 0; }
};

// Builds `plan` into a model, binds fp16 CHW buffers (inputs[i] for input i, `out` for output
// 0) and records it kRecords times into each of `submits` command buffers, after warm-up ones
// (0.3 s of them), each record with its own timestamp pool (a timestamp after every command,
// serialized or not): back-to-back records keep the GPU busy, so no clock ramps between
// samples. Returns the medians over the kRecords * submits samples.
constexpr int kRecords = 8;
Timing measure(const runtime::DeviceContext& ctx, plan::Plan plan, uint32_t w, uint32_t h, const std::vector<const runtime::Buffer*>& inputs,
               const runtime::Buffer& out, bool serialize, int submits, bool read_output, const DroppedBarriers& drop = {});

// ||a - b|| / ||b|| over fp16 data (infinity on NaN or size mismatch).
double rel_l2(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b);

// 1, 2, 4, 8 or 16: the resolution divisor of an OIDN conv layer by its name.
int64_t divisor_of(const std::string& name);

// A configuration as CoopConvConfig::describe() writes it ("8x64 nt32 ck16 sg16x1 16x16x16
// f16acc" plus " bglobal" / " up2" / " 1ph" / " ep2" / " tapsum"); throws on anything else.
kernels::CoopConvConfig parse_config(const std::string& text);

std::string trim(const std::string& s);
std::string fmt(const char* f, double v);  // one printf-formatted number

// DENOX_BENCH_VARIANTS=FILE (bench/conv_variants.cpp): kernel experiments on the fused
// (heuristic) plan `coop` of graph `g`, side by side; `int8_table` is what target.int8=1 takes.
void run_variants(const char* file, const runtime::DeviceContext& ctx, const compiler::Graph& g, const kernels::LoweringTarget& coop,
                  const std::shared_ptr<kernels::QuantTable>& int8_table, uint32_t W, uint32_t H, const runtime::Buffer& in,
                  const runtime::Buffer& out);

}  // namespace denox::bench
