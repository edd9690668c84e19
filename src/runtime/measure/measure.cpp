#include "runtime/measure/measure.hpp"


#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/run_on_threads.hpp"
#include "compiler/cost_model/cost_model.hpp"
#include "compiler/supergraph/edge_graph.hpp"
#include "runtime/measure/clock_keeper.hpp"
#include "runtime/measure/crash_journal.hpp"
#include "runtime/measure/timing_objects.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/compute_pipeline.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::measure {

using runtime::vk_check;

namespace {

// A submit that never finished: the device is unusable, so measuring stops (unlike a config
// that merely failed, which is recorded and skipped).
class DeviceHung : public Error {
 public:
  explicit DeviceHung(const std::string& what) : Error(ErrorCode::Vulkan, what, VK_TIMEOUT) {}
};

// One edge to measure.
struct Pending {
  size_t index;                 // into the caller's impls
  std::string key;              // measurement store key
  std::string what;             // "<name> [<family> <config>]", for logs
  std::optional<plan::Plan> plan;
  std::string failure;
  bool retry = false;           // a process died with it in flight: one step at a time (crash_journal.hpp)
};

}  // namespace

std::string encode_measurement(const autotune::Measured& m) {
  if (!m.ok) return "failed " + m.failure;
  char buf[64];
  std::snprintf(buf, sizeof buf, "ok %.6f", m.ms);
  return buf;
}

bool decode_measurement(const std::string& text, autotune::Measured& out) {
  out = {};
  out.from_store = true;
  if (text.rfind("failed ", 0) == 0) {
    out.failure = text.substr(7);
    return true;
  }
  double ms = 0;
  if (text.rfind("ok ", 0) == 0 && std::sscanf(text.c_str() + 3, "%lf", &ms) == 1 && ms >= 0 && ms < 1e7) {
    out.ok = true;
    out.ms = ms;
    return true;
  }
  return false;
}

std::vector<size_t> clock_dip_edges(const std::vector<TimedEdgeClock>& timed, double end_found, double end_floor) {
  const auto low = &ClockKeeper::down;
  std::vector<size_t> out;
  for (size_t t = 0; t < timed.size(); ++t) {
    const bool ended_low = t + 1 < timed.size() ? low(timed[t + 1].found, timed[t + 1].floor) : low(end_found, end_floor);
    if (low(timed[t].before_runs, timed[t].floor) || ended_low) out.push_back(timed[t].pending);
  }
  return out;
}

namespace {

// A time as the store will give it back (1 ns steps), so that a schedule made now and one made
// later from the store weigh the same numbers.
double as_stored(double ms) {
  autotune::Measured m, stored;
  m.ok = true;
  m.ms = ms;
  return decode_measurement(encode_measurement(m), stored) ? stored.ms : ms;
}

// One pipeline created into the driver's pipeline cache and dropped: measuring's own creation
// of it then hits the cache. A failure is reported when the timing creates it again, except a
// lost device, thrown (on a worker thread: carried to the measuring thread by run_on_threads).
void warm_pipeline(const runtime::DeviceContext& device, VkPipelineCache cache, const plan::Pipeline& p, const std::string& doing) {
  try {
    runtime::ComputePipeline warm(device, p.spirv, std::vector<VkDescriptorType>(p.binding_count, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER),
                                  p.push_constant_count * 4, cache, p.family);
  } catch (const Error& e) {
    if (runtime::device_lost(e)) fail(e, doing + ": " + e.what());
  }
}

}  // namespace

DeviceMeasurer::DeviceMeasurer(const runtime::DeviceContext& device, kernels::ShaderCompiler& compiler, VkPipelineCache pipeline_cache,
                               runtime::AdapterCompiler adapters, cache::LayeredCache* store, std::string key_prefix, MeasureOptions options)
    : device_(device),
      compiler_(compiler),
      pipeline_cache_(pipeline_cache),
      adapters_(std::move(adapters)),
      store_(store),
      key_prefix_(std::move(key_prefix)),
      options_(options) {
  if (!device_.caps().timestamps)
    fail(ErrorCode::MissingFeature, "measuring needs timestamp queries on the compute queue, which device '" +
                                        device_.caps().device_name + "' does not offer; use the heuristic schedule");
  if (!device_.queue()) fail(ErrorCode::InvalidArgument, "measuring needs a VkQueue: pass one in the Vulkan handles");
}

// One measure() call's state, shared by its steps.
struct DeviceMeasurer::Run {
  Run(const compiler::Graph& graph, const std::vector<const kernels::Implementation*>& impls, plan::Precision precision, uint32_t width,
      uint32_t height, std::vector<int64_t> values, const autotune::Progress& progress, cache::LayeredCache* cache)
      : graph(graph),
        impls(impls),
        precision(precision),
        width(width),
        height(height),
        values(std::move(values)),
        progress(progress),
        results(impls.size()),
        journal(cache) {}

  const compiler::Graph& graph;
  const std::vector<const kernels::Implementation*>& impls;
  const plan::Precision precision;
  const uint32_t width, height;
  const std::vector<int64_t> values;  // the graph's shape-program values at width x height
  const autotune::Progress& progress;
  std::vector<autotune::Measured> results;  // per impl
  // The crash journal (crash_journal.hpp): a marker in the store before every risky step of an
  // edge, replaced by its result as soon as it is known. Markers still standing when measure()
  // leaves early (cancelled, an exception) are cleared by the journal's destructor.
  CrashJournal journal;
  const CrashHook hook = CrashHook::from_environment();
  std::vector<Pending> pending;                      // the edges to time, in timing order
  std::vector<std::pair<size_t, size_t>> same_edge;  // (impl, the earlier impl with its key)
  std::optional<ClockKeeper> keeper;
  std::vector<TimedEdgeClock> timed;  // in timing order (clock_dip_edges)

  void report(const char* stage, size_t done, size_t total, const std::string& what) const {
    if (progress) progress(stage, done, total, what);
  }
  void store(const Pending& p, const autotune::Measured& r) {
    if (!journal.finish(p.key, encode_measurement(r))) log::debug("denox: could not store the measurement of {}", p.what);
  }
  autotune::EdgeGraph edge(size_t impl) const { return autotune::extract_edge_graph(graph, *impls[impl], values, precision); }
  // An edge's shaders compiled (SPIR-V into p.plan), the step marked in the journal; a failure
  // is kept in p.failure and drops the plan.
  void compile_edge(Pending& p, CrashJournal::Step step, kernels::ShaderCompiler& compiler) {
    journal.begin(p.key, "compile", step);
    hook.at("compile", step == CrashJournal::Step::Parallel, p.what);
    try {
      kernels::compile_pipelines(*p.plan, compiler, 1);
    } catch (const Error& e) {
      p.failure = std::string("shader compilation: ") + e.what();
      p.plan.reset();
    }
  }
};

std::vector<autotune::Measured> DeviceMeasurer::measure(const compiler::Graph& graph, const std::vector<const kernels::Implementation*>& impls,
                                                        plan::Precision precision, uint32_t width, uint32_t height,
                                                        const autotune::Progress& progress) {
  auto values = autotune::values_at_extent(graph, width, height);
  if (!values) {
    std::vector<autotune::Measured> results(impls.size());
    for (auto& r : results) r.failure = "the model's inputs cannot be bound at " + std::to_string(width) + "x" + std::to_string(height);
    return results;
  }
  Run run(graph, impls, precision, width, height, std::move(*values), progress, store_);
  look_up_stored(run);
  compile_pending(run);
  time_pending(run);
  time_again_at_clock(run);

  for (const auto& [i, earlier] : run.same_edge) {
    run.results[i] = run.results[earlier];
    run.results[i].same_edge_as_another = true;
  }
  if (run.keeper) {
    run.keeper->finish();
    const ClockKeeper::Stats& k = run.keeper->stats();
    log::debug("denox: clock keeper: {} submits, {:.1f} ms of busy work for {:.1f} ms of host work between timed edges", k.submits, k.busy_ms, k.gap_ms);
  }
  log::debug("denox: measure: {} edges timed; host ms: edge models {:.1f}, scratch {:.1f}, inputs {:.1f}, waiting for the clock "
                "keeper {:.1f}, runs {:.1f}, between edges {:.1f}",
                host_.edges, host_.model_ms, host_.extent_ms, host_.inputs_ms, host_.keeper_wait_ms, host_.runs_ms, host_.between_ms);
  pool_ = {};  // the caller-side buffers are not kept past measure()
  return std::move(run.results);
}

// 1. The store: everything measured before on this device is not measured again; what a dead
//    process's markers say is concluded here. What is left is lowered into run.pending.
//    Two implementations with one key (two layers of the same shapes and configuration, as
//    OIDN's enc_conv5a and enc_conv5b can be) are one edge: timed once, both get that result.
//    Timed apart, each would get its own noise, and the store would keep only the last, so a
//    later schedule from the store could pick another plan than this one does.
void DeviceMeasurer::look_up_stored(Run& run) {
  std::map<std::string, size_t> first_with_key;  // key -> index into impls
  for (size_t i = 0; i < run.impls.size(); ++i) {
    autotune::EdgeGraph edge = run.edge(i);
    Pending p{i, key_prefix_ + "|" + std::to_string(run.width) + "x" + std::to_string(run.height) + "|" + edge.signature,
              run.impls[i]->name() + " [" + run.impls[i]->family + " " + run.impls[i]->config + "]", std::nullopt, "", false};
    if (const auto [it, fresh] = first_with_key.emplace(p.key, i); !fresh) {
      run.same_edge.emplace_back(i, it->second);
      continue;
    }
    if (store_) {
      if (auto text = store_->load_measurement(p.key)) {
        if (decode_measurement(*text, run.results[i])) continue;
        run.results[i] = {};
        const Judgement judged = judge_row(*text, p.what, run.journal.database(), run.journal.liveness_slot());
        if (judged.verdict == Judgement::Verdict::Crashed) {
          run.results[i].failure = judged.failure;
          run.store(p, run.results[i]);
          continue;
        }
        p.retry = judged.verdict == Judgement::Verdict::MeasureSerially;
      }
    }
    try {
      p.plan = kernels::lower_implementations(edge.graph, run.precision, {&edge.impl});
    } catch (const Error& e) {
      p.failure = std::string("lowering: ") + e.what();
    }
    run.pending.push_back(std::move(p));
  }
}

// 2. Shaders, in parallel (each edge has one or two pipelines; many edges share SPIR-V). Edges
//    left in a parallel phase by a dead process are compiled alone, in step 3.
//    The driver's compile of each distinct pipeline (often 100 ms or more for a large coop
//    shader) also runs in parallel: creating the pipelines once fills the VkPipelineCache, and
//    the timing loop's own creation then hits it. (vkCreateComputePipelines may be called from
//    several threads on one cache.) A pipeline is marked in flight for every edge using it.
void DeviceMeasurer::compile_pending(Run& run) {
  std::vector<Pending>& pending = run.pending;
  if (pending.empty()) return;
  const unsigned threads = std::max(1u, std::min<unsigned>(options_.compile_threads ? options_.compile_threads : std::thread::hardware_concurrency(),
                                                           static_cast<unsigned>(pending.size())));
  std::atomic<bool> stop{false};  // a worker threw (run_on_threads)

  run.report("compile", 0, pending.size(), "");
  std::atomic<size_t> next{0};
  run_on_threads(threads, stop, [&] {
    for (size_t j = next++; j < pending.size() && !stop && !cancelled(); j = next++) {
      Pending& p = pending[j];
      if (p.plan && !p.retry) {
        run.compile_edge(p, CrashJournal::Step::Parallel, compiler_);
        run.journal.end(p.key);
      }
    }
  });
  throw_if_cancelled();  // the workers stopped early: some plans lack SPIR-V

  std::map<std::string, size_t> distinct;  // SPIR-V -> index into to_create
  std::vector<const plan::Pipeline*> to_create;
  std::vector<std::vector<size_t>> users;  // per pipeline to create: the pending edges using it
  for (size_t j = 0; j < pending.size(); ++j)
    if (pending[j].plan && !pending[j].retry)
      for (const plan::Pipeline& pipe : pending[j].plan->pipelines) {
        std::string key(reinterpret_cast<const char*>(pipe.spirv.data()), pipe.spirv.size() * 4);
        const auto [it, fresh] = distinct.emplace(std::move(key), to_create.size());
        if (fresh) to_create.push_back(&pipe), users.emplace_back();
        if (users[it->second].empty() || users[it->second].back() != j) users[it->second].push_back(j);
      }
  std::atomic<size_t> next_pipeline{0};
  run_on_threads(threads, stop, [&] {
    for (size_t j = next_pipeline++; j < to_create.size() && !stop && !cancelled(); j = next_pipeline++) {
      for (size_t u : users[j]) run.journal.begin(pending[u].key, "pipeline", CrashJournal::Step::Parallel);
      for (size_t u : users[j]) run.hook.at("pipeline", true, pending[u].what);
      // (A throw leaves the markers to the journal's destructor.)
      warm_pipeline(device_, pipeline_cache_, *to_create[j], "creating the pipelines to measure");
      for (size_t u : users[j]) run.journal.end(pending[u].key);
    }
  });
  throw_if_cancelled();
  run.report("compile", pending.size(), pending.size(), "");
}

// 3. Timing, one edge at a time; every result goes to the store at once. An edge to retry has
//    its shaders compiled and its pipelines created here, alone, each step marked. The first
//    edge timed runs for clock_warmup_ms first (MeasureOptions says why).
void DeviceMeasurer::time_pending(Run& run) {
  using Step = CrashJournal::Step;
  const bool gpu = on_gpu();
  const bool warms = gpu && options_.clock_warmup_ms > 0;
  bool clock_warm = !warms;
  if (options_.keep_clock && (gpu || std::getenv("DENOX_TEST_CLOCK_KEEPER") != nullptr) && !run.pending.empty()) {
    try {
      run.keeper.emplace(device_, compiler_, pipeline_cache_);
    } catch (const Error& e) {
      if (runtime::device_lost(e)) throw;
      log::warn("denox: measuring without the clock keeper ({}): edges may be timed at a lowered GPU clock", e.what());
    }
  }
  ClockKeeper* keeper = run.keeper ? &*run.keeper : nullptr;
  for (size_t j = 0; j < run.pending.size(); ++j) {
    Pending& p = run.pending[j];
    autotune::Measured& r = run.results[p.index];
    throw_if_cancelled();
    run.report("measure", j, run.pending.size(), p.what);
    if (p.plan && p.retry) {
      run.compile_edge(p, Step::Retry, compiler_);
      // Seconds of compiling with the GPU idle: warm its clock up again.
      clock_warm = !warms;
      if (p.plan) {
        throw_if_cancelled();
        run.journal.begin(p.key, "pipeline", Step::Retry);
        run.hook.at("pipeline", false, p.what);
        for (const plan::Pipeline& pipe : p.plan->pipelines) warm_pipeline(device_, pipeline_cache_, pipe, "creating the pipelines of " + p.what);
      }
    }
    if (p.plan) {
      run.journal.begin(p.key, "time", p.retry ? Step::Retry : Step::Serial);
      run.hook.at("time", false, p.what);
      try {
        r.ms = as_stored(time_plan(std::move(*p.plan), p.what, clock_warm ? 0 : options_.clock_warmup_ms, keeper));
        clock_warm = true;
        r.ok = true;
        if (keeper) run.timed.push_back({j, keeper->rate_before_runs(), keeper->rate_found(), keeper->down_floor()});
      } catch (const DeviceHung& e) {
        r.failure = e.what();  // this configuration hung the device: not tried again
        run.store(p, r);
        throw;
      } catch (const Cancelled&) {
        throw;  // not a failure of this configuration: nothing is stored (the journal clears its marker)
      } catch (const Error& e) {
        // A lost device is not this configuration's failure either: nothing is stored, and
        // nothing more runs on the device.
        if (runtime::device_lost(e)) fail(e, "measuring " + p.what + ": " + e.what());
        r.failure = e.what();
      }
    } else {
      r.failure = p.failure;
    }
    if (!r.ok) log::info("denox: measuring {} failed: {}", p.what, r.failure);
    run.store(p, r);
  }
  if (!run.pending.empty()) run.report("measure", run.pending.size(), run.pending.size(), "");
}

// 4. Edges timed while the GPU's clock was down, timed again with it up. The keeper keeps the
//    clock up over the host's stretches, but a run of small edges (a few microseconds each,
//    ~140 a second) still leaves the GPU idle most of the time: on an H200 the SM clock fell
//    from 1980 to 1335-1470 MHz for ~3 s of each tuning, and the edges timed then read up to
//    1.3x slow (bench/measure_noise.sh, bench/RESULTS.md 2026-11-29 twenty-fifth session).
//    The keeper's busy work runs on the SMs alone, so its rate follows the clock. Where the
//    rate right before an edge's runs is below ClockKeeper::down_share of the best, time_plan
//    first brings the clock back up (warm_up). An edge whose runs still began, or ended, with
//    the clock below that (clock_dip_edges) is timed again here, where time_plan's check
//    applies again; the faster of the two timings stays, since a lower clock only slows an
//    edge down. GPUs only: a CPU device's busy work says nothing about a clock;
//    DENOX_TEST_CLOCK_DIP=1 (tests) counts every edge as timed low, on any device.
//    No crash marker: the store keeps the first timing until a second one replaces it, so a
//    cancel or a dead process leaves the edge measured, at its first (maybe slow) time, which
//    later tunes then take from the store as they find it; so does a second timing that fails.
//    Each edge's reading is judged against the floor of its time: a warm-up that lowered the
//    best (the GPU stopped giving its old clock) does not excuse edges timed before.
void DeviceMeasurer::time_again_at_clock(Run& run) {
  if (!run.keeper) return;
  ClockKeeper& keeper = *run.keeper;
  const bool gpu = on_gpu();
  const bool all = std::getenv("DENOX_TEST_CLOCK_DIP") != nullptr;
  keeper.finish();  // the last edge's end: the busy work after its runs
  if (keeper.best_rate() <= 0 && gpu)
    log::debug("denox: the clock keeper's busy work never ran long enough to read the clock: no edge is checked for it");
  if (!gpu && !all) return;
  std::vector<size_t> again;
  if (all)
    for (const TimedEdgeClock& t : run.timed) again.push_back(t.pending);
  else
    again = clock_dip_edges(run.timed, keeper.rate_found(), keeper.down_floor());
  for (size_t n = 0; n < again.size(); ++n) {
    throw_if_cancelled();
    Pending& p = run.pending[again[n]];
    autotune::Measured& r = run.results[p.index];
    run.report("measure", run.pending.size(), run.pending.size(), "again: " + p.what);
    try {
      autotune::EdgeGraph edge = run.edge(p.index);
      plan::Plan plan = kernels::lower_implementations(edge.graph, run.precision, {&edge.impl});
      kernels::compile_pipelines(plan, compiler_, 1);
      // The clock after this host work, read and brought back up if it fell (time_plan's own
      // check reads busy work from before it).
      if (gpu) keeper.warm_up();
      const double first = r.ms, second = as_stored(time_plan(std::move(plan), p.what, 0, &keeper));
      r.ms = std::min(first, second);
      r.timed_again = true;
      log::debug("denox: {} timed again: {:.6f} ms, first {:.6f} ms; keeps {:.6f} ms", p.what, second, first, r.ms);
      run.store(p, r);
    } catch (const DeviceHung& e) {
      // As in step 3: a configuration that hung the device is not tried again, even one that
      // ran before.
      r = {};
      r.failure = e.what();
      run.store(p, r);
      throw;
    } catch (const Cancelled&) {
      throw;  // (the store keeps the first timing)
    } catch (const Error& e) {
      if (runtime::device_lost(e)) fail(e, "timing " + p.what + " again: " + e.what());
      log::info("denox: timing {} again failed ({}); its first time stays", p.what, e.what());
    }
  }
  if (!again.empty()) log::info("denox: {} of {} edges were timed while the GPU's clock was down; timed again", again.size(), run.timed.size());
}

double DeviceMeasurer::time_network(plan::Plan plan, uint32_t width, uint32_t height, const std::string& what, uint32_t warm_ms) {
  const double ms = time_plan(std::move(plan), what, on_gpu() ? warm_ms : 0, nullptr, width, height);
  pool_ = {};  // as after measure(): the caller-side buffers are not kept
  return ms;
}

double DeviceMeasurer::time_plan(plan::Plan plan, const std::string& what, uint32_t warm_ms, ClockKeeper* keeper, uint32_t width,
                                 uint32_t height) {
  const auto& vk = device_.vk();
  VkDevice dev = device_.device();
  const size_t dispatches = plan.dispatches.size();
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  if (keeper) keeper->host_done();  // the model's weights upload comes next (after its pipelines: host work not covered)
  const auto t_model = Clock::now();
  if (host_.edges > 0) host_.between_ms += std::chrono::duration<double, std::milli>(t_model - host_.last_end).count();
  runtime::ExecutableModel model(device_, std::move(plan), pipeline_cache_, adapters_, false);
  host_.model_ms += ms_since(t_model);
  const auto t_extent = Clock::now();
  if (keeper) keeper->start(ClockKeeper::Stretch::Setup);
  model.set_extent(width, height);  // (1 x 1 for an edge graph: its extents are constants)
  host_.extent_ms += ms_since(t_extent);
  const auto t_inputs = Clock::now();

  // Caller-side buffers in device memory, kept across edges (pool_: allocating hundreds of MB
  // per edge was a large part of the host's time between timings) and grown when an edge needs
  // more: inputs filled on the GPU with a constant (0.37f; latency does not depend on the
  // values, and filling hundreds of MB from the host per edge would cost more than timing it;
  // refilled for every edge, in one submit), outputs the adapters write.
  std::vector<VkBuffer> to_fill;
  auto make = [&](size_t index, bool input) {
    const auto shape = input ? model.input_shape(index) : model.output_shape(index);
    const VkDeviceSize count = static_cast<VkDeviceSize>(shape[0] * shape[1] * shape[2] * shape[3]);
    const VkDeviceSize bytes = std::max<VkDeviceSize>(count * 4, 4);
    auto& slots = input ? pool_.inputs : pool_.outputs;
    if (slots.size() <= index) slots.resize(index + 1);
    if (slots[index].size() < bytes) {
      slots[index] = runtime::Buffer();  // the old one goes first: peak memory stays one buffer per slot
      slots[index] = runtime::Buffer(device_, bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     runtime::MemoryKind::DeviceLocal, std::string("measurement ") + (input ? "input" : "output"));
    }
    const VkBuffer handle = slots[index].handle();
    if (input) to_fill.push_back(handle);
    runtime::IoSource s;
    s.first_channel = 0;
    s.channel_count = static_cast<uint32_t>(shape[1]);
    s.buffer = handle;
    s.layout = runtime::TensorLayout::CHW;
    s.type = runtime::ElementType::F32;
    s.pixel_channels = static_cast<uint32_t>(shape[1]);
    if (input) model.bind_input(index, {s});
    else model.bind_output(index, {s});
  };
  for (size_t i = 0; i < model.input_count(); ++i) make(i, true);
  for (size_t i = 0; i < model.output_count(); ++i) make(i, false);
  if (keeper) keeper->host_done();
  runtime::submit_and_wait(device_, "measurement inputs", [&](VkCommandBuffer c) {
    for (VkBuffer b : to_fill) vk.vkCmdFillBuffer(c, b, 0, VK_WHOLE_SIZE, 0x3ebd70a4u);
  });
  host_.inputs_ms += ms_since(t_inputs);

  // Commands: the input adapters (none where a buffer is bound in the tensor's place: fp32 plans),
  // the edge's dispatches, the output adapters.
  const size_t first = model.input_adapter_count(), commands = model.command_count();
  if (first + dispatches > commands) fail(ErrorCode::Internal, "measure: unexpected command layout for " + what);

  TimingObjects o{device_, static_cast<uint32_t>(commands + 1), "measure"};
  VkCommandBuffer cmd = o.cmd;

  std::vector<double> samples;
  std::vector<uint64_t> stamps(commands + 1);
  const double period_ms = device_.caps().timestamp_period_ns * 1e-6;
  const auto t_keeper = Clock::now();
  if (keeper) keeper->finish();  // its busy work never overlaps these runs
  // A clock found down (GPUs: measure(), step 4, says why) is brought back up before the runs;
  // an edge timed low all the same is timed again there.
  if (keeper && on_gpu() && keeper->found_down()) keeper->warm_up();
  host_.keeper_wait_ms += ms_since(t_keeper);
  const auto t_runs = Clock::now();
  const auto warm_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(warm_ms);
  for (int run = 0; run < options_.warmup + options_.runs; ++run) {
    throw_if_cancelled();  // the last submit has finished: nothing is in flight
    // Untimed runs until warm_until: the last warm-up run repeats while the clock comes up.
    // (With warmup 0 the run repeated is -1: untimed all the same.)
    if (run == std::max(options_.warmup, 1) - 1 && std::chrono::steady_clock::now() < warm_until) --run;
    vk_check(vk.vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer (measure)");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk_check(vk.vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer (measure)");
    model.record(cmd, o.queries, true);
    vk_check(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer (measure)");
    vk_check(vk.vkResetFences(dev, 1, &o.fence), "vkResetFences (measure)");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    {
      const auto guard = device_.lock_queue();
      vk_check(vk.vkQueueSubmit(device_.queue(), 1, &submit, o.fence), "vkQueueSubmit (measure)");
    }
    const VkResult waited = vk.vkWaitForFences(dev, 1, &o.fence, VK_TRUE, uint64_t{options_.timeout_ms} * 1000000);
    if (waited == VK_TIMEOUT) {
      // Too slow to be a candidate; wait for it to drain before its resources go away.
      const VkResult drained = vk.vkWaitForFences(dev, 1, &o.fence, VK_TRUE, uint64_t{120} * 1000000000);
      if (drained < 0) vk_check(drained, "vkWaitForFences (measure, draining a run over the time limit)");  // lost, say
      if (drained != VK_SUCCESS)
        throw DeviceHung("device hung while measuring " + what + " (a submit did not finish in 120 s)");
      throw Error(ErrorCode::Vulkan, "timed out: one run took over " + std::to_string(options_.timeout_ms) + " ms", VK_TIMEOUT);
    }
    vk_check(waited, "vkWaitForFences (measure)");
    if (run < options_.warmup) continue;
    vk_check(vk.vkGetQueryPoolResults(dev, o.queries, 0, static_cast<uint32_t>(commands + 1), stamps.size() * sizeof(uint64_t),
                                      stamps.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults (measure)");
    // Query q is written after command q - 1 (query 0 before the first command).
    const uint64_t ticks = stamps[first + dispatches] - stamps[first];
    samples.push_back(static_cast<double>(ticks) * period_ms);
  }
  host_.runs_ms += ms_since(t_runs);
  host_.last_end = Clock::now();
  // Freeing this edge's model and buffers, storing its result and making the next edge's
  // pipelines: host work.
  if (keeper) keeper->start(ClockKeeper::Stretch::AfterRuns);
  ++host_.edges;
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

}  // namespace denox::measure
