// A calibration as the C API hands it around (denox_calibration): the QuantTable of one model
// plus what it was made from, and its bytes. The bytes are a small JSON document so that a
// developer can read and diff what shipped:
//   {"format": "denox int8 calibration", "version": 1, "model": "<content hash>",
//    "percentile": 99.99, "samples": 8,
//    "tensors": [{"name": "/enc_conv0/Relu_output_0", "scale": 0.0123, "zero_point": -128}, ...]}
// Scales are written with enough digits to read back the same float.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/quant.hpp"

namespace denox::autotune {

struct Calibration {
  std::string model_hash;  // the API's model content hash (the plan cache's model key)
  double percentile = 99.99;
  size_t samples = 0;
  kernels::QuantTable table;
};

std::string calibration_to_json(const Calibration& c);
// Throws InvalidArgument saying what is wrong: not JSON, not a denox calibration, another
// version, a missing or mistyped field, a scale that is not a positive finite number or a
// zero point other than -128 and 0 (naming the tensor), a tensor named twice.
Calibration calibration_from_json(const void* bytes, size_t size);

}  // namespace denox::autotune
