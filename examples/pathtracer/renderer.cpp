#include "renderer.hpp"

#include <stdexcept>

#include "pathtrace.spv.h"  // generated at build time by glslang (see CMakeLists.txt)
#include "tonemap.spv.h"

namespace pathtracer {

using denox::vkhost::check;

namespace {

constexpr uint32_t kGroup = 8;  // local_size_x/y of both shaders

struct TracePush {
  uint32_t width, height, samples_before, samples, seed;
};
struct TonemapPush {
  uint32_t width, height, mode;
  float exposure;
};

VkDescriptorImageInfo storage_image(VkImageView view) { return {VK_NULL_HANDLE, view, VK_IMAGE_LAYOUT_GENERAL}; }

}  // namespace

void compute_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                     VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

Renderer::Renderer(const Device& dev)
    : dev_(dev), scene_(dev, sizeof(GpuScene), false, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT) {
  // Push descriptors: denox requires VK_KHR_push_descriptor, so the device has it, and the
  // renderer then needs no descriptor pool and no per-frame sets.
  trace_ = make_pipeline(pathtrace_spv, sizeof(pathtrace_spv),
                         {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                          VK_DESCRIPTOR_TYPE_STORAGE_IMAGE},
                         sizeof(TracePush));
  try {
    tonemap_ = make_pipeline(tonemap_spv, sizeof(tonemap_spv),
                             {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER}, sizeof(TonemapPush));
  } catch (...) {
    destroy(trace_);
    throw;
  }
}

Renderer::~Renderer() {
  destroy(trace_);
  destroy(tonemap_);
}

Renderer::Pipeline Renderer::make_pipeline(const uint32_t* spirv, size_t bytes, const std::vector<VkDescriptorType>& bindings,
                                           uint32_t push_bytes) {
  Pipeline p;
  VkShaderModule module = VK_NULL_HANDLE;
  try {
    std::vector<VkDescriptorSetLayoutBinding> b(bindings.size());
    for (uint32_t i = 0; i < b.size(); ++i) b[i] = {i, bindings[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dci.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    dci.bindingCount = static_cast<uint32_t>(b.size());
    dci.pBindings = b.data();
    check(vkCreateDescriptorSetLayout(dev_.device(), &dci, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
    const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.setLayoutCount = 1;
    lci.pSetLayouts = &p.set_layout;
    lci.pushConstantRangeCount = 1;
    lci.pPushConstantRanges = &range;
    check(vkCreatePipelineLayout(dev_.device(), &lci, nullptr, &p.layout), "vkCreatePipelineLayout");
    VkShaderModuleCreateInfo sci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    sci.codeSize = bytes;
    sci.pCode = spirv;
    check(vkCreateShaderModule(dev_.device(), &sci, nullptr, &module), "vkCreateShaderModule");
    VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pci.stage.module = module;
    pci.stage.pName = "main";
    pci.layout = p.layout;
    check(vkCreateComputePipelines(dev_.device(), VK_NULL_HANDLE, 1, &pci, nullptr, &p.pipeline), "vkCreateComputePipelines");
  } catch (...) {
    if (module) vkDestroyShaderModule(dev_.device(), module, nullptr);
    destroy(p);
    throw;
  }
  vkDestroyShaderModule(dev_.device(), module, nullptr);  // the pipeline keeps what it needs
  return p;
}

void Renderer::destroy(Pipeline& p) {
  if (p.pipeline) vkDestroyPipeline(dev_.device(), p.pipeline, nullptr);
  if (p.layout) vkDestroyPipelineLayout(dev_.device(), p.layout, nullptr);
  if (p.set_layout) vkDestroyDescriptorSetLayout(dev_.device(), p.set_layout, nullptr);
  p = Pipeline{};
}

void Renderer::set_scene(const GpuScene& scene) { scene_.write(&scene, sizeof(scene)); }

void Renderer::record_trace(VkCommandBuffer cmd, const Aovs& aovs, uint32_t samples_before, uint32_t samples,
                            uint32_t seed) const {
  const VkDescriptorBufferInfo ubo{scene_.handle(), 0, sizeof(GpuScene)};
  const VkDescriptorImageInfo images[3] = {storage_image(aovs.color.view()), storage_image(aovs.albedo.view()),
                                           storage_image(aovs.normal.view())};
  VkWriteDescriptorSet w[4] = {};
  for (uint32_t i = 0; i < 4; ++i) {
    w[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w[i].dstBinding = i;
    w[i].descriptorCount = 1;
    w[i].descriptorType = i == 0 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    if (i == 0) w[i].pBufferInfo = &ubo;
    else w[i].pImageInfo = &images[i - 1];
  }
  const TracePush push{aovs.width, aovs.height, samples_before, samples, seed};
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, trace_.pipeline);
  vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, trace_.layout, 0, 4, w);
  vkCmdPushConstants(cmd, trace_.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
  vkCmdDispatch(cmd, (aovs.width + kGroup - 1) / kGroup, (aovs.height + kGroup - 1) / kGroup, 1);
}

void Renderer::record_tonemap(VkCommandBuffer cmd, VkImageView src, uint32_t w, uint32_t h, const Buffer& dst, Tonemap mode,
                              float exposure) const {
  if (dst.size() < VkDeviceSize{w} * h * 4) throw std::logic_error("tonemap destination buffer too small");
  const VkDescriptorImageInfo image = storage_image(src);
  const VkDescriptorBufferInfo out{dst.handle(), 0, VkDeviceSize{w} * h * 4};
  VkWriteDescriptorSet wr[2] = {{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}, {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}};
  wr[0].dstBinding = 0;
  wr[0].descriptorCount = 1;
  wr[0].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
  wr[0].pImageInfo = &image;
  wr[1].dstBinding = 1;
  wr[1].descriptorCount = 1;
  wr[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  wr[1].pBufferInfo = &out;
  const TonemapPush push{w, h, static_cast<uint32_t>(mode), exposure};
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, tonemap_.pipeline);
  vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, tonemap_.layout, 0, 2, wr);
  vkCmdPushConstants(cmd, tonemap_.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
  vkCmdDispatch(cmd, (w + kGroup - 1) / kGroup, (h + kGroup - 1) / kGroup, 1);
}

FrameTimer::FrameTimer(const Device& dev, uint32_t count) : dev_(dev), count_(count) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(dev.physical_device(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(dev.physical_device(), &n, families.data());
  valid_bits_ = dev.queue_family() < n ? families[dev.queue_family()].timestampValidBits : 0;
  if (!supported()) return;
  VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qci.queryCount = count;
  check(vkCreateQueryPool(dev.device(), &qci, nullptr, &pool_), "vkCreateQueryPool");
}

FrameTimer::~FrameTimer() {
  if (pool_) vkDestroyQueryPool(dev_.device(), pool_, nullptr);
}

void FrameTimer::reset(VkCommandBuffer cmd) const {
  if (supported()) vkCmdResetQueryPool(cmd, pool_, 0, count_);
}

void FrameTimer::stamp(VkCommandBuffer cmd, uint32_t index) const {
  if (supported()) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, index);
}

std::vector<double> FrameTimer::read_ms() const {
  if (!supported()) return {};
  std::vector<uint64_t> ticks(count_);
  check(vkGetQueryPoolResults(dev_.device(), pool_, 0, count_, ticks.size() * 8, ticks.data(), 8,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  const uint64_t mask = valid_bits_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << valid_bits_) - 1;
  const double period_ms = dev_.properties().limits.timestampPeriod * 1e-6;
  std::vector<double> ms(count_);
  for (uint32_t i = 0; i < count_; ++i) ms[i] = static_cast<double>((ticks[i] - ticks[0]) & mask) * period_ms;
  return ms;
}

}  // namespace pathtracer
