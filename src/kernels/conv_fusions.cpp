#include "kernels/conv_fusions.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <variant>

namespace denox::kernels {

using compiler::Op;
using compiler::TensorId;

bool is_const(const compiler::Graph& g, compiler::ValueId v, int64_t lo, int64_t hi) {
  if (!g.program.is_constant(v)) return false;
  const int64_t c = g.program.constant_value(v);
  return c >= lo && c <= hi;
}

std::vector<TensorId> computed_inputs(const compiler::Graph& g, const Op& op) {
  std::vector<TensorId> out;
  for (TensorId t : op.inputs)
    if (!g.tensor(t).is_constant() && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

namespace {

// The activation op that alone consumes a convolution's output (one input).
const Op* fusable_activation(const TensorUses& u, const Op& conv) {
  const Op* act = u.sole_consumer<compiler::ActivationAttrs>(conv.output);
  return act && act->inputs.size() == 1 ? act : nullptr;
}

// A 2x2/2 max-pool without begin padding that the conv epilogues can apply.
bool fusable_pool(const compiler::Graph& g, const Op& op) {
  const auto& a = std::get<compiler::PoolAttrs>(op.attrs);
  if (a.kind != compiler::PoolKind::Max || a.kernel != std::array<int64_t, 2>{2, 2} || a.stride != std::array<int64_t, 2>{2, 2} ||
      a.dilation != std::array<int64_t, 2>{1, 1} || op.inputs.size() != 1 || g.tensor(op.output).shape.size() != 4)
    return false;
  return is_const(g, a.pad_begin[0], 0, 0) && is_const(g, a.pad_begin[1], 0, 0) && is_const(g, a.pad_end[0], 0, 1) &&
         is_const(g, a.pad_end[1], 0, 1);
}

// A nearest 2x upsample whose source index is o / 2 (what the conv prologues read).
bool fusable_upsample(const compiler::Graph& g, const Op* op) {
  if (!op) return false;
  const auto& a = std::get<compiler::UpsampleAttrs>(op->attrs);
  return a.scale == std::array<int64_t, 2>{2, 2} && a.is_floor_division() && op->inputs.size() >= 1 &&
         g.tensor(op->inputs[0]).shape.size() == 4;
}

// A two-input channel concat of two different rank-4 tensors.
bool fusable_concat(const compiler::Graph& g, const Op* op) {
  if (!op || op->inputs.size() != 2 || op->inputs[0] == op->inputs[1]) return false;
  const int64_t axis = std::get<compiler::ConcatAttrs>(op->attrs).axis;
  return (axis == 1 || axis == -3) && g.tensor(op->inputs[0]).shape.size() == 4 && g.tensor(op->inputs[1]).shape.size() == 4;
}

// A zero Pad on the spatial axes of a rank-4 tensor that a convolution can read through:
// constant begin pads >= 0 (0 with `begin_zero`), any end pads (the read bounds take them).
bool foldable_pad(const compiler::Graph& g, const Op* op, bool begin_zero) {
  if (!op || !std::holds_alternative<compiler::PadAttrs>(op->attrs)) return false;
  const auto& a = std::get<compiler::PadAttrs>(op->attrs);
  if (a.value != 0.0f || a.begin.size() != 4 || a.end.size() != 4 || op->inputs.empty()) return false;
  for (size_t axis = 0; axis < 2; ++axis)
    if (!is_const(g, a.begin[axis], 0, 0) || !is_const(g, a.end[axis], 0, 0)) return false;
  const int64_t max_begin = begin_zero ? 0 : std::numeric_limits<int64_t>::max();
  return is_const(g, a.begin[2], 0, max_begin) && is_const(g, a.begin[3], 0, max_begin);
}

// A Slice that crops only the spatial axes of a rank-4 tensor, step 1.
bool foldable_slice(const compiler::Graph& g, const Op& op) {
  const auto& a = std::get<compiler::SliceAttrs>(op.attrs);
  if (a.start.size() != 4 || op.inputs.empty()) return false;
  for (int64_t step : a.step)
    if (step != 1) return false;
  const auto& in = g.tensor(op.inputs[0]).shape;
  const auto& out = g.tensor(op.output).shape;
  if (in.size() != 4 || out.size() != 4) return false;
  for (size_t axis = 0; axis < 2; ++axis) {
    if (!is_const(g, a.start[axis], 0, 0)) return false;
    const bool same = in[axis] == out[axis] || (g.program.is_constant(in[axis]) && g.program.is_constant(out[axis]) &&
                                                 g.program.constant_value(in[axis]) == g.program.constant_value(out[axis]));
    if (!same) return false;
  }
  return true;
}

// The whole chain of foldable Slices that alone consume `t`, one after the other (empty if none).
std::vector<const Op*> slice_chain(const compiler::Graph& g, const TensorUses& u, TensorId t) {
  std::vector<const Op*> slices;
  for (;;) {
    const Op* s = u.sole_consumer<compiler::SliceAttrs>(t);
    if (!s || !foldable_slice(g, *s)) break;
    slices.push_back(s);
    t = s->output;
  }
  return slices;
}

// The convolution that alone reads `result` and can be a conv2d_coopmat TAIL of the conv that
// wrote it (ConvFusion::tail): constant weights of a tail's shape, constant pads of 1, a
// constant bias if any.
const Op* fusable_tail(const compiler::Graph& g, const TensorUses& u, TensorId result) {
  const Op* tail = u.sole_consumer<compiler::ConvAttrs>(result);
  if (!tail || tail->inputs.at(0) != result || g.tensor(result).shape.size() != 4) return nullptr;
  const auto shape = constant_conv2d_shape(g, *tail);
  if (!shape || !coop_tail_shape_ok(*shape)) return nullptr;
  const auto& a = std::get<compiler::ConvAttrs>(tail->attrs);
  for (ValueId v : {a.pad_begin[0], a.pad_begin[1], a.pad_end[0], a.pad_end[1]})
    if (!is_const(g, v, 1, 1)) return nullptr;
  if (a.has_bias && tail->inputs.size() > 2 && !g.tensor(tail->inputs[2]).is_constant()) return nullptr;
  return tail;
}

// The convolution (with the activation that alone consumes it, if any) whose output alone is
// `x`, the input of conv `conv`, when it can be conv2d_coopmat's HEAD there (ConvFusion::head):
// constant weights of a head's shape, constant pads of 1, a constant bias if any, a rank-4
// input of its weights' channel count; a zero Pad before it is read through. Null head if not.
ConvFusion fusable_head(const compiler::Graph& g, const TensorUses& u, const Op& conv, TensorId x) {
  const Op* act = u.sole_producer<compiler::ActivationAttrs>(x);
  if (act && act->inputs.size() != 1) return {};
  const Op* head = u.sole_producer<compiler::ConvAttrs>(act ? act->inputs[0] : x);
  const auto conv_shape = constant_conv2d_shape(g, conv);
  const auto shape = head ? constant_conv2d_shape(g, *head) : std::nullopt;
  if (!shape || !conv_shape || !coop_head_shape_ok(*shape, *conv_shape) || head->inputs.at(0) == head->output) return {};
  const auto& in = g.tensor(head->inputs[0]).shape;
  if (in.size() != 4 || !is_const(g, in[1], shape->c_in, shape->c_in)) return {};
  const auto& a = std::get<compiler::ConvAttrs>(head->attrs);
  for (ValueId v : {a.pad_begin[0], a.pad_begin[1], a.pad_end[0], a.pad_end[1]})
    if (!is_const(g, v, 1, 1)) return {};
  if (a.has_bias && head->inputs.size() > 2 && !g.tensor(head->inputs[2]).is_constant()) return {};
  ConvFusion f{.head = head, .head_activation = act};
  if (const Op* pad = u.producer[head->inputs[0]]; foldable_pad(g, pad, false)) f.head_pad0 = pad;
  return f;
}

}  // namespace

// Every fusion of one convolution: prologue (none, [upsample+]concat[+pad on its second input],
// upsample, pad, and with `head` a [pad+]head conv[+its act]) x epilogue (none, act, [act+]pool,
// [act+]crop, and with `tail` [act+]tail conv[+its act][+its crop]; a head takes no tail). Only
// the activation without `fuse`.
std::vector<ConvFusion> conv_fusions(const compiler::Graph& g, const TensorUses& u, const Op& conv, bool fuse, bool tail, bool head) {
  std::vector<ConvFusion> prologues = {{}};
  if (fuse) {
    const TensorId x = conv.inputs[0];
    if (const Op* cat = u.sole_producer<compiler::ConcatAttrs>(x); fusable_concat(g, cat)) {
      const Op* up = u.sole_producer<compiler::UpsampleAttrs>(cat->inputs[0]);
      const Op* pad = u.producer[cat->inputs[1]];
      std::vector<const Op*> ups = {nullptr}, pads = {nullptr};
      if (fusable_upsample(g, up)) ups.push_back(up);
      if (foldable_pad(g, pad, true)) pads.push_back(pad);
      for (const Op* with_up : ups)
        for (const Op* with_pad : pads) prologues.push_back({.concat = cat, .upsample = with_up, .pad1 = with_pad});
    } else if (const Op* up = u.sole_producer<compiler::UpsampleAttrs>(x); fusable_upsample(g, up)) {
      prologues.push_back({.upsample = up});
    } else if (const Op* pad = u.producer[x]; foldable_pad(g, pad, false)) {
      prologues.push_back({.pad0 = pad});
    } else if (ConvFusion h = head ? fusable_head(g, u, conv, x) : ConvFusion{}; h.head) {
      prologues.push_back(h);
    }
  }
  std::vector<ConvFusion> epilogues = {{}};
  const Op* act = fusable_activation(u, conv);
  if (act) epilogues.push_back({.activation = act});
  if (fuse) {
    const TensorId result = act ? act->output : conv.output;
    if (const Op* pool = u.sole_consumer<compiler::PoolAttrs>(result); pool && fusable_pool(g, *pool))
      epilogues.push_back({.activation = act, .pool = pool});
    // The whole chain only: a partial crop would leave a Slice reading the cropped tensor.
    if (auto slices = slice_chain(g, u, result); !slices.empty()) epilogues.push_back({.activation = act, .slices = slices});
    if (const Op* next = tail ? fusable_tail(g, u, result) : nullptr) {
      ConvFusion e{.activation = act, .tail = next};
      e.tail_activation = fusable_activation(u, *next);
      e.tail_slices = slice_chain(g, u, e.tail_activation ? e.tail_activation->output : next->output);
      epilogues.push_back(e);
    }
  }
  std::vector<ConvFusion> out;
  for (const ConvFusion& pro : prologues) {
    for (const ConvFusion& epi : epilogues) {
      if (pro.head && epi.tail) continue;  // conv2d_coopmat takes one or the other
      ConvFusion f = pro;
      f.activation = epi.activation, f.pool = epi.pool, f.slices = epi.slices;
      f.tail = epi.tail, f.tail_activation = epi.tail_activation, f.tail_slices = epi.tail_slices;
      out.push_back(f);
    }
  }
  return out;
}

}  // namespace denox::kernels
