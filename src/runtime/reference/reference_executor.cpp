#include "runtime/reference/reference_executor.hpp"

#include <limits>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/error.hpp"
#include "runtime/bind_shapes.hpp"
#include "runtime/reference/reference_ops.hpp"

namespace denox::reference {

using compiler::DType;
using compiler::Graph;
using compiler::Op;
using compiler::TensorId;
using compiler::ValueId;

namespace {

int64_t value_at(const std::vector<int64_t>& values, ValueId v) {
  if (v >= values.size()) {
    fail(ErrorCode::InvalidModel, "shape value %" + std::to_string(v) + " does not exist (the program has " +
                                      std::to_string(values.size()) + " values)");
  }
  return values[v];
}

template <size_t N> std::array<int64_t, N> values_at(const std::vector<int64_t>& values, const std::array<ValueId, N>& ids) {
  std::array<int64_t, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = value_at(values, ids[i]);
  return out;
}

std::vector<int64_t> values_at(const std::vector<int64_t>& values, const std::vector<ValueId>& ids) {
  std::vector<int64_t> out;
  out.reserve(ids.size());
  for (ValueId v : ids) out.push_back(value_at(values, v));
  return out;
}

void check_tensor_id(const Graph& g, TensorId id, const std::string& who) {
  if (id >= g.tensors.size()) {
    fail(ErrorCode::InvalidModel, who + " refers to tensor " + std::to_string(id) + ", but the graph has " +
                                      std::to_string(g.tensors.size()) + " tensors");
  }
}

void require_input_count(const Op& op, size_t expected) {
  if (op.inputs.size() != expected) {
    fail(ErrorCode::InvalidModel, "takes " + std::to_string(expected) + " input tensor(s), the graph gives it " +
                                      std::to_string(op.inputs.size()));
  }
}

// Where every tensor of one run lives: the caller's inputs and the graph's constants are read in
// place; op results are owned here until their last reader has run.
class TensorStore {
 public:
  TensorStore(const Graph& g, const std::vector<HostTensor>& inputs, const std::vector<int64_t>& values)
      : g_(g), inputs_(inputs), values_(values), computed_(g.tensors.size()) {
    for (size_t i = 0; i < g.inputs.size(); ++i) input_index_.emplace(g.inputs[i], i);
  }

  bool is_input(TensorId id) const { return input_index_.count(id) != 0; }
  bool is_computed(TensorId id) const { return computed_[id].has_value(); }

  TensorView view(TensorId id) const {
    if (computed_[id]) return TensorView::of(*computed_[id]);
    if (auto it = input_index_.find(id); it != input_index_.end()) return TensorView::of(inputs_[it->second]);
    const auto& t = g_.tensor(id);
    if (!t.is_constant()) fail(ErrorCode::InvalidModel, "tensor '" + t.name + "' is read before any op produces it");
    TensorView v;
    v.shape = concrete_shape(g_, id, values_);
    const size_t expected = checked_element_count(v.shape, "constant '" + t.name + "'");
    v.is_int64 = t.dtype == DType::I64;
    const size_t held = v.is_int64 ? (t.i64_data ? t.i64_data->size() : 0) : (t.f32_data ? t.f32_data->size() : 0);
    if ((v.is_int64 ? !t.i64_data : !t.f32_data) || held != expected) {
      fail(ErrorCode::InvalidModel, "constant '" + t.name + "' (" + dtype_name(t.dtype) + ", shape " +
                                        g_.shape_string(id) + " = " + std::to_string(expected) + " elements) holds " +
                                        std::to_string(held) + " " + dtype_name(t.dtype) + " values");
    }
    if (v.is_int64) {
      v.i64 = *t.i64_data;
    } else {
      v.f32 = *t.f32_data;
    }
    return v;
  }

  // An owned copy, for a graph output.
  HostTensor copy(TensorId id) const {
    TensorView v = view(id);
    HostTensor t;
    t.shape = v.shape;
    t.is_int64 = v.is_int64;
    t.f32.assign(v.f32.begin(), v.f32.end());
    t.i64.assign(v.i64.begin(), v.i64.end());
    return t;
  }

  void store(TensorId id, HostTensor t) { computed_[id] = std::move(t); }
  void release(TensorId id) { computed_[id].reset(); }

 private:
  const Graph& g_;
  const std::vector<HostTensor>& inputs_;
  const std::vector<int64_t>& values_;
  std::vector<std::optional<HostTensor>> computed_;
  std::unordered_map<TensorId, size_t> input_index_;
};

// Runs one op on the tensors in `store`; the result has the graph's concrete output shape.
HostTensor run_op(const Op& op, const TensorStore& store, const std::vector<int64_t>& values,
                  const std::vector<int64_t>& out_shape) {
  auto in = [&](size_t i) { return store.view(op.inputs[i]); };
  return std::visit(
      [&](const auto& a) -> HostTensor {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, compiler::ConvAttrs>) {
          require_input_count(op, a.has_bias ? 3 : 2);
          Window2d w{a.kernel, a.stride, a.dilation, values_at(values, a.pad_begin), values_at(values, a.pad_end)};
          if (a.has_bias) {
            TensorView bias = in(2);
            return conv2d(in(0), in(1), &bias, w, out_shape);
          }
          return conv2d(in(0), in(1), nullptr, w, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::PoolAttrs>) {
          require_input_count(op, 1);
          Window2d w{a.kernel, a.stride, a.dilation, values_at(values, a.pad_begin), values_at(values, a.pad_end)};
          return pool2d(in(0), a.kind, w, a.count_include_pad, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::ActivationAttrs>) {
          require_input_count(op, 1);
          HostTensor out = activation(in(0), a);
          if (out.shape != out_shape) {
            fail(ErrorCode::InvalidModel, "the graph gives the output a different shape than its input");
          }
          return out;
        } else if constexpr (std::is_same_v<A, compiler::BinaryAttrs>) {
          require_input_count(op, 2);
          return binary(in(0), in(1), a.kind, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::UpsampleAttrs>) {
          require_input_count(op, 1);
          return upsample_nearest(in(0), a, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::ConcatAttrs>) {
          if (op.inputs.empty()) fail(ErrorCode::InvalidModel, "has no inputs");
          std::vector<TensorView> views;
          for (size_t i = 0; i < op.inputs.size(); ++i) views.push_back(in(i));
          return concat(views, a.axis, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::PadAttrs>) {
          require_input_count(op, 1);
          return pad_constant(in(0), values_at(values, a.begin), values_at(values, a.end), a.value, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::SliceAttrs>) {
          require_input_count(op, 1);
          return slice(in(0), values_at(values, a.start), a.step, out_shape);
        } else if constexpr (std::is_same_v<A, compiler::ShapeValuesAttrs>) {
          require_input_count(op, 0);
          return shape_values(values_at(values, a.values), out_shape);
        } else {
          static_assert(std::is_same_v<A, compiler::IdentityAttrs>);
          require_input_count(op, 1);
          return identity(in(0), out_shape);
        }
      },
      op.attrs);
}

}  // namespace

std::vector<int64_t> concrete_shape(const Graph& g, TensorId id, const std::vector<int64_t>& values) {
  check_tensor_id(g, id, "a shape query");
  const auto& t = g.tensor(id);
  std::vector<int64_t> shape;
  shape.reserve(t.shape.size());
  for (size_t axis = 0; axis < t.shape.size(); ++axis) {
    const ValueId v = t.shape[axis];
    if (v >= values.size() || v >= g.program.size()) {
      fail(ErrorCode::InvalidModel, "tensor '" + t.name + "' axis " + std::to_string(axis) + " refers to shape value %" +
                                        std::to_string(v) + ", which does not exist");
    }
    if (values[v] < 0) {
      fail(ErrorCode::ShapeMismatch, "tensor '" + t.name + "' axis " + std::to_string(axis) + " is " +
                                         g.program.to_string(v) + " = " + std::to_string(values[v]) +
                                         " at this resolution; extents cannot be negative");
    }
    shape.push_back(values[v]);
  }
  checked_element_count(shape, "tensor '" + t.name + "'");
  return shape;
}

std::vector<HostTensor> run_reference(const Graph& g, const std::vector<HostTensor>& inputs, const TensorObserver& observe) {
  if (inputs.size() != g.inputs.size()) {
    fail(ErrorCode::InvalidArgument, "the model has " + std::to_string(g.inputs.size()) + " input(s), got " +
                                         std::to_string(inputs.size()));
  }
  std::vector<std::vector<int64_t>> input_shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_tensor_id(g, g.inputs[i], "graph input " + std::to_string(i));
    const auto& t = g.tensor(g.inputs[i]);
    if (t.dtype != DType::F32) fail(ErrorCode::Unsupported, "input '" + t.name + "' is int64; only float32 inputs are supported");
    if (inputs[i].is_int64) fail(ErrorCode::InvalidArgument, "input '" + t.name + "' must be float32, got int64");
    input_shapes.push_back(inputs[i].shape);
  }
  const std::vector<int64_t> values = runtime::bind_symbols(g, input_shapes);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& name = g.tensor(g.inputs[i]).name;
    const size_t expected = checked_element_count(inputs[i].shape, "input '" + name + "'");
    if (inputs[i].f32.size() != expected) {
      fail(ErrorCode::InvalidArgument, "input '" + name + "' has shape " + inputs[i].shape_string() + " (" +
                                           std::to_string(expected) + " elements) but holds " +
                                           std::to_string(inputs[i].f32.size()) + " values");
    }
  }

  // The last op that reads each tensor; graph outputs are kept to the end, results nothing
  // reads are dropped at once.
  constexpr size_t kKeep = std::numeric_limits<size_t>::max(), kUnread = kKeep - 1;
  std::vector<size_t> last_use(g.tensors.size(), kUnread);
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const Op& op = g.ops[k];
    check_tensor_id(g, op.output, "op '" + op.name + "' output");
    for (TensorId id : op.inputs) {
      check_tensor_id(g, id, "op '" + op.name + "' input");
      last_use[id] = k;
    }
  }
  for (TensorId id : g.outputs) {
    check_tensor_id(g, id, "a graph output");
    last_use[id] = kKeep;
  }

  TensorStore store(g, inputs, values);
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const Op& op = g.ops[k];
    const auto& out = g.tensor(op.output);
    try {
      if (store.is_input(op.output) || out.is_constant() || store.is_computed(op.output)) {
        fail(ErrorCode::InvalidModel, "writes tensor '" + out.name +
                                          "', which is a graph input, a constant or an earlier op's output");
      }
      HostTensor result = run_op(op, store, values, concrete_shape(g, op.output, values));
      if (result.is_int64 != (out.dtype == DType::I64)) {
        fail(ErrorCode::InvalidModel, std::string("produces ") + (result.is_int64 ? "int64" : "float32") +
                                          " but the graph declares '" + out.name + "' as " + dtype_name(out.dtype));
      }
      if (observe) observe(op.output, result);
      store.store(op.output, std::move(result));
      if (last_use[op.output] == kUnread) store.release(op.output);
    } catch (const Error& e) {
      throw Error(e, "op '" + op.name + "' (" + op.onnx_op + ", " + compiler::op_kind_name(op.attrs) +
                                "): " + e.what());
    } catch (const std::bad_alloc&) {
      fail(ErrorCode::OutOfHostMemory, "op '" + op.name + "' (" + op.onnx_op + "): out of host memory while computing its output " +
                                           g.shape_string(op.output));
    }
    for (TensorId id : op.inputs) {
      if (last_use[id] == k) store.release(id);
    }
  }

  std::vector<HostTensor> results;
  for (TensorId id : g.outputs) {
    const auto& t = g.tensor(id);
    if (!store.is_computed(id) && !store.is_input(id) && !t.is_constant()) {
      fail(ErrorCode::InvalidModel, "graph output '" + t.name + "' is never produced");
    }
    try {
      results.push_back(store.copy(id));
    } catch (const Error& e) {
      throw Error(e, "graph output '" + t.name + "': " + e.what());
    }
  }
  return results;
}

}  // namespace denox::reference
