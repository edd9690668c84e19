// A_DIRECT: one chunk's multiplies, for conv2d_coopmat.comp's and conv2d_coopmat_up2.comp's chunk
// loops. The K loop (conv2d_coopmat_adirect_k.glsl) is compiled twice, its loads unchecked where
// the includer's `ad_inside` says the workgroup's whole patch lies inside X0 and every chunk is
// full, and bounded for the other workgroups: one uniform choice per workgroup.
if (ad_inside) {
#define AD_BOUNDED false
#include "conv2d_coopmat_adirect_k.glsl"
#undef AD_BOUNDED
} else {
#define AD_BOUNDED true
#include "conv2d_coopmat_adirect_k.glsl"
#undef AD_BOUNDED
}
