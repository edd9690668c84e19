// Binds a model's shape symbols (usually the input's H and W) from the concrete shapes of its
// inputs and runs the shape program for that resolution. Everything that executes a graph at a
// resolution (the CPU reference, the GPU runtime) starts here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace denox::runtime {

// input_shapes[i] is the concrete shape of g.inputs[i]. Every input axis whose extent is a bare
// symbol binds that symbol; the program is then evaluated and every input axis (constant,
// symbol or derived expression) must equal the extent given. Returns one value per shape
// program instruction (ValueId -> value).
//
// Throws InvalidArgument for a wrong input count, rank, a non-positive extent, a symbol no
// input axis binds, or an extent that disagrees with the model; ShapeMismatch when two axes
// bind the same symbol to different values or a shape-program assertion fails.
std::vector<int64_t> bind_symbols(const compiler::Graph& g, const std::vector<std::vector<int64_t>>& input_shapes);

// The same over a bare program: a plan has no graph, only its inputs' names and shape values.
struct SymbolicInput {
  std::string name;
  std::vector<compiler::ValueId> shape;
};
std::vector<int64_t> bind_symbols(const compiler::ShapeProgram& program, const std::vector<SymbolicInput>& inputs,
                                  const std::vector<std::vector<int64_t>>& input_shapes);

}  // namespace denox::runtime
