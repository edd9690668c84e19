// conv2d_coopmat.comp, A_DIRECT: one chunk's multiplies, included twice in main's chunk loop with
// AD_BOUNDED false (a tile whose patch lies inside X0) and true (any other), so that the interior
// tiles' loads carry no bounds arithmetic (bench/RESULTS.md, 2026-11-29 eighteenth session: that
// arithmetic cost dec_conv2b 0.139 -> 0.207 ms).
// Per kernel column and pair of K steps: the subgroup's AD_ROWS row fragments (patch rows r0 ..
// r0 + FM + KH - 2) from X0, then as A_REUSE: row p is kernel row p - i of fragment i.
{
  uint r0, cs0;
  frag_pos(sg_m, 0, r0, cs0);
  LOOP_UNROLL for (uint kx = 0; kx < KW; ++kx) {
    LOOP_UNROLL for (uint kc = 0; kc < CK / CM_K; kc += 2) {
      AD_DECL;
      LOOP_UNROLL for (uint p = 0; p < AD_ROWS; ++p) AD_LOAD_ROW(AD_BOUNDED, p, n, iy0, ix0, chunk, r0 + p, cs0, kx, kc);
      AD_SYNC();
      LOOP_UNROLL for (uint s = 0; s < 2; ++s) {
        BS_DECL(KH * FN);
        LOOP_UNROLL for (uint ky = 0; ky < KH; ++ky) {
          LOOP_UNROLL for (uint j = 0; j < FN; ++j)
            BS_LOAD(ky * FN + j, X_VEC4 * 4 + ((ky * KW + kx) * CK + (kc + s) * CM_K) * NTS + (sg_n * FN + j) * CM_N);
        }
        LOOP_UNROLL for (uint p = 0; p < AD_ROWS; ++p) {
          LOOP_UNROLL for (uint i = 0; i < FM; ++i) {
            if (p >= i && p - i < KH) {
              LOOP_UNROLL for (uint j = 0; j < FN; ++j) AD_MUL_ADD(i, j, s, p, (p - i) * FN + j);
            }
          }
        }
      }
      AD_SYNC();  // (the emulation's fragments are rewritten next)
    }
  }
}
