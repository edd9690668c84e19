// The graphs the cooperative-matrix tests run (test_coop.cpp, emulated and on the GPU): odd
// sizes, channel counts that are not multiples of 16, every fusion, each with the plan structure
// its coop lowering must have.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph_builder.hpp"

namespace denox::testing {

// ReLU (the default activation).
compiler::ActivationAttrs relu();

struct Case {
  std::string name;
  GraphBuilder b;
  int64_t h, w;
  int expected_coop;           // coop dispatches in the plan (= convolutions)
  size_t expected_dispatches;  // all dispatches, every fusion taken
  int upsampled = 0;           // convs of an upsample (conv2d_coopmat_up2 unless a plain config is forced)
  bool nhwc = false;           // the coop plans keep tensors between convs NHWC (every conv reads or writes one)
  int tails = 0;               // convs with a tail conv in their epilogue (conv_tail_ring dispatches) in coop plans
  int heads = 0;               // convs with the conv before them in their prologue (HEAD) in coop plans
};

// Every case, built anew.
std::vector<Case> cases();

}  // namespace denox::testing
