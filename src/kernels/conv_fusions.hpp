// Which ops a convolution can absorb, matched on the graph: the conv patterns of
// implementations.cpp (listed in implementations.hpp and src/compiler/schedule/README.md,
// "patterns"). Each match is a ConvFusion
// (lowering_ops.hpp) naming the ops folded into the conv's prologue and epilogue.
#pragma once

#include <cstdint>
#include <set>
#include <variant>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "kernels/lowering_ops.hpp"

namespace denox::kernels {

// Who reads and who writes each tensor.
struct TensorUses {
  std::vector<std::vector<const compiler::Op*>> consumers;
  std::vector<const compiler::Op*> producer;
  std::set<compiler::TensorId> outputs;
  explicit TensorUses(const compiler::Graph& g) : consumers(g.tensors.size()), producer(g.tensors.size(), nullptr) {
    for (const compiler::Op& op : g.ops) {
      for (compiler::TensorId t : op.inputs) consumers.at(t).push_back(&op);
      producer.at(op.output) = &op;
    }
    outputs.insert(g.outputs.begin(), g.outputs.end());
  }
  // The op that alone reads `t` (which is no graph output), if its attributes are of type A.
  template <class A> const compiler::Op* sole_consumer(compiler::TensorId t) const {
    if (consumers[t].size() != 1 || outputs.count(t)) return nullptr;
    return std::holds_alternative<A>(consumers[t][0]->attrs) ? consumers[t][0] : nullptr;
  }
  // The producer of `t` if `t` has no other reader, is no graph output and A is its type.
  template <class A> const compiler::Op* sole_producer(compiler::TensorId t) const {
    const compiler::Op* p = producer[t];
    if (!p || consumers[t].size() != 1 || outputs.count(t)) return nullptr;
    return std::holds_alternative<A>(p->attrs) ? p : nullptr;
  }
};

// Whether `v` is a constant in [lo, hi].
bool is_const(const compiler::Graph& g, compiler::ValueId v, int64_t lo, int64_t hi);

// The op's non-constant inputs, each once, in order.
std::vector<compiler::TensorId> computed_inputs(const compiler::Graph& g, const compiler::Op& op);

// Every fusion of one convolution: prologue (none, [upsample+]concat[+pad on its second input],
// upsample, pad, and with `head` a [pad+]head conv[+its act]) x epilogue (none, act, [act+]pool,
// [act+]crop, and with `tail` [act+]tail conv[+its act][+its crop]; a head takes no tail). Only
// the activation without `fuse`.
std::vector<ConvFusion> conv_fusions(const compiler::Graph& g, const TensorUses& u, const compiler::Op& conv, bool fuse, bool tail, bool head);

}  // namespace denox::kernels
