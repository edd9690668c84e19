// The graph IR the importer produces: logical tensors with symbolic shapes (ValueIds into the
// shape program) and tensor ops as hyperedges between them. Shape arithmetic never appears
// here: the importer evaluated it into the shape program. Every later stage (the CPU reference,
// specialization, the supergraph) reads this.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/shape_program/shape_program.hpp"

namespace denox::compiler {

using TensorId = uint32_t;

enum class DType : uint8_t { F32, I64 };
const char* dtype_name(DType t);

struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<ValueId> shape;  // one ValueId per axis (NCHW for image tensors)
  // Initializers and folded constants: their data, row-major, in `dtype` (I64 stored as-is).
  std::optional<std::vector<float>> f32_data;
  std::optional<std::vector<int64_t>> i64_data;
  bool is_constant() const { return f32_data.has_value() || i64_data.has_value(); }
};

enum class Activation : uint8_t { Relu, LeakyRelu, Sigmoid, Tanh, Clip };
enum class BinaryKind : uint8_t { Add, Sub, Mul, Div };
enum class PoolKind : uint8_t { Max, Average };

// All spatial attributes are 2D (H, W); pads are symbolic because auto_pad=SAME_* depends on
// the input extent.
struct ConvAttrs {
  std::array<int64_t, 2> kernel{}, stride{1, 1}, dilation{1, 1};
  std::array<ValueId, 2> pad_begin{}, pad_end{};
  bool has_bias = false;  // inputs: X, W[, B]
};

struct PoolAttrs {
  PoolKind kind = PoolKind::Max;
  std::array<int64_t, 2> kernel{}, stride{1, 1}, dilation{1, 1};
  std::array<ValueId, 2> pad_begin{}, pad_end{};
  bool count_include_pad = false;  // AveragePool only
};

struct ActivationAttrs {
  Activation kind = Activation::Relu;
  float alpha = 0.01f;       // LeakyRelu
  float min = -3.4e38f, max = 3.4e38f;  // Clip
};

struct BinaryAttrs {
  BinaryKind kind = BinaryKind::Add;  // numpy broadcasting between the two inputs
};

// Nearest-neighbour upsampling by integer factors on the last two axes. The source index of
// output coordinate x follows the ONNX Resize formulas for the recorded modes.
enum class CoordinateMode : uint8_t { HalfPixel, PytorchHalfPixel, Asymmetric, AlignCorners, TfHalfPixelForNearest, HalfPixelSymmetric };
enum class NearestMode : uint8_t { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
struct UpsampleAttrs {
  std::array<int64_t, 2> scale{2, 2};
  CoordinateMode coordinate_mode = CoordinateMode::Asymmetric;
  NearestMode nearest_mode = NearestMode::Floor;
  // True when the modes reduce to source = x / scale (floor): what fused GPU kernels assume.
  bool is_floor_division() const;
};

struct ConcatAttrs {
  int64_t axis = 1;
};

// Constant padding; negative pads crop (ONNX allows it). One begin/end pair per axis.
struct PadAttrs {
  std::vector<ValueId> begin, end;
  float value = 0.0f;
};

// Per axis: normalized start (already clamped) and a static non-zero step.
struct SliceAttrs {
  std::vector<ValueId> start;
  std::vector<int64_t> step;
};

// Writes shape-program values into an I64 tensor (a graph output that is a computed shape).
struct ShapeValuesAttrs {
  std::vector<ValueId> values;
};

struct IdentityAttrs {};

using OpAttrs = std::variant<ConvAttrs, PoolAttrs, ActivationAttrs, BinaryAttrs, UpsampleAttrs, ConcatAttrs,
                             PadAttrs, SliceAttrs, ShapeValuesAttrs, IdentityAttrs>;

struct Op {
  std::string name;     // the ONNX node name (or a generated one), for messages
  std::string onnx_op;  // the ONNX op type it came from
  OpAttrs attrs;
  std::vector<TensorId> inputs;
  TensorId output = 0;
};

const char* op_kind_name(const OpAttrs& attrs);


struct Graph {
  ShapeProgram program;
  std::vector<Tensor> tensors;
  std::vector<Op> ops;  // in execution order
  std::vector<TensorId> inputs, outputs;
  int64_t opset = 0;

  TensorId add_tensor(Tensor t);
  const Tensor& tensor(TensorId id) const { return tensors.at(id); }
  // Drops shape-program instructions nothing refers to and renumbers every ValueId.
  void compact_program();
  // "1x3x(H)x(W)" with symbolic extents spelled out.
  std::string shape_string(TensorId id) const;
  // Every ValueId the graph holds (tensor shapes and op attributes).
  template <typename Fn> void for_each_value(Fn&& fn);
};

template <typename Fn> void Graph::for_each_value(Fn&& fn) {
  for (auto& t : tensors) {
    for (auto& v : t.shape) fn(v);
  }
  for (auto& op : ops) {
    std::visit(
        [&](auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, ConvAttrs> || std::is_same_v<A, PoolAttrs>) {
            for (auto& v : a.pad_begin) fn(v);
            for (auto& v : a.pad_end) fn(v);
          } else if constexpr (std::is_same_v<A, PadAttrs>) {
            for (auto& v : a.begin) fn(v);
            for (auto& v : a.end) fn(v);
          } else if constexpr (std::is_same_v<A, SliceAttrs>) {
            for (auto& v : a.start) fn(v);
          } else if constexpr (std::is_same_v<A, ShapeValuesAttrs>) {
            for (auto& v : a.values) fn(v);
          }
        },
        op.attrs);
  }
}

}  // namespace denox::compiler
