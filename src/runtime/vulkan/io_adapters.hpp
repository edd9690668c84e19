// The adapter dispatches that move data between the caller's buffers or images and the plan's
// internal NCHW tensors (shaders/io_buffer_*.comp, shaders/io_image_*.comp). One adapter
// dispatch per bound source, so a 9-channel network reads color, albedo and normal from three
// images with three small dispatches and no copy pass the engine has to record.
#pragma once

#include <volk.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "runtime/vulkan/executable_model.hpp"

namespace denox::runtime {

struct AdapterShader {
  std::string family;
  std::vector<std::pair<std::string, std::string>> defines;
  std::vector<VkDescriptorType> bindings;  // binding 0: the caller's resource, 1: the tensor
  uint32_t push_constant_count = 0;
};

// `caller_16bit`: the device has storageBuffer16BitAccess, so an fp16 caller buffer is
// accessed as 16-bit elements (CALLER_16BIT); otherwise as 32-bit words.
AdapterShader adapter_shader(const IoSource& source, bool input, bool f16_tensors, bool caller_16bit);

// The bytes of a buffer source's range an adapter touches for a height x width tensor; an fp16
// source without 16-bit access is read and written in whole 32-bit words.
uint64_t caller_bytes_needed(const IoSource& source, uint32_t height, uint32_t width, bool caller_16bit);

// Whether a buffer adapter takes 4 pixels per invocation (shaders/io_buffer_in.comp's by4): a
// CHW caller buffer (fp32 or fp16), a width that is a multiple of 4 and a 16-byte aligned range.
bool adapter_by4(const IoSource& source, uint32_t width);

// Push constants and workgroup counts of one adapter dispatch for a tensor of `channels`
// channels and height x width pixels.
std::vector<uint32_t> adapter_push_constants(const IoSource& source, uint32_t channels, uint32_t height, uint32_t width);
std::array<uint32_t, 3> adapter_groups(const IoSource& source, uint32_t height, uint32_t width);

}  // namespace denox::runtime
