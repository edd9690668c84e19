// The portable lowering: a graph -> a plan over the shaders of shaders/ that every Vulkan 1.3
// device runs (no cooperative matrices). One dispatch per op, except that a convolution absorbs
// the activation that alone consumes it, a following 2x2 max-pool or spatial crop, a preceding
// nearest-2x upsample and/or two-input channel concat, and reads through zero Pads (ConvFusion,
// lowering_ops.hpp); a Concat is one copy per input; Identity costs nothing (its output names
// its input's memory).
//
// With a LoweringTarget that lists cooperative-matrix shapes (fp16 plans only), stride-1
// convolutions run on conv2d_coopmat instead, with the same fusions (src/kernels/README.md).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/quant.hpp"

namespace denox::kernels {

// What the lowering may use on the device the plan is for. The default (no cooperative-matrix
// shapes) gives the portable plan every Vulkan 1.3 device runs.
struct LoweringTarget {
  // Cooperative matrices: the fp16 (A, B) subgroup-scope shapes the device reports with
  // VK_KHR_cooperative_matrix's cooperativeMatrix feature enabled, its subgroup size and
  // maxComputeSharedMemorySize. Empty shapes: no cooperative matrices.
  CoopTarget coop;
  // Absorb pool / upsample / concat / pad / crop into convolutions (false: one dispatch per op
  // but the conv's activation, for measuring what the fusions save).
  bool fuse = true;
  // Upsampled 3x3 convs may also run phase-decomposed (conv2d_coopmat_up2, 2.25x fewer
  // multiplies on the upsampled channels); false: only conv2d_coopmat (benchmarks compare).
  bool coop_up2 = true;
  // Coop convolutions may also read and write NHWC tensors (channel counts that are multiples
  // of 8), with conversion edges where another kernel needs NCHW; false: NCHW only (tests and
  // benchmarks compare).
  bool nhwc = true;
  // A conv's next conv, when it has few output channels (a denoiser's last), may run in its
  // epilogue (ConvFusion::tail, conv2d_coopmat's TAIL); false: never (tests and benchmarks compare).
  bool coop_tail = true;
  // A conv's previous conv, when it reads an image of at most 4 channels (a denoiser's first),
  // may be computed in its prologue (ConvFusion::head, conv2d_coopmat's HEAD); false: never.
  bool coop_head = true;
  // Tests and benchmarks only: COOP_EMULATE=1 runs the coop family's data flow with plain
  // arithmetic (so lavapipe can check it), and `force_config` replaces the heuristic for every
  // convolution it fits (the others keep the heuristic's choice).
  bool coop_emulate = false;
  std::optional<CoopConvConfig> force_config;
  // Benchmarks: per-convolution configurations by Conv op name (before force_config).
  std::map<std::string, CoopConvConfig> conv_configs;
  // The opt-in int8 precision: the calibrated tensors (kernels/quant.hpp). Coop convolutions
  // whose inputs (and output, else it stays fp16 NHWC) are all in it also get an int8 variant
  // (conv2d_coopmat_q8, NHWC_Q8 tensors) where the device has int8 fragments (CoopTarget::int8)
  // or coop_emulate is on; select weighs it against the fp16 ones and the conversions it needs.
  std::shared_ptr<const QuantTable> int8;

  bool uses_coop() const { return !coop.shapes.empty() && coop.subgroup_size > 0; }
  // A short text for cache keys: "portable" or "coop(16x16x16f16,16x8x16f32,...;sg32;smem49152;fuse)".
  std::string key() const;
};

// Builds the plan without SPIR-V (kernels::compile_pipelines fills it in). Activations are
// NCHW in scratch in the precision's type; weights are repacked into the layout and type each
// shader reads. Throws denox::Error (Unsupported) naming the op for what the portable shaders
// cannot run (int64 tensors on the GPU, rank > 4, symbolic weight shapes, a constant output).
plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision);
plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision, const LoweringTarget& target);

}  // namespace denox::kernels
