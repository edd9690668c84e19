// How an activation tensor is laid out in memory. Every kernel reads and writes NCHW; the
// cooperative-matrix convolutions can also read and write NHWC (channels innermost), which
// their shared-memory patches are in anyway: an NHWC chunk is staged with 16-byte loads of 8
// channels of a pixel and no transpose. Which tensors are NHWC is the autotuner's choice
// (src/compiler/supergraph: one value per tensor and layout, conversion edges between them).
// NHWC_Q8 is the opt-in int8 precision's tensor (conv2d_coopmat_q8.comp): NHWC, one signed byte
// per element, a channel count that is a multiple of 16, and a scale and zero point per tensor
// (kernels/quant.hpp) fixed at plan time by calibration.
#pragma once

#include <cstdint>

namespace denox::kernels {

enum class Layout : uint8_t { NCHW, NHWC, NHWC_Q8 };

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::NHWC: return "NHWC";
    case Layout::NHWC_Q8: return "NHWC_Q8";
    default: return "NCHW";
  }
}

// Bytes per element of a tensor in `l` in a plan whose float tensors take `float_bytes`.
inline uint32_t layout_element_size(Layout l, uint32_t float_bytes) { return l == Layout::NHWC_Q8 ? 1u : float_bytes; }

}  // namespace denox::kernels
