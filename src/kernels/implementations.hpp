// The shaders' declared patterns matched on a graph (pipeline step 4, the supergraph's edges):
// every way the kernels can compute some op, or a fused group of ops, with each configuration
// of its configuration space. `lower_implementations` turns a chosen set back into a plan.
//
// Patterns (the conv ones matched in conv_fusions.cpp; src/compiler/schedule/README.md, "patterns"):
//   - every op alone, on its portable family (conv2d, pool2d, upsample_nearest, copy, pad,
//     binary, unary); Identity and ShapeValues cost nothing and emit no dispatch;
//   - a convolution with what it can absorb (ConvFusion, lowering_ops.hpp): a prologue (none,
//     [upsample+]concat with or without a zero Pad on the concat's second input, upsample, or
//     a zero Pad) x an epilogue (none, act, [act+]maxpool, [act+]crop), on the portable conv2d
//     (one configuration) and, for fp16 plans on a target with cooperative-matrix shapes (or
//     emulated), on conv2d_coopmat times each configuration of the chosen config space. Only
//     the activation is fused when LoweringTarget::fuse is off. On conv2d_coopmat the epilogue may
//     also be a tail conv of at most 4 output channels (ConvFusion::tail, two dispatches). Coop
//     convolutions come in two layout variants where a tensor allows NHWC (a constant channel count that is a multiple
//     of 8): everything NCHW, and every tensor it can keep NHWC in NHWC;
//   - a chain of two to eight elementwise ops (Add/Sub/Mul/Div, activations) whose inputs are
//     one computed tensor, constants (scalar or per channel) and the chain's own results, each
//     result but the last read only inside the chain and no graph output, all of the tensor's
//     shape: one eltwise dispatch (a model's input or output transfer function);
//   - a layout conversion (one strided copy) of every tensor some implementation reads or
//     writes in NHWC, both ways: select pays for one only where two kernels disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/plan/plan.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

// Which coop-matrix configurations an implementation is enumerated with.
enum class ConfigSpace : uint8_t {
  Heuristic,  // the heuristic's one choice per pattern (no measuring)
  Pruned,     // the reduced set chosen offline from H100 and H200 data (coop_configs_pruned()) + the heuristic's
  Full,       // the whole sweep (coop_config_space()): exhaustive tuning
};
const char* config_space_name(ConfigSpace s);

struct Implementation {
  enum class Kind : uint8_t {
    Free,          // Identity (an alias) or ShapeValues (host only): no dispatch
    Op,            // one op on its portable family
    PortableConv,  // conv2d with what it absorbs (fusion)
    CoopConv,      // conv2d_coopmat with what it absorbs (fusion), run as `coop` says
    Convert,       // `output` (= inputs[0]) from input_layouts[0] to output_layout; covers no op
    Eltwise,       // a chain of elementwise ops on inputs[0] and constants (eltwise.comp)
  };
  Kind kind = Kind::Op;
  const compiler::Op* anchor = nullptr;   // where in the op order it is lowered (the conv for convs)
  std::vector<const compiler::Op*> ops;   // every op it covers, in graph order
  // Ops it computes on the fly while reading (a folded Pad) without covering them: other
  // implementations may read through them too, or compute them. In graph order.
  std::vector<const compiler::Op*> reads_through;
  std::vector<compiler::TensorId> inputs; // the computed tensors it reads (never constants)
  compiler::TensorId output = 0;          // the one tensor it writes
  std::vector<Layout> input_layouts;      // one per input (NCHW unless said otherwise)
  Layout output_layout = Layout::NCHW;
  ConvFusion fusion;      // PortableConv, CoopConv
  CoopConvLowering coop;  // CoopConv
  TensorQuant quant;      // Convert to or from NHWC_Q8: the tensor's quantization
  std::string family;   // shader family ("" for Free)
  std::string pattern;  // "conv+act+pool", "upsample+concat+conv+act", "Pad", ...
  std::string config;   // the configuration in words ("" when the family has no choice)
  uint32_t dispatches = 1;

  // "enc_conv1+relu+pool": the op names (read-through ones first, then the covered ones); a
  // conversion: "<tensor> NCHW->NHWC" (needs the graph for the name: `tensor_name`).
  std::string name() const;
  std::string tensor_name;  // Convert: the tensor's name
  Layout input_layout(size_t i) const { return i < input_layouts.size() ? input_layouts[i] : Layout::NCHW; }
  // " nhwc(x0,y)": which tensors are NHWC, in words (empty when none), part of `config`; " q8(x0,x1,y)"
  // likewise for NHWC_Q8 ones.
  std::string layout_words() const;
};

// Every implementation of every op of `graph` the target allows, in graph order (the anchors').
// Convolutions whose weights are not constant still get their portable implementation: its
// lowering reports the op (as build_portable_plan always did). `ranking_values`: the graph's
// values at the extent select ranks at (values_at_extent); the heuristic's coop configurations
// take each conv's size from them (kSmallConvPixels), and go by channels alone without them.
std::vector<Implementation> enumerate_implementations(const compiler::Graph& graph, plan::Precision precision,
                                                      const LoweringTarget& target, ConfigSpace space,
                                                      const std::optional<std::vector<int64_t>>& ranking_values = std::nullopt);

// The plan of a chosen set (one implementation per covered op; ops no implementation covers are
// not needed for the outputs and are left out; conversions right after their tensor is
// written). A graph input or output is bound NCHW unless the chosen set reads (writes) it only
// in another layout: an edge measured alone. Throws what the per-op lowerings throw.
plan::Plan lower_implementations(const compiler::Graph& graph, plan::Precision precision,
                                 const std::vector<const Implementation*>& chosen);

// The coop configuration sets: the whole sweep for a shape (exhaustive tuning, bench/), and the
// reduced set of bench/prune_configs.py's output filtered by what fits. Both include only
// configurations that fit `target` and, with `even_tile_h`, a pooling epilogue.
std::vector<CoopConvConfig> coop_config_space(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h);
std::vector<CoopConvConfig> coop_configs_pruned(const Conv2dShape& shape, const CoopTarget& target, bool even_tile_h);
// The same for conv2d_coopmat_up2 (3x3 convs of an upsampled input).
std::vector<CoopConvConfig> coop_up2_config_space(const Conv2dShape& shape, const CoopTarget& target);
std::vector<CoopConvConfig> coop_up2_configs_pruned(const Conv2dShape& shape, const CoopTarget& target);
// The ids in the pruned lists that name no template (the lists are matched by id, so an unknown
// one would be dropped silently): empty unless a list or the space is wrong.
std::vector<std::string> coop_pruned_ids_unknown();

}  // namespace denox::kernels
