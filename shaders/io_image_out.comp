#version 450
// IO adapter: internal tensor -> caller storage image. Channels first .. first+count-1 at
// (h = y, w = x) of image 0 of the internal NCHW tensor (N = 1 only) become components
// 0 .. count-1 of pixel (x, y); components past count are 0, except alpha, which is 1.0 unless
// count == 4. The whole texel is written. The image is in VK_IMAGE_LAYOUT_GENERAL.
//
// Macros: FORMAT (rgba16f or rgba32f, the image view's format).
// Bindings: 0 storage image, 1 internal tensor.
// Push constants: c, h, w, first, count (1..4).
// Dispatch: (ceil(W / 32), ceil(H / 8), 1).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0, FORMAT) writeonly uniform image2D image;
layout(set = 0, binding = 1) readonly buffer TensorBuf { STYPE tensor_data[]; };

layout(push_constant) uniform Push { uint c, h, w, first, count; } pc;

void main() {
  const uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
  if (x >= pc.w || y >= pc.h) return;
  // An image smaller than the tensor (the engine's to size) keeps what fits: no store out of its
  // bounds (undefined without robustImageAccess).
  if (any(greaterThanEqual(ivec2(x, y), imageSize(image)))) return;
  const uint plane = pc.h * pc.w;
  const uint base = pc.first * plane + y * pc.w + x;
  vec4 v = vec4(0.0, 0.0, 0.0, 1.0);
  for (uint i = 0; i < pc.count && i < 4; ++i) v[i] = float(tensor_data[base + i * plane]);
  imageStore(image, ivec2(x, y), v);
}
