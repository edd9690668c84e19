#include "compiler/import/inline_functions.hpp"

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "common/error.hpp"

namespace denox::compiler {
namespace {

using FunctionMap = std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*>;

constexpr int kMaxDepth = 16;

void expand(const onnx::NodeProto& node, const FunctionMap& functions, int depth, std::vector<onnx::NodeProto>& out,
            int& call_counter);

void expand_call(const onnx::NodeProto& call, const onnx::FunctionProto& fn, const FunctionMap& functions, int depth,
                 std::vector<onnx::NodeProto>& out, int& call_counter) {
  if (depth > kMaxDepth) {
    fail(ErrorCode::InvalidModel, "function '" + fn.name() + "' nests deeper than " + std::to_string(kMaxDepth) +
                                      " calls (recursive functions are not allowed)");
  }
  const std::string prefix = (call.name().empty() ? fn.name() : call.name()) + "/" + std::to_string(call_counter++) + "/";
  std::map<std::string, std::string> rename;
  for (int i = 0; i < fn.input_size(); ++i) rename[fn.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < fn.output_size(); ++i) rename[fn.output(i)] = i < call.output_size() ? call.output(i) : "";
  auto mapped = [&](const std::string& name) {
    if (name.empty()) return name;
    auto it = rename.find(name);
    return it != rename.end() ? it->second : prefix + name;
  };
  // Attribute values come from the call. (Default values in FunctionProto.attribute_proto
  // arrived in IR version 9, after Debian's libonnx 1.12; an unset reference keeps the op's
  // own default.)
  std::map<std::string, const onnx::AttributeProto*> attrs;
  for (const auto& a : call.attribute()) attrs[a.name()] = &a;

  for (const auto& body_node : fn.node()) {
    onnx::NodeProto n = body_node;
    n.set_name(prefix + body_node.name());
    for (int i = 0; i < n.input_size(); ++i) n.set_input(i, mapped(n.input(i)));
    for (int i = 0; i < n.output_size(); ++i) n.set_output(i, mapped(n.output(i)));
    n.clear_attribute();
    for (const auto& a : body_node.attribute()) {
      if (a.ref_attr_name().empty()) {
        *n.add_attribute() = a;
        continue;
      }
      auto it = attrs.find(a.ref_attr_name());
      if (it == attrs.end()) continue;  // unset reference: the op's default applies
      onnx::AttributeProto copy = *it->second;
      copy.set_name(a.name());
      *n.add_attribute() = copy;
    }
    expand(n, functions, depth + 1, out, call_counter);
  }
}

void expand(const onnx::NodeProto& node, const FunctionMap& functions, int depth, std::vector<onnx::NodeProto>& out,
            int& call_counter) {
  auto it = functions.find({node.domain(), node.op_type()});
  if (it == functions.end()) {
    out.push_back(node);
    return;
  }
  expand_call(node, *it->second, functions, depth, out, call_counter);
}

}  // namespace

std::vector<onnx::NodeProto> inline_functions(const onnx::ModelProto& model) {
  FunctionMap functions;
  for (const auto& fn : model.functions()) functions[{fn.domain(), fn.name()}] = &fn;
  std::vector<onnx::NodeProto> out;
  int call_counter = 0;
  for (const auto& node : model.graph().node()) expand(node, functions, 0, out, call_counter);
  return out;
}

}  // namespace denox::compiler
