#include "runtime/vulkan/coop_layout_check.hpp"

#include <cstring>


#include "common/half.hpp"
#include "common/log.hpp"
#include "runtime/vulkan/buffer.hpp"
#include "runtime/vulkan/compute_pipeline.hpp"

namespace denox::runtime {

std::string coop_a_rows_mismatch(const DeviceContext& ctx, const std::vector<uint32_t>& spirv) {
  if (ctx.queue() == VK_NULL_HANDLE) return "the context has no queue to run the check on";
  if (ctx.caps().subgroup_size != 32) return "the subgroup size is " + std::to_string(ctx.caps().subgroup_size) + ", not 32";
  constexpr uint32_t kLanes = 32, kElems = 8;  // a 16x16 fp16 A fragment: 8 halves a lane
  constexpr uint32_t kOutWords = 1 + 2 * kLanes * kElems;
  // The rows matrix (element (r, c) = r), then the columns matrix (= c): exact in fp16.
  std::vector<uint16_t> matrices(2 * 16 * 16);
  for (uint32_t m = 0; m < 2; ++m)
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t c = 0; c < 16; ++c) matrices[(m * 16 + r) * 16 + c] = float_to_half(static_cast<float>(m ? c : r));
  Buffer in(ctx, matrices.size() * 2, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, MemoryKind::Upload, "coop layout check input");
  std::memcpy(in.mapped(), matrices.data(), matrices.size() * 2);
  Buffer out(ctx, kOutWords * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, MemoryKind::Readback, "coop layout check output");
  std::memset(out.mapped(), 0xff, kOutWords * 4);
  const ComputePipeline pipeline(ctx, spirv, {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER}, 0, VK_NULL_HANDLE,
                                 "coop_a_layout");
  const auto& vk = ctx.vk();
  submit_and_wait(ctx, "coop layout check", [&](VkCommandBuffer cmd) {
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline());
    const VkDescriptorBufferInfo infos[2] = {{in.handle(), 0, VK_WHOLE_SIZE}, {out.handle(), 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet writes[2]{};
    for (uint32_t i = 0; i < 2; ++i) {
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vk.vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 2, writes);
    vk.vkCmdDispatch(cmd, 1, 1, 1);
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
  });
  std::vector<uint32_t> w(kOutWords);
  std::memcpy(w.data(), out.mapped(), kOutWords * 4);
  if (w[0] != kElems) return "a lane holds " + std::to_string(w[0]) + " elements of a 16x16 fp16 A matrix, not 8";
  for (uint32_t lane = 0; lane < kLanes; ++lane)
    for (uint32_t e = 0; e < kElems; ++e) {
      const uint32_t word = e / 2, row = lane / 4 + 8 * (word >> 1), col = 2 * (lane % 4 + 4 * (word & 1)) + e % 2;
      const uint32_t got_row = w[1 + 2 * (lane * kElems + e)], got_col = w[2 + 2 * (lane * kElems + e)];
      if (got_row != row || got_col != col)
        return "lane " + std::to_string(lane) + " element " + std::to_string(e) + " is (" + std::to_string(got_row) + ", " +
               std::to_string(got_col) + "), not (" + std::to_string(row) + ", " + std::to_string(col) + ")";
    }
  return "";
}

bool checked_coop_a_rows(const DeviceContext& ctx, const std::function<std::vector<uint32_t>()>& spirv) {
  if (const int state = ctx.coop_a_rows_state(); state >= 0) return state == 1;
  if (ctx.queue() == VK_NULL_HANDLE) return false;  // (not kept: a view with a queue may run it)
  if (ctx.caps().subgroup_size != 32) {  // (A_DIRECT's order is one of 32-lane subgroups: no shader to compile)
    ctx.set_coop_a_rows(false);
    return false;
  }
  bool passed = false;
  try {
    const std::string why = coop_a_rows_mismatch(ctx, spirv());
    passed = why.empty();
    if (!passed) log::info("denox: conv2d_coopmat's A_DIRECT is off on {}: {}", ctx.caps().device_name, why);
  } catch (const std::exception& e) {
    log::warn("denox: the cooperative-matrix element-order check failed on {}: {}; A_DIRECT is off", ctx.caps().device_name, e.what());
  }
  ctx.set_coop_a_rows(passed);
  return passed;
}

}  // namespace denox::runtime
