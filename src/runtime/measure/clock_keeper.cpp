#include "runtime/measure/clock_keeper.hpp"


#include <algorithm>
#include <cmath>

#include "common/log.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::measure {

using runtime::vk_check;

namespace {

// 1024 workgroups of 64: every SM of a large GPU gets several (an H100 has 132), and each
// invocation's chain is independent, so the run's length is the chain's, not a queue of waves.
constexpr uint32_t kWorkgroups = 1024;
// The first run knows no rate yet: a short one, whose timestamps give the rate.
constexpr uint32_t kProbeIterations = 16;
// Busy work shorter than this gives no reliable rate (the launch is part of its time).
constexpr double kRateMinMs = 0.5;
// warm_up()'s pieces: short enough to notice soon that the clock is back.
constexpr double kWarmPieceMs = 5.0;

}  // namespace

ClockKeeper::ClockKeeper(const runtime::DeviceContext& device, kernels::ShaderCompiler& compiler, VkPipelineCache pipeline_cache)
    : device_(device), objects_(device, 2, "clock keeper") {
  const std::vector<uint32_t> spirv = compiler.compile("clock_keeper", {}, plan::Precision::F32);
  pipeline_ = std::make_unique<runtime::ComputePipeline>(device_, spirv, std::vector<VkDescriptorType>{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER},
                                                         4, pipeline_cache, "clock_keeper");
  sink_ = runtime::Buffer(device_, 16, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, runtime::MemoryKind::DeviceLocal, "clock keeper sink");
}

ClockKeeper::~ClockKeeper() {
  // Busy work still in flight finishes within max_ms (a lost device returns at once); then the
  // objects' destructor frees what it used.
  if (in_flight_) device_.vk().vkWaitForFences(device_.device(), 1, &objects_.fence, VK_TRUE, UINT64_MAX);
}

void ClockKeeper::start(Stretch stretch) {
  gap_start_ = std::chrono::steady_clock::now();
  open_ = static_cast<int>(stretch);
  // A piece stays in flight until finish() or warm_up() waits for it, even when it is done, so
  // a new edge's setup stretch gets no piece of its own after the piece of the stretch before.
  // Reading a finished piece here and starting another (tried on the H200, 2026-11-29
  // twenty-fifth session) kept the clock up better, but the setup pieces were mostly too short
  // to read the clock (kRateMinMs), and edges timed in brief dips went unnoticed: left as is.
  if (in_flight_) return;
  const double want_ms = std::min(max_ms, gap_share * last_gap_ms_[open_]);
  submit(iterations_per_ms_ > 0 ? want_ms * iterations_per_ms_ : kProbeIterations);
}

void ClockKeeper::submit(double iterations) {
  iterations_ = static_cast<uint32_t>(std::clamp(iterations, 1.0, 1e9));
  const auto& vk = device_.vk();
  vk_check(vk.vkResetCommandBuffer(objects_.cmd, 0), "vkResetCommandBuffer (clock keeper)");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vk.vkBeginCommandBuffer(objects_.cmd, &begin), "vkBeginCommandBuffer (clock keeper)");
  vk.vkCmdResetQueryPool(objects_.cmd, objects_.queries, 0, 2);
  vk.vkCmdWriteTimestamp(objects_.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, objects_.queries, 0);
  vk.vkCmdBindPipeline(objects_.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_->pipeline());
  VkDescriptorBufferInfo sink_info{sink_.handle(), 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstBinding = 0;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &sink_info;
  vk.vkCmdPushDescriptorSetKHR(objects_.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_->layout(), 0, 1, &write);
  vk.vkCmdPushConstants(objects_.cmd, pipeline_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &iterations_);
  vk.vkCmdDispatch(objects_.cmd, kWorkgroups, 1, 1);
  vk.vkCmdWriteTimestamp(objects_.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, objects_.queries, 1);
  vk_check(vk.vkEndCommandBuffer(objects_.cmd), "vkEndCommandBuffer (clock keeper)");
  vk_check(vk.vkResetFences(device_.device(), 1, &objects_.fence), "vkResetFences (clock keeper)");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &objects_.cmd;
  {
    const auto guard = device_.lock_queue();
    vk_check(vk.vkQueueSubmit(device_.queue(), 1, &submit, objects_.fence), "vkQueueSubmit (clock keeper)");
  }
  in_flight_ = true;
}

void ClockKeeper::host_done() {
  if (open_ < 0) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - gap_start_).count();
  last_gap_ms_[open_] = ms;
  stats_.gap_ms += ms;
  open_ = -1;
}

void ClockKeeper::finish() {
  host_done();
  rate_before_runs_ = rate_found_ = 0;
  if (!in_flight_) return;
  wait();
  rate_before_runs_ = rate_found_ = last_rate_;
}

bool ClockKeeper::warm_up() {
  if (in_flight_) wait();
  if (best_rate_ <= 0) return false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(rewarm_max_ms);
  double reached = 0;
  while (std::chrono::steady_clock::now() < until) {
    submit(kWarmPieceMs * iterations_per_ms_);
    wait();
    if (last_rate_ <= 0) continue;
    rate_before_runs_ = last_rate_;  // the clock the next runs start at
    reached = std::max(reached, rate_before_runs_);
    if (rate_before_runs_ >= down_floor()) return true;
  }
  // The clock does not come back to the best seen (a hotter GPU's boost, a power cap, an engine
  // using the GPU): what it reached is the best from now on, so that every later edge does not
  // wait here again, nor is timed twice, for a clock the GPU no longer gives.
  if (reached > 0) {
    // (Once at info level: a tune sharing the GPU with an engine's frames could say it often.)
    log::logger().log(lowered_ ? spdlog::level::debug : spdlog::level::info,
                "denox: the GPU's clock stays at {:.0f}% of the best the tuner saw; measuring against that", 100.0 * reached / best_rate_);
    lowered_ = true;
    best_rate_ = reached;
  }
  return false;
}

void ClockKeeper::wait() {
  const auto& vk = device_.vk();
  VkDevice dev = device_.device();
  in_flight_ = false;
  vk_check(vk.vkWaitForFences(dev, 1, &objects_.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences (clock keeper)");
  uint64_t stamps[2] = {0, 0};
  vk_check(vk.vkGetQueryPoolResults(dev, objects_.queries, 0, 2, sizeof stamps, stamps, sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
           "vkGetQueryPoolResults (clock keeper)");
  const uint32_t bits = device_.caps().timestamp_valid_bits;
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const double ms = static_cast<double>((stamps[1] - stamps[0]) & mask) * device_.caps().timestamp_period_ns * 1e-6;
  ++stats_.submits;
  stats_.busy_ms += ms;
  if (ms > 0) iterations_per_ms_ = iterations_ / ms;
  last_rate_ = ms >= kRateMinMs ? iterations_per_ms_ : 0;
  best_rate_ = std::max(best_rate_, last_rate_);
}

}  // namespace denox::measure
