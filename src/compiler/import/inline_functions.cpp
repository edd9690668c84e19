#include "compiler/import/inline_functions.hpp"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.hpp"

namespace denox::compiler {
namespace {

// Functions are identified by (domain, name, overload) since IR 10.
using FunctionKey = std::tuple<std::string, std::string, std::string>;
using FunctionMap = std::map<FunctionKey, const onnx::FunctionProto*>;

// Fields newer than the compiled onnx.proto (Debian 12's libonnx 1.12: IR 8) arrive as unknown
// fields; read them by number, or as members where the library knows them.
template <typename Message>
std::vector<std::string> unknown_length_delimited(const Message& m, int number) {
  std::vector<std::string> out;
  const auto& fields = m.unknown_fields();
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) out.push_back(f.length_delimited());
  }
  return out;
}

// NodeProto.overload (field 8) and FunctionProto.overload (field 13), IR 10.
template <typename Message>
std::string overload_of(const Message& m, int number) {
  if constexpr (requires { m.overload(); }) {
    return m.overload();
  } else {
    auto v = unknown_length_delimited(m, number);
    return v.empty() ? std::string() : v.back();
  }
}

// FunctionProto.attribute_proto (field 11, IR 9): attributes with default values. onnxscript
// writes defaults there (torchlib's `value: float = 0.0`), and a call may leave them unset.
// A template so that `requires` is checked on the library's FunctionProto, not a hard error.
template <typename Function>
std::vector<onnx::AttributeProto> attribute_defaults(const Function& fn) {
  std::vector<onnx::AttributeProto> out;
  if constexpr (requires { fn.attribute_proto(); }) {
    for (const auto& a : fn.attribute_proto()) out.push_back(a);
  } else {
    for (const auto& bytes : unknown_length_delimited(fn, 11)) {
      onnx::AttributeProto a;
      if (!a.ParseFromString(bytes)) fail(ErrorCode::InvalidModel, "function '" + fn.name() + "' has a malformed attribute default");
      out.push_back(std::move(a));
    }
  }
  return out;
}

// The model-local function `node` calls, or null for an operator.
const onnx::FunctionProto* called_function(const onnx::NodeProto& node, const FunctionMap& functions) {
  auto it = functions.find({node.domain(), node.op_type(), overload_of(node, 8)});
  return it == functions.end() ? nullptr : it->second;
}

constexpr int kMaxDepth = 16;
// Nodes after inlining, and calls expanded on the way (a function with an empty body adds no
// node but still costs a call). The depth limit alone let 15 levels of functions calling 8
// others grow to 8^15 nodes, 7 GB before std::bad_alloc (fuzzing); a real network has thousands.
constexpr size_t kMaxInlinedNodes = size_t{1} << 20;

// What inlining one node gives, counted per function before anything is copied: a hostile
// fan-out is refused in microseconds instead of after building a million nodes.
struct Expansion {
  size_t nodes = 0;  // saturating at kMaxInlinedNodes + 1
  size_t calls = 0;  // likewise
  int levels = 0;    // nested function calls, the node's own included
};

size_t saturating_add(size_t a, size_t b) { return std::min(a + b, kMaxInlinedNodes + 1); }

class ExpansionCounter {
 public:
  explicit ExpansionCounter(const FunctionMap& functions) : functions_(functions) {}

  Expansion of_node(const onnx::NodeProto& node) {
    const onnx::FunctionProto* fn = called_function(node, functions_);
    return fn == nullptr ? Expansion{1, 0, 0} : of_function(*fn);
  }

 private:
  // Depth first along `chain_`, the calls being counted: checked on the way down, so a chain of
  // 100 000 functions stops at level 18 instead of recursing 100 000 frames deep.
  Expansion of_function(const onnx::FunctionProto& fn) {
    if (auto it = done_.find(&fn); it != done_.end()) return it->second;
    if (std::find(chain_.begin(), chain_.end(), &fn) != chain_.end())
      fail(ErrorCode::InvalidModel, "function '" + fn.name() + "' calls itself, directly or through other functions (ONNX functions cannot recurse)");
    if (chain_.size() > static_cast<size_t>(kMaxDepth)) too_deep(*chain_.front());
    chain_.push_back(&fn);
    Expansion e{0, 1, 0};
    for (const auto& body_node : fn.node()) {
      const Expansion sub = of_node(body_node);
      e.nodes = saturating_add(e.nodes, sub.nodes);
      e.calls = saturating_add(e.calls, sub.calls);
      e.levels = std::max(e.levels, sub.levels);
    }
    // Below a function counted earlier (memoized), the levels only add up here.
    if (++e.levels > kMaxDepth + 1) too_deep(fn);
    chain_.pop_back();
    done_[&fn] = e;
    return e;
  }

  [[noreturn]] static void too_deep(const onnx::FunctionProto& outer) {
    fail(ErrorCode::InvalidModel, "function '" + outer.name() + "' nests function calls more than " + std::to_string(kMaxDepth + 1) +
                                      " levels deep; denox inlines at most " + std::to_string(kMaxDepth + 1));
  }

  const FunctionMap& functions_;
  std::map<const onnx::FunctionProto*, Expansion> done_;
  std::vector<const onnx::FunctionProto*> chain_;
};

// Refuses, naming the graph node where the total passes a limit, what inlining would make too big.
void check_expansion(const onnx::GraphProto& graph, const FunctionMap& functions) {
  ExpansionCounter counter(functions);
  Expansion total;
  for (const auto& node : graph.node()) {
    const Expansion e = counter.of_node(node);
    total.nodes = saturating_add(total.nodes, e.nodes);
    total.calls = saturating_add(total.calls, e.calls);
    const char* what = total.nodes > kMaxInlinedNodes ? "nodes" : total.calls > kMaxInlinedNodes ? "function calls" : nullptr;
    if (what != nullptr) {
      const std::string where = e.calls > 0 ? "the call of function '" + node.op_type() + "' by node '" + node.name() + "'"
                                            : "node '" + node.name() + "' (" + node.op_type() + ")";
      fail(ErrorCode::InvalidModel, "the model has more than " + std::to_string(kMaxInlinedNodes) + " " + what +
                                        " once its functions are inlined (passed at " + where + ")");
    }
  }
}

void expand(const onnx::NodeProto& node, const FunctionMap& functions, int depth, std::vector<onnx::NodeProto>& out,
            size_t& call_counter, int64_t model_opset);

// The opset of the default ONNX domain in `imports` (-1: not imported).
template <typename Imports>
int64_t default_domain_opset(const Imports& imports) {
  for (const auto& o : imports)
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return -1;
}

void expand_call(const onnx::NodeProto& call, const onnx::FunctionProto& fn, const FunctionMap& functions, int depth,
                 std::vector<onnx::NodeProto>& out, size_t& call_counter, int64_t model_opset) {
  // check_expansion bounded the depth and the calls before anything was expanded.
  if (depth > kMaxDepth || call_counter >= kMaxInlinedNodes) fail(ErrorCode::Internal, "inlining passed the limits checked before it");
  // Inlined nodes are converted at the model's opset. A body written for another one is right
  // there only where each of its operators has the same schema at both opsets (what ONNX's
  // checker asks too); otherwise a node could mean something else (Clip's min and max
  // attributes are ignored from opset 11 on). Beyond the opsets libonnx knows, that cannot be
  // told.
  if (const int64_t own = default_domain_opset(fn.opset_import()); own >= 0 && model_opset >= 0 && own != model_opset) {
    const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    const auto domain = known.find(onnx::ONNX_DOMAIN);
    const int64_t newest = domain == known.end() ? -1 : domain->second.second;
    for (const auto& body_node : fn.node()) {
      if (!body_node.domain().empty() && body_node.domain() != "ai.onnx") continue;
      if (called_function(body_node, functions) != nullptr) continue;  // (a call: checked when it is expanded)
      const auto schema_at = [&](int64_t opset) {
        return opset > newest ? nullptr : onnx::OpSchemaRegistry::Schema(body_node.op_type(), static_cast<int>(opset));
      };
      const onnx::OpSchema* a = schema_at(own);
      const onnx::OpSchema* b = schema_at(model_opset);
      if (a == nullptr || b == nullptr || a->since_version() != b->since_version())
        fail(ErrorCode::Unsupported, "function '" + fn.name() + "' (called by node '" + call.name() + "') imports opset " + std::to_string(own) +
                                         " of the default ONNX domain, the model opset " + std::to_string(model_opset) + ", and its node '" +
                                         body_node.name() + "' (" + body_node.op_type() + ") " +
                                         (a == nullptr || b == nullptr ? "cannot be compared between them (an opset or operator libonnx does not know)"
                                                                       : "differs between them (versions " + std::to_string(a->since_version()) +
                                                                             " and " + std::to_string(b->since_version()) + ")") +
                                         "; denox inlines functions at the model's opset");
    }
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
  // Attribute values come from the call, else from the function's defaults; a reference to
  // neither keeps the op's own default.
  std::map<std::string, const onnx::AttributeProto*> attrs;
  const std::vector<onnx::AttributeProto> defaults = attribute_defaults(fn);
  for (const auto& a : defaults) attrs[a.name()] = &a;
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
    expand(n, functions, depth + 1, out, call_counter, model_opset);
  }
}

void expand(const onnx::NodeProto& node, const FunctionMap& functions, int depth, std::vector<onnx::NodeProto>& out,
            size_t& call_counter, int64_t model_opset) {
  const onnx::FunctionProto* fn = called_function(node, functions);
  if (fn == nullptr) {
    if (out.size() >= kMaxInlinedNodes) fail(ErrorCode::Internal, "inlining passed the limits checked before it");
    out.push_back(node);
    return;
  }
  expand_call(node, *fn, functions, depth, out, call_counter, model_opset);
}

}  // namespace

std::vector<onnx::NodeProto> inline_functions(const onnx::ModelProto& model) {
  FunctionMap functions;
  for (const auto& fn : model.functions()) functions[{fn.domain(), fn.name(), overload_of(fn, 13)}] = &fn;
  check_expansion(model.graph(), functions);
  std::vector<onnx::NodeProto> out;
  size_t call_counter = 0;
  const int64_t model_opset = default_domain_opset(model.opset_import());
  for (const auto& node : model.graph().node()) expand(node, functions, 0, out, call_counter, model_opset);
  return out;
}

}  // namespace denox::compiler
