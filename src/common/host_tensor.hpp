// A tensor in host memory: what the CLI reads from .npy/.pfm, what the CPU reference executor
// consumes and produces, and what tests compare.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace denox {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> f32;    // float32 tensors (images, activations)
  std::vector<int64_t> i64;  // int64 tensors (computed shapes)
  bool is_int64 = false;

  size_t element_count() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  std::string shape_string() const;
};

// "2x3x4", or "scalar" for rank 0: how errors and logs print a concrete shape.
inline std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s.empty() ? "scalar" : s;
}

inline std::string HostTensor::shape_string() const { return denox::shape_string(shape); }

}  // namespace denox
