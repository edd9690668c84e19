// A 2D storage image for the io-adapter tests (RGBA16F or RGBA32F, kept in
// VK_IMAGE_LAYOUT_GENERAL), with host upload and readback of RGBA float pixels.
#pragma once

#include <volk.h>

#include <cstdint>
#include <vector>

namespace denox::testing {

class TestImage {
 public:
  TestImage(uint32_t width, uint32_t height, VkFormat format);
  ~TestImage();
  TestImage(const TestImage&) = delete;
  TestImage& operator=(const TestImage&) = delete;

  VkImageView view() const { return view_; }
  VkFormat format() const { return format_; }
  // width * height * 4 floats, row-major RGBA; converted to the image's format.
  void upload(const std::vector<float>& rgba);
  std::vector<float> download() const;

 private:
  uint32_t width_, height_;
  VkFormat format_;
  VkImage image_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkImageView view_ = VK_NULL_HANDLE;
};

}  // namespace denox::testing
