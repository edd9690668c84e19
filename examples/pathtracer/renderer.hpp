// The renderer's own Vulkan work: the path tracing and tonemapping pipelines, the images they
// write (the AOVs that denox reads), and timestamp queries around the phases of a frame. Device,
// buffers and images come from src/vkhost, the engine-side helper; nothing here is denox's.
#pragma once

#include <cstdint>
#include <vector>

#include "scene.hpp"
#include "vkhost/vk_host.hpp"

namespace pathtracer {

using denox::vkhost::Buffer;
using denox::vkhost::Device;
using denox::vkhost::Image;

// What one path-traced frame produces: running means of radiance, first-hit albedo and normal,
// RGBA32F storage images in VK_IMAGE_LAYOUT_GENERAL (denox reads them as they are).
struct Aovs {
  Aovs(const Device& dev, uint32_t w, uint32_t h)
      : width(w), height(h), color(dev, w, h, kFormat), albedo(dev, w, h, kFormat), normal(dev, w, h, kFormat) {}
  static constexpr VkFormat kFormat = VK_FORMAT_R32G32B32A32_SFLOAT;
  uint32_t width, height;
  Image color, albedo, normal;
};

enum class Tonemap : uint32_t { Hdr = 0, Albedo = 1, Normal = 2 };

class Renderer {
 public:
  explicit Renderer(const Device& dev);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Writes the scene's uniform block; no command buffer that reads it may be pending.
  void set_scene(const GpuScene& scene);
  // Adds `samples` paths per pixel to the running means in `aovs` (samples_before 0 restarts).
  // One dispatch: callers that need many samples split them over several submits.
  void record_trace(VkCommandBuffer cmd, const Aovs& aovs, uint32_t samples_before, uint32_t samples, uint32_t seed) const;
  // Packed RGBA8 of `src` (w x h) into `dst` (w * h * 4 bytes, a storage buffer).
  void record_tonemap(VkCommandBuffer cmd, VkImageView src, uint32_t w, uint32_t h, const Buffer& dst, Tonemap mode,
                      float exposure) const;

 private:
  struct Pipeline {
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };
  Pipeline make_pipeline(const uint32_t* spirv, size_t bytes, const std::vector<VkDescriptorType>& bindings,
                         uint32_t push_bytes);
  void destroy(Pipeline& p);

  const Device& dev_;
  Buffer scene_;
  Pipeline trace_, tonemap_;
};

// A compute -> compute (and host) memory barrier: what the engine records between its own passes.
void compute_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                     VkAccessFlags dst_access);

// Timestamp queries around the phases of a frame (render, denoise, tonemap). GPU times, not host.
class FrameTimer {
 public:
  FrameTimer(const Device& dev, uint32_t count);
  ~FrameTimer();
  FrameTimer(const FrameTimer&) = delete;
  FrameTimer& operator=(const FrameTimer&) = delete;
  // False where the queue family has no timestamps: stamps are then not recorded.
  bool supported() const { return valid_bits_ != 0; }
  void reset(VkCommandBuffer cmd) const;
  // Written once everything recorded before it has completed.
  void stamp(VkCommandBuffer cmd, uint32_t index) const;
  // After the submit completed: milliseconds of each stamp since stamp 0.
  std::vector<double> read_ms() const;

 private:
  const Device& dev_;
  uint32_t count_, valid_bits_ = 0;
  VkQueryPool pool_ = VK_NULL_HANDLE;
};

}  // namespace pathtracer
