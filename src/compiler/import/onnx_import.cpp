#include "compiler/import/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <set>
#include <unordered_set>

#include "compiler/import/inline_functions.hpp"
#include "compiler/import/node_context.hpp"

namespace denox::compiler {
namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    if (is_default_domain(o.domain())) return o.version();
  }
  fail(ErrorCode::InvalidModel, "the model imports no opset of the default ONNX domain");
}

std::string node_label(const onnx::NodeProto& n, int64_t opset) {
  std::string s = "node '" + n.name() + "' (" + n.op_type() + ", opset " + std::to_string(opset);
  if (!is_default_domain(n.domain())) s += ", domain '" + n.domain() + "'";
  return s + ")";
}

bool is_known_op(const onnx::NodeProto& n) {
  return is_default_domain(n.domain()) &&
         (static_converters().count(n.op_type()) || tensor_converters().count(n.op_type()));
}

// ONNX requires topological order, but sorting costs little and accepts sloppy writers.
std::vector<onnx::NodeProto> topological_order(std::vector<onnx::NodeProto> nodes, const std::unordered_set<std::string>& defined) {
  std::unordered_set<std::string> available = defined;
  std::vector<onnx::NodeProto> ordered;
  std::vector<bool> done(nodes.size(), false);
  for (bool progress = true; progress && ordered.size() < nodes.size();) {
    progress = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (const auto& in : nodes[i].input()) ready = ready && (in.empty() || available.count(in));
      if (!ready) continue;
      for (const auto& out : nodes[i].output()) available.insert(out);
      ordered.push_back(std::move(nodes[i]));
      done[i] = true;
      progress = true;
    }
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
    fail(ErrorCode::Unsupported, what + " has element type " + onnx_type_name(tt.elem_type()) + " (denox reads float32 inputs)");
  }
  if (!tt.has_shape()) fail(ErrorCode::InvalidModel, what + " declares no shape; denox needs at least its rank");
  ShapeProgram& p = st.graph.program;
  Tensor t;
  t.name = vi.name();
  for (int a = 0; a < tt.shape().dim_size(); ++a) {
    const auto& d = tt.shape().dim(a);
    if (d.has_dim_value()) {
      if (d.dim_value() < 1 || d.dim_value() > (int64_t{1} << 31)) {
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
    computed = declared;
  }
}

Graph import_model(const onnx::ModelProto& model, const ImportOptions& options) {
  if (!model.has_graph()) fail(ErrorCode::InvalidModel, "the model has no graph");
  const int64_t opset = default_opset(model);
  if (opset < kMinOpset || opset > kMaxOpset) {
    fail(ErrorCode::Unsupported, "the model uses opset " + std::to_string(opset) + "; denox reads opsets " +
                                     std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  }
  const auto& g = model.graph();
  ImportState st;
  st.external.base_dir = options.base_dir;
  st.graph.opset = opset;

  std::vector<onnx::NodeProto> nodes = inline_functions(model);
  // Every node denox cannot convert at all, reported together.
  std::vector<std::string> problems;
  for (const auto& n : nodes) {
    if (!is_known_op(n)) problems.push_back(node_label(n, opset) + ": operator not supported");
  }
  if (g.sparse_initializer_size() > 0) problems.push_back("sparse initializers are not supported");

  std::unordered_set<std::string> defined;
  for (const auto& init : g.initializer()) {
    if (!defined.insert(init.name()).second) fail(ErrorCode::InvalidModel, "initializer '" + init.name() + "' is defined twice");
    ImportedValue v;
    v.value = make_dense(decode_tensor(init, st.external, "initializer '" + init.name() + "'"));
    st.values[init.name()] = std::move(v);
  }
  for (const auto& in : g.input()) {
    if (defined.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    defined.insert(in.name());
    try {
      add_graph_input(st, in);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unsupported) throw;
      problems.push_back(e.what());
    }
  }
  if (st.graph.inputs.empty() && problems.empty()) fail(ErrorCode::InvalidModel, "the model has no tensor input");

  std::set<std::string> poisoned;
  std::unordered_set<std::string> outputs_seen;
  for (const auto& n : topological_order(std::move(nodes), defined)) {
    for (const auto& out : n.output()) {
      if (!out.empty() && (defined.count(out) || !outputs_seen.insert(out).second)) {
        fail(ErrorCode::InvalidModel, node_label(n, opset) + " writes '" + out + "', which is already defined");
      }
    }
    // A node that reads the result of an unsupported node is not reported again.
    bool skip = !is_known_op(n);
    for (const auto& in : n.input()) skip = skip || poisoned.count(in);
    if (!skip) {
      NodeContext ctx(st, n, opset);
      try {
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
          if (!n.output(i).empty() && !st.values.count(n.output(i))) ctx.unsupported("output " + std::to_string(i));
        }
        continue;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::Unsupported) throw;
        problems.push_back(e.what());
      }
    }
    for (const auto& out : n.output()) poisoned.insert(out);
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

Graph import_onnx_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) fail(ErrorCode::Io, "cannot open model '" + path.string() + "': " + ec.message());
  if (size > static_cast<uintmax_t>(INT32_MAX)) fail(ErrorCode::InvalidModel, "model '" + path.string() + "' is larger than 2 GiB");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) fail(ErrorCode::Io, "cannot read model '" + path.string() + "'");
  ImportOptions options;
  options.base_dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  try {
    return import_onnx_bytes(bytes.data(), bytes.size(), options);
  } catch (const Error& e) {
    throw Error(e.code(), path.string() + ": " + e.what());
  }
}

}  // namespace denox::compiler
