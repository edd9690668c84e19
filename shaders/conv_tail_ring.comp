#version 450
// The second dispatch of a conv2d_coopmat TAIL (conv2d_coopmat_tail.glsl): the tail conv's
// outputs on the tiles' borders, each the sum of the partial sums that the (up to four) tiles
// whose window holds it wrote to the partials buffer (conv_tail_ring.glsl), plus the bias and
// the activation, stored to the tail's NCHW output (crop applied). Every other output pixel
// was stored whole by its own tile.
//
// Macros: TILE_H TILE_W (the conv2d_coopmat dispatch's tile), T_COUT, HAS_BIAS, ACT, STORAGE_F16.
// Bindings: partials (fp32), Y, [bias].
// Push constants: out_h out_w (Y's extents), crop_top crop_left, act_a act_b.
// Dispatch: the conv2d_coopmat dispatch's tile grid (ceil(OW / TILE_W), ceil(OH / TILE_H), N).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#ifndef STORAGE_F16
#error "conv_tail_ring needs STORAGE_F16 (fp16 plans only)"
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#include "conv_tail_ring.glsl"

// Border pixels of a tile: rows 0 and TILE_H - 1 whole, columns 0 and TILE_W - 1 between them.
#define BORDER (2 * TILE_W + 2 * (TILE_H - 2))

layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer PBuf { float partials[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { float16_t y[]; };
#if HAS_BIAS
layout(set = 0, binding = 2) readonly buffer BBuf { float16_t bias[]; };
#endif

layout(push_constant) uniform Push {
  uint out_h, out_w;
  int crop_top, crop_left;
  uint act_a, act_b;
} pc;

void main() {
  const uint tiles_x = gl_NumWorkGroups.x, tiles_y = gl_NumWorkGroups.y;
  const int gx = int(gl_WorkGroupID.x), gy = int(gl_WorkGroupID.y);
  const uint n = gl_WorkGroupID.z;
  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
  for (uint e = gl_LocalInvocationIndex; e < T_COUT * BORDER; e += 128) {
    const uint co = e / BORDER, b = e % BORDER;
    int ty, tx;  // the border pixel in tile coordinates
    if (b < 2 * TILE_W) {
      ty = b < TILE_W ? 0 : TILE_H - 1, tx = int(b % TILE_W);
    } else {
      const uint k = b - 2 * TILE_W;
      ty = 1 + int(k / 2), tx = (k & 1u) != 0u ? TILE_W - 1 : 0;
    }
    const int py = gy * TILE_H + ty, px = gx * TILE_W + tx;  // in the conv's output
    const int oy = py - pc.crop_top, ox = px - pc.crop_left;
    if (oy < 0 || ox < 0 || oy >= int(pc.out_h) || ox >= int(pc.out_w)) continue;
    float s = 0.0;
    // The tiles whose window (the tile and a one-pixel ring) holds the pixel, in a fixed order.
    [[unroll]] for (int dy = -1; dy <= 1; ++dy)
      [[unroll]] for (int dx = -1; dx <= 1; ++dx) {
        const int sy = gy + dy, sx = gx + dx;
        if (sy < 0 || sx < 0 || sy >= int(tiles_y) || sx >= int(tiles_x)) continue;
        const int wy = py - sy * TILE_H, wx = px - sx * TILE_W;
        if (wy < -1 || wy > TILE_H || wx < -1 || wx > TILE_W) continue;
        const uint tile = (n * tiles_y + uint(sy)) * tiles_x + uint(sx);
        s += partials[(tile * RING + ring_slot(wy, wx)) * T_COUT + co];
      }
#if HAS_BIAS
    s += float(bias[co]);
#endif
    y[((n * T_COUT + co) * pc.out_h + uint(oy)) * pc.out_w + uint(ox)] = float16_t(activate(s, act_a, act_b));
  }
}
