#include "modelgen/onnx_writer.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <type_traits>

#include "common/error.hpp"

namespace denox::modelgen {
namespace {

template <typename T>
std::string little_endian_bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8);
    std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> bits;
    std::memcpy(&bits, &values[i], sizeof(T));
    for (size_t b = 0; b < sizeof(T); ++b) bytes[i * sizeof(T) + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return bytes;
}

void check_element_count(const std::string& name, const std::vector<int64_t>& dims, size_t count) {
  size_t expected = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(ErrorCode::InvalidArgument, "tensor '" + name + "' has a negative dimension");
    expected *= static_cast<size_t>(d);
  }
  if (expected != count)
    fail(ErrorCode::InvalidArgument, "tensor '" + name + "': " + std::to_string(count) +
                                         " values do not fill its dims (" + std::to_string(expected) + " elements)");
}

onnx::AttributeProto& add_attribute(onnx::NodeProto& node, const std::string& name,
                                    onnx::AttributeProto_AttributeType type) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(type);
  return *attribute;
}

// The raw little-endian bytes of an initializer, converting the typed repeated fields a
// hand-written or older model may use instead of raw_data. Empty string: not convertible
// (string tensors, exotic types), so the tensor stays inside the model.
bool raw_bytes_of(const onnx::TensorProto& tensor, std::string& bytes) {
  if (tensor.has_raw_data()) {
    bytes = tensor.raw_data();
    return true;
  }
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      bytes = little_endian_bytes(std::vector<float>(tensor.float_data().begin(), tensor.float_data().end()));
      return true;
    case onnx::TensorProto::INT64:
      bytes = little_endian_bytes(std::vector<int64_t>(tensor.int64_data().begin(), tensor.int64_data().end()));
      return true;
    case onnx::TensorProto::INT32:
      bytes = little_endian_bytes(std::vector<int32_t>(tensor.int32_data().begin(), tensor.int32_data().end()));
      return true;
    case onnx::TensorProto::DOUBLE:
      bytes = little_endian_bytes(std::vector<double>(tensor.double_data().begin(), tensor.double_data().end()));
      return true;
    default:
      return false;
  }
}

void clear_typed_data(onnx::TensorProto& tensor) {
  tensor.clear_raw_data();
  tensor.clear_float_data();
  tensor.clear_int64_data();
  tensor.clear_int32_data();
  tensor.clear_double_data();
}

// Writes bytes to a temporary sibling and renames it over `path` (atomic on one file system).
void write_bytes_atomically(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::path temp = path;
  temp += ".tmp-" + std::to_string(::getpid());  // the pid keeps concurrent writers apart
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail(ErrorCode::Io, path.string() + ": cannot create " + temp.string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      fail(ErrorCode::Io, path.string() + ": write failed");
    }
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    fail(ErrorCode::Io, path.string() + ": cannot rename the temporary file into place: " + error.message());
  }
}

}  // namespace

int64_t ir_version_for_opset(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset <= 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

onnx::ModelProto make_model(int64_t opset, const std::string& graph_name) {
  onnx::ModelProto model;
  model.set_ir_version(ir_version_for_opset(opset));
  model.set_producer_name("denox-modelgen");
  model.set_producer_version("0.1");
  onnx::OperatorSetIdProto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model.mutable_graph()->set_name(graph_name);
  return model;
}

onnx::TensorProto make_float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<float>& values) {
  check_element_count(name, dims, values.size());
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor.add_dims(d);
  tensor.set_raw_data(little_endian_bytes(values));
  return tensor;
}

onnx::TensorProto make_int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values) {
  check_element_count(name, dims, values.size());
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) tensor.add_dims(d);
  tensor.set_raw_data(little_endian_bytes(values));
  return tensor;
}

onnx::TensorProto& add_float_initializer(onnx::GraphProto& graph, const std::string& name,
                                         const std::vector<int64_t>& dims, const std::vector<float>& values) {
  return *graph.add_initializer() = make_float_tensor(name, dims, values);
}

onnx::TensorProto& add_int64_initializer(onnx::GraphProto& graph, const std::string& name,
                                         const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  return *graph.add_initializer() = make_int64_tensor(name, dims, values);
}

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& node_name) {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op_type);
  node->set_name(node_name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return *node;
}

onnx::NodeProto& add_constant_node(onnx::GraphProto& graph, const std::string& output, const onnx::TensorProto& value) {
  onnx::NodeProto& node = add_node(graph, "Constant", {}, {output}, output + "/Constant");
  onnx::TensorProto tensor = value;
  tensor.clear_name();
  set_tensor_attribute(node, "value", tensor);
  return node;
}

void set_int_attribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  add_attribute(node, name, onnx::AttributeProto::INT).set_i(value);
}

void set_float_attribute(onnx::NodeProto& node, const std::string& name, float value) {
  add_attribute(node, name, onnx::AttributeProto::FLOAT).set_f(value);
}

void set_string_attribute(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  add_attribute(node, name, onnx::AttributeProto::STRING).set_s(value);
}

void set_ints_attribute(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto& attribute = add_attribute(node, name, onnx::AttributeProto::INTS);
  for (int64_t v : values) attribute.add_ints(v);
}

void set_floats_attribute(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto& attribute = add_attribute(node, name, onnx::AttributeProto::FLOATS);
  for (float v : values) attribute.add_floats(v);
}

void set_tensor_attribute(onnx::NodeProto& node, const std::string& name, const onnx::TensorProto& value) {
  *add_attribute(node, name, onnx::AttributeProto::TENSOR).mutable_t() = value;
}

onnx::ValueInfoProto make_value_info(const std::string& name, onnx::TensorProto_DataType elem_type,
                                     const std::vector<Dim>& dims) {
  onnx::ValueInfoProto value;
  value.set_name(name);
  onnx::TypeProto_Tensor* type = value.mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = type->mutable_shape();
  for (const Dim& d : dims) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    if (d.param.empty()) dim->set_dim_value(d.value);
    else dim->set_dim_param(d.param);
  }
  return value;
}

void add_graph_input(onnx::GraphProto& graph, const onnx::ValueInfoProto& value) { *graph.add_input() = value; }
void add_graph_output(onnx::GraphProto& graph, const onnx::ValueInfoProto& value) { *graph.add_output() = value; }
void add_value_info(onnx::GraphProto& graph, const onnx::ValueInfoProto& value) { *graph.add_value_info() = value; }

std::string external_data_location(const std::string& model_path) {
  return std::filesystem::path(model_path).filename().string() + ".data";
}

void write_model(const onnx::ModelProto& model, const std::string& path, const SaveOptions& options) {
  namespace fs = std::filesystem;
  if (fs::path(path).filename().empty()) fail(ErrorCode::InvalidArgument, "write_model: '" + path + "' is not a file path");
  if (!options.external_data) {
    std::string bytes;
    if (!model.SerializeToString(&bytes)) fail(ErrorCode::Internal, path + ": protobuf serialization failed");
    write_bytes_atomically(path, bytes);
    return;
  }

  const size_t alignment = options.external_alignment == 0 ? 1 : options.external_alignment;
  const std::string location = external_data_location(path);
  onnx::ModelProto copy = model;  // the caller's model keeps its inline data
  std::string data;
  for (onnx::TensorProto& tensor : *copy.mutable_graph()->mutable_initializer()) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL) continue;
    std::string bytes;
    if (!raw_bytes_of(tensor, bytes) || bytes.size() <= options.external_threshold_bytes) continue;
    data.resize((data.size() + alignment - 1) / alignment * alignment, '\0');
    const size_t offset = data.size();
    data += bytes;
    clear_typed_data(tensor);
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add_entry = [&](const std::string& key, const std::string& value) {
      onnx::StringStringEntryProto* entry = tensor.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add_entry("location", location);
    add_entry("offset", std::to_string(offset));
    add_entry("length", std::to_string(bytes.size()));
  }

  std::string model_bytes;
  if (!copy.SerializeToString(&model_bytes)) fail(ErrorCode::Internal, path + ": protobuf serialization failed");
  // The data file first: a model that references a missing data file is worse than a stray one.
  if (!data.empty()) write_bytes_atomically(fs::path(path).parent_path() / location, data);
  write_bytes_atomically(path, model_bytes);
}

}  // namespace denox::modelgen
