#include "compiler/import/node_context.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

namespace denox::compiler {

std::string node_label(const onnx::NodeProto& n, int64_t opset) {
  std::string s = !n.name().empty() || n.output_size() == 0 ? "node '" + n.name() + "'" : "unnamed node -> '" + n.output(0) + "'";
  s += " (" + n.op_type() + ", opset " + std::to_string(opset);
  if (!n.domain().empty() && n.domain() != "ai.onnx") s += ", domain '" + n.domain() + "'";
  return s + ")";
}

NodeContext::NodeContext(ImportState& state, const onnx::NodeProto& node, int64_t opset)
    : state_(state), node_(node), opset_(opset), where_(node_label(node, opset)) {}

int64_t normalize_axis(const NodeContext& ctx, int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    ctx.invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

// (Unsqueeze with a repeated axis read past its input's dimensions.)
std::vector<size_t> distinct_axes(const NodeContext& ctx, const std::vector<int64_t>& axes, size_t rank, const char* what) {
  std::vector<size_t> out;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    const auto k = static_cast<size_t>(normalize_axis(ctx, a, rank));
    if (seen[k]) ctx.invalid(std::string(what) + " names axis " + std::to_string(k) + " twice");
    seen[k] = true;
    out.push_back(k);
  }
  return out;
}

void ImportState::charge_constant(size_t elements, const std::string& where) {
  if (elements > static_cast<size_t>(std::max<int64_t>(constant_budget - constant_elements, 0))) {
    fail(ErrorCode::Unsupported, where + ": the model's constants add up to more than " + std::to_string(constant_budget) +
                                     " elements at import (" + std::to_string(constant_elements) + " before this one of " +
                                     std::to_string(elements) + ")");
  }
  constant_elements += static_cast<int64_t>(elements);
}

size_t NodeContext::input_count() const { return static_cast<size_t>(node_.input_size()); }

bool NodeContext::has_input(size_t i) const {
  return i < input_count() && !node_.input(static_cast<int>(i)).empty();
}

const ImportedValue& NodeContext::input(size_t i) const {
  if (!has_input(i)) invalid("input " + std::to_string(i) + " is required but missing");
  const std::string& name = node_.input(static_cast<int>(i));
  auto it = state_.values.find(name);
  if (it == state_.values.end()) {
    invalid("reads '" + name + "', which no earlier node, graph input or initializer defines");
  }
  return it->second;
}

bool NodeContext::any_data_input() const {
  for (size_t i = 0; i < input_count(); ++i) {
    if (has_input(i) && input(i).is_data) return true;
  }
  return false;
}

TensorId NodeContext::data_input(size_t i) const {
  const ImportedValue& v = input(i);
  if (!v.is_data) unsupported("input " + std::to_string(i) + " must be a tensor computed by the network");
  return v.tensor;
}

const StaticTensor& NodeContext::static_input(size_t i, const char* what) const {
  const ImportedValue& v = input(i);
  if (v.is_data) {
    unsupported(std::string(what) + " (input " + std::to_string(i) +
                ") must be a constant or computed from shapes, but it is a tensor computed by the network");
  }
  return v.value;
}

// Constant integers straight from dense numbers: through SymMath each element became a shape-
// program constant, and a 2^28-element "axes" initializer would have made 2^28 of them (~10 GB).
std::vector<int64_t> NodeContext::constant_ints(size_t i, const char* what) {
  const StaticTensor& t = static_input(i, what);
  if (t.dense && !t.numbers.is_float) return t.numbers.i;
  std::vector<int64_t> out;
  out.reserve(t.size());
  SymMath m = math();
  for (size_t k = 0; k < t.size(); ++k) {
    if (t.dense) {
      const double v = t.numbers.f[k];
      if (!(v == std::floor(v) && std::fabs(v) < 0x1p63))
        unsupported(std::string(what) + " must be integers, got " + format_double(v));
      out.push_back(static_cast<int64_t>(v));
    } else {
      out.push_back(m.constant_int(t.elems[k], what));
    }
  }
  return out;
}

std::vector<ValueId> NodeContext::symbolic_ints(size_t i, const char* what) {
  const StaticTensor& t = static_input(i, what);
  // Each element becomes shape-program instructions. These lists (pads, slice bounds, sizes)
  // hold a few values per axis; a long one is a hostile model, not a denoiser.
  if (t.size() > kMaxSymbolicList)
    unsupported(std::string(what) + " holds " + std::to_string(t.size()) + " values; denox reads at most " +
                std::to_string(kMaxSymbolicList));
  std::vector<ValueId> out;
  SymMath m = math();
  for (size_t k = 0; k < t.size(); ++k) out.push_back(m.to_value(m.element(t, k)));
  return out;
}

TensorId NodeContext::tensor_input(size_t i) {
  const ImportedValue& v = input(i);
  if (v.is_data) return v.tensor;
  const std::string& name = node_.input(static_cast<int>(i));
  // A name is defined once (the import refuses a second definition), so its tensor can be shared.
  if (const auto it = state_.materialized.find(name); it != state_.materialized.end()) return it->second;
  const TensorId id = materialize(v.value, name);
  state_.materialized.emplace(name, id);
  return id;
}

TensorId NodeContext::materialize(const StaticTensor& value, const std::string& name) {
  state_.charge_constant(value.size(), where_);
  ShapeProgram& p = program();
  Tensor t;
  t.name = name;
  for (int64_t d : value.dims) t.shape.push_back(p.constant(d));
  if (value.dense) {
    if (value.numbers.is_float) {
      t.dtype = DType::F32;
      t.f32_data.emplace();
      t.f32_data->reserve(value.numbers.f.size());
      for (const double v : value.numbers.f) t.f32_data->push_back(saturate_to_float(v));
    } else {
      t.dtype = DType::I64;
      t.i64_data = value.numbers.i;
    }
    return graph().add_tensor(std::move(t));
  }
  if (value.is_float()) {
    unsupported("a floating-point value computed from the input size is used as a tensor; denox only evaluates "
                "such values inside shape computations");
  }
  // Symbolic integers (e.g. a shape returned as a graph output) are written when the program runs.
  ShapeValuesAttrs attrs;
  SymMath m = math();
  for (const SymScalar& s : value.elems) attrs.values.push_back(m.to_value(s));
  t.dtype = DType::I64;
  TensorId id = graph().add_tensor(std::move(t));
  graph().ops.push_back(Op{node_.name(), node_.op_type(), attrs, {}, id});
  return id;
}

bool NodeContext::has_attr(const std::string& name) const { return attr(name) != nullptr; }

const onnx::AttributeProto* NodeContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) invalid("attribute '" + name + "' must be an integer");
  return a->i();
}

float NodeContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) invalid("attribute '" + name + "' must be a float");
  return a->f();
}

std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING) invalid("attribute '" + name + "' must be a string");
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INTS) invalid("attribute '" + name + "' must be a list of integers");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> NodeContext::attr_floats(const std::string& name) const {
  const auto* a = attr(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::FLOATS) invalid("attribute '" + name + "' must be a list of floats");
  return {a->floats().begin(), a->floats().end()};
}

void NodeContext::require_attr_default(const std::string& name, int64_t default_value) const {
  int64_t v = attr_int(name, default_value);
  if (v != default_value) unsupported("attribute " + name + "=" + std::to_string(v) + " is not supported");
}

size_t NodeContext::output_count() const { return static_cast<size_t>(node_.output_size()); }

bool NodeContext::output_used(size_t i) const {
  return i < output_count() && !node_.output(static_cast<int>(i)).empty();
}

bool NodeContext::output_consumed(size_t i) const {
  return output_used(i) && state_.consumed.count(node_.output(static_cast<int>(i))) > 0;
}

void NodeContext::set_static_output(size_t i, StaticTensor value) {
  if (!output_used(i)) return;
  const int64_t count = checked_element_count(value.dims, where_ + " output");
  // Every later reader (weights, shader constants) trusts the shape: a mismatch is a converter bug.
  if (static_cast<uint64_t>(count) != value.size())
    fail(ErrorCode::Internal, where_ + ": a constant result of " + std::to_string(value.size()) + " elements has a shape of " + std::to_string(count));
  state_.charge_constant(value.size(), where_);
  ImportedValue v;
  v.value = std::move(value);
  state_.values[node_.output(static_cast<int>(i))] = std::move(v);
}

void NodeContext::alias_output(size_t i, TensorId tensor) {
  if (!output_used(i)) return;
  ImportedValue v;
  v.is_data = true;
  v.tensor = tensor;
  state_.values[node_.output(static_cast<int>(i))] = v;
}

TensorId NodeContext::add_op(OpAttrs attrs, std::vector<TensorId> inputs, std::vector<ValueId> shape, DType dtype) {
  Tensor t;
  t.name = output_used(0) ? node_.output(0) : node_.name() + ":out";
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (ValueId v : t.shape) {
    program().require(program().binary(IntOp::Le, program().constant(0), v),
                      where_ + ": output extent " + program().to_string(v) + " is negative at this resolution");
  }
  TensorId id = graph().add_tensor(std::move(t));
  graph().ops.push_back(Op{node_.name(), node_.op_type(), std::move(attrs), std::move(inputs), id});
  alias_output(0, id);
  return id;
}

}  // namespace denox::compiler
