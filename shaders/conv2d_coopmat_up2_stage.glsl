// The staging of conv2d_coopmat_up2.comp (included by it after its macros, bindings, push
// constants and shared memory): where each chunk reads (chunk_at: X0 at low resolution, X1 at
// full resolution), the patch and weights loaded into registers (fetch) and stored into the
// shared stage buffer (stash), and, with ONE_PHASE, the skip's slots (a skip of more than 12
// channels, SKIP_ROWS: the patch path in row steps).

// The next chunk in registers (one array for every path: see conv2d_coopmat.comp).
// What each chunk kind's paths need in registers: X0 chunks, then X1 chunks.
#if A_DIRECT
#define STAGE_U_N 1  // (X0 chunks stage their weights only)
#elif X0_HWC
#define STAGE_U_N (2 * PER_T(HV_U))
#else
#define STAGE_U_N MAX2(PER_T(X_U), 4 * PER_T(XV_U))
#endif
#if !CONCAT
#define STAGE_S_N 0
#elif ONE_PHASE && !SKIP_ROWS
#define STAGE_S_N (2 * PER_T(SLOTS))
#elif X1_HWC
#define STAGE_S_N (2 * PER_T(HV_S))
#else
#define STAGE_S_N MAX2(PER_T(X_S), 4 * PER_T(XV_S))
#endif
#define STAGE_N MAX2(STAGE_U_N, STAGE_S_N)
// Loop bounds of each path: enough for the chunk kinds that take it (the others never do).
#define MIN2(a, b) ((a) < (b) ? (a) : (b))
#define HV_LOOP MIN2(HV_PER_T, STAGE_N / 2)
#define XV_LOOP MIN2(XV_PER_T, STAGE_N / 4)
#define X_LOOP MIN2(X_PER_T, STAGE_N)
f16vec4 stage[STAGE_N];
// Weights staged 8 halves per item: one 16-byte load (NT is a multiple of 8, so a row of NT
// halves is whole items and every item 16-byte aligned). On the H100 this made dec_conv3a 10%
// faster than 8-byte items; in conv2d_coopmat, whose chunks hold fewer weights, it was 5-11%
// slower (bench/RESULTS.md, 2026-11-25 night).
#define W8_PER_T PER_T(MAX2(WU_ITEMS, WS_ITEMS) / 2)
uvec4 pw[W8_PER_T];

// Where a chunk reads from: X0 at low resolution or X1 at full resolution (uniform).
struct Source {
  bool up;           // an X0 chunk
  uint n;            // image
  uint first;        // the chunk's first channel in its tensor
  uint tc;           // the tensor's channel count
  uint channels;     // valid channels left from the chunk's first (masking past the tensor)
  uint path;         // PATH_* (below)
  int y0, x0;        // the patch's origin in the source
  uint ys;           // the source rows between two patch rows (2: SKIP_ROWS's row steps)
  uint bh, bw;       // rows / columns that hold data (zeros beyond)
};

// How a chunk is staged (conv2d_coopmat.comp's paths): 8 channels of a pixel per item from an
// HWC tensor whose channel count is a multiple of 8, 4 channels x 4 pixels from an NCHW one with
// rows of a multiple of 4 pixels, else one pixel's 4 channels at a time.
#define PATH_SCALAR 0u
#define PATH_NCHW4 1u
#define PATH_HWC8 2u

// Element index of the chunk's channel c at pixel (iy, ix) of its tensor, in its layout.
uint src_index(const Source s, uint c, uint iy, uint ix) {
  const uint h = s.up ? pc.h0 : pc.h1, w = s.up ? pc.w0 : pc.w1;
  const bool hwc = s.up ? X0_HWC != 0 : X1_HWC != 0;
  return hwc ? ((s.n * h + iy) * w + ix) * s.tc + s.first + c : ((s.n * s.tc + s.first + c) * h + iy) * w + ix;
}

f16vec4 load4(const Source s, uint c, uint iy, uint x) {
#if CONCAT
  if (!s.up) return x1v4[src_index(s, c, iy, x) >> 2];
#endif
  return x0v4[src_index(s, c, iy, x) >> 2];
}

uvec4 load8(const Source s, uint c, uint iy, uint ix) {
#if CONCAT
  if (!s.up) return x1u4[src_index(s, c, iy, ix) >> 3];
#endif
  return x0u4[src_index(s, c, iy, ix) >> 3];
}

float16_t load1(const Source s, uint c, uint iy, uint ix) {
#if CONCAT
  if (!s.up) return x1[src_index(s, c, iy, ix)];
#endif
  return x0[src_index(s, c, iy, ix)];
}

// Fetches a patch of hh x hw pixels into `stage`. hh, hw and `hwc` (the source is NHWC: the
// 16-byte path, else s.path) are constants at each call site, so each keeps its paths only.
void fetch_patch(const Source s, uint t, uint hh, uint hw, const bool hwc) {
  if (hwc) {
    LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
      const uint e = t + i * WG_SIZE;
      stage[2 * i] = stage[2 * i + 1] = f16vec4(0.0);
      if (e < hh * hw * (CK / 8)) {
        const uint h8 = e % (CK / 8), p = e / (CK / 8);
        const int iy = s.y0 + int(s.ys * (p / hw)), ix = s.x0 + int(p % hw);
        if (8 * h8 < s.channels && iy >= 0 && iy < int(s.bh) && ix >= 0 && ix < int(s.bw)) {
          const uvec4 u = load8(s, 8 * h8, uint(iy), uint(ix));
          stage[2 * i] = f16vec4(unpackFloat2x16(u.x), unpackFloat2x16(u.y));
          stage[2 * i + 1] = f16vec4(unpackFloat2x16(u.z), unpackFloat2x16(u.w));
        }
      }
    }
  } else if (s.path == PATH_NCHW4) {
    const uint ng = (hw + 6) / 4;
    const int xa = s.x0 - (s.x0 & 3);
    LOOP_UNROLL for (uint i = 0; i < XV_LOOP; ++i) {
      const uint e = t + i * WG_SIZE;
      LOOP_UNROLL for (uint j = 0; j < 4; ++j) stage[i * 4 + j] = f16vec4(0.0);
      if (e < (CK / 4) * hh * ng) {
        const uint q = e % (CK / 4), r = e / (CK / 4), g = r % ng, hy = r / ng;
        const int iy = s.y0 + int(s.ys * hy), x = xa + int(4 * g);
        if (iy >= 0 && iy < int(s.bh) && x >= 0 && x < int(s.bw)) {
          LOOP_UNROLL for (uint j = 0; j < 4; ++j)
            if (4 * q + j < s.channels) stage[i * 4 + j] = load4(s, 4 * q + j, uint(iy), uint(x));
        }
      }
    }
  } else {
    LOOP_UNROLL for (uint i = 0; i < X_LOOP; ++i) {
      const uint e = t + i * WG_SIZE;
      f16vec4 v = f16vec4(0.0);
      if (e < (CK / 4) * hh * hw) {
        const uint q = e / (hh * hw), p = e % (hh * hw);
        const int iy = s.y0 + int(s.ys * (p / hw)), ix = s.x0 + int(p % hw);
        if (iy >= 0 && iy < int(s.bh) && ix >= 0 && ix < int(s.bw)) {
          LOOP_UNROLL for (uint j = 0; j < 4; ++j)
            if (4 * q + j < s.channels) v[j] = load1(s, 4 * q + j, uint(iy), uint(ix));
        }
      }
      stage[i] = v;
    }
  }
}

// Stores the fetched patch: patch pixel (hy, hx) at row hy, column hx (X0 chunks) or, with
// `deint` (X1 chunks), column (hx & 1) * FHALF + hx / 2; `ps4` f16vec4 per pixel.
void stash_patch(const Source s, uint t, uint hh, uint hw, bool deint, const bool hwc, const uint ps4) {
  if (hwc) {
    LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
      const uint e = t + i * WG_SIZE;
      if (e < hh * hw * (CK / 8)) {
        const uint h8 = e % (CK / 8), p = e / (CK / 8), hy = p / hw, hx = p % hw;
        const uint col = deint ? (hx & 1u) * FHALF + (hx >> 1) : hx;
        smem[(hy * hw + col) * ps4 + 2 * h8] = stage[2 * i];
        smem[(hy * hw + col) * ps4 + 2 * h8 + 1] = stage[2 * i + 1];
      }
    }
  } else if (s.path == PATH_NCHW4) {
    const uint ng = (hw + 6) / 4;
    const int off = s.x0 & 3;  // patch column of pixel 4g + k is 4g + k - off
    LOOP_UNROLL for (uint i = 0; i < XV_LOOP; ++i) {
      const uint e = t + i * WG_SIZE;
      if (e < (CK / 4) * hh * ng) {
        const uint q = e % (CK / 4), r = e / (CK / 4), g = r % ng, hy = r / ng;
        LOOP_UNROLL for (uint k = 0; k < 4; ++k) {
          const int hx = int(4 * g + k) - off;
          if (hx >= 0 && hx < int(hw)) {
            const uint col = deint ? (uint(hx) & 1u) * FHALF + (uint(hx) >> 1) : uint(hx);
            smem[(hy * hw + col) * ps4 + q] =
                f16vec4(stage[i * 4][k], stage[i * 4 + 1][k], stage[i * 4 + 2][k], stage[i * 4 + 3][k]);
          }
        }
      }
    }
  } else {
    LOOP_UNROLL for (uint i = 0; i < X_LOOP; ++i) {
      const uint e = t + i * WG_SIZE;
      if (e < (CK / 4) * hh * hw) {
        const uint q = e / (hh * hw), p = e % (hh * hw), hy = p / hw, hx = p % hw;
        const uint col = deint ? (hx & 1u) * FHALF + (hx >> 1) : hx;
        smem[(hy * hw + col) * ps4 + q] = stage[i];
      }
    }
  }
}

#if ONE_PHASE && CONCAT && !SKIP_ROWS
// The skip's slots (ONE_PHASE above): slot (i, j) holds full-resolution pixels (s.y0 + i,
// s.x0 + 2j + q), q = 0, 1, the plane's channels 0..3 each; zero outside the data and past
// its channels.
void fetch_slots(const Source s, uint t) {
  LOOP_UNROLL for (uint i = 0; i < PER_T(SLOTS); ++i) {
    const uint e = t + i * WG_SIZE;
    float16_t v[8];
    [[unroll]] for (uint k = 0; k < 8; ++k) v[k] = float16_t(0.0);
    if (e < SLOTS) {
      const int iy = s.y0 + int(e / SLOT_W), ix = s.x0 + 2 * int(e % SLOT_W);
      [[unroll]] for (uint q = 0; q < 2; ++q) {
        if (iy >= 0 && iy < int(s.bh) && ix + int(q) >= 0 && ix + int(q) < int(s.bw)) {
          [[unroll]] for (uint c = 0; c < 4; ++c)
            if (c < s.channels) v[4 * q + c] = load1(s, c, uint(iy), uint(ix + int(q)));
        }
      }
    }
    stage[2 * i] = f16vec4(v[0], v[1], v[2], v[3]);
    stage[2 * i + 1] = f16vec4(v[4], v[5], v[6], v[7]);
  }
}

void stash_slots(uint t) {
  LOOP_UNROLL for (uint i = 0; i < PER_T(SLOTS); ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < SLOTS) {
      smem[2 * e] = stage[2 * i];
      smem[2 * e + 1] = stage[2 * i + 1];
    }
  }
}
#endif

#if ONE_PHASE && X0_HWC && !X0_Q8 && !A_DIRECT
#define X0_BASES 1
// A one-phase workgroup's X0 chunks all read the same low-resolution patch pixels, so where
// each of this invocation's items reads (the element index of its 8 channels in the chunk of
// channel 0; -1 outside X0: zeros, -2 past the patch) and where it goes in shared memory are
// computed once, not per chunk: a chunk adds its first channel. An item's channel group is
// t % (CK / 8) for all its items (WG_SIZE is even), so the channel mask is uniform. On the H100
// dec_conv1a went 0.408 -> 0.395 ms (int8 plan) and 0.408 -> 0.378 (fp16), dec_conv2a 0.220 ->
// 0.213 (fp16) (bench/RESULTS.md, 2026-11-27 second session).
#if (WG_SIZE % (CK / 8)) != 0
#error "conv2d_coopmat_up2: X0_BASES needs a workgroup size that is a multiple of CK / 8"
#endif
int x0_at[HV_LOOP];
uint x0_sm[HV_LOOP];
void x0_bases(const Source s, uint t) {
  LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
    const uint e = t + i * WG_SIZE, h8 = e % (CK / 8), p = e / (CK / 8);
    const uint hy = p / LHALO_W, hx = p % LHALO_W;
    const int iy = s.y0 + int(hy), ix = s.x0 + int(hx);
    x0_sm[i] = (hy * LHALO_W + hx) * (CKS / 4) + 2 * h8;
    x0_at[i] = e >= HV_U ? -2
               : iy >= 0 && iy < int(s.bh) && ix >= 0 && ix < int(s.bw) ? int(((s.n * pc.h0 + uint(iy)) * pc.w0 + uint(ix)) * pc.c0 + 8 * h8)
                                                                          : -1;
  }
}

void fetch_x0(const Source s, uint t) {
  const bool in_c = 8 * (t % (CK / 8)) < s.channels;
  LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
    stage[2 * i] = stage[2 * i + 1] = f16vec4(0.0);
    if (x0_at[i] >= 0 && in_c) {
      const uvec4 u = x0u4[(uint(x0_at[i]) + s.first) >> 3];
      stage[2 * i] = f16vec4(unpackFloat2x16(u.x), unpackFloat2x16(u.y));
      stage[2 * i + 1] = f16vec4(unpackFloat2x16(u.z), unpackFloat2x16(u.w));
    }
  }
}

void stash_x0(uint t) {
  LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
    if (x0_at[i] != -2) {
      smem[x0_sm[i]] = stage[2 * i];
      smem[x0_sm[i] + 1] = stage[2 * i + 1];
    }
  }
}
#else
#define X0_BASES 0
#endif

#if X0_Q8
// An int8 X0 chunk (X0_Q8): 16 codes of a patch pixel per item into two f16vec4 of `stage` (bit
// copies); outside X0 its zero point's code (real zero: the padding), past c0 zeros (zero weights).
void fetch_patch_q8(const Source s, uint t) {
  const uint zp = (uint(X0_ZP) & 255u) * 0x01010101u;
  LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
    const uint e = t + i * WG_SIZE;
    uvec4 u = uvec4(0u);
    if (e < HV_U) {
      const uint h = e & 1u, p = e >> 1;
      const int iy = s.y0 + int(p / LHALO_W), ix = s.x0 + int(p % LHALO_W);
      if (16 * h >= s.channels) {
        u = uvec4(0u);
      } else if (iy >= 0 && iy < int(s.bh) && ix >= 0 && ix < int(s.bw)) {
        u = x0u4[(((s.n * pc.h0 + uint(iy)) * pc.w0 + uint(ix)) * pc.c0 + s.first + 16 * h) >> 4];
      } else {
        u = uvec4(zp);
      }
    }
    stage[2 * i] = f16vec4(unpackFloat2x16(u.x), unpackFloat2x16(u.y));
    stage[2 * i + 1] = f16vec4(unpackFloat2x16(u.z), unpackFloat2x16(u.w));
  }
}

// ... and into the patch, QS f16vec4 a pixel.
void stash_patch_q8(uint t) {
  LOOP_UNROLL for (uint i = 0; i < HV_LOOP; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < HV_U) {
      smem[(e >> 1) * QS + 2 * (e & 1u)] = stage[2 * i];
      smem[(e >> 1) * QS + 2 * (e & 1u) + 1] = stage[2 * i + 1];
    }
  }
}

// The phase's int8 weights: rows (tap, n) of 32 codes, QS f16vec4 apart.
void stash_weights_q8(uint sb, uint t) {
  LOOP_UNROLL for (uint i = 0; i < W8_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < WU_ITEMS / 2) {
      smem[sb + (e >> 1) * QS + 2 * (e & 1u)] = f16vec4(unpackFloat2x16(pw[i].x), unpackFloat2x16(pw[i].y));
      smem[sb + (e >> 1) * QS + 2 * (e & 1u) + 1] = f16vec4(unpackFloat2x16(pw[i].z), unpackFloat2x16(pw[i].w));
    }
  }
}
#endif

void fetch_weights(uint wb, uint items, uint t) {
  LOOP_UNROLL for (uint i = 0; i < W8_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < items / 2) pw[i] = wtsu4[(wb >> 1) + e];
  }
}

void stash_weights(uint sb, uint items, uint t) {
  LOOP_UNROLL for (uint i = 0; i < W8_PER_T; ++i) {
    const uint e = t + i * WG_SIZE;
    if (e < items / 2) {
      const uint at = sb + (e / (NT / 8)) * (NTS / 4) + 2 * (e % (NT / 8));
      smem[at] = f16vec4(unpackFloat2x16(pw[i].x), unpackFloat2x16(pw[i].y));
      smem[at + 1] = f16vec4(unpackFloat2x16(pw[i].z), unpackFloat2x16(pw[i].w));
    }
  }
}

// Chunk `chunk` of the workgroup: what it reads, and where its weights start (f16vec4 units).
struct Chunk {
  Source s;
  uint w_at;
};

// `fast_u` / `fast_s`: the NCHW fast path may read X0 / X1 (row widths multiples of 4).
// (oy0, ox0): the workgroup's first output pixel or, with ONE_PHASE, its first pixel of the
// low-resolution grid and `ph` its phase.
Chunk chunk_at(uint chunk, uint n, uint cu, uint w_tile, int oy0, int ox0, uint ph, bool fast_u, bool fast_s) {
  Chunk c;
  c.s.n = n;
  c.s.ys = 1;
  if (chunk < cu) {
    c.s.up = true;
    c.s.tc = pc.c0;
    c.s.first = chunk * CKU;
    c.s.channels = pc.c0 - chunk * CKU;
    c.s.path = X0_HWC != 0 ? PATH_HWC8 : fast_u ? PATH_NCHW4 : PATH_SCALAR;
#if ONE_PHASE
    c.s.y0 = oy0 + int(ph >> 1) - 1, c.s.x0 = ox0 + int(ph & 1u) - 1;
    c.w_at = w_tile + chunk * WU_BLOCK + ph * WU_ITEMS;  // this phase's 4 taps of the chunk
#else
    c.s.y0 = oy0 / 2 - 1, c.s.x0 = ox0 / 2 - 1;
    c.w_at = w_tile + chunk * WU_BLOCK;
#endif
    c.s.bh = pc.h0, c.s.bw = pc.w0;
  } else {
    const uint k = (chunk - cu) / SKIP_STEPS, ky = (chunk - cu) % SKIP_STEPS;  // ky: SKIP_ROWS's row step
    c.s.up = false;
    c.s.tc = pc.c_in - pc.c0;
    c.s.first = k * SKIP_CK;
    c.s.channels = pc.c_in - pc.c0 - k * SKIP_CK;
    c.s.path = X1_HWC != 0 ? PATH_HWC8 : fast_s ? PATH_NCHW4 : PATH_SCALAR;
#if ONE_PHASE
    c.s.y0 = 2 * oy0 + int(ph >> 1) - 1 + int(ky), c.s.x0 = 2 * ox0 + int(ph & 1u) - 1;
    c.s.ys = SKIP_ROWS != 0 ? 2u : 1u;
#else
    c.s.y0 = oy0 - 1, c.s.x0 = ox0 - 1;
#endif
    c.s.bh = min(pc.h, pc.bh1), c.s.bw = min(pc.w, pc.bw1);
    c.w_at = w_tile + cu * WU_BLOCK + k * WS_BLOCK + ky * WS_ITEMS;
  }
  return c;
}

void fetch(const Chunk c, uint t) {
  if (c.s.up) {
#if A_DIRECT
    // (no patch: the lanes load their A fragments themselves, conv2d_coopmat_adirect.glsl)
#elif X0_Q8
    fetch_patch_q8(c.s, t);
#elif X0_BASES
    fetch_x0(c.s, t);
#else
    fetch_patch(c.s, t, LHALO_H, LHALO_W, X0_HWC != 0);
#endif
    fetch_weights(c.w_at, WU_ITEMS, t);
  } else {
#if SKIP_ROWS
    fetch_patch(c.s, t, TILE_H, SPW, X1_HWC != 0);
    fetch_weights(c.w_at, WS_ITEMS, t);
#elif CONCAT && ONE_PHASE
    fetch_slots(c.s, t);
    fetch_weights(c.w_at, WS_ITEMS, t);
#elif CONCAT
    fetch_patch(c.s, t, FHALO_H, FHALO_W, X1_HWC != 0);
    fetch_weights(c.w_at, WS_ITEMS, t);
#endif
  }
}

void stash(const Chunk c, uint t) {
  if (c.s.up) {
#if A_DIRECT
    stash_weights(LX_VEC4, WU_ITEMS, t);
#elif X0_Q8
    stash_patch_q8(t);
    stash_weights_q8(LX_VEC4, t);
#elif X0_BASES
    stash_x0(t);
    stash_weights(LX_VEC4, WU_ITEMS, t);
#else
    stash_patch(c.s, t, LHALO_H, LHALO_W, false, X0_HWC != 0, CKS / 4);
    stash_weights(LX_VEC4, WU_ITEMS, t);
#endif
  } else {
#if SKIP_ROWS
    stash_patch(c.s, t, TILE_H, SPW, true, X1_HWC != 0, CK / 4);
    stash_weights(SX_VEC4, WS_ITEMS, t);
#elif CONCAT && ONE_PHASE
    stash_slots(t);
    stash_weights(SX_VEC4, WS_ITEMS, t);
#elif CONCAT
    stash_patch(c.s, t, FHALO_H, FHALO_W, true, X1_HWC != 0, CKS / 4);
    stash_weights(FX_VEC4, WS_ITEMS, t);
#endif
  }
}
