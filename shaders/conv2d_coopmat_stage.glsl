// The staging of conv2d_coopmat.comp (included by it after its macros, bindings, push
// constants and shared memory): a chunk's input patch and weights, loaded from global memory
// into registers (fetch) and stored into the shared stage buffer (stash), on the staging path
// the chunk's source allows (chunk_path), or as NARROW's slots. conv2d_coopmat.comp's header
// says what the paths are and why.

// A chunk between its global loads and its shared-memory stores. One array serves every input
// path (the choice is made at run time; separate arrays cost registers on the H100).
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#if NARROW
#define STAGE_N (2 * NS_PER_T)
#elif HWC_ONLY
#define STAGE_N (2 * HV_PER_T)
#elif ANY_HWC_INPUT
#define STAGE_N MAX2(MAX2(X_PER_T, 4 * XV_PER_T), 2 * HV_PER_T)
#else
#define STAGE_N MAX2(X_PER_T, 4 * XV_PER_T)
#endif
f16vec4 stage[STAGE_N];
#define px(i) stage[i]
#define pxv(i, j) stage[(i) * 4 + (j)]  // NCHW fast path: item i, channel j = 4 pixels
#define phv(i, j) stage[(i) * 2 + (j)]  // HWC path: item i, channels 4j .. 4j + 3

// How a chunk is staged (uniform per chunk): 8 channels of a pixel per item from HWC tensors,
// 4 channels x 4 pixels from NCHW ones, or one pixel's 4 channels at a time (any layout).
#define PATH_SCALAR 0u
#define PATH_NCHW4 1u
#define PATH_HWC8 2u

// Element index of channel c of pixel (iy, ix) of X0 (stored extents c0 x h0 x w0) and of X1
// (c_in - c0 x h1 x w1), in their layouts.
uint x0_index(uint n, uint c, uint iy, uint ix) {
#if X0_HWC
  return ((n * pc.h0 + iy) * pc.w0 + ix) * pc.c0 + c;
#else
  return ((n * pc.c0 + c) * pc.h0 + iy) * pc.w0 + ix;
#endif
}
#if CONCAT
uint x1_index(uint n, uint c, uint iy, uint ix) {
#if X1_HWC
  return ((n * pc.h1 + iy) * pc.w1 + ix) * (pc.c_in - pc.c0) + c;
#else
  return ((n * (pc.c_in - pc.c0) + c) * pc.h1 + iy) * pc.w1 + ix;
#endif
}
#endif
#if !B_GLOBAL
f16vec4 pw[W_PER_T];

// The weights of chunk `chunk` into registers (pw), and from there into the stage buffer at `xb`
// (f16vec4 units), after the patch: row (tap, k) of NT channels at a stride of NTS halves.
// (conv2d_coopmat_head.glsl stages them apart from the patch, which the head computes.)
void fetch_weights(uint chunk, uint t, uint w_base) {
  const uint wb = w_base + chunk * W_ITEMS;
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < W_ITEMS) pw[i] = wts[wb + e];
  }
}
void stash_weights(uint t, uint xb) {
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < W_ITEMS) {
      const uint row = e / (NT / 4), c4 = e % (NT / 4);
      smem[xb + X_VEC4 + row * (NTS / 4) + c4] = pw[i];
    }
  }
}
#endif

// One input value of the GEMM's view of the input (after concat and upsample), 0 outside.
float16_t load_x(uint n, uint ci, int iy, int ix) {
  if (ci >= pc.c_in) return float16_t(0.0);
#if CONCAT
  if (ci >= pc.c0) {
    if (uint(iy) >= pc.bh1 || uint(ix) >= pc.bw1) return float16_t(0.0);  // a folded Pad's zeros
    return x1[x1_index(n, ci - pc.c0, uint(iy), uint(ix))];
  }
#endif
#if UPSAMPLE0
  // Nearest 2x: output row iy reads row iy / 2 (the lowering checks h = 2 h0, w = 2 w0).
  return x0[x0_index(n, ci, min(uint(iy) >> 1, pc.h0 - 1), min(uint(ix) >> 1, pc.w0 - 1))];
#else
  return x0[x0_index(n, ci, uint(iy), uint(ix))];
#endif
}

// Channels ci .. ci + 7 (ci < c_in, a multiple of 8, all in one HWC tensor whose channel count
// is a multiple of 8) of pixel (iy, ix), in bounds: one 16-byte load.
uvec4 load_x8(uint n, uint ci, uint iy, uint ix) {
#if CONCAT
  if (ci >= pc.c0) return x1u4[x1_index(n, ci - pc.c0, iy, ix) >> 3];
#endif
#if UPSAMPLE0
  return x0u4[x0_index(n, ci, min(iy >> 1, pc.h0 - 1), min(ix >> 1, pc.w0 - 1)) >> 3];
#else
  return x0u4[x0_index(n, ci, iy, ix) >> 3];
#endif
}

// The staging path of chunk `chunk` (input channels [chunk * CK, min(chunk * CK + CK, c_in))).
// `widths4`: every row width the NCHW path reads is a multiple of 4.
uint chunk_path(uint chunk, bool widths4) {
#if HWC_ONLY
  return PATH_HWC8;
#else
  const uint first = chunk * CK, end = min(first + CK, pc.c_in);
  const bool reads0 = first < pc.c0;
#if CONCAT
  const bool reads1 = end > pc.c0;
  const bool hwc1 = X1_HWC != 0 && ((pc.c_in - pc.c0) & 7u) == 0u, nchw1 = X1_HWC == 0;
#else
  const bool reads1 = false, hwc1 = false, nchw1 = false;
#endif
  const bool hwc0 = X0_HWC != 0 && (pc.c0 & 7u) == 0u, nchw0 = X0_HWC == 0;
  if ((!reads0 || hwc0) && (!reads1 || hwc1)) return PATH_HWC8;
  if (widths4 && (!reads0 || nchw0) && (!reads1 || nchw1)) return PATH_NCHW4;
  return PATH_SCALAR;
#endif
}

// Pixels x .. x+3 (x a multiple of 4, inside the row; every width a multiple of 4) of channel
// ci < c_in of an NCHW tensor.
f16vec4 load_x4(uint n, uint ci, uint iy, uint x) {
#if CONCAT
  if (ci >= pc.c0) {
    if (iy >= pc.bh1 || x >= pc.bw1) return f16vec4(0.0);
    return x1v4[x1_index(n, ci - pc.c0, iy, x) >> 2];
  }
#endif
#if UPSAMPLE0
  // Source pixels x/2, x/2 + 1 (w0 = w/2 is even, so the pair is 4-byte aligned).
  const f16vec2 s = x0v2[(((n * pc.c0 + ci) * pc.h0 + min(iy >> 1, pc.h0 - 1)) * pc.w0 + (x >> 1)) >> 1];
  return f16vec4(s.x, s.x, s.y, s.y);
#else
  return x0v4[x0_index(n, ci, iy, x) >> 2];
#endif
}

#if NARROW
// The slots of chunk `chunk`'s patch (NARROW above): slot (hy, sx) holds pixel (hy, sx) and,
// with NARROW=2, pixel (hy, sx + 1), the chunk's 8 / NARROW channels each; zero outside the
// input, past c_in and past the halo.
void fetch_slots(uint chunk, uint t, uint n, int iy0, int ix0) {
  LOOP_UNROLL for (uint i = 0; i < NS_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    float16_t v[8];
    [[unroll]] for (uint k = 0; k < 8; ++k) v[k] = float16_t(0.0);
    if (e < SLOTS) {
      const uint hy = e / SLOT_W, sx = e % SLOT_W;
      const int iy = iy0 + int(hy);
      [[unroll]] for (uint q = 0; q < NARROW; ++q) {
        const int ix = ix0 + int(sx + q);
        if (sx + q < HALO_W && iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w)) {
          [[unroll]] for (uint c = 0; c < 8 / NARROW; ++c) v[q * (8 / NARROW) + c] = load_x(n, chunk * (8 / NARROW) + c, iy, ix);
        }
      }
    }
    stage[2 * i] = f16vec4(v[0], v[1], v[2], v[3]);
    stage[2 * i + 1] = f16vec4(v[4], v[5], v[6], v[7]);
  }
}
#endif

void fetch(uint chunk, uint t, uint n, int iy0, int ix0, uint w_base, uint path) {
#if PROFILE_SKIP_FETCH
  // Registers get values that depend on the chunk (so nothing is folded away), no memory read.
  const float16_t z = float16_t(float(chunk & 1u) * 0.5);
  LOOP_UNROLL for (uint i = 0; i < STAGE_N; ++i) stage[i] = f16vec4(z);
#if !B_GLOBAL
  LOOP_UNROLL for (uint i = 0; i < W_PER_T; ++i) pw[i] = f16vec4(z);
#endif
  return;
#endif
#if NARROW
  fetch_slots(chunk, t, n, iy0, ix0);
#else
  if (path == PATH_HWC8) {
#if ANY_HWC_INPUT  // else never taken (and its register array not declared)
    // Item e: 8-channel group h8 (fastest) of patch pixel p: a warp reads 32-byte runs of
    // consecutive pixels.
    LOOP_UNROLL for (uint i = 0; i < HV_PER_T; ++i) {
      const uint e = t + i * WG_SIZE;
      phv(i, 0) = phv(i, 1) = f16vec4(0.0);
      if (e < HV_ITEMS) {
        const uint h8 = e % (CK / 8), p = e / (CK / 8);
        const int iy = iy0 + int(p / HALO_W), ix = ix0 + int(p % HALO_W);
        const uint ci = chunk * CK + 8 * h8;
        if (ci < pc.c_in && iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w)) {
          const uvec4 u = load_x8(n, ci, uint(iy), uint(ix));
          phv(i, 0) = f16vec4(unpackFloat2x16(u.x), unpackFloat2x16(u.y));
          phv(i, 1) = f16vec4(unpackFloat2x16(u.z), unpackFloat2x16(u.w));
        }
      }
    }
#endif
#if !HWC_ONLY  // NCHW tensors or channel counts that are no multiple of 8 (see chunk_path)
  } else if (path == PATH_NCHW4) {
    // Item e: channel quad q (fastest, so a warp's loads are 4 planes x 8 groups: whole
    // sectors), group g, patch row hy.
    const int xa = ix0 - (ix0 & 3);
    LOOP_UNROLL for (uint i = 0; i < XV_PER_T; ++i) {
      const uint e = t + i * WG_SIZE;
      LOOP_UNROLL for (uint j = 0; j < 4; ++j) pxv(i, j) = f16vec4(0.0);
      if (e < XV_ITEMS) {
        const uint q = e % (CK / 4), r = e / (CK / 4), g = r % NG, hy = r / NG;
        const int iy = iy0 + int(hy), x = xa + int(4 * g);
        const uint ci = chunk * CK + 4 * q;
        if (iy >= 0 && iy < int(pc.h) && x >= 0 && x < int(pc.w)) {
          LOOP_UNROLL for (uint j = 0; j < 4; ++j)
            if (ci + j < pc.c_in) pxv(i, j) = load_x4(n, ci + j, uint(iy), uint(x));
        }
      }
    }
  } else {
    LOOP_UNROLL for (uint i = 0; i < X_PER_T; ++i) {
      const uint e = t + i * WG_SIZE;
      f16vec4 v = f16vec4(0.0);
      if (e < X_ITEMS) {
        const uint q = e / HALO, p = e % HALO;
        const int iy = iy0 + int(p / HALO_W), ix = ix0 + int(p % HALO_W);
        if (iy >= 0 && iy < int(pc.h) && ix >= 0 && ix < int(pc.w)) {
          const uint ci = chunk * CK + q * 4;
          v = f16vec4(load_x(n, ci, iy, ix), load_x(n, ci + 1, iy, ix), load_x(n, ci + 2, iy, ix), load_x(n, ci + 3, iy, ix));
        }
      }
      px(i) = v;
    }
#endif
  }
#endif  // NARROW
#if !B_GLOBAL
  fetch_weights(chunk, t, w_base);
#endif
}

// Stores the fetched chunk into the stage buffer at `xb` (f16vec4 units): the patch and, unless
// B_GLOBAL, the weights after it.
void stash(uint t, int ix0, uint path, uint xb) {
#if NARROW
  LOOP_UNROLL for (uint i = 0; i < NS_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < SLOTS) {
      smem[xb + 2 * e] = stage[2 * i];
      smem[xb + 2 * e + 1] = stage[2 * i + 1];
    }
  }
#else
  if (path == PATH_HWC8) {
#if ANY_HWC_INPUT  // else never taken (and its register array not declared)
    LOOP_UNROLL for (uint i = 0; i < HV_PER_T; ++i) {
      const uint e = t + i * WG_SIZE;
      if (e < HV_ITEMS) {
        const uint h8 = e % (CK / 8), p = e / (CK / 8);
        smem[xb + p * (CKS / 4) + 2 * h8] = phv(i, 0);
        smem[xb + p * (CKS / 4) + 2 * h8 + 1] = phv(i, 1);
      }
    }
#endif
#if !HWC_ONLY  // NCHW tensors or channel counts that are no multiple of 8 (see chunk_path)
  } else if (path == PATH_NCHW4) {
    const int off = ix0 & 3;  // patch column of pixel 4g + k is 4g + k - off
    LOOP_UNROLL for (uint i = 0; i < XV_PER_T; ++i) {
      const uint e = t + i * WG_SIZE;
      if (e < XV_ITEMS) {
        const uint q = e % (CK / 4), r = e / (CK / 4), g = r % NG, hy = r / NG;
        LOOP_UNROLL for (uint k = 0; k < 4; ++k) {
          const int hx = int(4 * g + k) - off;
          if (hx >= 0 && hx < HALO_W)
            smem[xb + (hy * HALO_W + uint(hx)) * (CKS / 4) + q] = f16vec4(pxv(i, 0)[k], pxv(i, 1)[k], pxv(i, 2)[k], pxv(i, 3)[k]);
        }
      }
    }
  } else {
    LOOP_UNROLL for (uint i = 0; i < X_PER_T; ++i) {
      const uint e = t + i * WG_SIZE;
      if (e < X_ITEMS) {
        const uint q = e / HALO, p = e % HALO;
        smem[xb + p * (CKS / 4) + q] = px(i);
      }
    }
#endif
  }
#endif  // NARROW
#if !B_GLOBAL
  stash_weights(t, xb);
#endif
}

// Loads chunk `chunk` and stores it into the stage buffer at `xb` (f16vec4 units), on the
// staging path chunk_path picks for it.
void stage_chunk(uint chunk, uint t, uint n, int iy0, int ix0, uint w_base, bool widths4, uint xb) {
  const uint path = chunk_path(chunk, widths4);
  fetch(chunk, t, n, iy0, ix0, w_base, path);
  stash(t, ix0, path, xb);
}
