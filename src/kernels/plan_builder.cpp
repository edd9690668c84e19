#include "kernels/plan_builder.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/half.hpp"

namespace denox::kernels {

namespace {

constexpr uint64_t kWeightAlignment = 256;

}  // namespace

std::string describe_op(const compiler::Op& op) { return op.onnx_op + " '" + op.name + "'"; }

PlanBuilder::PlanBuilder(const compiler::Graph& graph, plan::Precision precision) : graph_(graph) {
  plan_.precision = precision;
  plan_.program = graph.program;
}

ValueId PlanBuilder::float_bits(float f) { return constant(std::bit_cast<uint32_t>(f)); }

ValueId PlanBuilder::ceil_div(ValueId a, int64_t b) { return program().binary(compiler::IntOp::DivCeil, a, constant(b)); }

ValueId PlanBuilder::product(std::span<const ValueId> values) {
  ValueId p = constant(1);
  for (ValueId v : values) p = mul(p, v);
  return p;
}

Extents4 PlanBuilder::extents4(TensorId t) {
  const auto& shape = graph_.tensor(t).shape;
  if (shape.size() > 4)
    fail(ErrorCode::Unsupported, "tensor '" + graph_.tensor(t).name + "' has rank " + std::to_string(shape.size()) +
                                     "; the portable kernels handle rank 4 and below");
  Extents4 e;
  const size_t lead = 4 - shape.size();
  for (size_t k = 0; k < 4; ++k) e[k] = k < lead ? constant(1) : shape[k - lead];
  return e;
}

Extents4 PlanBuilder::strides(const Extents4& extents) {
  Extents4 s;
  s[3] = constant(1);
  for (int k = 2; k >= 0; --k) s[static_cast<size_t>(k)] = mul(s[static_cast<size_t>(k) + 1], extents[static_cast<size_t>(k) + 1]);
  return s;
}

std::array<ValueId, 3> PlanBuilder::grid_32x8(const Extents4& e) { return {ceil_div(e[3], 32), ceil_div(e[2], 8), mul(e[0], e[1])}; }

std::array<ValueId, 3> PlanBuilder::grid_rows(ValueId count, int64_t per_group, ValueId& row_elements) {
  constexpr int64_t kMaxGroupsX = 32768;
  const ValueId blocks = ceil_div(count, per_group);
  const ValueId gx = program().max(program().min(blocks, constant(kMaxGroupsX)), constant(1));
  const ValueId gy = program().binary(compiler::IntOp::DivCeil, blocks, gx);
  row_elements = mul(gx, constant(per_group));
  return {gx, gy, constant(1)};
}

TensorId PlanBuilder::resolve(TensorId t) const {
  for (auto it = aliases_.find(t); it != aliases_.end(); it = aliases_.find(t)) t = it->second;
  return t;
}

bool PlanBuilder::channels_multiple_of(TensorId t, int64_t multiple) {
  const ValueId c = extents4(t)[1];
  return program().is_constant(c) && program().constant_value(c) % multiple == 0;
}

void PlanBuilder::alias(TensorId alias, TensorId source) { aliases_[alias] = resolve(source); }

uint32_t PlanBuilder::scratch(TensorId t, Layout layout) {
  t = resolve(t);
  if (auto it = scratch_of_.find({t, layout}); it != scratch_of_.end()) return it->second;
  const compiler::Tensor& tensor = graph_.tensor(t);
  if (tensor.is_constant()) fail(ErrorCode::Internal, "constant tensor '" + tensor.name + "' has no scratch memory");
  if (tensor.dtype != compiler::DType::F32)
    fail(ErrorCode::Unsupported, "tensor '" + tensor.name + "' is " + compiler::dtype_name(tensor.dtype) +
                                     "; the GPU computes float tensors only");
  plan::ScratchTensor s;
  s.name = layout == Layout::NCHW ? tensor.name : tensor.name + " (" + layout_name(layout) + ")";
  s.size_bytes = mul(product(tensor.shape), constant(layout_element_size(layout, element_size())));
  plan_.scratch.push_back(std::move(s));
  const uint32_t index = static_cast<uint32_t>(plan_.scratch.size() - 1);
  scratch_of_.emplace(std::make_pair(t, layout), index);
  return index;
}

uint32_t PlanBuilder::internal_scratch(std::string name, ValueId size_bytes) {
  plan_.scratch.push_back({std::move(name), size_bytes});
  return static_cast<uint32_t>(plan_.scratch.size() - 1);
}

plan::WeightRange PlanBuilder::next_weight_range(const std::string& name) {
  auto& data = plan_.weight_data;
  data.resize((data.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment, 0);
  plan::WeightRange range;
  range.name = name;
  range.offset = data.size();
  return range;
}

uint32_t PlanBuilder::add_weights(const std::string& name, std::span<const float> values) {
  auto& data = plan_.weight_data;
  plan::WeightRange range = next_weight_range(name);
  if (plan_.precision == plan::Precision::F16) {
    range.size = values.size() * 2;
    data.resize(data.size() + range.size);
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t h = float_to_half(values[i]);
      std::memcpy(data.data() + range.offset + 2 * i, &h, 2);
    }
  } else {
    range.size = values.size() * 4;
    data.resize(data.size() + range.size);
    if (!values.empty()) std::memcpy(data.data() + range.offset, values.data(), range.size);
  }
  plan_.weights.push_back(std::move(range));
  return static_cast<uint32_t>(plan_.weights.size() - 1);
}

uint32_t PlanBuilder::add_weight_bytes(const std::string& name, std::span<const uint8_t> bytes) {
  auto& data = plan_.weight_data;
  plan::WeightRange range = next_weight_range(name);
  range.size = bytes.size();
  data.insert(data.end(), bytes.begin(), bytes.end());
  plan_.weights.push_back(std::move(range));
  return static_cast<uint32_t>(plan_.weights.size() - 1);
}

plan::Binding PlanBuilder::read(TensorId t, Layout layout) {
  t = resolve(t);
  const compiler::Tensor& tensor = graph_.tensor(t);
  if (!tensor.is_constant()) return {plan::Resource::Scratch, scratch(t, layout), plan::Access::Read};
  if (!tensor.f32_data)
    fail(ErrorCode::Unsupported, "constant '" + tensor.name + "' is int64; the GPU reads float constants only");
  auto it = weights_of_.find(t);
  if (it == weights_of_.end()) it = weights_of_.emplace(t, add_weights(tensor.name, *tensor.f32_data)).first;
  return {plan::Resource::Weights, it->second, plan::Access::Read};
}

plan::Binding PlanBuilder::write(TensorId t, Layout layout) { return {plan::Resource::Scratch, scratch(t, layout), plan::Access::Write}; }

uint32_t PlanBuilder::pipeline(const PipelineSpec& spec) {
  auto defines = spec.defines;
  std::sort(defines.begin(), defines.end());
  std::string key = spec.family;
  for (const auto& [name, value] : defines) key += " " + name + "=" + std::to_string(value);
  if (auto it = pipeline_of_.find(key); it != pipeline_of_.end()) return it->second;
  plan::Pipeline p;
  p.family = spec.family;
  for (const auto& [name, value] : defines) p.defines.emplace_back(name, std::to_string(value));
  p.binding_count = spec.binding_count;
  p.push_constant_count = spec.push_constant_count;
  p.local_size = spec.local_size;
  plan_.pipelines.push_back(std::move(p));
  const uint32_t index = static_cast<uint32_t>(plan_.pipelines.size() - 1);
  pipeline_of_.emplace(key, index);
  return index;
}

void PlanBuilder::dispatch(std::string name, uint32_t pipeline, std::vector<plan::Binding> bindings, std::vector<ValueId> push,
                           std::array<ValueId, 3> groups) {
  const plan::Pipeline& p = plan_.pipelines.at(pipeline);
  if (bindings.size() != p.binding_count || push.size() != p.push_constant_count)
    fail(ErrorCode::Internal, "dispatch '" + name + "' does not match the '" + p.family + "' pipeline's bindings or push constants");
  plan::Dispatch d;
  d.name = std::move(name);
  d.pipeline = pipeline;
  d.bindings = std::move(bindings);
  d.push_constants = std::move(push);
  d.groups = groups;
  plan_.dispatches.push_back(std::move(d));
}

plan::IoTensor PlanBuilder::io_tensor(TensorId t, const char* what, Layout layout) {
  const compiler::Tensor& tensor = graph_.tensor(t);
  if (tensor.shape.size() != 4)
    fail(ErrorCode::Unsupported, std::string(what) + " '" + tensor.name + "' has rank " + std::to_string(tensor.shape.size()) +
                                     "; the GPU runtime takes NCHW (rank 4) inputs and outputs");
  plan::IoTensor io;
  io.name = tensor.name;
  std::copy(tensor.shape.begin(), tensor.shape.end(), io.shape.begin());
  io.scratch = scratch(t, layout);
  return io;
}

plan::Plan PlanBuilder::finish() {
  auto layout = [](const std::map<TensorId, Layout>& m, TensorId t) {
    const auto it = m.find(t);
    return it == m.end() ? Layout::NCHW : it->second;
  };
  for (TensorId t : graph_.inputs) plan_.inputs.push_back(io_tensor(t, "input", layout(input_layouts_, t)));
  for (TensorId t : graph_.outputs) {
    plan::IoTensor io = io_tensor(t, "output", layout(output_layouts_, t));
    io.name = graph_.tensor(t).name;  // an alias keeps the graph output's own name
    plan_.outputs.push_back(std::move(io));
  }
  return std::move(plan_);
}

}  // namespace denox::kernels
