#version 450
// A probe, not a denox kernel (README.md): a workgroup that declares SMEM_BYTES of shared memory
// and stays resident for a fixed time while using almost no issue slots (one invocation walks a
// chain of ITERS dependent loads; the others exit), so that the time of a grid of many such
// workgroups tells how many of them an SM holds at once.
layout(local_size_x = WG) in;
layout(set = 0, binding = 0) buffer O { uint o[]; };  // zeros: the chain stays at element 0
shared uint pad[SMEM_BYTES / 4];

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint i = t; i < SMEM_BYTES / 4; i += WG) pad[i] = gl_WorkGroupID.x + i;  // the whole array is used
  barrier();
  if (t != 0) return;
  uint v = pad[gl_WorkGroupID.x % (SMEM_BYTES / 4)] - gl_WorkGroupID.x % (SMEM_BYTES / 4) - gl_WorkGroupID.x;  // 0
  for (uint i = 0; i < ITERS; ++i) v = o[v];
  if (v != 0u) o[1] = v;  // never true; keeps the chain
}
