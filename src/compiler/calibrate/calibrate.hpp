// Pipeline step "calibrate" (the opt-in int8 precision, src/kernels/int8.md): runs the
// CPU reference on sample inputs and turns the values every computed tensor takes into the
// scale and zero point of its NHWC_Q8 form (kernels/quant.hpp). The tuner then offers int8
// convolutions wherever every tensor they touch is calibrated.
#pragma once

#include <cstddef>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"
#include "kernels/quant.hpp"

namespace denox::autotune {

struct CalibrationOptions {
  // The range kept: this percentile of the values (of |values| for a tensor that goes
  // negative). 99.99 cost the shipped denoiser 0.07-0.18 dB against fp32 where the max cost up
  // to 1 dB (tools/train/results/2026-11-26-h100-int8-quality.txt).
  double percentile = 99.99;
  // Values kept per tensor and sample input to take the percentile of (an even stride through
  // the tensor; the minimum is taken over every value).
  size_t samples_per_tensor = size_t{1} << 18;
};

// One entry per float tensor an op computes, by tensor name. `samples`: one set of graph
// inputs per sample (fp32, the graph's input order). Throws what the reference throws (naming
// the op), and InvalidArgument when there is no sample or a tensor takes a NaN or infinity.
kernels::QuantTable calibrate_int8(const compiler::Graph& graph, const std::vector<std::vector<HostTensor>>& samples,
                                   const CalibrationOptions& options = {});

}  // namespace denox::autotune
