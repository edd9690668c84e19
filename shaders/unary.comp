#version 450
// A standalone activation (one not fused into a convolution) over a flat tensor; one invocation
// per element. The 2D grid lets large tensors exceed 65535 workgroups along x.
//
// Macros: ACT (common.glsl).
// Bindings: 0 X, 1 Y (same element count).
// Push constants: count, row (elements per grid row = groups.x * 256), act_a, act_b (float bits).
// Dispatch: (gx, ceil(ceil(count / 256) / gx), 1) with gx = min(ceil(count / 256), 32768).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuf { STYPE x[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { STYPE y[]; };

layout(push_constant) uniform Push { uint count, row, act_a, act_b; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.y * pc.row + gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  y[i] = STYPE(activate(float(x[i]), uintBitsToFloat(pc.act_a), uintBitsToFloat(pc.act_b)));
}
