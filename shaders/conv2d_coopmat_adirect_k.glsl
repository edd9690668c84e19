// A_DIRECT: one chunk's multiplies (conv2d_coopmat_adirect.glsl's loads), included twice by
// conv2d_coopmat_adirect_chunk.glsl with AD_BOUNDED false (a tile whose patch lies inside X0)
// and true (any other), so that the interior tiles' loads carry no bounds arithmetic
// (bench/RESULTS.md, 2026-11-29 eighteenth session: that arithmetic cost dec_conv2b 0.139 ->
// 0.206 ms). The shader defines AD_KH, AD_KW (the kernel the loop walks: 3x3, or 2x2 for an up2
// phase), AD_B_AT(ky, kx, k) (the staged weights' row, in halves) and has n, iy0, ix0 (the
// patch's origin in X0), chunk, sg_n and r0, cs0 (its first fragment's tile row and 16-pixel
// column segment) in scope.
// Per kernel column and pair of K steps: the subgroup's AD_ROWS row fragments (patch rows r0 ..
// r0 + FM + AD_KH - 2) from X0, then as A_REUSE: row p is kernel row p - i of fragment i.
{
  LOOP_UNROLL for (uint kx = 0; kx < AD_KW; ++kx) {
    LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; kc += 2) {
      AD_DECL;
      LOOP_UNROLL for (uint p = 0; p < AD_ROWS; ++p) AD_LOAD_ROW(AD_BOUNDED, p, n, iy0, ix0, chunk, r0 + p, cs0, kx, kc);
      AD_SYNC();
      LOOP_UNROLL for (uint s = 0; s < 2; ++s) {
        BS_DECL(AD_KH * FN);
        LOOP_UNROLL for (uint ky = 0; ky < AD_KH; ++ky) {
          LOOP_UNROLL for (uint j = 0; j < FN; ++j) BS_LOAD(ky * FN + j, AD_B_AT(ky, kx, (kc + s) * CM_K) + (sg_n * FN + j) * CM_N);
        }
        LOOP_UNROLL for (uint p = 0; p < AD_ROWS; ++p) {
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            if (p >= i && p - i < AD_KH) {
              LOOP_UNROLL for (uint j = 0; j < FN; ++j) AD_MUL_ADD(i, j, s, p, (p - i) * FN + j);
            }
          }
        }
      }
      AD_SYNC();  // (the emulation's fragments are rewritten next)
    }
  }
}
