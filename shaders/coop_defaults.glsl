// The optional macros the cooperative-matrix conv families (conv2d_coopmat, conv2d_coopmat_up2,
// conv2d_coopmat_q8) share, 0 (off) where the lowering leaves them out. Each family's
// *_config.glsl includes it first and documents which of them it takes (a family that never
// reads one, e.g. conv2d_coopmat_q8's HAS_BIAS, gets a 0 that changes nothing).
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif
#ifndef CONCAT
#define CONCAT 0
#endif
#ifndef UPSAMPLE0
#define UPSAMPLE0 0
#endif
#ifndef POOL
#define POOL 0
#endif
#ifndef B_GLOBAL
#define B_GLOBAL 0
#endif
#ifndef TAIL
#define TAIL 0
#endif
#ifndef X0_HWC
#define X0_HWC 0
#endif
#ifndef X1_HWC
#define X1_HWC 0
#endif
#ifndef Y_HWC
#define Y_HWC 0
#endif
#ifndef Y_Q8
#define Y_Q8 0  // with Y_HWC: an NHWC_Q8 output (conv2d_coopmat.comp says how)
#endif
