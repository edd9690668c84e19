// The order in which a coop conv's workgroups take their output tiles.
//
// NVIDIA's GPUs start workgroups roughly in gl_WorkGroupID order (x fastest), so a conv that
// reads a tensor larger than L2 finds in L2 only what the dispatch before it wrote last: its
// bottom-right tiles. TILES_REVERSED=1 walks the (x, y) tiles last to first, so that the conv
// starts where the one before it ended. The lowering sets it on TAIL convs (OIDN's dec_conv1b,
// which reads dec_conv1a's full-resolution output): on an H200 at 1920x1088 the network ran
// 0.007 ms (int8) and 0.010 ms (fp16) faster (bench/RESULTS.md, 2026-11-28 twelfth session).
// The result is the same either way; only the order of the workgroups changes.
//
// TILE_WG is the workgroup's tile (x, y, z): use it instead of gl_WorkGroupID wherever a tile is
// meant (conv_tail_sums.glsl numbers the ring pass's partial slots by it).
#ifndef DENOX_TILE_ORDER_GLSL
#define DENOX_TILE_ORDER_GLSL

#ifndef TILES_REVERSED
#define TILES_REVERSED 0
#endif
#if TILES_REVERSED
#define TILE_WG uvec3(gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x, gl_NumWorkGroups.y - 1u - gl_WorkGroupID.y, gl_WorkGroupID.z)
#else
#define TILE_WG gl_WorkGroupID
#endif

#endif  // DENOX_TILE_ORDER_GLSL
