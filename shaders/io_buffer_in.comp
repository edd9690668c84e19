#version 450
// IO adapter: caller buffer -> internal tensor. Reads channels caller_first .. +count-1 of the
// caller's buffer (f32, or f16 packed two per uint, layout CHW planar or HWC interleaved) into
// channels first .. first+count-1 of the internal NCHW tensor (N, C, H, W) in denox's storage
// type. One invocation per (pixel, channel, image).
//
// Macros: CALLER_16BIT (1: an fp16 caller buffer is read as float16_t[], needs the device's
// storageBuffer16BitAccess; 0: as 32-bit words, so an fp16 range must be whole words).
// Bindings: 0 caller buffer (uint[] or float16_t[]), 1 internal tensor.
// Push constants (src/kernels/README.md): c, h, w, first, count, layout (0 CHW, 1 HWC),
// dtype (0 f32, 1 f16), caller_stride (channels per pixel for HWC, planes per image for CHW),
// caller_first, caller_offset (elements before the first image in the bound range), by4 (1: a CHW
// caller buffer, W a multiple of 4 and the bound range 16-byte aligned: each invocation converts
// 4 pixels of a row with one 16-byte (fp32) or 8-byte (fp16) load, a quarter of the invocations
// and memory instructions; io_adapters.cpp decides).
// Dispatch: (ceil(W / 32), ceil(H / 8), N * count); with by4 (ceil(W / 128), ...).
#extension GL_GOOGLE_include_directive : require
#ifndef CALLER_16BIT
#define CALLER_16BIT 0
#endif
#if CALLER_16BIT
#extension GL_EXT_shader_16bit_storage : require
#endif
#define ACT 0
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

#if CALLER_16BIT
layout(set = 0, binding = 0) readonly buffer CallerBuf { float16_t caller[]; };
layout(set = 0, binding = 0) readonly buffer CallerHalf4 { f16vec4 caller_h4[]; };
#else
layout(set = 0, binding = 0) readonly buffer CallerBuf { uint caller[]; };
layout(set = 0, binding = 0) readonly buffer CallerVec2 { uvec2 caller_v2[]; };
layout(set = 0, binding = 0) readonly buffer CallerVec4 { uvec4 caller_v4[]; };
#endif
layout(set = 0, binding = 1) writeonly buffer TensorBuf { STYPE tensor_data[]; };
layout(set = 0, binding = 1) writeonly buffer TensorVec4 { STYPE4 tensor_v4[]; };

layout(push_constant) uniform Push {
  uint c, h, w, first, count, layout_hwc, dtype_f16, caller_stride, caller_first, caller_offset, by4;
} pc;

void main() {
  if (pc.by4 != 0) {  // CHW, 4 pixels x .. x + 3 of one row (all inside: W is a multiple of 4)
    const uint x = 4 * gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= pc.w || y >= pc.h) return;
    const uint ch = gl_WorkGroupID.z % pc.count, n = gl_WorkGroupID.z / pc.count;
    const uint pixels = pc.h * pc.w;
    // A multiple of 4 (pixels is): a 16-byte fp32 vector, an 8-byte fp16 one.
    const uint e = pc.caller_offset + (n * pc.caller_stride + pc.caller_first + ch) * pixels + y * pc.w + x;
#if CALLER_16BIT
    const vec4 v = vec4(caller_h4[e >> 2]);
#else
    vec4 v;
    if (pc.dtype_f16 != 0) {
      const uvec2 hw = caller_v2[e >> 2];  // 4 halves in 2 words
      v = vec4(unpackHalf2x16(hw.x), unpackHalf2x16(hw.y));
    } else {
      v = uintBitsToFloat(caller_v4[e >> 2]);
    }
#endif
    tensor_v4[(((n * pc.c + pc.first + ch) * pc.h + y) * pc.w + x) >> 2] = STYPE4(v);
    return;
  }
  const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
  if (x >= pc.w || y >= pc.h) return;
  const uint ch = gl_WorkGroupID.z % pc.count, n = gl_WorkGroupID.z / pc.count;
  const uint pixels = pc.h * pc.w, pixel = y * pc.w + x;
  const uint k = pc.caller_first + ch;
  const uint e = pc.caller_offset + n * pc.caller_stride * pixels +
                 (pc.layout_hwc != 0 ? pixel * pc.caller_stride + k : k * pixels + pixel);
  float v;
#if CALLER_16BIT
  v = float(caller[e]);
#else
  if (pc.dtype_f16 != 0) {
    const vec2 pair = unpackHalf2x16(caller[e >> 1]);
    v = (e & 1u) != 0 ? pair.y : pair.x;  // element 2i is the low half of word i
  } else {
    v = uintBitsToFloat(caller[e]);
  }
#endif
  tensor_data[((n * pc.c + pc.first + ch) * pc.h + y) * pc.w + x] = STYPE(v);
}
