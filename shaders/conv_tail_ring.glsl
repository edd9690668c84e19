// Shared by conv2d_coopmat.comp's TAIL epilogue (conv2d_coopmat_tail.glsl) and conv_tail_ring.comp:
// where a workgroup's partial sums of the tail convolution's ring live.
//
// A tile of TILE_H x TILE_W pixels of the intermediate tensor contributes to the tail conv's
// (3x3, padding 1) outputs at window positions (wy, wx) in [-1, TILE_H] x [-1, TILE_W] (tile
// coordinates). Positions whose 3x3 neighbourhood lies inside the tile, [1, TILE_H - 2] x
// [1, TILE_W - 2], are complete and written by the tile itself; the others, the ring, get
// contributions from up to four tiles and are summed by conv_tail_ring.comp. The ring of each tile
// is RING consecutive slots (times T_COUT channels, fp32) in the partials buffer:
//   rows -1 and 0:                 slots [0, 2 * WIN_W)
//   rows TILE_H - 1 and TILE_H:    slots [2 * WIN_W, 4 * WIN_W)
//   rows 1 .. TILE_H - 2, columns -1, 0, TILE_W - 1, TILE_W: 4 slots a row after those.
// TILE_H >= 2 (the lowering's rule), so the row bands do not overlap.
#define WIN_W (TILE_W + 2)
#define RING (4 * (TILE_W + TILE_H))

uint ring_slot(int wy, int wx) {
  const uint col = uint(wx + 1);
  if (wy <= 0) return uint(wy + 1) * WIN_W + col;
  if (wy >= TILE_H - 1) return (2 + uint(wy - (TILE_H - 1))) * WIN_W + col;
  const uint side = wx <= 0 ? uint(wx + 1) : 2 + uint(wx - (TILE_W - 1));
  return 4 * WIN_W + uint(wy - 1) * 4 + side;
}

// ring_slot's inverse: the window position of ring slot `slot`.
void ring_position(uint slot, out int wy, out int wx) {
  if (slot < 4 * WIN_W) {
    const uint band = slot / WIN_W;  // rows -1, 0, TILE_H - 1, TILE_H
    wy = band < 2 ? int(band) - 1 : TILE_H - 3 + int(band);
    wx = int(slot % WIN_W) - 1;
  } else {
    const uint r = slot - 4 * WIN_W, side = r % 4;  // columns -1, 0, TILE_W - 1, TILE_W
    wy = 1 + int(r / 4);
    wx = side < 2 ? int(side) - 1 : TILE_W - 3 + int(side);
  }
}
