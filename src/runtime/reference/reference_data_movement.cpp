// The CPU reference's data-movement ops (reference_ops.hpp): concat, pad, slice, identity and
// shape values, for float32 and int64 tensors alike.
#include <algorithm>
#include <span>
#include <type_traits>

#include "common/error.hpp"
#include "runtime/reference/reference_checks.hpp"
#include "runtime/reference/reference_ops.hpp"

namespace denox::reference {

using namespace detail;

namespace {

template <typename T> std::span<const T> data_of(const TensorView& v) {
  if constexpr (std::is_same_v<T, float>) {
    return v.f32;
  } else {
    return v.i64;
  }
}

template <typename T> std::vector<T>& data_of(HostTensor& t) {
  if constexpr (std::is_same_v<T, float>) {
    return t.f32;
  } else {
    return t.i64;
  }
}

size_t product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  size_t n = 1;
  for (size_t i = from; i < to; ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

// Calls fn(index) for every index of the axes [0, rank-1) of `shape`, in row-major order:
// the rows along the last axis, which the ops below handle with a contiguous or strided loop.
template <typename Fn> void for_each_row(const std::vector<int64_t>& shape, Fn&& fn) {
  if (shape.empty() || product(shape, 0, shape.size()) == 0) return;
  std::vector<int64_t> index(shape.size() - 1, 0);
  const size_t rows = product(shape, 0, shape.size() - 1);
  for (size_t r = 0; r < rows; ++r) {
    fn(index);
    for (size_t k = index.size(); k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
}

template <typename T>
void concat_into(const std::vector<TensorView>& inputs, size_t axis, HostTensor& out) {
  // Each outer index (the axes before `axis`) is one contiguous block from every input in turn.
  const size_t outer = product(out.shape, 0, axis);
  std::vector<T>& dst = data_of<T>(out);
  size_t o = 0;
  for (size_t i = 0; i < outer; ++i) {
    for (const auto& in : inputs) {
      const size_t block = product(in.shape, axis, in.shape.size());
      auto src = data_of<T>(in).subspan(i * block, block);
      std::copy(src.begin(), src.end(), dst.begin() + static_cast<std::ptrdiff_t>(o));
      o += block;
    }
  }
}

template <typename T>
void slice_into(const TensorView& x, const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                HostTensor& out) {
  const size_t rank = x.shape.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * x.shape[k];
  const T* src = data_of<T>(x).data();
  T* dst = data_of<T>(out).data();
  if (rank == 0) {
    *dst = *src;
    return;
  }
  const int64_t inner = out.shape[rank - 1];
  const int64_t inner_step = step[rank - 1];
  for_each_row(out.shape, [&](const std::vector<int64_t>& index) {
    int64_t offset = start[rank - 1];
    for (size_t k = 0; k + 1 < rank; ++k) offset += (start[k] + index[k] * step[k]) * strides[k];
    for (int64_t j = 0; j < inner; ++j) *dst++ = src[offset + j * inner_step];
  });
}

}  // namespace

HostTensor concat(const std::vector<TensorView>& inputs, int64_t axis, const std::vector<int64_t>& out_shape) {
  if (inputs.empty()) fail(ErrorCode::InvalidArgument, "concat needs at least one input");
  const TensorView& first = inputs[0];
  const auto rank = static_cast<int64_t>(first.shape.size());
  if (rank == 0) fail(ErrorCode::ShapeMismatch, "cannot concatenate scalars");
  if (axis < -rank || axis >= rank) {
    fail(ErrorCode::InvalidArgument, "axis " + std::to_string(axis) + " is out of range for rank " +
                                         std::to_string(rank));
  }
  const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  std::vector<int64_t> expected = first.shape;
  expected[a] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    const std::string what = "input " + std::to_string(i);
    check_view(in, what.c_str());
    if (in.is_int64 != first.is_int64) fail(ErrorCode::InvalidArgument, "inputs mix float32 and int64");
    bool fits = in.shape.size() == first.shape.size();
    for (size_t k = 0; fits && k < in.shape.size(); ++k) fits = k == a || in.shape[k] == first.shape[k];
    if (!fits) {
      fail(ErrorCode::ShapeMismatch, "input " + std::to_string(i) + " has shape " + shape_string(in.shape) +
                                         ", which does not fit input 0's " + shape_string(first.shape) +
                                         " off axis " + std::to_string(a));
    }
    expected[a] += in.shape[a];
  }
  check_out_shape(expected, out_shape);
  HostTensor out = make_output(out_shape, first.is_int64);
  if (first.is_int64) {
    concat_into<int64_t>(inputs, a, out);
  } else {
    concat_into<float>(inputs, a, out);
  }
  return out;
}

HostTensor pad_constant(const TensorView& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                        float value, const std::vector<int64_t>& out_shape) {
  require_f32(x, "input X");
  const size_t rank = x.shape.size();
  if (begin.size() != rank || end.size() != rank) {
    fail(ErrorCode::InvalidArgument, "pads have " + std::to_string(begin.size()) + " begin and " +
                                         std::to_string(end.size()) + " end values for an input of rank " +
                                         std::to_string(rank));
  }
  std::vector<int64_t> expected(rank);
  for (size_t k = 0; k < rank; ++k) {
    expected[k] = x.shape[k] + begin[k] + end[k];
    if (expected[k] < 0) {
      fail(ErrorCode::ShapeMismatch, "pads " + std::to_string(begin[k]) + " and " + std::to_string(end[k]) +
                                         " crop more than the extent " + std::to_string(x.shape[k]) + " of axis " +
                                         std::to_string(k));
    }
  }
  check_out_shape(expected, out_shape);
  HostTensor out = make_output(out_shape, false);
  if (out.f32.empty()) return out;
  if (rank == 0) {
    out.f32[0] = x.f32[0];
    return out;
  }
  std::vector<int64_t> strides(rank, 1);
  for (size_t k = rank; k-- > 1;) strides[k - 1] = strides[k] * x.shape[k];
  // Output index i on axis k reads input index i - begin[k] when that lies inside the input.
  const int64_t inner = out_shape[rank - 1], in_inner = x.shape[rank - 1], shift = begin[rank - 1];
  const int64_t lo = std::clamp<int64_t>(shift, 0, inner), hi = std::clamp<int64_t>(shift + in_inner, lo, inner);
  float* dst = out.f32.data();
  for_each_row(out_shape, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t k = 0; k + 1 < rank; ++k) {
      const int64_t i = index[k] - begin[k];
      inside = inside && i >= 0 && i < x.shape[k];
      offset += i * strides[k];
    }
    if (!inside) {
      std::fill(dst, dst + inner, value);
    } else {
      std::fill(dst, dst + lo, value);
      for (int64_t j = lo; j < hi; ++j) dst[j] = x.f32[static_cast<size_t>(offset + j - shift)];
      std::fill(dst + hi, dst + inner, value);
    }
    dst += inner;
  });
  return out;
}

HostTensor slice(const TensorView& x, const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                 const std::vector<int64_t>& out_shape) {
  check_view(x, "input X");
  const size_t rank = x.shape.size();
  if (start.size() != rank || step.size() != rank || out_shape.size() != rank) {
    fail(ErrorCode::InvalidArgument, "slice has " + std::to_string(start.size()) + " starts, " +
                                         std::to_string(step.size()) + " steps and output shape " +
                                         shape_string(out_shape) + " for an input of rank " + std::to_string(rank));
  }
  for (size_t k = 0; k < rank; ++k) {
    if (step[k] == 0) fail(ErrorCode::InvalidArgument, "step on axis " + std::to_string(k) + " is 0");
    if (out_shape[k] < 0) fail(ErrorCode::ShapeMismatch, "negative output extent on axis " + std::to_string(k));
    if (out_shape[k] == 0) continue;
    // First and last element read must both lie inside the input.
    const int64_t last = start[k] + (out_shape[k] - 1) * step[k];
    if (start[k] < 0 || start[k] >= x.shape[k] || last < 0 || last >= x.shape[k]) {
      fail(ErrorCode::ShapeMismatch, "axis " + std::to_string(k) + ": start " + std::to_string(start[k]) +
                                         ", step " + std::to_string(step[k]) + " and output extent " +
                                         std::to_string(out_shape[k]) + " read outside the input extent " +
                                         std::to_string(x.shape[k]));
    }
  }
  HostTensor out = make_output(out_shape, x.is_int64);
  if (x.is_int64 ? out.i64.empty() : out.f32.empty()) return out;
  if (x.is_int64) {
    slice_into<int64_t>(x, start, step, out);
  } else {
    slice_into<float>(x, start, step, out);
  }
  return out;
}

HostTensor identity(const TensorView& x, const std::vector<int64_t>& out_shape) {
  check_view(x, "input X");
  check_out_shape(x.shape, out_shape);
  HostTensor out = make_output(out_shape, x.is_int64);
  std::copy(x.f32.begin(), x.f32.end(), out.f32.begin());
  std::copy(x.i64.begin(), x.i64.end(), out.i64.begin());
  return out;
}

HostTensor shape_values(const std::vector<int64_t>& values, const std::vector<int64_t>& out_shape) {
  HostTensor out = make_output(out_shape, true);
  if (out.i64.size() != values.size()) {
    fail(ErrorCode::ShapeMismatch, "output shape " + shape_string(out_shape) + " holds " +
                                       std::to_string(out.i64.size()) + " values but " +
                                       std::to_string(values.size()) + " are given");
  }
  std::copy(values.begin(), values.end(), out.i64.begin());
  return out;
}

}  // namespace denox::reference
