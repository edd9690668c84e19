// What an op converter sees of one ONNX node while importing: its inputs as imported values
// (a data tensor of the graph IR, or a StaticTensor known at import time), its attributes with
// defaults, and ways to define its outputs. Converters live in static_ops.cpp (shape arithmetic
// and constants) and tensor_ops.cpp (ops that become graph IR ops).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/error.hpp"
#include "compiler/import/static_tensor.hpp"
#include "compiler/import/tensor_data.hpp"
#include "compiler/ir/graph.hpp"

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace denox::compiler {

struct ImportedValue {
  bool is_data = false;
  TensorId tensor = 0;  // is_data
  StaticTensor value;   // !is_data
};

struct ImportState {
  Graph graph;
  ExternalDataContext external;
  std::unordered_map<std::string, ImportedValue> values;
  // Every name some node or graph output reads: optional outputs nobody reads (MaxPool's
  // Indices from torchlib's `pool, _ = op.MaxPool(...)`) need no converter support, and an
  // initializer nobody reads is not decoded.
  std::unordered_set<std::string> consumed;
  // Static values become graph constants once per name: a weight read by N nodes is one tensor
  // of the graph (and one upload), not N.
  std::unordered_map<std::string, TensorId> materialized;
  // Elements of every constant held so far (decoded initializers, values computed at import,
  // graph constants), against ImportOptions::max_constant_elements.
  int64_t constant_elements = 0;
  int64_t constant_budget = 0;
  // Adds `elements` to constant_elements; past the budget an Unsupported error naming `where`.
  void charge_constant(size_t elements, const std::string& where);
};

// The longest list symbolic_ints reads.
constexpr size_t kMaxSymbolicList = 4096;

class NodeContext {
 public:
  NodeContext(ImportState& state, const onnx::NodeProto& node, int64_t opset);

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // "node 'enc_conv0' (Conv, opset 17)": the prefix of every message about this node.
  const std::string& where() const { return where_; }
  Graph& graph() { return state_.graph; }
  ShapeProgram& program() { return state_.graph.program; }
  SymMath math() { return SymMath(state_.graph.program, where_); }

  // Inputs. Optional inputs may be missing or named "".
  size_t input_count() const;
  bool has_input(size_t i) const;
  const ImportedValue& input(size_t i) const;
  bool any_data_input() const;
  TensorId data_input(size_t i) const;  // error if static
  const StaticTensor& static_input(size_t i, const char* what) const;  // error if data
  // Static input as constant integers (e.g. axes, steps); error naming `what` if symbolic.
  std::vector<int64_t> constant_ints(size_t i, const char* what);
  // Static input as shape-program values (e.g. pads, slice ends), at most kMaxSymbolicList.
  std::vector<ValueId> symbolic_ints(size_t i, const char* what);
  // A data input, or a static one turned into a constant tensor of the graph.
  TensorId tensor_input(size_t i);

  // Attributes.
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& name) const;
  const onnx::AttributeProto* attr(const std::string& name) const;
  // Where the model's external data lies (a Constant's value may be stored there too).
  const ExternalDataContext& external() const { return state_.external; }
  // Rejects attributes this converter does not implement when they are set to a non-default.
  void require_attr_default(const std::string& name, int64_t default_value) const;

  // Outputs.
  size_t output_count() const;
  bool output_used(size_t i) const;
  // Named and read by some node or graph output.
  bool output_consumed(size_t i) const;
  void set_static_output(size_t i, StaticTensor value);
  void alias_output(size_t i, TensorId tensor);
  // Adds a graph IR op producing output 0 with the given shape.
  TensorId add_op(OpAttrs attrs, std::vector<TensorId> inputs, std::vector<ValueId> shape, DType dtype = DType::F32);
  // Makes a constant graph tensor (weights, folded values) from a static value.
  TensorId materialize(const StaticTensor& value, const std::string& name);

  [[noreturn]] void unsupported(const std::string& what) const { fail(ErrorCode::Unsupported, where_ + ": " + what); }
  [[noreturn]] void invalid(const std::string& what) const { fail(ErrorCode::InvalidModel, where_ + ": " + what); }

 private:
  ImportState& state_;
  const onnx::NodeProto& node_;
  int64_t opset_;
  std::string where_;
};

// "node 'enc_conv0' (Conv, opset 17)". An unnamed node (ONNX allows it; exporters and the ONNX
// node tests leave names empty) is named by its first output: "unnamed node -> 'y' (Abs, opset 13)".
// A node outside the default domain adds the domain; `opset` is that domain's version.
std::string node_label(const onnx::NodeProto& node, int64_t opset);

// Normalizes a possibly negative axis against `rank`, with an error naming the node.
int64_t normalize_axis(const NodeContext& ctx, int64_t axis, size_t rank);
// `axes` normalized against `rank`, each at most once (ONNX requires it; a repeated axis is an
// invalid model, not "the last one wins").
std::vector<size_t> distinct_axes(const NodeContext& ctx, const std::vector<int64_t>& axes, size_t rank, const char* what);

using Converter = std::function<void(NodeContext&)>;
// Ops computed at import time when none of their inputs is a data tensor.
const std::map<std::string, Converter>& static_converters();
// Ops that become graph IR ops (or aliases) when an input is a data tensor.
const std::map<std::string, Converter>& tensor_converters();

}  // namespace denox::compiler
