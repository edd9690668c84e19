#include "compiler/ir/graph.hpp"

#include <cmath>

namespace denox::compiler {

const char* dtype_name(DType t) { return t == DType::F32 ? "float32" : "int64"; }

const char* op_kind_name(const OpAttrs& attrs) {
  struct Namer {
    const char* operator()(const ConvAttrs&) const { return "conv"; }
    const char* operator()(const PoolAttrs& a) const { return a.kind == PoolKind::Max ? "maxpool" : "avgpool"; }
    const char* operator()(const ActivationAttrs& a) const {
      switch (a.kind) {
        case Activation::Relu: return "relu";
        case Activation::LeakyRelu: return "leaky_relu";
        case Activation::Sigmoid: return "sigmoid";
        case Activation::Tanh: return "tanh";
        case Activation::Clip: return "clip";
      }
      return "activation";
    }
    const char* operator()(const BinaryAttrs& a) const {
      switch (a.kind) {
        case BinaryKind::Add: return "add";
        case BinaryKind::Sub: return "sub";
        case BinaryKind::Mul: return "mul";
        case BinaryKind::Div: return "div";
      }
      return "binary";
    }
    const char* operator()(const UpsampleAttrs&) const { return "upsample_nearest"; }
    const char* operator()(const ConcatAttrs&) const { return "concat"; }
    const char* operator()(const PadAttrs&) const { return "pad"; }
    const char* operator()(const SliceAttrs&) const { return "slice"; }
    const char* operator()(const ShapeValuesAttrs&) const { return "shape_values"; }
    const char* operator()(const IdentityAttrs&) const { return "identity"; }
  };
  return std::visit(Namer{}, attrs);
}

bool UpsampleAttrs::is_floor_division() const {
  // Check the source index formula against floor(x / s) over a full period of outputs: the
  // formulas are affine in x, so agreement on [0, 4s) means agreement everywhere.
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t s = scale[static_cast<size_t>(axis)];
    for (int64_t x = 0; x < 4 * s; ++x) {
      double in_size = 8.0, out_size = 8.0 * static_cast<double>(s);
      double xf = static_cast<double>(x), sf = static_cast<double>(s), src = 0.0;
      switch (coordinate_mode) {
        case CoordinateMode::HalfPixel:
        case CoordinateMode::HalfPixelSymmetric:
        case CoordinateMode::PytorchHalfPixel: src = (xf + 0.5) / sf - 0.5; break;
        case CoordinateMode::Asymmetric: src = xf / sf; break;
        case CoordinateMode::AlignCorners: src = xf * (in_size - 1) / (out_size - 1); break;
        case CoordinateMode::TfHalfPixelForNearest: src = (xf + 0.5) / sf; break;
      }
      double r = 0.0;
      switch (nearest_mode) {
        case NearestMode::RoundPreferFloor: r = (src - std::floor(src) == 0.5) ? std::floor(src) : std::round(src); break;
        case NearestMode::RoundPreferCeil: r = std::round(src); break;
        case NearestMode::Floor: r = std::floor(src); break;
        case NearestMode::Ceil: r = std::ceil(src); break;
      }
      r = std::max(0.0, r);
      if (static_cast<int64_t>(r) != x / s) return false;
    }
  }
  return true;
}

TensorId Graph::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<TensorId>(tensors.size() - 1);
}

void Graph::compact_program() {
  std::vector<ValueId> roots;
  for_each_value([&](ValueId& v) { roots.push_back(v); });
  auto remap = program.compact(roots);
  for_each_value([&](ValueId& v) { v = remap[v]; });
}

std::string Graph::shape_string(TensorId id) const {
  std::string s;
  for (ValueId v : tensor(id).shape) {
    if (!s.empty()) s += "x";
    s += program.is_constant(v) ? std::to_string(program.constant_value(v)) : program.to_string(v);
  }
  return s.empty() ? "scalar" : s;
}

}  // namespace denox::compiler
