// The CPU reference implementation of every graph op, in fp32 storage, written straight from
// the ONNX operator specification. These are the oracle every GPU path is compared against, so
// clarity wins over speed; the loops are still ordered for the cache and conv2d splits its
// output rows over threads.
//
// Every op takes its inputs as views, its attributes as concrete integers (the shape program
// already evaluated for this resolution) and the output shape the graph says it has. Each op
// checks that the inputs and that output shape fit together and throws denox::Error
// (ShapeMismatch / InvalidArgument / Unsupported) when they do not; the executor adds the op's
// name and type to the message.
//
// Accumulation: conv2d and average pooling sum in double. A product of two floats is exact in
// double, so the only rounding left is the final conversion to float, which makes this the most
// accurate result any fp32 or fp16 path can be compared with (tolerances then measure the GPU's
// error, not the oracle's).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"

namespace denox::reference {

// A read-only tensor: a HostTensor or a constant's data inside the graph, without a copy.
struct TensorView {
  std::vector<int64_t> shape;
  std::span<const float> f32;      // float32 tensors
  std::span<const int64_t> i64;    // int64 tensors
  bool is_int64 = false;

  static TensorView of(const HostTensor& t);
  size_t element_count() const;
};

// No tensor the reference creates may hold more elements than this: a shape that asks for more
// is a mistake (a wrong resolution, a runaway shape program), not a job for a CPU oracle.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;

// The element count of `shape`; throws InvalidArgument for a negative extent or more than
// kMaxTensorElements elements, naming `what`.
size_t checked_element_count(const std::vector<int64_t>& shape, const std::string& what);

// Concrete 2D window geometry (H, W) shared by convolution and pooling.
struct Window2d {
  std::array<int64_t, 2> kernel{}, stride{1, 1}, dilation{1, 1}, pad_begin{}, pad_end{};
};

// ONNX Conv, 2D NCHW, group=1. x: N x C x H x W, w: M x C x kH x kW, bias: M or null.
HostTensor conv2d(const TensorView& x, const TensorView& w, const TensorView* bias, const Window2d& window,
                  const std::vector<int64_t>& out_shape);

// ONNX MaxPool / AveragePool, 2D over the last two axes of an NCHW tensor. The output extent
// may be the floor or the ceil_mode one; windows are placed from it. Padding never takes part in
// a max; for the average, count_include_pad counts the window cells inside the padded extent
// [-pad_begin, in + pad_end), otherwise only those inside the input. A window with nothing to
// pool is an error.
HostTensor pool2d(const TensorView& x, compiler::PoolKind kind, const Window2d& window, bool count_include_pad,
                  const std::vector<int64_t>& out_shape);

// Relu, LeakyRelu(alpha), Sigmoid, Tanh, Clip(min, max); NaN propagates through every one.
HostTensor activation(const TensorView& x, const compiler::ActivationAttrs& attrs);

// Add / Sub / Mul / Div with numpy multidirectional broadcasting on any rank.
HostTensor binary(const TensorView& a, const TensorView& b, compiler::BinaryKind kind,
                  const std::vector<int64_t>& out_shape);
// The numpy broadcast of two shapes; throws ShapeMismatch when they do not broadcast.
std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Nearest upsampling by integer factors on the last two axes (ONNX Resize, mode=nearest).
HostTensor upsample_nearest(const TensorView& x, const compiler::UpsampleAttrs& attrs,
                            const std::vector<int64_t>& out_shape);
// The source index of each output position along one axis: the ONNX Resize coordinate
// transform, then the nearest-mode rounding, clamped to [0, in_extent - 1].
std::vector<int64_t> nearest_source_indices(int64_t in_extent, int64_t scale, compiler::CoordinateMode coordinate_mode,
                                            compiler::NearestMode nearest_mode);

// ONNX Concat; axis in [-rank, rank). float32 or int64 (all inputs the same).
HostTensor concat(const std::vector<TensorView>& inputs, int64_t axis, const std::vector<int64_t>& out_shape);

// ONNX Pad, mode=constant; one begin/end pair per axis, negative values crop.
HostTensor pad_constant(const TensorView& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                        float value, const std::vector<int64_t>& out_shape);

// ONNX Slice with one normalized start and a non-zero step per axis: out[i] = in[start + i * step].
// The output extent says how many elements each axis takes. float32 or int64.
HostTensor slice(const TensorView& x, const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                 const std::vector<int64_t>& out_shape);

// A copy, float32 or int64.
HostTensor identity(const TensorView& x, const std::vector<int64_t>& out_shape);

// An int64 tensor of `out_shape` holding `values` (row-major).
HostTensor shape_values(const std::vector<int64_t>& values, const std::vector<int64_t>& out_shape);

}  // namespace denox::reference
