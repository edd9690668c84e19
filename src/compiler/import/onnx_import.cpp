#include "compiler/import/onnx_import.hpp"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "common/read_file.hpp"
#include "compiler/import/inline_functions.hpp"
#include "compiler/import/node_context.hpp"

namespace denox::compiler {
namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The version the model imports for `domain`; 0 when it imports none (a model made only of
// ai.onnx.ml or training ops, whose nodes are then reported as unsupported).
int64_t imported_opset(const onnx::ModelProto& model, const std::string& domain) {
  for (const auto& o : model.opset_import()) {
    if (is_default_domain(domain) ? is_default_domain(o.domain()) : o.domain() == domain) return o.version();
  }
  return 0;
}

bool is_known_op(const onnx::NodeProto& n) {
  return is_default_domain(n.domain()) &&
         (static_converters().count(n.op_type()) || tensor_converters().count(n.op_type()));
}

// The node's input and output counts against its operator's ONNX schema (libonnx's registry, the
// newest version not above the model's opset). Converters index their inputs by position, so a
// node with too few would read past the list. For an opset newer than libonnx knows (Debian 12's
// 1.12 knows 17) only the minimum counts are checked: newer versions add optional inputs (Pad's
// axes in opset 18), so the older maximum would refuse valid models.
void check_arity(const NodeContext& ctx, const onnx::NodeProto& n, int64_t opset) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min<int64_t>(opset, INT32_MAX)));
  if (schema == nullptr) return;  // not an operator libonnx knows at this opset: the converter checks what it reads
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto domain = known.find(onnx::ONNX_DOMAIN);
  const bool newer_than_known = domain == known.end() || opset > domain->second.second;
  const int max_input = newer_than_known ? std::numeric_limits<int>::max() : schema->max_input();
  const int max_output = newer_than_known ? std::numeric_limits<int>::max() : schema->max_output();
  const auto count = [](int k, const char* what) { return std::to_string(k) + " " + what + (k == 1 ? "" : "s"); };
  const auto range = [&](int lo, int hi, const char* what) {
    if (lo == hi) return count(lo, what);
    if (hi == std::numeric_limits<int>::max()) return "at least " + count(lo, what);
    return std::to_string(lo) + " to " + std::to_string(hi) + " " + what + "s";
  };
  const std::string version = " (ONNX schema, opset " + std::to_string(schema->since_version()) + ")";
  if (n.input_size() < schema->min_input() || n.input_size() > max_input)
    ctx.invalid("has " + count(n.input_size(), "input") + ", but " + n.op_type() + " takes " + range(schema->min_input(), max_input, "input") + version);
  if (n.output_size() < schema->min_output() || n.output_size() > max_output)
    ctx.invalid("has " + count(n.output_size(), "output") + ", but " + n.op_type() + " makes " + range(schema->min_output(), max_output, "output") + version);
}

// ONNX requires topological order, but sorting costs little and accepts sloppy writers. Kahn's
// algorithm, lowest index first among the ready nodes, so a sorted graph keeps its order. (Passes
// over the list until nothing moved were quadratic: 60000 nodes in reverse order took 84 s.)
std::vector<onnx::NodeProto> topological_order(std::vector<onnx::NodeProto> nodes, const std::unordered_set<std::string>& defined) {
  std::unordered_set<std::string> available = defined;
  std::unordered_map<std::string, std::vector<size_t>> waiting;  // a name not yet available -> the nodes reading it
  std::vector<size_t> missing(nodes.size(), 0);                   // per node: distinct inputs not yet available
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::unordered_set<std::string> seen;
    for (const auto& in : nodes[i].input()) {
      if (in.empty() || available.count(in) || !seen.insert(in).second) continue;
      waiting[in].push_back(i);
      ++missing[i];
    }
    if (missing[i] == 0) ready.push(i);
  }
  std::vector<onnx::NodeProto> ordered;
  std::vector<bool> done(nodes.size(), false);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    for (const auto& out : nodes[i].output()) {
      if (!available.insert(out).second) continue;
      const auto it = waiting.find(out);
      if (it == waiting.end()) continue;
      for (size_t j : it->second)
        if (--missing[j] == 0) ready.push(j);
      waiting.erase(it);
    }
    ordered.push_back(std::move(nodes[i]));
    done[i] = true;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (done[i]) continue;
    for (const auto& in : nodes[i].input()) {
      if (!in.empty() && !available.count(in)) {
        fail(ErrorCode::InvalidModel, "node '" + nodes[i].name() + "' (" + nodes[i].op_type() + ") reads '" + in +
                                          "', which no node, graph input or initializer defines (or the graph has a cycle)");
      }
    }
  }
  return ordered;
}

void add_graph_input(ImportState& st, const onnx::ValueInfoProto& vi) {
  const std::string what = "graph input '" + vi.name() + "'";
  if (!vi.type().has_tensor_type()) fail(ErrorCode::Unsupported, what + " is not a tensor");
  const auto& tt = vi.type().tensor_type();
  if (tt.elem_type() != onnx::TensorProto::FLOAT) {
    // Integer inputs would be data-dependent shapes or indices, which denox does not execute.
    fail(ErrorCode::Unsupported, what + " has element type " + onnx_type_name(tt.elem_type()) +
                                     " (denox reads float32 inputs; shapes, indices and axes must be constants or computed from input shapes)");
  }
  if (!tt.has_shape()) fail(ErrorCode::InvalidModel, what + " declares no shape; denox needs at least its rank");
  ShapeProgram& p = st.graph.program;
  Tensor t;
  t.name = vi.name();
  for (int a = 0; a < tt.shape().dim_size(); ++a) {
    const auto& d = tt.shape().dim(a);
    if (d.has_dim_value()) {
      // Empty tensors are valid ONNX but nothing a denoiser runs on: unsupported, not invalid.
      if (d.dim_value() == 0) fail(ErrorCode::Unsupported, what + " has extent 0 on axis " + std::to_string(a) + " (empty tensors)");
      if (d.dim_value() < 0 || d.dim_value() > (int64_t{1} << 31)) {
        fail(ErrorCode::InvalidModel, what + " has extent " + std::to_string(d.dim_value()) + " on axis " + std::to_string(a));
      }
      t.shape.push_back(p.constant(d.dim_value()));
    } else {
      // Named extents become symbols shared across inputs; unnamed ones get their own.
      t.shape.push_back(p.symbol(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param()
                                                                                : vi.name() + ".dim" + std::to_string(a)));
    }
  }
  TensorId id = st.graph.add_tensor(std::move(t));
  st.graph.inputs.push_back(id);
  ImportedValue v;
  v.is_data = true;
  v.tensor = id;
  st.values[vi.name()] = v;
}

// Graph outputs with declared extents ("H", 3): checked when the program runs, and used as the
// output's shape, so a cropped output reads 1x3xHxW rather than a long expression.
void apply_declared_shape(ImportState& st, const onnx::ValueInfoProto& vi, TensorId id) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  const auto& shape = vi.type().tensor_type().shape();
  Tensor& t = st.graph.tensors[id];
  if (shape.dim_size() != static_cast<int>(t.shape.size())) {
    fail(ErrorCode::InvalidModel, "graph output '" + vi.name() + "' declares rank " + std::to_string(shape.dim_size()) +
                                      " but the network computes rank " + std::to_string(t.shape.size()));
  }
  ShapeProgram& p = st.graph.program;
  const auto& symbols = p.symbol_names();
  for (int a = 0; a < shape.dim_size(); ++a) {
    const auto& d = shape.dim(a);
    ValueId declared;
    if (d.has_dim_value()) declared = p.constant(d.dim_value());
    else if (d.has_dim_param() && std::find(symbols.begin(), symbols.end(), d.dim_param()) != symbols.end()) declared = p.symbol(d.dim_param());
    else continue;
    ValueId& computed = t.shape[static_cast<size_t>(a)];
    std::string msg = "graph output '" + vi.name() + "' axis " + std::to_string(a) + " is declared as " + p.to_string(declared) +
                      " but computes to " + p.to_string(computed);
    if (!p.require_equal(computed, declared, msg)) fail(ErrorCode::ShapeMismatch, msg);
    // A graph input passed straight through (Identity) keeps its own extents: they are what
    // binds the symbols when the program runs.
    if (std::find(st.graph.inputs.begin(), st.graph.inputs.end(), id) == st.graph.inputs.end()) computed = declared;
  }
}

Graph import_model(const onnx::ModelProto& model, const ImportOptions& options) {
  if (!model.has_graph()) fail(ErrorCode::InvalidModel, "the model has no graph");
  const int64_t opset = imported_opset(model, "");
  const auto& g = model.graph();
  ImportState st;
  st.external.base_dir = options.base_dir;
  st.constant_budget = options.max_constant_elements;
  st.graph.opset = opset;

  std::vector<onnx::NodeProto> nodes = inline_functions(model);
  auto label = [&](const onnx::NodeProto& n) { return node_label(n, imported_opset(model, n.domain())); };
  // Every node denox cannot convert at all, reported together. An opset outside the range is
  // reported on each node, so the message names what would have to change.
  std::vector<std::string> problems;
  const bool opset_ok = opset >= kMinOpset && opset <= kMaxOpset;
  for (const auto& n : nodes) {
    if (is_default_domain(n.domain()) && opset == 0) {
      fail(ErrorCode::InvalidModel, label(n) + " is in the default ONNX domain, which the model does not import");
    }
    if (!is_known_op(n)) {
      problems.push_back(label(n) + ": operator not supported");
    } else if (!opset_ok) {
      problems.push_back(label(n) + ": opset " + std::to_string(opset) + " (denox reads opsets " + std::to_string(kMinOpset) +
                         " to " + std::to_string(kMaxOpset) + ")");
    }
  }
  if (g.sparse_initializer_size() > 0) problems.push_back("sparse initializers are not supported");

  // Graph inputs and initializers denox cannot take (element type, empty): reported on the
  // nodes that read them, which then are not converted (they would find no value for the
  // input). Each maps to {"graph input 'x'", why without that prefix}, to say "reads graph
  // input 'x', which has element type ...".
  std::map<std::string, std::pair<std::string, std::string>> rejected_inputs;
  auto reject = [&](const std::string& name, const std::string& what, const Error& e) {
    std::string why = e.what();
    const std::string prefix = printable_message(what + " ");  // as e.what() was written
    rejected_inputs[name] = {what, why.rfind(prefix, 0) == 0 ? why.substr(prefix.size()) : why};
  };
  // An initializer that no node and no graph output reads is dead weight: it is not decoded
  // (nor read from its external file), so it costs no memory past protobuf's copy and cannot
  // fail the import.
  for (const auto& n : nodes) st.consumed.insert(n.input().begin(), n.input().end());
  for (const auto& out : g.output()) st.consumed.insert(out.name());
  std::unordered_set<std::string> defined;
  for (const auto& init : g.initializer()) {
    if (!defined.insert(init.name()).second) fail(ErrorCode::InvalidModel, "initializer '" + init.name() + "' is defined twice");
    if (!st.consumed.count(init.name())) continue;
    const std::string what = "initializer '" + init.name() + "'";
    ImportedValue v;
    try {
      v.value = make_dense(decode_tensor(init, st.external, what));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unsupported) throw;
      reject(init.name(), what, e);
      continue;
    }
    st.charge_constant(v.value.size(), what);
    st.values[init.name()] = std::move(v);
  }
  std::unordered_set<std::string> input_names;
  for (const auto& in : g.input()) {
    // (The second of two inputs of one name was skipped: which one binds the caller's tensor?)
    if (!input_names.insert(in.name()).second) fail(ErrorCode::InvalidModel, "graph input '" + in.name() + "' is listed twice");
    if (defined.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    defined.insert(in.name());
    try {
      add_graph_input(st, in);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unsupported) throw;
      reject(in.name(), "graph input '" + in.name() + "'", e);
    }
  }
  // (The plan format holds at most this many of each: plan_validate.cpp's kMaxIoTensors.)
  if (st.graph.inputs.size() > kMaxGraphIo)
    fail(ErrorCode::Unsupported, "the model has " + std::to_string(st.graph.inputs.size()) + " tensor inputs; denox runs at most " +
                                     std::to_string(kMaxGraphIo));
  if (static_cast<size_t>(g.output_size()) > kMaxGraphIo)
    fail(ErrorCode::Unsupported, "the model has " + std::to_string(g.output_size()) + " outputs; denox runs at most " + std::to_string(kMaxGraphIo));
  if (!opset_ok && problems.empty()) {
    if (opset == 0) fail(ErrorCode::InvalidModel, "the model imports no opset of the default ONNX domain");
    fail(ErrorCode::Unsupported, "the model uses opset " + std::to_string(opset) + "; denox reads opsets " +
                                     std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  }
  if (!opset_ok) nodes.clear();  // nothing to convert: every node is already reported
  if (st.graph.inputs.empty() && problems.empty() && rejected_inputs.empty()) {
    // Valid ONNX (a graph of constants), but denox runs networks on input tensors.
    fail(ErrorCode::Unsupported, "the model has no tensor input (denox runs networks on float32 input tensors)");
  }

  std::set<std::string> poisoned, rejected_read;
  std::unordered_set<std::string> outputs_seen;
  for (const auto& n : topological_order(std::move(nodes), defined)) {
    for (const auto& out : n.output()) {
      if (!out.empty() && (defined.count(out) || !outputs_seen.insert(out).second)) {
        fail(ErrorCode::InvalidModel, node_label(n, opset) + " writes '" + out + "', which is already defined");
      }
    }
    // A node that reads the result of an unsupported node is not reported again.
    bool skip = !is_known_op(n);
    for (const auto& in : n.input()) {
      if (auto it = rejected_inputs.find(in); it != rejected_inputs.end()) {
        problems.push_back(label(n) + ": reads " + it->second.first + ", which " + it->second.second);
        rejected_read.insert(in);
        skip = true;
      }
    }
    for (const auto& in : n.input()) skip = skip || poisoned.count(in);
    if (!skip) {
      NodeContext ctx(st, n, opset);
      try {
        check_arity(ctx, n, opset);
        const auto& tc = tensor_converters();
        const auto& sc = static_converters();
        if (ctx.any_data_input() || !sc.count(n.op_type())) {
          auto it = tc.find(n.op_type());
          if (it == tc.end()) ctx.unsupported("operator on a tensor computed by the network (denox evaluates it only in shape computations)");
          it->second(ctx);
        } else {
          sc.at(n.op_type())(ctx);
        }
        for (int i = 0; i < n.output_size(); ++i) {
          if (ctx.output_consumed(static_cast<size_t>(i)) && !st.values.count(n.output(i))) ctx.unsupported("output " + std::to_string(i));
        }
        continue;
      } catch (const Error& e) {
        if (e.code() == ErrorCode::Unsupported) {
          problems.push_back(e.what());
        } else {
          // The shape program's errors (an overflow in shape arithmetic) do not know the node.
          // (Messages are printable_message'd: so is the label they may start with.)
          const std::string_view message = e.what();
          if (message.rfind(printable_message(ctx.where()), 0) == 0) throw;
          throw Error(e, ctx.where() + ": " + std::string(message));
        }
      }
    }
    for (const auto& out : n.output()) poisoned.insert(out);
  }
  // An unread graph input still has to be bound by the caller, so it is reported; an unread
  // initializer is just dead weight.
  for (const auto& [name, why] : rejected_inputs) {
    if (!rejected_read.count(name) && why.first.rfind("initializer", 0) != 0) problems.push_back(why.first + " " + why.second);
  }
  if (!problems.empty()) {
    std::string msg = "the model uses " + std::to_string(problems.size()) + " unsupported feature" + (problems.size() > 1 ? "s" : "") + ":";
    for (const auto& p : problems) msg += "\n  " + p;
    fail(ErrorCode::Unsupported, msg);
  }

  for (const auto& out : g.output()) {
    auto it = st.values.find(out.name());
    if (it == st.values.end()) fail(ErrorCode::InvalidModel, "graph output '" + out.name() + "' is never computed");
    TensorId id;
    if (it->second.is_data) {
      id = it->second.tensor;
    } else {
      onnx::NodeProto fake;
      fake.set_name(out.name());
      fake.set_op_type("Output");
      NodeContext ctx(st, fake, opset);
      id = ctx.materialize(it->second.value, out.name());
    }
    apply_declared_shape(st, out, id);
    st.graph.outputs.push_back(id);
  }
  if (st.graph.outputs.empty()) fail(ErrorCode::InvalidModel, "the model has no outputs");
  st.graph.compact_program();
  return std::move(st.graph);
}

}  // namespace

Graph import_onnx_bytes(const void* data, size_t size, const ImportOptions& options) {
  if (size > static_cast<size_t>(INT32_MAX)) fail(ErrorCode::InvalidModel, "the model is larger than 2 GiB (protobuf's limit)");
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) {
    fail(ErrorCode::InvalidModel, "the data is not a valid ONNX model (protobuf parsing failed)");
  }
  return import_model(model, options);
}

std::string read_onnx_file(const std::filesystem::path& path) {
  // Refused before reading: protobuf cannot parse it anyway, and a huge or sparse file would
  // first be read into memory.
  return read_regular_file(path, [&](std::uintmax_t size) {
    if (size > static_cast<std::uintmax_t>(INT32_MAX))
      fail(ErrorCode::InvalidModel, path.string() + ": the model is larger than 2 GiB (protobuf's limit)");
  });
}

Graph import_onnx_file(const std::filesystem::path& path) {
  const std::string bytes = read_onnx_file(path);
  ImportOptions options;
  options.base_dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  try {
    return import_onnx_bytes(bytes.data(), bytes.size(), options);
  } catch (const Error& e) {
    throw Error(e, path.string() + ": " + e.what());
  }
}

}  // namespace denox::compiler
