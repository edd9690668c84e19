#version 460
// Display transform of the example: an RGBA32F storage image to packed 8-bit sRGB-ish RGBA in a
// storage buffer the host maps (PNG output). The HDR curve is Reinhard, x / (1 + x), then a
// 1/2.2 gamma; image_io.cpp (PSNR) and tools/train (evaluation) use the same curve, so the PSNR
// printed here and the one reported for training measure the same thing.
layout(local_size_x = 8, local_size_y = 8) in;

layout(set = 0, binding = 0, rgba32f) uniform readonly image2D src;
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uint pixels[]; };

const uint MODE_HDR = 0, MODE_ALBEDO = 1, MODE_NORMAL = 2;

layout(push_constant) uniform Push {
  uint width, height;
  uint mode;
  float exposure;
} pc;

void main() {
  uvec2 p = gl_GlobalInvocationID.xy;
  if (p.x >= pc.width || p.y >= pc.height) return;
  vec3 v = imageLoad(src, ivec2(p)).rgb;
  if (pc.mode == MODE_HDR) {
    v = max(v * pc.exposure, vec3(0));
    v = pow(v / (1.0 + v), vec3(1.0 / 2.2));
  } else if (pc.mode == MODE_ALBEDO) {
    v = pow(clamp(v, 0.0, 1.0), vec3(1.0 / 2.2));
  } else {
    v = clamp(v * 0.5 + 0.5, 0.0, 1.0);
  }
  uvec3 b = uvec3(round(clamp(v, 0.0, 1.0) * 255.0));
  pixels[p.y * pc.width + p.x] = b.r | (b.g << 8) | (b.b << 16) | (255u << 24);
}
