// The tap sums of a TAIL epilogue (the next convolution computed from the tile a conv just
// produced), shared by conv2d_coopmat.comp (conv2d_coopmat_tail.glsl) and conv2d_coopmat_q8.comp:
// after the workgroup barrier that follows Z = Y W2, every window position of the tile (the tile
// and a one-pixel ring) sums its 9 taps' Z values; complete positions are stored (bias2, T_ACT,
// the crop), the ring's partial sums go to this tile's slots for conv_tail_ring.comp.
//
// The including shader defines TILE_H TILE_W WG_SIZE T_COUT T_ACT T_HAS_BIAS, YS (Z's row
// stride in halves: Z[p][c] at p * YS + c, p = ty * TILE_W + tx), the bindings `y` (float16_t,
// the tail's NCHW output), `partials` and with T_HAS_BIAS `bias2`, the push constants t_out_h
// t_out_w t_crop_top t_crop_left t_act_a t_act_b, and `f16vec4 tail_z4(uint at)`: Z's halves
// [4 at, 4 at + 4).
#include "conv_tail_ring.glsl"
#include "tile_order.glsl"

// The tail's values at window position (wy, wx), every channel, from this tile's Z (fp32 sums).
// Tap t's T_COUT channels are consecutive halves of one Z row: one 8-byte load, or two where
// they straddle (13 loads for 9 taps of 3 channels instead of 27 scalar ones). `checked` (a
// constant once inlined): taps outside the tile are skipped; interior positions need no check.
void tail_window_sums(int wy, int wx, const bool checked, out float s[T_COUT]) {
  [[unroll]] for (uint co = 0; co < T_COUT; ++co) s[co] = 0.0;
  [[unroll]] for (int ky = 0; ky < 3; ++ky)
    [[unroll]] for (int kx = 0; kx < 3; ++kx) {
      const int ty = wy + ky - 1, tx = wx + kx - 1;
      if (checked && (ty < 0 || ty >= TILE_H || tx < 0 || tx >= TILE_W)) continue;
      const uint col = uint(ky * 3 + kx) * T_COUT, off = col & 3u;  // constants once unrolled
      const uint at = uint(ty * TILE_W + tx) * (YS / 4) + col / 4;
      const f16vec4 lo = tail_z4(at);
      const f16vec4 hi = off + T_COUT > 4 ? tail_z4(at + 1) : f16vec4(0.0);
      [[unroll]] for (uint co = 0; co < T_COUT; ++co) s[co] += float(off + co < 4 ? lo[off + co] : hi[off + co - 4]);
    }
}

// Every window position. The complete ones, [1, TILE_H - 2] x [1, TILE_W - 2], are stored (bias2,
// T_ACT, the crop); the ring's partial sums are written to this tile's slots, in slot order
// (ring_position). Two loops, so that a subgroup takes the unchecked taps of the interior
// or the checked ones of the ring, never both.
void tail_sums(uint t, uint n, int oy0, int ox0) {
  const uint tile = (n * gl_NumWorkGroups.y + TILE_WG.y) * gl_NumWorkGroups.x + TILE_WG.x;
  const float a2 = uintBitsToFloat(pc.t_act_a), b2 = uintBitsToFloat(pc.t_act_b);
  float bias[T_COUT];
  [[unroll]] for (uint co = 0; co < T_COUT; ++co) {
#if T_HAS_BIAS
    bias[co] = float(bias2[co]);
#else
    bias[co] = 0.0;
#endif
  }
  const uint IN_W = TILE_W - 2;
  for (uint q = t; q < (TILE_H - 2) * IN_W; q += WG_SIZE) {
    const int wy = 1 + int(q / IN_W), wx = 1 + int(q % IN_W);
    const int oy = oy0 + wy - pc.t_crop_top, ox = ox0 + wx - pc.t_crop_left;
    if (oy < 0 || ox < 0 || oy >= int(pc.t_out_h) || ox >= int(pc.t_out_w)) continue;
    float s[T_COUT];
    tail_window_sums(wy, wx, false, s);
    [[unroll]] for (uint co = 0; co < T_COUT; ++co)
      y[((n * T_COUT + co) * pc.t_out_h + uint(oy)) * pc.t_out_w + uint(ox)] = float16_t(activate_as(T_ACT, s[co] + bias[co], a2, b2));
  }
  for (uint slot = t; slot < RING; slot += WG_SIZE) {
    int wy, wx;
    ring_position(slot, wy, wx);
    float s[T_COUT];
    tail_window_sums(wy, wx, true, s);
    [[unroll]] for (uint co = 0; co < T_COUT; ++co) partials[(tile * RING + slot) * T_COUT + co] = s[co];
  }
}
