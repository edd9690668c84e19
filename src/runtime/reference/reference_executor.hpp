// The fp32 CPU reference executor: runs a graph op by op with the ops in reference_ops.hpp.
// It is the oracle the GPU paths are tested against, so it checks everything it touches and
// turns every inconsistency into a denox::Error that names the op (name and ONNX type) or the
// tensor at fault.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"

namespace denox::reference {

// The concrete shape of tensor `id` for one resolution: `values` is what bind_symbols (or
// ShapeProgram::evaluate) returned. Throws for a ValueId outside `values`, a negative extent, or
// more than kMaxTensorElements elements.
std::vector<int64_t> concrete_shape(const compiler::Graph& g, compiler::TensorId id,
                                    const std::vector<int64_t>& values);

// Runs `g` on `inputs` (one float32 tensor per g.inputs, in order) and returns one tensor per
// g.outputs, in order. The input shapes bind the graph's symbols (see bind_symbols). Each
// intermediate tensor is freed after the last op that reads it.
//
// op.inputs holds the data inputs only: Conv X, W[, B]; binary ops A, B; Concat all of its
// inputs; every other op exactly one tensor (ShapeValues none). Constants (initializers) may
// appear anywhere a tensor does and are read in place, without a copy.
// `observe` (optional) sees every op's result as it is computed (calibration, compiler/calibrate).
using TensorObserver = std::function<void(compiler::TensorId, const HostTensor&)>;
std::vector<HostTensor> run_reference(const compiler::Graph& g, const std::vector<HostTensor>& inputs,
                                      const TensorObserver& observe = {});

}  // namespace denox::reference
