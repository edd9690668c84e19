#version 450
// Busy work that keeps a GPU's clock up while the tuner's host prepares the next edge
// (src/runtime/measure/clock_keeper.hpp says why). Every invocation runs a dependent chain of
// `iterations` multiply-adds, so the dispatch's duration scales with `iterations` and does not
// depend on memory; the host sizes it from the last run's GPU time.
//
// Bindings: 0 sink (one float; written only if the chain hits a value it never reaches, so the
// compiler cannot drop the loop).
// Push constants: iterations.
// Dispatch: (any count; the host sends enough workgroups to reach every SM).
layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) writeonly buffer Sink { float sink[]; };

layout(push_constant) uniform Push {
  uint iterations;
} pc;

void main() {
  float x = float(gl_GlobalInvocationID.x) * 1e-7;
  for (uint i = 0u; i < pc.iterations; ++i) x = x * 0.999999 + 1e-7;
  // x stays in [0, 0.11): the store never happens, but the compiler cannot know that.
  if (x < -1.0) sink[0] = x;
}
