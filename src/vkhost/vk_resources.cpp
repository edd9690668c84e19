// Buffers, storage images and timestamp runs of the host-side helper.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "vkhost/vk_host.hpp"

namespace denox::vkhost {

namespace {

VkDeviceMemory allocate(const Device& dev, const VkMemoryRequirements& req, VkMemoryPropertyFlags props) {
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = dev.memory_type(req.memoryTypeBits, props);
  VkDeviceMemory mem = VK_NULL_HANDLE;
  check(vkAllocateMemory(dev.device(), &ai, nullptr, &mem), "vkAllocateMemory");
  return mem;
}

}  // namespace

Buffer::Buffer(const Device& dev, VkDeviceSize size, bool device_local, VkBufferUsageFlags usage) : dev_(dev), size_(size) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = std::max<VkDeviceSize>(size, 4);
  bci.usage = usage;
  check(vkCreateBuffer(dev.device(), &bci, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev.device(), buffer_, &req);
  const VkMemoryPropertyFlags props = device_local ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                                   : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  try {
    memory_ = allocate(dev, req, props);
    check(vkBindBufferMemory(dev.device(), buffer_, memory_, 0), "vkBindBufferMemory");
    if (!device_local) check(vkMapMemory(dev.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
  } catch (...) {
    vkDestroyBuffer(dev.device(), buffer_, nullptr);
    if (memory_) vkFreeMemory(dev.device(), memory_, nullptr);
    throw;
  }
}

Buffer::~Buffer() {
  vkDestroyBuffer(dev_.device(), buffer_, nullptr);
  vkFreeMemory(dev_.device(), memory_, nullptr);
}

void Buffer::write(const void* data, size_t bytes, size_t offset) {
  if (!mapped_ || offset + bytes > size_) throw std::runtime_error("Buffer::write out of range or not host-visible");
  std::memcpy(static_cast<char*>(mapped_) + offset, data, bytes);
}

void Buffer::read(void* data, size_t bytes, size_t offset) const {
  if (!mapped_ || offset + bytes > size_) throw std::runtime_error("Buffer::read out of range or not host-visible");
  std::memcpy(data, static_cast<const char*>(mapped_) + offset, bytes);
}

Image::Image(const Device& dev, uint32_t width, uint32_t height, VkFormat format)
    : dev_(dev), width_(width), height_(height), format_(format) {
  if (format != VK_FORMAT_R16G16B16A16_SFLOAT && format != VK_FORMAT_R32G32B32A32_SFLOAT)
    throw std::runtime_error("vkhost::Image supports RGBA16F and RGBA32F");
  VkImageCreateInfo ici{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ici.imageType = VK_IMAGE_TYPE_2D;
  ici.format = format;
  ici.extent = {width, height, 1};
  ici.mipLevels = 1;
  ici.arrayLayers = 1;
  ici.samples = VK_SAMPLE_COUNT_1_BIT;
  ici.tiling = VK_IMAGE_TILING_OPTIMAL;
  ici.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  ici.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  check(vkCreateImage(dev.device(), &ici, nullptr, &image_), "vkCreateImage");
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(dev.device(), image_, &req);
  memory_ = allocate(dev, req, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  check(vkBindImageMemory(dev.device(), image_, memory_, 0), "vkBindImageMemory");
  VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vci.image = image_;
  vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vci.format = format;
  vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  check(vkCreateImageView(dev.device(), &vci, nullptr, &view_), "vkCreateImageView");
  // To GENERAL once; it stays there (storage image use and copies both allow it).
  dev.submit([&](VkCommandBuffer cmd) {
    VkImageMemoryBarrier2 b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2};
    b.srcStageMask = VK_PIPELINE_STAGE_2_NONE;
    b.dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
    b.dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT;
    b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image_;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
    dep.imageMemoryBarrierCount = 1;
    dep.pImageMemoryBarriers = &b;
    vkCmdPipelineBarrier2(cmd, &dep);
  });
}

Image::~Image() {
  vkDestroyImageView(dev_.device(), view_, nullptr);
  vkDestroyImage(dev_.device(), image_, nullptr);
  vkFreeMemory(dev_.device(), memory_, nullptr);
}

namespace {

void all_commands_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier2 b{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  b.srcStageMask = b.dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
  b.srcAccessMask = b.dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT;
  VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.memoryBarrierCount = 1;
  dep.pMemoryBarriers = &b;
  vkCmdPipelineBarrier2(cmd, &dep);
}

VkBufferImageCopy whole(uint32_t w, uint32_t h) {
  VkBufferImageCopy c{};
  c.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  c.imageExtent = {w, h, 1};
  return c;
}

}  // namespace

void Image::upload(const std::vector<float>& rgba) {
  const size_t n = size_t{width_} * height_ * 4;
  if (rgba.size() != n) throw std::runtime_error("Image::upload: expected width*height*4 floats");
  const bool half = format_ == VK_FORMAT_R16G16B16A16_SFLOAT;
  Buffer staging(dev_, n * (half ? 2 : 4));
  if (half) {
    std::vector<uint16_t> h(n);
    std::transform(rgba.begin(), rgba.end(), h.begin(), to_half);
    staging.write(h.data(), h.size() * 2);
  } else {
    staging.write(rgba.data(), n * 4);
  }
  dev_.submit([&](VkCommandBuffer cmd) {
    all_commands_barrier(cmd);
    const VkBufferImageCopy c = whole(width_, height_);
    vkCmdCopyBufferToImage(cmd, staging.handle(), image_, VK_IMAGE_LAYOUT_GENERAL, 1, &c);
    all_commands_barrier(cmd);
  });
}

std::vector<float> Image::download() const {
  const size_t n = size_t{width_} * height_ * 4;
  const bool half = format_ == VK_FORMAT_R16G16B16A16_SFLOAT;
  Buffer staging(dev_, n * (half ? 2 : 4));
  dev_.submit([&](VkCommandBuffer cmd) {
    all_commands_barrier(cmd);
    const VkBufferImageCopy c = whole(width_, height_);
    vkCmdCopyImageToBuffer(cmd, image_, VK_IMAGE_LAYOUT_GENERAL, staging.handle(), 1, &c);
    all_commands_barrier(cmd);
  });
  std::vector<float> out(n);
  if (half) {
    std::vector<uint16_t> h(n);
    staging.read(h.data(), n * 2);
    std::transform(h.begin(), h.end(), out.begin(), from_half);
  } else {
    staging.read(out.data(), n * 4);
  }
  return out;
}

std::vector<std::vector<double>> timed_runs(const Device& dev, uint32_t query_count, int runs,
                                           const std::function<void(VkCommandBuffer, VkQueryPool)>& fn) {
  VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qci.queryCount = query_count;
  VkQueryPool pool = VK_NULL_HANDLE;
  check(vkCreateQueryPool(dev.device(), &qci, nullptr, &pool), "vkCreateQueryPool");
  std::vector<std::vector<double>> out;
  try {
    const double period_ms = dev.properties().limits.timestampPeriod * 1e-6;
    for (int r = 0; r < runs; ++r) {
      dev.submit([&](VkCommandBuffer cmd) { fn(cmd, pool); });
      std::vector<uint64_t> ticks(query_count);
      check(vkGetQueryPoolResults(dev.device(), pool, 0, query_count, ticks.size() * 8, ticks.data(), 8,
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults");
      std::vector<double> ms(query_count);
      for (uint32_t i = 0; i < query_count; ++i) ms[i] = static_cast<double>(ticks[i] - ticks[0]) * period_ms;
      out.push_back(std::move(ms));
    }
  } catch (...) {
    vkDestroyQueryPool(dev.device(), pool, nullptr);
    throw;
  }
  vkDestroyQueryPool(dev.device(), pool, nullptr);
  return out;
}

std::vector<double> timed_frames(const Device& dev, int runs, const std::function<void(VkCommandBuffer)>& fn) {
  std::vector<double> out;
  for (const std::vector<double>& ms : timed_runs(dev, 2, runs, [&](VkCommandBuffer cmd, VkQueryPool pool) {
         vkCmdResetQueryPool(cmd, pool, 0, 2);
         vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, 0);
         fn(cmd);
         vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, 1);
       }))
    out.push_back(ms[1]);
  return out;
}

}  // namespace denox::vkhost
