// Measure (pipeline step 6): times supergraph edges on the device, each as a small network of
// its own (autotune::extract_edge_graph), and keeps every result in the SQLite cache so that
// nothing is measured twice on one device and driver (a second model that shares a layer
// measures only what is new).
//
// How an edge is timed: its shaders are compiled, and its pipelines created once into the
// driver's pipeline cache, on several threads first; then, one edge at a time, its pipelines
// are created (cache hits), its inputs (a non-zero constant: latency does not depend on the
// values) copied in by the runtime's input adapters, and `warmup` + `runs` submits (more
// untimed ones for the first edge: clock_warmup_ms; busy work between edges: keep_clock) each record it once with a timestamp
// after every dispatch and a barrier before each (so the differences are per-dispatch times);
// the edge's latency is the median over the runs of the sum of its own dispatches. The input
// adapters write the inputs right before the edge reads them, as the producing layer does in
// the real network.
//
// Isolation: a configuration whose shader does not compile, whose pipeline the driver refuses,
// whose plan the lowering refuses, or whose submit does not finish within `timeout_ms` is
// recorded as failed (and never tried again on this device). A submit that never finishes at
// all (a GPU hang the driver does not recover from) is recorded as failed too, and throws
// ErrorCode::Vulkan naming the edge; what was measured before it is already in the store, so a
// rerun continues from there.
//
// Crashes (crash_journal.hpp): measuring runs in the engine's process, on its VkDevice, so a
// configuration that kills the process (a driver segfault in vkCreateComputePipelines, the
// shader compiler aborting, a device loss the driver answers with abort()) cannot be contained,
// only remembered. Before each risky step of an edge (compile, pipeline, time) its store row is
// set to a marker naming this process and the step, replaced by the result as soon as it is
// known. A later measure() that finds the marker of a dead process concludes: a retry step had
// only that edge in flight a second time, so it is recorded as "failed crashed the process
// while being measured (<phase>)"; a serial step (timing) had only that edge in flight once, and
// a parallel step (shaders compiled, driver pipelines created on several threads) cannot be
// blamed on one edge, so such edges are retried alone (compile, pipelines and timing one at a
// time, each with a retry marker). A live process's
// marker means the edge is being measured elsewhere now: it is measured here too. A run that is
// cancelled or throws clears its markers on the way out. (A second timing of an edge timed with
// the GPU's clock down, measure.cpp step 4, writes no marker: the edge has a result already.)
// Test hook: DENOX_TEST_CRASH_MEASURING=<phase>:<text> (crash_journal.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "compiler/schedule/schedule.hpp"
#include "kernels/shader_compiler.hpp"
#include "runtime/cache/layered_cache.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/executable_model.hpp"

namespace denox::measure {

class ClockKeeper;

struct MeasureOptions {
  int warmup = 3;
  int runs = 20;
  uint32_t timeout_ms = 5000;  // per submit
  // Before the first edge of a measure() call is timed (and the first after an edge compiled
  // alone in the timing step), it is run untimed for at least this long on a GPU (not on a CPU
  // device). The timing step starts after seconds of shader compiles with the GPU idle, and
  // GPUs lower their clock when idle: without it, the first edges were timed while the clock
  // came back up, and looked slower than the same work later on (an H100 tuned OIDN small at
  // 3840x2160 into a plan 3% slower than the heuristic one, bench/RESULTS.md 2026-11-25 and
  // 2026-11-26). 250 ms was not always enough: an H100 once took 0.8 s from 375 to 1980 MHz,
  // and the first 9 edges read up to 4x slow (bench/measure_noise.sh, 2026-11-27).
  uint32_t clock_warmup_ms = 1000;
  // Between two timed edges, busy work keeps the GPU's clock up while the host prepares the
  // next one (clock_keeper.hpp says why). On a GPU only, as clock_warmup_ms; off for
  // background tunes (the engine's frames keep the clock up there);
  // DENOX_TEST_CLOCK_KEEPER=1 in the environment runs it on a CPU device too (tests).
  bool keep_clock = true;
  unsigned compile_threads = 0;  // 0: hardware concurrency
  // Set by another thread to stop measuring (a model destroyed or a job superseded while it
  // tunes in the background): checked between shader compiles, pipeline creations and timing
  // runs, so measure() throws Cancelled within about one submit. Null: never cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

// Thrown when MeasureOptions::cancel was set; what was measured before it is in the store.
class Cancelled : public Error {
 public:
  Cancelled() : Error(ErrorCode::Internal, "cancelled") {}
};

class DeviceMeasurer : public autotune::Measurer {
 public:
  // `store` may be null or disabled (nothing is remembered); results are looked up in its
  // writable cache, then its shipped one, and stored in the writable one. `key_prefix`
  // identifies the device, driver and shader set (the measurement store's key starts with it).
  DeviceMeasurer(const runtime::DeviceContext& device, kernels::ShaderCompiler& compiler, VkPipelineCache pipeline_cache,
                 runtime::AdapterCompiler adapters, cache::LayeredCache* store, std::string key_prefix, MeasureOptions options = {});

  std::vector<autotune::Measured> measure(const compiler::Graph& graph, const std::vector<const kernels::Implementation*>& impls,
                                          plan::Precision precision, uint32_t width, uint32_t height,
                                          const autotune::Progress& progress) override;

  // The median latency of a whole network's plan (SPIR-V filled in) at width x height, its
  // dispatches timed as an edge's are, after `warm_ms` of untimed runs on a GPU: how a tuned plan
  // is checked against the heuristic one (api_compile.cpp). Nothing is stored; throws Cancelled
  // or denox::Error as measure() does.
  double time_network(plan::Plan plan, uint32_t width, uint32_t height, const std::string& what, uint32_t warm_ms);

 private:
  // measure()'s steps (measure.cpp), on one call's state.
  struct Run;
  void look_up_stored(Run& run);       // 1. results from the store; the rest lowered
  void compile_pending(Run& run);      // 2. shaders and driver pipelines, in parallel
  void time_pending(Run& run);         // 3. every edge timed, one at a time
  void time_again_at_clock(Run& run);  // 4. edges timed with the GPU's clock down, timed again

  // Times one lowered edge plan (SPIR-V filled in) at width x height (edge graphs: 1 x 1, their
  // extents are constants); throws denox::Error on failure.
  // The median latency of `plan`'s dispatches; with `warm_ms`, untimed runs for that long first.
  // With a `keeper`, its busy work (started after the previous edge) is waited for before the runs.
  double time_plan(plan::Plan plan, const std::string& what, uint32_t warm_ms, ClockKeeper* keeper, uint32_t width = 1,
                   uint32_t height = 1);
  // A GPU, not a CPU device (lavapipe): only a GPU's clock is warmed up, kept up and read.
  bool on_gpu() const { return device_.caps().device_type != VK_PHYSICAL_DEVICE_TYPE_CPU; }
  bool cancelled() const { return options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed); }
  void throw_if_cancelled() const {
    if (cancelled()) throw Cancelled();
  }

  // Where the timing step's host time goes, summed over the edges of this measurer (logged at
  // debug level after each measure()).
  struct HostTime {
    int edges = 0;
    double model_ms = 0, extent_ms = 0, inputs_ms = 0, keeper_wait_ms = 0, runs_ms = 0, between_ms = 0;
    std::chrono::steady_clock::time_point last_end;
  };
  HostTime host_;
  // The caller-side input and output buffers of the edge being timed, per input / output index,
  // kept across the edges of one measure() call.
  struct BufferPool {
    std::vector<runtime::Buffer> inputs, outputs;
  };
  BufferPool pool_;

  const runtime::DeviceContext& device_;
  kernels::ShaderCompiler& compiler_;
  VkPipelineCache pipeline_cache_;
  runtime::AdapterCompiler adapters_;
  cache::LayeredCache* store_;
  std::string key_prefix_;
  MeasureOptions options_;
};

// One timed edge's clock, as the clock keeper read it (0: not read): right before its runs
// (after any warm-up), and as found before any warm-up (for the edge timed before it, the clock
// its runs left); `floor`: the rate below which the clock counted as down then (a share of the
// best rate seen so far).
struct TimedEdgeClock {
  size_t pending = 0;  // the edge
  double before_runs = 0, found = 0, floor = 0;
};
// The edges of `timed` (in timing order) whose runs began, or ended, with the keeper's rate
// below its floor; the last edge's end is `end_found` against `end_floor` (read after the
// timing loop). measure() times them again.
std::vector<size_t> clock_dip_edges(const std::vector<TimedEdgeClock>& timed, double end_found, double end_floor);

// The stored form of a result: "ok <ms>" or "failed <why>"; decode returns false for text that
// is neither: a crash journal marker or "unmeasured" row (judged by measure::judge_row), or a
// damaged row (measured again).
std::string encode_measurement(const autotune::Measured& m);
bool decode_measurement(const std::string& text, autotune::Measured& out);

}  // namespace denox::measure
