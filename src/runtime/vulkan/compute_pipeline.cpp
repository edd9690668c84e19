#include "runtime/vulkan/compute_pipeline.hpp"

#include "common/error.hpp"
#include "runtime/vulkan/device_context.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::runtime {

PipelineCache::PipelineCache(const DeviceContext& ctx, const std::vector<uint8_t>& initial_data) : ctx_(ctx) {
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = initial_data.size();
  info.pInitialData = initial_data.empty() ? nullptr : initial_data.data();
  // Drivers validate the header (vendor, device, UUID) and ignore foreign data; if one still
  // refuses it, start empty rather than fail: the cache is an optimization.
  if (ctx.vk().vkCreatePipelineCache(ctx.device(), &info, nullptr, &cache_) != VK_SUCCESS) {
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    vk_check(ctx.vk().vkCreatePipelineCache(ctx.device(), &info, nullptr, &cache_), "vkCreatePipelineCache");
  }
}

PipelineCache::~PipelineCache() {
  if (cache_) ctx_.vk().vkDestroyPipelineCache(ctx_.device(), cache_, nullptr);
}

std::vector<uint8_t> PipelineCache::data() const {
  size_t size = 0;
  vk_check(ctx_.vk().vkGetPipelineCacheData(ctx_.device(), cache_, &size, nullptr), "vkGetPipelineCacheData");
  std::vector<uint8_t> out(size);
  vk_check(ctx_.vk().vkGetPipelineCacheData(ctx_.device(), cache_, &size, out.data()), "vkGetPipelineCacheData");
  out.resize(size);
  return out;
}

void PipelineCache::merge(const std::vector<uint8_t>& data) {
  if (data.empty()) return;
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = data.size();
  info.pInitialData = data.data();
  VkPipelineCache source = VK_NULL_HANDLE;
  const VkResult created = ctx_.vk().vkCreatePipelineCache(ctx_.device(), &info, nullptr, &source);
  if (created != VK_SUCCESS) return;  // refused data: nothing to add (see the constructor)
  const VkResult merged = ctx_.vk().vkMergePipelineCaches(ctx_.device(), cache_, 1, &source);
  ctx_.vk().vkDestroyPipelineCache(ctx_.device(), source, nullptr);
  vk_check(merged, "vkMergePipelineCaches");
}

ComputePipeline::ComputePipeline(const DeviceContext& ctx, const std::vector<uint32_t>& spirv,
                                 const std::vector<VkDescriptorType>& bindings, uint32_t push_constant_bytes,
                                 VkPipelineCache cache, const std::string& what)
    : ctx_(ctx), bindings_(bindings), push_bytes_(push_constant_bytes) {
  const auto& caps = ctx.caps();
  if (spirv.empty()) fail(ErrorCode::Internal, "pipeline " + what + " has no SPIR-V");
  if (bindings.size() > caps.max_push_descriptors)
    fail(ErrorCode::MissingFeature, "pipeline " + what + " binds " + std::to_string(bindings.size()) +
                                        " descriptors; the device allows " + std::to_string(caps.max_push_descriptors) + " push descriptors");
  if (push_constant_bytes > caps.max_push_constants_size)
    fail(ErrorCode::MissingFeature, "pipeline " + what + " needs " + std::to_string(push_constant_bytes) +
                                        " bytes of push constants; the device allows " + std::to_string(caps.max_push_constants_size));
  const auto& vk = ctx.vk();
  VkDevice dev = ctx.device();
  VkShaderModule module = VK_NULL_HANDLE;
  try {
    std::vector<VkDescriptorSetLayoutBinding> layout_bindings;
    for (uint32_t i = 0; i < bindings.size(); ++i)
      layout_bindings.push_back({i, bindings[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set_info.bindingCount = static_cast<uint32_t>(layout_bindings.size());
    set_info.pBindings = layout_bindings.data();
    vk_check(vk.vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &set_layout_), "vkCreateDescriptorSetLayout (" + what + ")");

    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_constant_bytes};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = push_constant_bytes ? 1 : 0;
    layout_info.pPushConstantRanges = push_constant_bytes ? &range : nullptr;
    vk_check(vk.vkCreatePipelineLayout(dev, &layout_info, nullptr, &layout_), "vkCreatePipelineLayout (" + what + ")");

    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = spirv.size() * sizeof(uint32_t);
    module_info.pCode = spirv.data();
    vk_check(vk.vkCreateShaderModule(dev, &module_info, nullptr, &module), "vkCreateShaderModule (" + what + ")");

    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.layout = layout_;
    vk_check(vk.vkCreateComputePipelines(dev, cache, 1, &info, nullptr, &pipeline_), "vkCreateComputePipelines (" + what + ")");
  } catch (...) {
    if (module) vk.vkDestroyShaderModule(dev, module, nullptr);
    release();
    throw;
  }
  vk.vkDestroyShaderModule(dev, module, nullptr);
}

ComputePipeline::~ComputePipeline() { release(); }

void ComputePipeline::release() {
  const auto& vk = ctx_.vk();
  if (pipeline_) vk.vkDestroyPipeline(ctx_.device(), pipeline_, nullptr);
  if (layout_) vk.vkDestroyPipelineLayout(ctx_.device(), layout_, nullptr);
  if (set_layout_) vk.vkDestroyDescriptorSetLayout(ctx_.device(), set_layout_, nullptr);
  pipeline_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
}

}  // namespace denox::runtime
