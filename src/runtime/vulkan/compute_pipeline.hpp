// A compute pipeline with its push-descriptor set layout and pipeline layout. Bindings are
// pushed at record time (VK_KHR_push_descriptor), so a pipeline owns no descriptor sets and the
// caller can rebind inputs and outputs every frame at no cost.
#pragma once

#include <volk.h>

#include <cstdint>
#include <string>
#include <vector>

namespace denox::runtime {

class DeviceContext;

// The driver's pipeline cache, seeded from (and saved back to) denox's on-disk caches.
class PipelineCache {
 public:
  PipelineCache(const DeviceContext& ctx, const std::vector<uint8_t>& initial_data);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  VkPipelineCache handle() const { return cache_; }
  std::vector<uint8_t> data() const;
  // Adds the pipelines of another blob (vkMergePipelineCaches): the context's driver cache is
  // seeded from the writable and the shipped cache. A blob the driver refuses is skipped, as
  // in the constructor; a failing merge throws ErrorCode::Vulkan.
  void merge(const std::vector<uint8_t>& data);

 private:
  const DeviceContext& ctx_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
};

class ComputePipeline {
 public:
  // `what` names the pipeline in errors (shader family and defines).
  ComputePipeline(const DeviceContext& ctx, const std::vector<uint32_t>& spirv, const std::vector<VkDescriptorType>& bindings,
                  uint32_t push_constant_bytes, VkPipelineCache cache, const std::string& what);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  VkPipeline pipeline() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  uint32_t push_constant_bytes() const { return push_bytes_; }
  const std::vector<VkDescriptorType>& bindings() const { return bindings_; }

 private:
  void release();
  const DeviceContext& ctx_;
  std::vector<VkDescriptorType> bindings_;
  uint32_t push_bytes_ = 0;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

}  // namespace denox::runtime
