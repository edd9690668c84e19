// The fp16 cooperative-matrix conv families' (conv2d_coopmat, conv2d_coopmat_up2) fragment and
// workgroup geometry, derived from their macros the same way: the accumulator type (ACC_F16),
// the 16x16 A fragments every fp16 shape shares (16xCM_Nx16), and SG_M x SG_N subgroups a
// workgroup. conv2d_coopmat_q8 derives its own (int8 fragments are 16x16x32).
#if ACC_F16
#define ACC_T float16_t
#else
#define ACC_T float
#endif

#define CM_M 16
#define CM_K 16
#define SG_COUNT (SG_M * SG_N)
#define WG_SIZE (SG_COUNT * SUBGROUP_SIZE)
