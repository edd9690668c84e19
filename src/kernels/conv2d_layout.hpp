// The portable convolution's tiling (shaders/conv2d.comp) and the weight layout it reads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace denox::kernels {

struct Conv2dShape {
  int64_t c_in = 0, c_out = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
};

// One point of conv2d.comp's configuration space (its macros TILE_W, TP, TC, CK).
struct Conv2dTiling {
  int64_t tile_w = 16;  // output columns per workgroup, divides 32
  int64_t tp = 4;       // output rows per invocation
  int64_t tc = 4;       // output channels per invocation
  int64_t ck = 8;       // input channels per shared-memory chunk
  int64_t tile_h() const { return tp * (32 / tile_w); }
  int64_t cout_tile() const { return 8 * tc; }
  // Shared memory the shader declares for `shape` (input patch + weight chunk, fp32; with a
  // pooling epilogue at least the tile's outputs, which it stages there).
  int64_t shared_bytes(const Conv2dShape& shape, bool pool = false) const;
};

// Vulkan guarantees 16 KiB of shared memory per workgroup; the portable set stays within it.
inline constexpr int64_t kPortableSharedBytes = 16384;

// A tiling for `shape` whose shared memory fits kPortableSharedBytes: output channels per
// workgroup follow c_out (no 32-channel tile for a 3-channel output), the chunk follows c_in,
// then chunk, rows and tile width shrink until it fits. With `pool` (a fused 2x2 max-pool) the
// tile's rows and columns stay even. Throws Unsupported if nothing fits.
Conv2dTiling choose_conv2d_tiling(const Conv2dShape& shape, bool pool = false);

// Repacks ONNX weights W[c_out][c_in][kh][kw] into conv2d.comp's blocks
// [co_tile][chunk][ck][kh*kw][cout_tile], zero outside c_in / c_out, so that one chunk's block
// is contiguous.
std::vector<float> pack_conv2d_weights(std::span<const float> w, const Conv2dShape& shape, const Conv2dTiling& tiling);


}  // namespace denox::kernels
