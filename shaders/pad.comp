#version 450
// Constant padding of a 4D tensor; negative pads crop. Output element i reads input element
// i - begin when that lies inside the input on every axis, else the pad value. One invocation
// per output element; lower-rank tensors are viewed as 4D with leading extents of 1.
//
// Bindings: 0 X, 1 Y.
// Push constants: o1, o2, o3 (output extents 1..3), x0, x1, x2, x3 (input extents),
// b0, b1, b2, b3 (begin pads, signed), value (float bits).
// Dispatch: (ceil(o3 / 32), ceil(o2 / 8), o0 * o1).
#extension GL_GOOGLE_include_directive : require
#define ACT 0
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuf { STYPE x[]; };
layout(set = 0, binding = 1) writeonly buffer YBuf { STYPE y[]; };

layout(push_constant) uniform Push {
  uint o1, o2, o3;
  uint x0, x1, x2, x3;
  int b0, b1, b2, b3;
  uint value;
} pc;

void main() {
  const uint i3 = gl_GlobalInvocationID.x, i2 = gl_GlobalInvocationID.y;
  if (i3 >= pc.o3 || i2 >= pc.o2) return;
  const uint i1 = gl_WorkGroupID.z % pc.o1, i0 = gl_WorkGroupID.z / pc.o1;
  const int j0 = int(i0) - pc.b0, j1 = int(i1) - pc.b1, j2 = int(i2) - pc.b2, j3 = int(i3) - pc.b3;
  float v = uintBitsToFloat(pc.value);
  if (j0 >= 0 && j0 < int(pc.x0) && j1 >= 0 && j1 < int(pc.x1) && j2 >= 0 && j2 < int(pc.x2) && j3 >= 0 &&
      j3 < int(pc.x3)) {
    v = float(x[((uint(j0) * pc.x1 + uint(j1)) * pc.x2 + uint(j2)) * pc.x3 + uint(j3)]);
  }
  y[((i0 * pc.o1 + i1) * pc.o2 + i2) * pc.o3 + i3] = STYPE(v);
}
