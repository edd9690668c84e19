// A_DIRECT's A fragment loads, shared by conv2d_coopmat.comp and conv2d_coopmat_up2.comp (one-
// phase X0 chunks). The including shader defines AD_X_H, AD_X_W, AD_X_C (X0's rows, columns and
// channels: the bounds), ad_x8(n, c, y, x) (channels c .. c + 7 of X0's pixel (y, x), NHWC) and
// AD_PREDICATED (the bounded loads: 1 under their conditions, 0 from clamped addresses).
// A_DIRECT: only the weights are staged; each lane builds its share of the A fragments from 16-
// byte loads of X0 (through L1), which frees the patch's shared memory (a 16x16 tile of 32
// channels then fits twice per SM) and takes the patch's stores and its barrier wait out of
// the chunk loop. bench/int8_probe measured the data flow (bench/RESULTS.md, 2026-11-29
// seventeenth session). The element order a lane fills is not in the Vulkan spec: the lowering
// offers A_DIRECT only where runtime::checked_coop_a_rows found it on the device
// (coop_layout_check.cpp, CoopTarget::a_rows). Lane vl = 4 g + t: rows g and g + 8 (pixels cs * 16 + g and
// + 8 of the patch row), channels 8 t .. 8 t + 7 of the 32 at K step pair kc: words 0, 1 to step
// kc's K words t, t + 4 and words 2, 3 to step kc + 1's (pack_coop_weights and
// pack_coop_up2_weights order K to match: a_direct_k).
// Zero outside X0 and past c_in (a multiple of 8: a group is all in or all out).
// `bounded` is a constant at every call (conv2d_coopmat_adirect_k.glsl): false where the whole
// patch lies inside X0 and every chunk is full, and then the loads need no checks.
void ad_fetch(const bool bounded, uint vl, uint n, int iy0, int ix0, uint chunk, uint pr, uint cs, uint kx, uint kc, out uvec4 d0,
              out uvec4 d1) {
  const uint g = vl >> 2, tq = vl & 3u;
  const int iy = iy0 + int(pr), ix = ix0 + int(cs * CM_M + g + kx);
  const uint ci = chunk * CK + kc * CM_K + 8 * tq;
  if (!bounded) {
    d0 = ad_x8(n, ci, uint(iy), uint(ix));
    d1 = ad_x8(n, ci, uint(iy), uint(ix + 8));
    return;
  }
  const bool row = ci < AD_X_C && iy >= 0 && iy < int(AD_X_H);
  const bool in0 = row && ix >= 0 && ix < int(AD_X_W), in1 = row && ix + 8 >= 0 && ix + 8 < int(AD_X_W);
#if AD_PREDICATED
  // Loads under their conditions: conv2d_coopmat's choice (the bounded copy then takes fewer
  // registers than with clamped addresses: dec_conv3b 0.085 -> 0.077 ms, dec_conv2b 0.145 ->
  // 0.139, dec_conv1b with its tail 0.306 -> 0.293 on the H200).
  d0 = d1 = uvec4(0);
  if (in0) d0 = ad_x8(n, ci, uint(iy), uint(ix));
  if (in1) d1 = ad_x8(n, ci, uint(iy), uint(ix + 8));
#else
  // Both loads from clamped addresses (always inside X0: its channels >= 8), zeroed after where
  // outside: no branch around a load (conv2d_coopmat_up2's choice: predicated, its dec_conv1a
  // spilled and ran 0.369 -> 0.374 ms).
  const uint cc = min(ci, AD_X_C - 8), yc = uint(clamp(iy, 0, int(AD_X_H) - 1));
  d0 = ad_x8(n, cc, yc, uint(clamp(ix, 0, int(AD_X_W) - 1)));
  d1 = ad_x8(n, cc, yc, uint(clamp(ix + 8, 0, int(AD_X_W) - 1)));
  if (!in0) d0 = uvec4(0);
  if (!in1) d1 = uvec4(0);
#endif
}
#if COOP_EMULATE
// Every virtual lane of a 32-lane subgroup, SUBGROUP_SIZE at a time.
void ad_load_row(const bool bounded, uint f0, uint f1, uint n, int iy0, int ix0, uint chunk, uint pr, uint cs, uint kx, uint kc) {
  for (uint vl = gl_SubgroupInvocationID; vl < 32; vl += SUBGROUP_SIZE) {
    uvec4 d0, d1;
    ad_fetch(bounded, vl, n, iy0, ix0, chunk, pr, cs, kx, kc, d0, d1);
    ad_set(f0, vl, 0, d0.x);
    ad_set(f0, vl, 1, d0.y);
    ad_set(f0, vl, 2, d1.x);
    ad_set(f0, vl, 3, d1.y);
    ad_set(f1, vl, 0, d0.z);
    ad_set(f1, vl, 1, d0.w);
    ad_set(f1, vl, 2, d1.z);
    ad_set(f1, vl, 3, d1.w);
  }
}
#define AD_LOAD_ROW(bounded, p, n, iy0, ix0, chunk, pr, cs, kx, kc) \
  ad_load_row(bounded, AD_FRAG(0, p), AD_FRAG(1, p), n, iy0, ix0, chunk, pr, cs, kx, kc)
#else
void ad_load_row(const bool bounded, inout AD_A_T a0, inout AD_A_T a1, uint n, int iy0, int ix0, uint chunk, uint pr, uint cs, uint kx, uint kc) {
  uvec4 d0, d1;
  ad_fetch(bounded, gl_SubgroupInvocationID, n, iy0, ix0, chunk, pr, cs, kx, kc, d0, d1);
  ad_set(a0, 0, d0.x);
  ad_set(a0, 1, d0.y);
  ad_set(a0, 2, d1.x);
  ad_set(a0, 3, d1.y);
  ad_set(a1, 0, d0.z);
  ad_set(a1, 1, d0.w);
  ad_set(a1, 2, d1.z);
  ad_set(a1, 3, d1.w);
}
#define AD_LOAD_ROW(bounded, p, n, iy0, ix0, chunk, pr, cs, kx, kc) \
  ad_load_row(bounded, ad[0][p], ad[1][p], n, iy0, ix0, chunk, pr, cs, kx, kc)
#endif
