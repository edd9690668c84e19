#include "test_image.hpp"

#include <cstring>

#include "common/half.hpp"
#include "gpu_test_support.hpp"
#include "runtime/vulkan/vk_check.hpp"

namespace denox::testing {

using runtime::vk_check;

namespace {

// Everything before it, visible to everything after it (tests only).
void full_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  device().vk().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &barrier, 0,
                                     nullptr, 0, nullptr);
}

VkBufferImageCopy whole_image(uint32_t width, uint32_t height) {
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {width, height, 1};
  return region;
}

}  // namespace

TestImage::TestImage(uint32_t width, uint32_t height, VkFormat format) : width_(width), height_(height), format_(format) {
  auto& ctx = device();
  const auto& vk = ctx.vk();
  VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  info.imageType = VK_IMAGE_TYPE_2D;
  info.format = format;
  info.extent = {width, height, 1};
  info.mipLevels = 1;
  info.arrayLayers = 1;
  info.samples = VK_SAMPLE_COUNT_1_BIT;
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  info.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  vk_check(vk.vkCreateImage(ctx.device(), &info, nullptr, &image_), "vkCreateImage (test)");
  VkMemoryRequirements req;
  vk.vkGetImageMemoryRequirements(ctx.device(), image_, &req);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  vk_check(vk.vkAllocateMemory(ctx.device(), &alloc, nullptr, &memory_), "vkAllocateMemory (test image)");
  vk_check(vk.vkBindImageMemory(ctx.device(), image_, memory_, 0), "vkBindImageMemory (test)");
  VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  view.image = image_;
  view.viewType = VK_IMAGE_VIEW_TYPE_2D;
  view.format = format;
  view.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vk_check(vk.vkCreateImageView(ctx.device(), &view, nullptr, &view_), "vkCreateImageView (test)");
  runtime::submit_and_wait(ctx, "image layout", [&](VkCommandBuffer cmd) {
    VkImageMemoryBarrier barrier{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    barrier.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
    barrier.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    barrier.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.image = image_;
    barrier.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, nullptr, 0, nullptr, 1,
                            &barrier);
  });
}

TestImage::~TestImage() {
  const auto& vk = device().vk();
  vk.vkDestroyImageView(device().device(), view_, nullptr);
  vk.vkDestroyImage(device().device(), image_, nullptr);
  vk.vkFreeMemory(device().device(), memory_, nullptr);
}

void TestImage::upload(const std::vector<float>& rgba) {
  const bool half = format_ == VK_FORMAT_R16G16B16A16_SFLOAT;
  runtime::Buffer staging(device(), rgba.size() * (half ? 2 : 4), VK_BUFFER_USAGE_TRANSFER_SRC_BIT, runtime::MemoryKind::Upload,
                          "test image upload");
  if (half) {
    auto* out = static_cast<uint16_t*>(staging.mapped());
    for (size_t i = 0; i < rgba.size(); ++i) out[i] = float_to_half(rgba[i]);
  } else {
    std::memcpy(staging.mapped(), rgba.data(), rgba.size() * 4);
  }
  runtime::submit_and_wait(device(), "image upload", [&](VkCommandBuffer cmd) {
    full_barrier(cmd);
    const VkBufferImageCopy region = whole_image(width_, height_);
    device().vk().vkCmdCopyBufferToImage(cmd, staging.handle(), image_, VK_IMAGE_LAYOUT_GENERAL, 1, &region);
    full_barrier(cmd);
  });
}

std::vector<float> TestImage::download() const {
  const bool half = format_ == VK_FORMAT_R16G16B16A16_SFLOAT;
  const size_t count = size_t{width_} * height_ * 4;
  runtime::Buffer staging(device(), count * (half ? 2 : 4), VK_BUFFER_USAGE_TRANSFER_DST_BIT, runtime::MemoryKind::Readback,
                          "test image readback");
  runtime::submit_and_wait(device(), "image readback", [&](VkCommandBuffer cmd) {
    full_barrier(cmd);
    const VkBufferImageCopy region = whole_image(width_, height_);
    device().vk().vkCmdCopyImageToBuffer(cmd, image_, VK_IMAGE_LAYOUT_GENERAL, staging.handle(), 1, &region);
    full_barrier(cmd);
  });
  std::vector<float> out(count);
  if (half) {
    const auto* in = static_cast<const uint16_t*>(staging.mapped());
    for (size_t i = 0; i < count; ++i) out[i] = half_to_float(in[i]);
  } else {
    std::memcpy(out.data(), staging.mapped(), count * 4);
  }
  return out;
}

}  // namespace denox::testing
