// The order in which a coop conv's workgroups take their output tiles.
//
// NVIDIA's GPUs start workgroups roughly in gl_WorkGroupID order (x fastest), so a conv that
// reads a tensor larger than L2 finds in L2 only what the dispatch before it wrote last: the
// bottom-right tiles of its last image. TILES_REVERSED=1 walks the tiles last to first (x, y and
// z: images and channel tiles), so that the conv starts where the one before it ended. The
// lowering sets it on TAIL convs (OIDN's dec_conv1b, which reads dec_conv1a's full-resolution
// output): on an H200, OIDN balanced, the network ran 0.007 ms (int8) and 0.010 ms (fp16)
// faster at 1920x1088, 0.002-0.003 ms at 1280x720; at 3840x2160 the int8 tail conv gained 0.8%
// and the fp16 one lost 0.5% (bench/RESULTS.md, 2026-11-28 twelfth session). The result is the
// same either way; only the order of the workgroups changes.
//
// TILE_WG is the workgroup's tile (x, y, z): use it instead of gl_WorkGroupID wherever a tile is
// meant (conv_tail_sums.glsl numbers the ring pass's partial slots by it).
#ifndef DENOX_TILE_ORDER_GLSL
#define DENOX_TILE_ORDER_GLSL

#ifndef TILES_REVERSED
#define TILES_REVERSED 0
#endif
#if TILES_REVERSED
#define TILE_WG (gl_NumWorkGroups - 1u - gl_WorkGroupID)
#else
#define TILE_WG gl_WorkGroupID
#endif

#endif  // DENOX_TILE_ORDER_GLSL
