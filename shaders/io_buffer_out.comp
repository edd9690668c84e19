#version 450
// IO adapter: internal tensor -> caller buffer, the inverse of io_buffer_in (same push
// constants, macros and dispatch; by4: 4 pixels per invocation, one 16- or 8-byte store). Only
// the addressed elements of the caller's buffer change.
// With CALLER_16BIT an fp16 element is one 16-bit store. Without it (32-bit words only),
// an element whose partner in the same 32-bit word also belongs to this dispatch is written
// together with it by the invocation of the even element; a word shared with an element this
// dispatch does not own (odd offsets, channels of the caller that denox does not write) is
// updated with atomicAnd/atomicOr on our half only, so the other half is preserved even while
// another invocation updates it.
//
// Bindings: 0 caller buffer (uint[] or float16_t[]), 1 internal tensor.
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
layout(set = 0, binding = 0) writeonly buffer CallerBuf { float16_t caller[]; };
layout(set = 0, binding = 0) writeonly buffer CallerHalf4 { f16vec4 caller_h4[]; };
#else
layout(set = 0, binding = 0) buffer CallerBuf { uint caller[]; };
layout(set = 0, binding = 0) buffer CallerVec2 { uvec2 caller_v2[]; };
layout(set = 0, binding = 0) buffer CallerVec4 { uvec4 caller_v4[]; };
#endif
layout(set = 0, binding = 1) readonly buffer TensorBuf { STYPE tensor_data[]; };
layout(set = 0, binding = 1) readonly buffer TensorVec4 { STYPE4 tensor_v4[]; };

layout(push_constant) uniform Push {
  uint c, h, w, first, count, layout_hwc, dtype_f16, caller_stride, caller_first, caller_offset, by4;
} pc;

// The internal element for caller element e, if this dispatch writes e.
bool owned(uint e, out uint internal_index) {
  internal_index = 0;
  if (e < pc.caller_offset) return false;
  const uint pixels = pc.h * pc.w, q = e - pc.caller_offset;
  const uint per_image = pc.caller_stride * pixels;
  const uint n = q / per_image, r = q % per_image;
  if (n >= gl_NumWorkGroups.z / pc.count) return false;
  const uint pixel = pc.layout_hwc != 0 ? r / pc.caller_stride : r % pixels;
  const uint k = pc.layout_hwc != 0 ? r % pc.caller_stride : r / pixels;
  if (k < pc.caller_first || k >= pc.caller_first + pc.count) return false;
  internal_index = (n * pc.c + pc.first + (k - pc.caller_first)) * pixels + pixel;
  return true;
}

void main() {
  if (pc.by4 != 0) {  // CHW (io_buffer_in.comp says when): whole vectors, so no word is shared
    const uint x = 4 * gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= pc.w || y >= pc.h) return;
    const uint ch = gl_WorkGroupID.z % pc.count, n = gl_WorkGroupID.z / pc.count;
    const uint pixels = pc.h * pc.w;
    const uint e = pc.caller_offset + (n * pc.caller_stride + pc.caller_first + ch) * pixels + y * pc.w + x;
    const vec4 v = vec4(tensor_v4[(((n * pc.c + pc.first + ch) * pc.h + y) * pc.w + x) >> 2]);
#if CALLER_16BIT
    caller_h4[e >> 2] = f16vec4(v);
#else
    if (pc.dtype_f16 != 0) caller_v2[e >> 2] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
    else caller_v4[e >> 2] = floatBitsToUint(v);
#endif
    return;
  }
  const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
  if (x >= pc.w || y >= pc.h) return;
  const uint ch = gl_WorkGroupID.z % pc.count, n = gl_WorkGroupID.z / pc.count;
  const uint pixels = pc.h * pc.w, pixel = y * pc.w + x;
  const uint k = pc.caller_first + ch;
  const uint e = pc.caller_offset + n * pc.caller_stride * pixels +
                 (pc.layout_hwc != 0 ? pixel * pc.caller_stride + k : k * pixels + pixel);
  const float v = float(tensor_data[((n * pc.c + pc.first + ch) * pc.h + y) * pc.w + x]);
#if CALLER_16BIT
  caller[e] = float16_t(v);
#else
  if (pc.dtype_f16 == 0) {
    caller[e] = floatBitsToUint(v);
    return;
  }
  uint partner_index;
  const bool odd = (e & 1u) != 0;
  if (owned(e ^ 1u, partner_index)) {
    if (odd) return;  // the even element's invocation writes the word
    caller[e >> 1] = packHalf2x16(vec2(v, float(tensor_data[partner_index])));
  } else {
    const uint bits = packHalf2x16(vec2(v, 0.0)) & 0xffffu;
    atomicAnd(caller[e >> 1], odd ? 0x0000ffffu : 0xffff0000u);
    atomicOr(caller[e >> 1], odd ? bits << 16 : bits);
  }
#endif
}
