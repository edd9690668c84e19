#include "kernels/conv2d_layout.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace denox::kernels {

int64_t Conv2dTiling::shared_bytes(const Conv2dShape& s, bool pool) const {
  const int64_t halo_h = (tile_h() - 1) * s.sh + (s.kh - 1) * s.dh + 1;
  const int64_t halo_w = (tile_w - 1) * s.sw + (s.kw - 1) * s.dw + 1;
  const int64_t staged = pool ? cout_tile() * tile_h() * tile_w : 0;
  return 4 * std::max(ck * halo_h * halo_w + ck * s.kh * s.kw * cout_tile(), staged);
}

Conv2dTiling choose_conv2d_tiling(const Conv2dShape& shape, bool pool) {
  Conv2dTiling t;
  t.tc = shape.c_out >= 32 ? 4 : shape.c_out >= 16 ? 2 : 1;
  t.ck = std::min<int64_t>(shape.c_in, 8);
  // Shrink what costs least first: the chunk (more loop trips), then rows per invocation,
  // then the tile width (more halo per output).
  // (tile_w stays 8 or 16, so tile_h = tp * 32 / tile_w is even, as a pool needs.)
  while (t.shared_bytes(shape, pool) > kPortableSharedBytes) {
    if (t.ck > 1 && t.shared_bytes(shape) > kPortableSharedBytes) {
      t.ck = (t.ck + 1) / 2;
    } else if (t.tp > 1) {
      t.tp /= 2;
    } else if (t.tile_w > 8) {
      t.tile_w /= 2;
    } else if (t.tc > 1) {
      t.tc /= 2;
    } else {
      // (The stride counts too: it spreads a tile's input rows and columns apart.)
      fail(ErrorCode::Unsupported, "a " + std::to_string(shape.kh) + "x" + std::to_string(shape.kw) + " convolution with stride " +
                                       std::to_string(shape.sh) + "x" + std::to_string(shape.sw) + " and dilation " +
                                       std::to_string(shape.dh) + "x" + std::to_string(shape.dw) + " needs " +
                                       std::to_string(t.shared_bytes(shape, pool)) + " bytes of shared memory at its smallest tile; the portable kernel may use " +
                                       std::to_string(kPortableSharedBytes));
    }
  }
  return t;
}

std::vector<float> pack_conv2d_weights(std::span<const float> w, const Conv2dShape& s, const Conv2dTiling& t) {
  const int64_t kk = s.kh * s.kw, co_tile = t.cout_tile();
  if (static_cast<int64_t>(w.size()) != s.c_out * s.c_in * kk)
    fail(ErrorCode::Internal, "convolution weights have " + std::to_string(w.size()) + " values, expected " +
                                  std::to_string(s.c_out * s.c_in * kk));
  const int64_t co_tiles = (s.c_out + co_tile - 1) / co_tile, chunks = (s.c_in + t.ck - 1) / t.ck;
  std::vector<float> packed(static_cast<size_t>(co_tiles * chunks * t.ck * kk * co_tile), 0.0f);
  for (int64_t co = 0; co < s.c_out; ++co) {
    const int64_t tile = co / co_tile, j = co % co_tile;
    for (int64_t ci = 0; ci < s.c_in; ++ci) {
      const int64_t chunk = ci / t.ck, c = ci % t.ck;
      for (int64_t k = 0; k < kk; ++k) {
        const int64_t dst = (((tile * chunks + chunk) * t.ck + c) * kk + k) * co_tile + j;
        packed[static_cast<size_t>(dst)] = w[static_cast<size_t>((co * s.c_in + ci) * kk + k)];
      }
    }
  }
  return packed;
}

}  // namespace denox::kernels
