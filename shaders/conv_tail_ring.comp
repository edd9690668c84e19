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
// Dispatch: the conv2d_coopmat dispatch's tile grid (ceil(OW / TILE_W), ceil(OH / TILE_H), N),
// RING_THREADS invocations each.
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

// One workgroup per tile, one invocation per border pixel (all its channels). 64 invocations
// (two loops over a 16x32 tile's 92 pixels): the whole grid fits the H100 at once; 0.0153 ms
// against 0.0162 with 128 or 96 and 0.0157-0.0160 with 32 (bench/RESULTS.md, ninth session).
#ifndef RING_THREADS  // a define only for the variant harness; the lowering assumes 64
#define RING_THREADS 64
#endif

layout(local_size_x = RING_THREADS, local_size_y = 1, local_size_z = 1) in;

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

// The tile (index into partials) and ring slot of tile (gy + dy, gx + dx) that hold border pixel
// (py, px) of the conv's output, or false where that tile does not exist or its window does
// not reach the pixel.
bool ring_source(int gy, int gx, int dy, int dx, int py, int px, uint n, out uint base) {
  const uint tiles_x = gl_NumWorkGroups.x, tiles_y = gl_NumWorkGroups.y;
  const int sy = gy + dy, sx = gx + dx;
  if (sy < 0 || sx < 0 || sy >= int(tiles_y) || sx >= int(tiles_x)) return false;
  const int wy = py - sy * TILE_H, wx = px - sx * TILE_W;
  if (wy < -1 || wy > TILE_H || wx < -1 || wx > TILE_W) return false;
  const uint tile = (n * tiles_y + uint(sy)) * tiles_x + uint(sx);
  base = (tile * RING + ring_slot(wy, wx)) * T_COUT;
  return true;
}

void border_pixel(uint b, out int ty, out int tx) {
  if (b < 2 * TILE_W) {
    ty = b < TILE_W ? 0 : TILE_H - 1, tx = int(b % TILE_W);
  } else {
    const uint k = b - 2 * TILE_W;
    ty = 1 + int(k / 2), tx = (k & 1u) != 0u ? TILE_W - 1 : 0;
  }
}

void main() {
  const int gx = int(gl_WorkGroupID.x), gy = int(gl_WorkGroupID.y);
  const uint n = gl_WorkGroupID.z;
  const float act_a = uintBitsToFloat(pc.act_a), act_b = uintBitsToFloat(pc.act_b);
  for (uint b = gl_LocalInvocationIndex; b < BORDER; b += RING_THREADS) {
    int ty, tx;
    border_pixel(b, ty, tx);
    const int py = gy * TILE_H + ty, px = gx * TILE_W + tx;  // in the conv's output
    const int oy = py - pc.crop_top, ox = px - pc.crop_left;
    if (oy < 0 || ox < 0 || oy >= int(pc.out_h) || ox >= int(pc.out_w)) continue;
    // All channels of the pixel at once; each channel sums the tiles in a fixed order.
    float s[T_COUT];
    [[unroll]] for (uint co = 0; co < T_COUT; ++co) s[co] = 0.0;
    [[unroll]] for (int dy = -1; dy <= 1; ++dy)
      [[unroll]] for (int dx = -1; dx <= 1; ++dx) {
        uint base;
        if (!ring_source(gy, gx, dy, dx, py, px, n, base)) continue;
        [[unroll]] for (uint co = 0; co < T_COUT; ++co) s[co] += partials[base + co];
      }
    [[unroll]] for (uint co = 0; co < T_COUT; ++co) {
#if HAS_BIAS
      s[co] += float(bias[co]);
#endif
      y[((n * T_COUT + co) * pc.out_h + uint(oy)) * pc.out_w + uint(ox)] = float16_t(activate(s[co], act_a, act_b));
    }
  }
}
