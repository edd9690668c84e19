// Small helpers for writing ONNX models from C++: tensors, initializers, nodes with attributes,
// typed graph inputs/outputs, and saving with optional external data. They do not validate
// graphs; the tests run the results through onnx.checker.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace denox::modelgen {

// One dimension of a graph input/output: a fixed size or a symbolic name (dim_param).
struct Dim {
  int64_t value = 0;
  std::string param;  // non-empty = symbolic

  static Dim fixed(int64_t value) { return Dim{value, {}}; }
  static Dim symbolic(std::string name) { return Dim{0, std::move(name)}; }
};

// The IR version that matches an opset of the default domain (what torch.onnx writes), so that
// older checkers and runtimes accept the model.
int64_t ir_version_for_opset(int64_t opset);

// An empty model importing the default ONNX domain at `opset`.
onnx::ModelProto make_model(int64_t opset, const std::string& graph_name);

// Tensors store their values little endian in raw_data, like PyTorch's exporter does.
onnx::TensorProto make_float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<float>& values);
onnx::TensorProto make_int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values);

onnx::TensorProto& add_float_initializer(onnx::GraphProto& graph, const std::string& name,
                                         const std::vector<int64_t>& dims, const std::vector<float>& values);
onnx::TensorProto& add_int64_initializer(onnx::GraphProto& graph, const std::string& name,
                                         const std::vector<int64_t>& dims, const std::vector<int64_t>& values);

// Appends a node; an empty string in `inputs` is an omitted optional input. The returned
// reference is only valid until the next node is added.
onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op_type,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                          const std::string& node_name);

// A Constant node producing `value` under the name `output` (value.name is ignored).
onnx::NodeProto& add_constant_node(onnx::GraphProto& graph, const std::string& output, const onnx::TensorProto& value);

// Attributes, one function per type (overloads on int64_t/float would make `1` ambiguous).
void set_int_attribute(onnx::NodeProto& node, const std::string& name, int64_t value);
void set_float_attribute(onnx::NodeProto& node, const std::string& name, float value);
void set_string_attribute(onnx::NodeProto& node, const std::string& name, const std::string& value);
void set_ints_attribute(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void set_floats_attribute(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values);
void set_tensor_attribute(onnx::NodeProto& node, const std::string& name, const onnx::TensorProto& value);

// A tensor type with a static or symbolic shape, for graph inputs, outputs and value_info.
onnx::ValueInfoProto make_value_info(const std::string& name, onnx::TensorProto_DataType elem_type,
                                     const std::vector<Dim>& dims);
void add_graph_input(onnx::GraphProto& graph, const onnx::ValueInfoProto& value);
void add_graph_output(onnx::GraphProto& graph, const onnx::ValueInfoProto& value);
void add_value_info(onnx::GraphProto& graph, const onnx::ValueInfoProto& value);

struct SaveOptions {
  // Move every initializer larger than external_threshold_bytes into one file named
  // "<model file name>.data" beside the model (location/offset/length entries,
  // data_location = EXTERNAL), as onnx.save_model(save_as_external_data=True) does.
  bool external_data = false;
  size_t external_threshold_bytes = 1024;
  // Offsets of external tensors are multiples of this (so that mapped data is aligned).
  size_t external_alignment = 64;
};

// The name of the external data file for a model path: "dir/m.onnx" -> "m.onnx.data".
std::string external_data_location(const std::string& model_path);

// Serializes `model` to `path` (and its data file), each through a temporary file that is
// renamed into place, so that a failed save leaves no partial files. Throws denox::Error (Io).
void write_model(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options = {});

}  // namespace denox::modelgen
