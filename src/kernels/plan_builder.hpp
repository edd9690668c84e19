// The state a lowering writes a plan through: where every graph tensor lives (a scratch tensor
// or a weight range), the pipelines (deduplicated by family and macros), weights converted to
// the plan's storage type, and shape-program arithmetic for push constants and group counts.
// The per-op lowerings (lowering_ops.hpp) only ask it for bindings and values; they never touch
// plan indices directly.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/tensor_layout.hpp"

namespace denox::kernels {

using compiler::TensorId;
using compiler::ValueId;

// A pipeline before SPIR-V: shaders/<family>.comp with integer macros.
struct PipelineSpec {
  std::string family;
  std::vector<std::pair<std::string, int64_t>> defines;
  uint32_t binding_count = 0;
  uint32_t push_constant_count = 0;
  std::array<uint32_t, 3> local_size{1, 1, 1};
};

// A tensor's extents as four values (N, C, H, W for images): lower ranks get leading 1s.
using Extents4 = std::array<ValueId, 4>;

class PlanBuilder {
 public:
  PlanBuilder(const compiler::Graph& graph, plan::Precision precision);

  const compiler::Graph& graph() const { return graph_; }
  plan::Precision precision() const { return plan_.precision; }
  uint32_t element_size() const { return plan::element_size(plan_.precision); }

  // --- shape-program values ---
  compiler::ShapeProgram& program() { return plan_.program; }
  ValueId constant(int64_t v) { return program().constant(v); }
  ValueId float_bits(float f);  // the IEEE bits of f, as a push-constant word
  ValueId ceil_div(ValueId a, int64_t b);
  ValueId mul(ValueId a, ValueId b) { return program().mul(a, b); }
  ValueId product(std::span<const ValueId> values);
  Extents4 extents4(TensorId t);
  // Whether `t`'s channel count (extents4(t)[1]) is a constant multiple of `multiple`.
  bool channels_multiple_of(TensorId t, int64_t multiple);
  // Row-major element strides of extents (innermost 1).
  Extents4 strides(const Extents4& extents);
  // Group counts of the 32 x 8 element-wise families over a 4D view: (ceil(e3/32), ceil(e2/8), e0*e1).
  std::array<ValueId, 3> grid_32x8(const Extents4& e);
  // Group counts of a flat pass over `count` elements, `per_group` a group: a 2D grid of rows of
  // at most 32768 groups (Vulkan's guaranteed x limit is 65535), at least one group a row, so the
  // row count never divides by zero (an empty tensor gets 0 rows: the runtime skips the
  // dispatch). `row_elements` gets the elements a row covers (groups x per_group).
  std::array<ValueId, 3> grid_rows(ValueId count, int64_t per_group, ValueId& row_elements);

  // --- tensors ---
  // Makes `alias` name the same data as `source` (Identity).
  void alias(TensorId alias, TensorId source);
  bool is_constant(TensorId t) const { return graph_.tensor(resolve(t)).is_constant(); }
  // A read binding of a computed tensor in `layout` (its scratch tensor in that layout) or a
  // constant (its weight range, the data converted to the storage type, added on first use).
  plan::Binding read(TensorId t, Layout layout = Layout::NCHW);
  // The write binding of a computed tensor in `layout` (creates that scratch tensor on first use).
  plan::Binding write(TensorId t, Layout layout = Layout::NCHW);
  // The scratch tensor of a computed tensor in `layout` (created on first use): a tensor kept
  // in two layouts has two.
  uint32_t scratch(TensorId t, Layout layout = Layout::NCHW);
  // The layout in which plan input / output `t` is bound (default NCHW, which is what the
  // runtime's io adapters read and write; measuring binds an edge's own layouts, whose
  // contents do not matter there).
  void set_io_layout(TensorId t, bool input, Layout layout) { (input ? input_layouts_ : output_layouts_)[t] = layout; }
  // A scratch tensor of no graph tensor (a kernel's own intermediate data, e.g. the partial
  // sums of a conv2d_coopmat TAIL): `size_bytes` bytes; returns its index.
  uint32_t internal_scratch(std::string name, ValueId size_bytes);
  // Appends constant data in the storage type, 256-byte aligned; returns the weight index.
  uint32_t add_weights(const std::string& name, std::span<const float> values);
  // Appends constant data as it is (int8 weights, fp32 or int32 tables), 256-byte aligned.
  uint32_t add_weight_bytes(const std::string& name, std::span<const uint8_t> bytes);

  // --- pipelines and dispatches ---
  uint32_t pipeline(const PipelineSpec& spec);
  void dispatch(std::string name, uint32_t pipeline, std::vector<plan::Binding> bindings, std::vector<ValueId> push,
                std::array<ValueId, 3> groups);

  // Adds the plan's inputs and outputs (rank-4 float tensors) and hands the plan over.
  plan::Plan finish();

 private:
  TensorId resolve(TensorId t) const;
  // A range named `name` at the end of the weight data, padded to the alignment (size 0).
  plan::WeightRange next_weight_range(const std::string& name);
  plan::IoTensor io_tensor(TensorId t, const char* what, Layout layout);

  const compiler::Graph& graph_;
  plan::Plan plan_;
  std::map<TensorId, TensorId> aliases_;
  std::map<std::pair<TensorId, Layout>, uint32_t> scratch_of_;
  std::map<TensorId, uint32_t> weights_of_;
  std::map<TensorId, Layout> input_layouts_, output_layouts_;
  std::map<std::string, uint32_t> pipeline_of_;  // family + macros -> index
};

// "Conv 'enc_conv0'": how errors name an op.
std::string describe_op(const compiler::Op& op);

}  // namespace denox::kernels
