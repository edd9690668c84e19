#include "node_case.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "compiler/import/onnx_import.hpp"
#include "compiler/import/tensor_data.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace denox::node_tests {

namespace fs = std::filesystem;
using compiler::DecodedTensor;
using TP = onnx::TensorProto;

const char* variant_suffix(Variant v) {
  switch (v) {
    case Variant::AsIs: return "";
    case Variant::Frozen: return "+frozen";
    case Variant::Static: return "+static";
    case Variant::Dynamic: return "+dynamic";
  }
  return "?";
}

const char* outcome_name(OutcomeKind k) {
  switch (k) {
    case OutcomeKind::Pass: return "pass";
    case OutcomeKind::Mismatch: return "mismatch";
    case OutcomeKind::Unsupported: return "unsupported";
    case OutcomeKind::OtherError: return "error";
    case OutcomeKind::Crash: return "crash";
  }
  return "?";
}

namespace {

// Tolerance of ONNX's own backend test runner (numpy.testing.assert_allclose with rtol=1e-3,
// atol=1e-7): |actual - expected| <= atol + rtol * |expected|, NaN equal to NaN. The reference
// computes in fp32 with double accumulation, so this only absorbs transcendental rounding
// (Sigmoid, Tanh) and fp32 vs. fp64 sums; a wrong index or formula is far outside it.
constexpr double kRtol = 1e-3, kAtol = 1e-7;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

onnx::ModelProto load_model(const fs::path& dir) {
  onnx::ModelProto m;
  std::string bytes = read_file(dir / "model.onnx");
  if (!m.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + (dir / "model.onnx").string());
  return m;
}

TP load_tensor(const fs::path& p) {
  TP t;
  std::string bytes = read_file(p);
  if (!t.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + p.string());
  return t;
}

struct DataSet {
  fs::path dir;
  std::vector<TP> inputs, outputs;
};

// input_0.pb, input_1.pb, ... in numeric order (input_10 after input_9).
std::vector<TP> load_numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<TP> out;
  for (size_t k = 0;; ++k) {
    fs::path p = dir / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(load_tensor(p));
  }
  return out;
}

std::vector<DataSet> load_data_sets(const fs::path& dir) {
  std::vector<DataSet> sets;
  for (size_t k = 0;; ++k) {
    fs::path d = dir / ("test_data_set_" + std::to_string(k));
    if (!fs::is_directory(d)) break;
    sets.push_back({d, load_numbered(d, "input_"), load_numbered(d, "output_")});
  }
  if (sets.empty()) throw std::runtime_error(dir.string() + " has no test_data_set_0");
  return sets;
}

// The graph inputs that are not initializers (IR < 4 models list initializers as inputs too).
std::vector<std::string> runtime_input_names(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& in : g.input()) {
    bool is_init = std::any_of(g.initializer().begin(), g.initializer().end(), [&](const TP& t) { return t.name() == in.name(); });
    if (!is_init) names.push_back(in.name());
  }
  return names;
}

// ONNX's test generator stores bfloat16 data as uint16 tensors holding the same bits; take the
// type the model declares so the values decode as bfloat16.
void use_declared_type(TP& t, const onnx::ValueInfoProto& declared) {
  if (declared.type().tensor_type().elem_type() == TP::BFLOAT16 && t.data_type() == TP::UINT16) t.set_data_type(TP::BFLOAT16);
}

const onnx::ValueInfoProto& declared_input(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& in : g.input()) {
    if (in.name() == name) return in;
  }
  throw std::runtime_error("no graph input " + name);
}

// The model denox sees for `variant`, with the data set's inputs that stay runtime inputs.
onnx::ModelProto apply_variant(onnx::ModelProto m, Variant variant, const DataSet& data, std::vector<TP>& runtime_inputs) {
  auto* g = m.mutable_graph();
  std::vector<std::string> names = runtime_input_names(*g);
  if (data.inputs.size() != names.size()) {
    throw std::runtime_error(data.dir.string() + " has " + std::to_string(data.inputs.size()) + " inputs, the model " +
                             std::to_string(names.size()));
  }
  runtime_inputs.clear();
  size_t keep = variant == Variant::AsIs ? names.size() : variant == Variant::Static ? 0 : 1;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (size_t k = 0; k < names.size(); ++k) {
    if (k < keep) {
      runtime_inputs.push_back(data.inputs[k]);
      continue;
    }
    TP init = data.inputs[k];
    init.set_name(names[k]);  // data files usually carry the name, but do not rely on it
    use_declared_type(init, declared_input(*g, names[k]));
    *g->add_initializer() = init;
  }
  for (const auto& in : g->input()) {
    auto pos = std::find(names.begin(), names.end(), in.name());
    if (pos == names.end() || static_cast<size_t>(pos - names.begin()) < keep) *kept.Add() = in;
  }
  g->mutable_input()->Swap(&kept);
  if (variant == Variant::Dynamic && g->input_size() > 0) {
    // Every extent of the data input becomes a symbol, so each output extent, pad, start and
    // window comes from the shape program instead of import-time constants.
    auto* shape = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int a = 0; a < shape->dim_size(); ++a) shape->mutable_dim(a)->set_dim_param("d" + std::to_string(a));
  }
  if (variant == Variant::Static) {
    auto* dummy = g->add_input();
    dummy->set_name("denox_node_test_dummy");
    auto* tt = dummy->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(TP::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(1);
    TP value;
    value.set_data_type(TP::FLOAT);
    value.add_dims(1);
    value.add_float_data(0.0f);
    runtime_inputs.push_back(value);
  }
  return m;
}

HostTensor to_host(const TP& proto, const std::string& what) {
  DecodedTensor d = compiler::decode_tensor(proto, {}, what);
  HostTensor t;
  t.shape = d.dims;
  if (d.onnx_type == TP::FLOAT) {
    t.f32.assign(d.f.begin(), d.f.end());
  } else if (d.is_float) {
    // Inputs reach this point only when the importer accepted a float32 graph input.
    throw Error(ErrorCode::Unsupported, what + " is " + compiler::onnx_type_name(d.onnx_type) + ", not float32");
  } else {
    t.is_int64 = true;
    t.i64 = d.i;
  }
  return t;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? "," : "") + std::to_string(s[k]);
  return out + "]";
}

// Empty when `actual` matches `expected`, else what differs (the first few elements).
std::string compare(const HostTensor& actual, const TP& expected_proto, const std::string& what) {
  DecodedTensor e = compiler::decode_tensor(expected_proto, {}, what);
  if (actual.shape != e.dims) return what + ": shape " + shape_text(actual.shape) + ", expected " + shape_text(e.dims);
  // denox has float32 and int64 tensors: float types compare as float, integers and bools as int64.
  if (actual.is_int64 == e.is_float) {
    return what + ": denox produced " + (actual.is_int64 ? "int64" : "float32") + ", expected " +
           compiler::onnx_type_name(e.onnx_type);
  }
  std::string diffs;
  size_t bad = 0;
  const size_t n = e.size();
  for (size_t k = 0; k < n; ++k) {
    bool ok;
    std::string got, want;
    if (e.is_float) {
      double a = actual.f32[k], x = e.f[k];
      ok = (std::isnan(a) && std::isnan(x)) || a == x || std::fabs(a - x) <= kAtol + kRtol * std::fabs(x);
      got = std::to_string(a);
      want = std::to_string(x);
    } else {
      ok = actual.i64[k] == e.i[k];
      got = std::to_string(actual.i64[k]);
      want = std::to_string(e.i[k]);
    }
    if (!ok && bad++ < 4) diffs += " [" + std::to_string(k) + "] " + got + " vs " + want + ";";
  }
  if (!bad) return "";
  return what + ": " + std::to_string(bad) + " of " + std::to_string(n) + " elements differ (got vs expected):" + diffs;
}

Outcome run_data_set(const onnx::ModelProto& original, Variant variant, const DataSet& data) {
  std::vector<TP> runtime_inputs;
  onnx::ModelProto m = apply_variant(original, variant, data, runtime_inputs);
  std::string bytes = m.SerializeAsString();
  compiler::ImportOptions options;
  options.base_dir = data.dir.parent_path();
  compiler::Graph g = compiler::import_onnx_bytes(bytes.data(), bytes.size(), options);
  std::vector<HostTensor> inputs;
  for (size_t k = 0; k < runtime_inputs.size(); ++k) inputs.push_back(to_host(runtime_inputs[k], "input " + std::to_string(k)));
  std::vector<HostTensor> outputs = reference::run_reference(g, inputs);
  if (outputs.size() != data.outputs.size()) {
    return {OutcomeKind::Mismatch, ErrorCode::Internal,
            std::to_string(outputs.size()) + " outputs, expected " + std::to_string(data.outputs.size())};
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    TP expected = data.outputs[k];
    if (static_cast<int>(k) < original.graph().output_size()) use_declared_type(expected, original.graph().output(static_cast<int>(k)));
    std::string diff = compare(outputs[k], expected, data.dir.filename().string() + " output " + std::to_string(k));
    if (!diff.empty()) return {OutcomeKind::Mismatch, ErrorCode::Internal, diff};
  }
  return {};
}

}  // namespace

ModelSummary summarize_model(const fs::path& test_dir) {
  onnx::ModelProto m = load_model(test_dir);
  ModelSummary s;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") s.opset = o.version();
  }
  for (const auto& n : m.graph().node()) {
    s.op_types.push_back(n.op_type());
    s.node_names.push_back(n.name().empty() && n.output_size() ? n.output(0) : n.name());
  }
  std::vector<std::string> names = runtime_input_names(m.graph());
  for (const auto& in : m.graph().input()) {
    if (std::find(names.begin(), names.end(), in.name()) == names.end()) continue;
    s.input_types.push_back(compiler::onnx_type_name(in.type().tensor_type().elem_type()));
  }
  return s;
}

bool names_a_node(const std::string& message, const ModelSummary& model) {
  for (size_t k = 0; k < model.op_types.size(); ++k) {
    // The importer's label: "node 'NAME' (OP, opset N" or "unnamed node -> 'OUTPUT' (OP, opset N".
    const std::string tail = "' (" + model.op_types[k] + ", opset ";
    if (message.find("node '" + model.node_names[k] + tail) != std::string::npos) return true;
    if (message.find("unnamed node -> '" + model.node_names[k] + tail) != std::string::npos) return true;
  }
  return false;
}

Outcome run_node_test(const fs::path& test_dir, Variant variant) {
  onnx::ModelProto model = load_model(test_dir);
  std::vector<DataSet> sets = load_data_sets(test_dir);
  try {
    for (const auto& data : sets) {
      Outcome o = run_data_set(model, variant, data);
      if (o.kind != OutcomeKind::Pass) return o;
    }
    return {};
  } catch (const Error& e) {
    return {e.code() == ErrorCode::Unsupported ? OutcomeKind::Unsupported : OutcomeKind::OtherError, e.code(), e.what()};
  } catch (const std::exception& e) {
    return {OutcomeKind::Crash, ErrorCode::Internal, std::string("non-denox exception: ") + e.what()};
  }
}

}  // namespace denox::node_tests
