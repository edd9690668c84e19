// Argument checks the CPU reference ops share (reference_ops.cpp, reference_data_movement.cpp):
// each throws denox::Error naming what does not fit. Internal to the reference executor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/reference/reference_ops.hpp"

namespace denox::reference::detail {

// A view whose data does not match its shape is a caller's bug, caught before any indexing.
void check_view(const TensorView& v, const char* what);
// check_view, and float32 only.
void require_f32(const TensorView& v, const char* what);
void require_rank(const TensorView& v, size_t rank, const char* what);
// The output shape the graph gives must be the one the inputs and attributes give.
void check_out_shape(const std::vector<int64_t>& from_inputs, const std::vector<int64_t>& given);
// A zeroed output of `shape` (checked_element_count's limits).
HostTensor make_output(const std::vector<int64_t>& shape, bool is_int64);

}  // namespace denox::reference::detail
