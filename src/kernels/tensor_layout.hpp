// How an activation tensor is laid out in memory. Every kernel reads and writes NCHW; the
// cooperative-matrix convolutions can also read and write NHWC (channels innermost), which
// their shared-memory patches are in anyway: an NHWC chunk is staged with 16-byte loads of 8
// channels of a pixel and no transpose. Which tensors are NHWC is the autotuner's choice
// (src/compiler/supergraph: one value per tensor and layout, conversion edges between them).
#pragma once

#include <cstdint>

namespace denox::kernels {

enum class Layout : uint8_t { NCHW, NHWC };

inline const char* layout_name(Layout l) { return l == Layout::NHWC ? "NHWC" : "NCHW"; }

}  // namespace denox::kernels
