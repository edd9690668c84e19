// Keeps the GPU busy while the tuner's host works between two edges, so that the GPU's clock
// does not drop under the edges timed next.
//
// Why: a discrete GPU lowers its clock when it is idle much of the time (nvidia-smi's clock
// event reason 0x1, "GPU idle"). Between two edges the host stores a result, lowers and sets up
// the next edge (buffers of hundreds of MB at 1920x1088, inputs filled) while the GPU waits. On
// an H100 tuning OIDN balanced, stretches of edges kept the GPU busy only 15-40% of the time;
// within a second its SM clock fell from 1980 MHz to 1000-1300 MHz, and the edges timed then
// read 10-25% slow (one 5x), in different places on two runs of the same tuning
// (bench/measure_noise.sh, bench/RESULTS.md 2026-11-27). The tuner then picked among equals by
// the clock: a tuned int8 plan ran 2.016 ms where an earlier tuning of the same model had found
// 1.943.
//
// How: the host's work between two timings comes in stretches without submits of its own: after
// an edge's runs (freeing its model and buffers, storing the result, the next edge's pipelines)
// and after the next model is made (its scratch and input buffers allocated). At the start of
// each, start() submits busy work (shaders/clock_keeper.comp, all SMs, no memory traffic) sized
// to last about as long as that stretch did the last time, up to host_done(), which the measurer
// calls right before it submits again (the weights upload, the input fills). Only those
// stretches count: a submit queues behind the busy work, so busy work covering a submit would
// only make it wait, and the gap longer (tried: busy work sized to the whole gap made the
// measuring step twice as long, the weights uploads waiting behind it). finish(), right before
// the next edge's timed runs, waits for the busy work, which so never overlaps a timed run. Its
// length follows the GPU's own timestamps of the previous busy work (the chain's rate per ms),
// so it adapts to the device and its clock.
//
// The same rate reads the clock (the chain runs on the SMs alone): the measurer warms a clock
// found down up before an edge's runs (warm_up) and times again the edges whose runs began or
// ended with it down (measure.cpp, step 4).
#pragma once

#include <volk.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "kernels/shader_compiler.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/compute_pipeline.hpp"
#include "runtime/measure/timing_objects.hpp"
#include "runtime/vulkan/device_context.hpp"

namespace denox::measure {

class ClockKeeper {
 public:
  // Compiles the busy shader and creates its pipeline (through `pipeline_cache`). Throws
  // denox::Error if the shader or pipeline cannot be made.
  ClockKeeper(const runtime::DeviceContext& device, kernels::ShaderCompiler& compiler, VkPipelineCache pipeline_cache);
  ~ClockKeeper();  // waits for busy work still in flight
  ClockKeeper(const ClockKeeper&) = delete;
  ClockKeeper& operator=(const ClockKeeper&) = delete;

  // The stretches of host work between two timings.
  enum class Stretch { AfterRuns, Setup };
  // The host starts a stretch: busy work for about that stretch's last length, at most max_ms.
  // Nothing is submitted while earlier busy work is in flight (not yet waited for).
  void start(Stretch stretch);
  // The host's stretch is done (it is about to submit work of its own): its length, which sizes
  // the stretch's next busy work.
  void host_done();
  // The next edge is about to be timed: waits for the busy work and learns the chain's rate
  // from its timestamps.
  void finish();

  // The clock, read off the busy work: the chain runs on the SMs alone (no memory traffic), so
  // its rate (iterations per ms) follows the SM clock. rate_before_runs(): the rate of the busy
  // work finish() waited for, right before the edge's runs (0: none, or too short to tell);
  // best_rate(): the highest seen. The measurer compares them to find edges timed while the
  // clock was down (measure.cpp).
  double rate_before_runs() const { return rate_before_runs_; }
  double rate_found() const { return rate_found_; }  // finish()'s, before any warm_up()
  double best_rate() const { return best_rate_; }
  // The clock counts as down where the rate is below down_share of the best: on the H200 the
  // dips were to 0.67-0.74 of its clock, and at 0.92-0.93 edges still read 7-14% slow (0.9 let
  // those through; bench/RESULTS.md 2026-11-29 twenty-fifth session).
  static constexpr double down_share = 0.95;
  double down_floor() const { return down_share * best_rate_; }
  // Whether `rate` reads the clock down against `floor` (a rate of 0 was not read: never down).
  static bool down(double rate, double floor) { return rate > 0 && rate < floor; }
  // Whether the busy work right before the edge's runs found the clock down.
  bool found_down() const { return down(rate_before_runs_, down_floor()); }
  // Waits for busy work in flight, then runs busy work in pieces until the rate is back to
  // down_share of the best (true) or rewarm_max_ms has passed (false: the best becomes the
  // highest rate reached, so a GPU that no longer gives its old clock is not waited for again);
  // false at once when no rate is known yet. rate_before_runs() is then the last piece's.
  static constexpr double rewarm_max_ms = 300;
  bool warm_up();

  struct Stats {
    int submits = 0;
    double busy_ms = 0;  // GPU time of the busy work, from its timestamps
    double gap_ms = 0;   // host time of the stretches (start() to host_done()), summed
  };
  const Stats& stats() const { return stats_; }

  // Busy work is capped and sized to this share of the stretch's last length, so that the
  // submit after it rarely waits on it. The cap bounds what an engine thread submitting to the
  // same queue during a blocking tune can wait behind it (stretches on an H100 were ~7 ms; a
  // longer one, a retry compiling alone, is not covered whole).
  static constexpr double max_ms = 20.0;
  static constexpr double gap_share = 0.8;

 private:
  void submit(double iterations);  // busy work of that many iterations, in flight after
  void wait();                      // waits for the busy work in flight and learns its rates

  const runtime::DeviceContext& device_;
  TimingObjects objects_;
  std::unique_ptr<runtime::ComputePipeline> pipeline_;
  runtime::Buffer sink_;
  bool in_flight_ = false;
  int open_ = -1;  // the stretch started and not yet done
  uint32_t iterations_ = 0;           // of the work in flight
  double iterations_per_ms_ = 0;      // learned; 0 before the first run
  double last_rate_ = 0;  // of the work last waited for; 0 when it ran too short to read (kRateMinMs)
  double rate_before_runs_ = 0, rate_found_ = 0, best_rate_ = 0;
  bool lowered_ = false;  // warm_up has lowered best_rate_ once
  double last_gap_ms_[2] = {1.0, 1.0};  // per Stretch
  std::chrono::steady_clock::time_point gap_start_;
  Stats stats_;
};

}  // namespace denox::measure
