// The autotuner's driver (pipeline steps 3-8 in order): enumerate the implementations the
// kernels declare, specialize and build the supergraph, prune, cost every remaining edge
// (measured on the device through a Measurer, or estimated by the cost model), select the
// minimum-latency derivation and lower it to a plan.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/implementations.hpp"

namespace denox::autotune {

// One implementation's measured latency (or why it could not be measured).
struct Measured {
  bool ok = false;
  double ms = 0;
  bool from_store = false;  // found in the measurement store, not timed now
  std::string failure;      // when !ok: what failed (shader compile, pipeline, timeout, ...)
  // An earlier implementation of the same measure() call is the same edge (same measurement
  // key: same shapes, same configuration): this is its result, not a timing of its own.
  bool same_edge_as_another = false;
  // Timed a second time, the first timing having run while the GPU's clock was down (ms: the
  // faster of the two).
  bool timed_again = false;
};

// Progress: stage ("enumerate", "measure", "select", "lower"), done of total, what is being done.
using Progress = std::function<void(const char* stage, size_t done, size_t total, const std::string& what)>;

// Times implementations on a device (src/runtime/measure). measure() gets every implementation
// that needs a cost, so a measurer can compile their shaders in parallel before timing.
class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual std::vector<Measured> measure(const compiler::Graph& graph, const std::vector<const kernels::Implementation*>& impls,
                                        plan::Precision precision, uint32_t width, uint32_t height, const Progress& progress) = 0;
};

// The extent heuristic plans rank at (they are one per model and run at every extent): the
// cost model's and the coop picks' sense of each layer's size (kernels::kSmallConvPixels).
inline constexpr uint32_t kHeuristicWidth = 1920, kHeuristicHeight = 1088;

// The most operators (after import) a network may have on the GPU path. Structural pruning runs
// one schedule search per fusion structure, so its time grows with the square of the network:
// a 2000-operator chain took 4 s on a 2-core machine, 20000 did not finish in 5 minutes. Denoiser
// U-Nets have 50-200.
inline constexpr size_t kMaxScheduledOperators = 1024;

struct ScheduleOptions {
  plan::Precision precision = plan::Precision::F32;
  kernels::LoweringTarget target;
  kernels::ConfigSpace space = kernels::ConfigSpace::Heuristic;
  uint32_t width = kHeuristicWidth, height = kHeuristicHeight;  // the tuning extent (its resolution class)
  bool structural_prune = true;
  Measurer* measurer = nullptr;  // null: the heuristic cost model, nothing is run
  Progress progress;
};

// One row of the chosen schedule (the paper's Fig. 8): what it reads, what it computes and how.
struct ScheduledStep {
  std::string name;     // covered ops
  std::string pattern;  // "upsample+concat+conv+act"
  std::string family;
  std::string config;
  std::vector<std::string> inputs;  // "tensor [NCHW]"
  std::string output;
  uint32_t dispatches = 0;
  double ms = 0;
  bool measured = false;
};

// A step share_pipelines moved to a configuration another dispatch runs.
struct PipelineSwapReport {
  std::string step;      // the ops it covers ("/enc_conv3/Conv+/enc_conv3/Relu+...")
  std::string from, to;  // "family config"
  double measured_extra_ms = 0;  // what the new configuration measured more, alone
  size_t pipelines_before = 0, pipelines_after = 0;
};

struct ScheduleReport {
  std::string space;
  uint32_t width = 0, height = 0;
  size_t implementations = 0, structures = 0;     // enumerated
  size_t edges = 0, structures_kept = 0;          // after pruning
  size_t measured_edges = 0, cached_edges = 0, failed_edges = 0;
  size_t same_edges = 0;  // of the measured or cached edges: another edge's result (Measured::same_edge_as_another)
  size_t timed_again_edges = 0;  // of the measured edges: timed twice (Measured::timed_again)
  size_t dispatches = 0;
  double predicted_ms = 0;
  double enumerate_ms = 0, prune_ms = 0, measure_ms = 0, select_ms = 0, lower_ms = 0;
  size_t select_states = 0;
  // Measured plans: distinct pipelines after share_pipelines (0: not counted), and its swaps.
  size_t pipelines = 0;
  std::vector<PipelineSwapReport> pipeline_swaps;
  std::vector<ScheduledStep> steps;
};

struct Schedule {
  std::vector<kernels::Implementation> impls;
  std::vector<size_t> chosen;  // indices into impls, in an order that runs
  ScheduleReport report;
};

// Throws denox::Error: Unsupported when the outputs cannot be derived (naming what has no
// implementation), and whatever the measurer throws (device lost).
Schedule schedule_graph(const compiler::Graph& graph, const ScheduleOptions& options);

// The plan of a schedule (kernels::lower_implementations over the chosen implementations).
plan::Plan lower_schedule(const compiler::Graph& graph, const Schedule& schedule, plan::Precision precision);

}  // namespace denox::autotune
