// The int8 precision's implementations, enumerated beside the fp16 ones (implementations.cpp):
// variants of a coop convolution that read or write NHWC_Q8 tensors.
#pragma once

#include <optional>
#include <vector>

#include "kernels/implementations.hpp"
#include "kernels/quant.hpp"

namespace denox::kernels {

// Whether tensor `t` has rank 4 and a constant, positive channel count that is a multiple of
// `multiple` (16 for NHWC_Q8).
bool constant_channels_multiple_of(const compiler::Graph& g, compiler::TensorId t, int64_t multiple);
// Whether tensor `t` may be kept NHWC: constant_channels_multiple_of(g, t, 8).
bool nhwc_allowed(const compiler::Graph& g, compiler::TensorId t);

// The int8 variants of coop convolution `c` (conv2d_coopmat_q8; the config is set by the caller;
// with a tail, configurations q8_tail_fits accepts).
std::vector<Implementation> q8_variants(const compiler::Graph& g, const Implementation& c, const QuantTable& table);

// fp16 coop convolution `base` writing its output NHWC_Q8 (Y_Q8), where it is calibrated.
std::optional<Implementation> q8_output_variant(const compiler::Graph& g, const Implementation& base, const QuantTable& table);

// An up2 coop convolution `base` (NHWC or NHWC_Q8 output) reading its upsampled input X0 as
// NHWC_Q8 (conv2d_coopmat_up2's X0_Q8: int8 multiplies for X0, the skip's stay fp16), where X0
// is calibrated and the bias constant; the caller keeps configurations up2_q8_fits accepts.
std::optional<Implementation> q8_x0_variant(const compiler::Graph& g, const Implementation& base, const QuantTable& table);

}  // namespace denox::kernels
