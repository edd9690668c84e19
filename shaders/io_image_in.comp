#version 450
// IO adapter: caller storage image -> internal tensor. Components 0 .. count-1 of pixel (x, y)
// go to channels first .. first+count-1 at (h = y, w = x) of image 0 of the internal NCHW
// tensor (N = 1 only). The image must be at least W x H; it is in VK_IMAGE_LAYOUT_GENERAL.
//
// Macros: FORMAT (rgba16f or rgba32f, the image view's format).
// Bindings: 0 storage image, 1 internal tensor.
// Push constants: c, h, w, first, count (1..4).
// Dispatch: (ceil(W / 32), ceil(H / 8), 1).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0, FORMAT) readonly uniform image2D image;
layout(set = 0, binding = 1) writeonly buffer TensorBuf { STYPE tensor_data[]; };

layout(push_constant) uniform Push { uint c, h, w, first, count; } pc;

void main() {
  const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
  if (x >= pc.w || y >= pc.h) return;
  // An image smaller than the tensor (the engine's to size) gives zeros there, never a read out
  // of its bounds (undefined without robustImageAccess).
  const bool inside = all(lessThan(ivec2(x, y), imageSize(image)));
  const vec4 v = inside ? imageLoad(image, ivec2(x, y)) : vec4(0.0);
  const uint plane = pc.h * pc.w;
  const uint base = pc.first * plane + y * pc.w + x;
  for (uint i = 0; i < pc.count && i < 4; ++i) tensor_data[base + i * plane] = STYPE(v[i]);
}
