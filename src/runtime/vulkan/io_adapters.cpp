#include "runtime/vulkan/io_adapters.hpp"

#include <algorithm>

namespace denox::runtime {

namespace {
// The adapters' local size over (x, y) (shaders/io_*.comp).
constexpr uint32_t kTileX = 32, kTileY = 8;
}

AdapterShader adapter_shader(const IoSource& source, bool input, bool f16_tensors, bool caller_16bit) {
  AdapterShader s;
  if (f16_tensors) s.defines.emplace_back("STORAGE_F16", "1");
  if (source.is_image) {
    s.family = input ? "io_image_in" : "io_image_out";
    s.defines.emplace_back("FORMAT", source.format == VK_FORMAT_R16G16B16A16_SFLOAT ? "rgba16f" : "rgba32f");
    s.bindings = {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    s.push_constant_count = 5;
  } else {
    s.family = input ? "io_buffer_in" : "io_buffer_out";
    if (source.type == ElementType::F16 && caller_16bit) s.defines.emplace_back("CALLER_16BIT", "1");
    s.bindings = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    s.push_constant_count = 11;
  }
  std::sort(s.defines.begin(), s.defines.end());
  return s;
}

uint64_t caller_bytes_needed(const IoSource& s, uint32_t height, uint32_t width, bool caller_16bit) {
  const uint64_t pixels = uint64_t{height} * width, channels_end = uint64_t{s.source_first_channel} + s.channel_count;
  if (pixels == 0) return 0;  // (an empty tensor: nothing is read or written)
  const uint64_t elements = s.layout == TensorLayout::CHW ? channels_end * pixels : (pixels - 1) * s.pixel_channels + channels_end;
  if (s.type == ElementType::F32) return 4 * elements;
  return caller_16bit ? 2 * elements : 4 * ((elements + 1) / 2);
}

bool adapter_by4(const IoSource& s, uint32_t width) {
  return !s.is_image && s.layout == TensorLayout::CHW && width % 4 == 0 && s.offset % 16 == 0;
}

std::vector<uint32_t> adapter_push_constants(const IoSource& source, uint32_t channels, uint32_t height, uint32_t width) {
  std::vector<uint32_t> push = {channels, height, width, source.first_channel, source.channel_count};
  if (!source.is_image) {
    push.push_back(static_cast<uint32_t>(source.layout));
    push.push_back(static_cast<uint32_t>(source.type));
    push.push_back(source.pixel_channels);
    push.push_back(source.source_first_channel);
    push.push_back(0);  // caller_offset: the descriptor's offset already points at the tensor
    push.push_back(adapter_by4(source, width) ? 1 : 0);
  }
  return push;
}

std::array<uint32_t, 3> adapter_groups(const IoSource& source, uint32_t height, uint32_t width) {
  // Buffer adapters run one workgroup layer per channel (N = 1); image adapters loop over the
  // (at most 4) components inside. A by4 invocation takes 4 pixels.
  const uint32_t x = adapter_by4(source, width) ? width / 4 : width;
  return {(x + kTileX - 1) / kTileX, (height + kTileY - 1) / kTileY, source.is_image ? 1 : source.channel_count};
}

}  // namespace denox::runtime
