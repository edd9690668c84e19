// Model-local functions (FunctionProto): exporters, PyTorch's dynamo exporter among them, may
// wrap ops in functions. Import flattens them into plain nodes first.
#pragma once

#include <vector>

namespace onnx {
class ModelProto;
class NodeProto;
}  // namespace onnx

namespace denox::compiler {

// The main graph's nodes with every call of a model-local function replaced by the function's
// body (recursively), tensor names made unique per call site.
std::vector<onnx::NodeProto> inline_functions(const onnx::ModelProto& model);

}  // namespace denox::compiler
