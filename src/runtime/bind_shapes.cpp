#include "runtime/bind_shapes.hpp"

#include <optional>
#include <string>

#include "common/error.hpp"
#include "common/host_tensor.hpp"

namespace denox::runtime {

using compiler::Graph;
using compiler::IntOp;
using compiler::ValueId;

namespace {

std::string axis_name(const std::vector<SymbolicInput>& inputs, size_t input_index, size_t axis) {
  return "input '" + inputs[input_index].name + "' axis " + std::to_string(axis);
}

std::string symbolic_shape(const compiler::ShapeProgram& program, const std::vector<ValueId>& shape) {
  std::string s;
  for (ValueId v : shape) s += (s.empty() ? "" : "x") + (v < program.size() ? program.to_string(v) : "?");
  return s;
}

// Where a symbol got its value, so that a disagreement can name both places.
struct Binding {
  int64_t value = 0;
  std::string where;
};

}  // namespace

std::vector<int64_t> bind_symbols(const Graph& g, const std::vector<std::vector<int64_t>>& input_shapes) {
  std::vector<SymbolicInput> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (g.inputs[i] >= g.tensors.size()) {
      fail(ErrorCode::InvalidModel, "graph input " + std::to_string(i) + " refers to tensor " +
                                        std::to_string(g.inputs[i]) + ", which does not exist");
    }
    inputs.push_back({g.tensor(g.inputs[i]).name, g.tensor(g.inputs[i]).shape});
  }
  return bind_symbols(g.program, inputs, input_shapes);
}

std::vector<int64_t> bind_symbols(const compiler::ShapeProgram& program, const std::vector<SymbolicInput>& inputs,
                                  const std::vector<std::vector<int64_t>>& input_shapes) {
  const auto& instrs = program.instructions();
  if (input_shapes.size() != inputs.size()) {
    fail(ErrorCode::InvalidArgument, "the model has " + std::to_string(inputs.size()) + " input(s), got " +
                                         std::to_string(input_shapes.size()) + " shape(s)");
  }

  // Pass 1: ranks, positive extents, and symbol bindings from axes that are bare symbols.
  std::vector<std::optional<Binding>> bindings(program.symbol_names().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& t = inputs[i];
    const auto& given = input_shapes[i];
    if (given.size() != t.shape.size()) {
      fail(ErrorCode::InvalidArgument, "input '" + t.name + "': expected rank " + std::to_string(t.shape.size()) +
                                           " (" + symbolic_shape(program, t.shape) + "), got rank " +
                                           std::to_string(given.size()) + " (" + shape_string(given) + ")");
    }
    for (size_t axis = 0; axis < given.size(); ++axis) {
      if (given[axis] <= 0) {
        fail(ErrorCode::InvalidArgument, axis_name(inputs, i, axis) + " has extent " + std::to_string(given[axis]) +
                                             "; extents must be positive");
      }
      ValueId v = t.shape[axis];
      if (v >= instrs.size()) {
        fail(ErrorCode::InvalidModel, "input '" + t.name + "' axis " + std::to_string(axis) +
                                          " refers to shape value %" + std::to_string(v) + ", which does not exist");
      }
      if (instrs[v].op != IntOp::Symbol) continue;
      auto symbol = static_cast<size_t>(instrs[v].imm);
      const std::string& name = program.symbol_names().at(symbol);
      auto& b = bindings[symbol];
      if (!b) {
        b = Binding{given[axis], axis_name(inputs, i, axis)};
      } else if (b->value != given[axis]) {
        fail(ErrorCode::ShapeMismatch, "symbol '" + name + "' is " + std::to_string(b->value) + " from " + b->where +
                                           " but " + std::to_string(given[axis]) + " from " + axis_name(inputs, i, axis));
      }
    }
  }

  std::vector<int64_t> symbol_values(bindings.size());
  for (size_t s = 0; s < bindings.size(); ++s) {
    if (!bindings[s]) {
      fail(ErrorCode::InvalidArgument, "symbol '" + program.symbol_names()[s] +
                                           "' is not the extent of any input axis, so no input shape can bind it");
    }
    symbol_values[s] = bindings[s]->value;
  }

  // Pass 2: run the program (its assertions check what the import could not decide), then every
  // input axis, including constants such as the channel count and derived expressions.
  std::vector<int64_t> values;
  try {
    values = program.evaluate(symbol_values);
  } catch (const Error& e) {
    std::string shapes;
    for (const auto& s : input_shapes) shapes += (shapes.empty() ? "" : ", ") + shape_string(s);
    throw Error(e, std::string(e.what()) + " (input shapes " + shapes + ")");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& t = inputs[i];
    for (size_t axis = 0; axis < t.shape.size(); ++axis) {
      int64_t expected = values[t.shape[axis]];
      if (expected != input_shapes[i][axis]) {
        std::string how = program.is_constant(t.shape[axis]) ? "" : " (" + program.to_string(t.shape[axis]) + ")";
        fail(ErrorCode::InvalidArgument, "input '" + t.name + "': axis " + std::to_string(axis) + " expects " +
                                             std::to_string(expected) + how + ", got " +
                                             std::to_string(input_shapes[i][axis]));
      }
    }
  }
  return values;
}

}  // namespace denox::runtime
