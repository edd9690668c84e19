#include "kernels/implementations.hpp"

#include <algorithm>
#include <limits>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/conv_fusions.hpp"
#include "kernels/implementations_q8.hpp"
#include "compiler/plan/plan_serialize.hpp"

namespace denox::kernels {

using compiler::Op;
using compiler::TensorId;

namespace {

template <class... F> struct Overloaded : F... { using F::operator()...; };

// One implementation of `conv` with fusion `f` (config fields left to the caller).
Implementation conv_implementation(const compiler::Graph& g, const Op& conv, const ConvFusion& f, Implementation::Kind kind) {
  Implementation impl;
  impl.kind = kind;
  impl.anchor = &conv;
  impl.family = kind == Implementation::Kind::CoopConv ? "conv2d_coopmat" : "conv2d";
  impl.fusion = f;
  impl.ops = f.covered(conv);
  impl.reads_through = f.read_through();
  impl.inputs = {f.x0(conv)};
  if (const auto x1 = f.x1(); x1 && *x1 != impl.inputs[0]) impl.inputs.push_back(*x1);
  // A constant (a concat with a weight tensor, say) is no computed input.
  std::erase_if(impl.inputs, [&](TensorId t) { return g.tensor(t).is_constant(); });
  impl.input_layouts.assign(impl.inputs.size(), Layout::NCHW);
  impl.output = f.last(conv).output;
  impl.pattern = f.pattern();
  impl.dispatches = f.tail ? 2 : 1;  // a tail's ring pass
  return impl;
}

// The configurations of one coop pattern in `space` (conv2d_coopmat_up2's with `up2`); the
// heuristic's choice (or the target's forced one, if it is of the same family) comes first.
// `skip_channels`: with up2, the channels concatenated after the upsampled ones (0: none).
// `plain`: no fused concat or upsample (conv2d_coopmat_tapsum's configurations need that).
// `a_direct_fallback`: where the forced or named configuration is an A_DIRECT one, the
// heuristic's, for the layout variants A_DIRECT cannot read (an NCHW or NHWC_Q8 input).
// `pixels`: the conv's output pixels at the ranking extent (0: not known; kSmallConvPixels).
std::vector<CoopConvConfig> coop_configs(const Op& conv, const Conv2dShape& shape, const LoweringTarget& target, bool pool,
                                         ConfigSpace space, bool up2, int64_t skip_channels, bool plain,
                                         const std::optional<CoopTail>& tail, bool head, int64_t pixels, bool q8_output = false,
                                         std::optional<CoopConvConfig>* a_direct_fallback = nullptr) {
  std::vector<CoopConvConfig> out;
  std::optional<CoopConvConfig> first;
  // What the fusion allows beyond the shape: an up2 one-phase config's skip, a tap-sum one's
  // plainness, a tail's channel tile and shared memory, a head's shared memory.
  auto fusion_fits = [&](const CoopConvConfig& c) {
    return up2_skip_fits(c, skip_channels, target.coop) && (plain || !c.tap_sum) && (!tail || coop_tail_fits(c, shape, *tail, target.coop)) &&
           (!head || coop_head_fits(c, shape, target.coop, pool));
  };
  // (An int8 configuration, forced or named for this conv, is the int8 variants' alone:
  // enumerate_implementations gives it to them.)
  // A_DIRECT reads one NHWC input itself: no concat, upsample or head, but for a one-phase up2
  // conv's X0 chunks; emulated, its fragments take shared memory too.
  auto a_direct_ok = [&](const CoopConvConfig& c) {
    if (!c.a_direct) return true;
    if ((!plain && !c.up2) || head) return false;
    if (!target.coop_emulate) return true;
    const int64_t bytes = tail  ? coop_tail_shared_bytes(c, shape, *tail)
                          : c.up2 ? up2_shared_bytes(c, skip_channels)
                                  : c.shared_bytes(shape.kh, shape.kw);
    return bytes + a_direct_emulation_bytes(c, shape.kh) <= target.coop.max_shared_bytes;
  };
  auto usable = [&](const CoopConvConfig& c) {
    return !c.q8 && c.up2 == up2 && coop_config_fits(c, shape, target.coop, pool) && fusion_fits(c) && a_direct_ok(c);
  };
  if (auto it = target.conv_configs.find(conv.name); it != target.conv_configs.end() && usable(it->second)) first = it->second;
  if (!first && target.force_config && usable(*target.force_config)) first = target.force_config;
  std::optional<CoopConvConfig> heuristic;
  if (!first || first->a_direct) {
    if (tail) heuristic = choose_coop_tail_config(shape, *tail, target.coop);
    else if (head) heuristic = choose_coop_head_config(shape, target.coop, pool);
    else heuristic = up2 ? choose_coop_up2_config(shape, target.coop, skip_channels, q8_output) : choose_coop_config(shape, target.coop, pool, plain, pixels);
    // Where the device's element order allows A_DIRECT, the heuristic's A_DIRECT pick comes
    // first (for an up2 conv whatever its output: the int8 plans' dec_conv1a too), `heuristic`
    // standing in for it on the layouts it cannot read (so only where there is one). Not where
    // a test forces a configuration (of another family or one this conv cannot take).
    if (!first && heuristic && (!q8_output || up2) && !head && !target.force_config) {
      std::optional<CoopConvConfig> a_direct;
      if (up2) a_direct = choose_coop_up2_a_direct_config(shape, target.coop, skip_channels);
      else if (plain) a_direct = choose_coop_a_direct_config(shape, target.coop, pool, tail, pixels);
      if (a_direct && usable(*a_direct)) first = a_direct;
    }
  }
  if (first && first->a_direct && a_direct_fallback) *a_direct_fallback = heuristic;
  if (!first) first = heuristic;
  if (first) out.push_back(*first);
  std::vector<CoopConvConfig> more;
  if (space == ConfigSpace::Pruned) more = up2 ? coop_up2_configs_pruned(shape, target.coop) : coop_configs_pruned(shape, target.coop, pool);
  if (space == ConfigSpace::Full) more = up2 ? coop_up2_config_space(shape, target.coop) : coop_config_space(shape, target.coop, pool);
  for (const CoopConvConfig& c : more)
    if (fusion_fits(c) && a_direct_ok(c) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

// The channels an up2 conv reads beyond its upsampled ones (up2_applicable checked that the
// upsampled count is a constant).
int64_t up2_skip_channels(const compiler::Graph& g, const Conv2dShape& s, const ConvFusion& f) {
  return s.c_in - g.program.constant_value(g.tensor(f.upsample->inputs.at(0)).shape[1]);
}

// Whether conv2d_coopmat_up2 can run `conv` with fusion `f`: a 3x3 stride-1 conv with constant
// padding 1 of a fused nearest 2x upsample (output extents = input extents = 2x the
// upsample's input), without pool or crop, and a constant channel count for the upsampled part.
bool up2_applicable(const compiler::Graph& g, const Op& conv, const Conv2dShape& s, const ConvFusion& f) {
  if (!f.upsample || f.pool || !f.slices.empty() || f.tail || f.head || f.pad0 || s.kh != 3 || s.kw != 3 || !coop_conv_applicable(s)) return false;
  const auto& a = std::get<compiler::ConvAttrs>(conv.attrs);
  for (ValueId v : {a.pad_begin[0], a.pad_begin[1], a.pad_end[0], a.pad_end[1]})
    if (!is_const(g, v, 1, 1)) return false;
  const auto& up_in = g.tensor(f.upsample->inputs.at(0)).shape;
  return up_in.size() == 4 && is_const(g, up_in[1], 1, s.c_in);
}

// `conv`'s output pixels (batch x height x width) under `values` (0 without them).
int64_t conv_pixels(const compiler::Graph& g, const Op& conv, const std::optional<std::vector<int64_t>>& values) {
  const auto& out = g.tensor(conv.output).shape;
  if (!values || out.size() != 4) return 0;
  // Saturating: each extent fits int64, their product need not (a Pad of 2^40 on both axes).
  int64_t pixels = 0;
  if (__builtin_mul_overflow(values->at(out[0]), values->at(out[2]), &pixels) || __builtin_mul_overflow(pixels, values->at(out[3]), &pixels))
    return std::numeric_limits<int64_t>::max();
  return pixels;
}

}  // namespace

bool constant_channels_multiple_of(const compiler::Graph& g, TensorId t, int64_t multiple) {
  const auto& shape = g.tensor(t).shape;
  return shape.size() == 4 && g.program.is_constant(shape[1]) && g.program.constant_value(shape[1]) % multiple == 0 &&
         g.program.constant_value(shape[1]) > 0;
}

// (A multiple of 8 channels: the shaders' 16-byte path; anything else stays NCHW.)
bool nhwc_allowed(const compiler::Graph& g, TensorId t) { return constant_channels_multiple_of(g, t, 8); }

namespace {

// The NHWC variant of a coop convolution (every tensor it may keep NHWC in NHWC), or nullopt
// when it has none.
std::optional<Implementation> nhwc_variant(const compiler::Graph& g, const Implementation& nchw) {
  Implementation v = nchw;
  bool any = false;
  // inputs[0] is X0 and inputs[1] X1 unless X0 is a constant (then read as a weight range,
  // NCHW, like every input of that rare conv).
  if (!v.inputs.empty() && v.inputs[0] == v.fusion.x0(*v.anchor))
    for (size_t i = 0; i < v.inputs.size(); ++i)
      if (nhwc_allowed(g, v.inputs[i])) v.input_layouts[i] = Layout::NHWC, any = true;
  if (nhwc_allowed(g, v.output)) v.output_layout = Layout::NHWC, any = true;
  if (!any) return std::nullopt;
  v.coop.x0 = v.input_layout(0);
  v.coop.x1 = v.input_layout(1);
  v.coop.y = v.output_layout;
  return v;
}

// Conversions of `t` between layouts `a` and `b`, both ways: strided copies, or quantize.comp where
// one side is NHWC_Q8 (`quant`: the tensor's quantization).
void add_conversions(const compiler::Graph& g, const TensorUses& u, TensorId t, Layout a, Layout b, std::vector<Implementation>& out,
                     const TensorQuant& quant = {}) {
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    Implementation c;
    c.kind = Implementation::Kind::Convert;
    c.anchor = u.producer[t];  // null for a graph input
    c.inputs = {t};
    c.input_layouts = {from};
    c.output = t;
    c.output_layout = to;
    c.family = from == Layout::NHWC_Q8 || to == Layout::NHWC_Q8 ? "quantize" : "copy";
    c.pattern = std::string(layout_name(from)) + "->" + layout_name(to);
    c.tensor_name = g.tensor(t).name;
    c.quant = quant;
    out.push_back(std::move(c));
  }
}

Implementation single_op(const compiler::Graph& g, const Op& op) {
  Implementation impl;
  impl.anchor = &op;
  impl.ops = {&op};
  impl.inputs = computed_inputs(g, op);
  impl.input_layouts.assign(impl.inputs.size(), Layout::NCHW);
  impl.output = op.output;
  impl.pattern = op.onnx_op;
  std::visit(Overloaded{
                 [&](const compiler::ConvAttrs&) { impl.kind = Implementation::Kind::PortableConv, impl.family = "conv2d", impl.pattern = "conv"; },
                 [&](const compiler::PoolAttrs&) { impl.family = "pool2d"; },
                 [&](const compiler::ActivationAttrs&) { impl.family = "unary"; },
                 [&](const compiler::BinaryAttrs&) { impl.family = "binary"; },
                 [&](const compiler::UpsampleAttrs&) { impl.family = "upsample_nearest"; },
                 [&](const compiler::ConcatAttrs&) {
                   impl.family = "copy";
                   impl.dispatches = static_cast<uint32_t>(op.inputs.size());
                 },
                 [&](const compiler::PadAttrs&) { impl.family = "pad"; },
                 [&](const compiler::SliceAttrs&) { impl.family = "copy"; },
                 [&](const compiler::ShapeValuesAttrs&) { impl.kind = Implementation::Kind::Free, impl.dispatches = 0; },
                 [&](const compiler::IdentityAttrs&) { impl.kind = Implementation::Kind::Free, impl.dispatches = 0; },
             },
             op.attrs);
  return impl;
}

bool elementwise(const Op& op) {
  return std::holds_alternative<compiler::BinaryAttrs>(op.attrs) || std::holds_alternative<compiler::ActivationAttrs>(op.attrs);
}

// The eltwise chain ending at `root` (Implementation::Kind::Eltwise): its ops reached backwards
// through elementwise producers, every leaf one computed f32 tensor X or a constant (scalar or
// per channel: eltwise_constant),
// every op's output of X's shape and, but for the root's, read only inside the chain and no
// graph output. Producers are taken greedily (up to kEltwiseMaxSteps ops); after each pass the
// first chain op (graph order) with a reader the pass did not take becomes a leaf, its result
// no longer followed, and the pass runs again, so a chain can start after a shared
// intermediate. Every pass adds a leaf, so this ends (at most one pass per op of the graph). A
// chain that does not close on one X is no chain.
std::optional<Implementation> eltwise_chain(const compiler::Graph& g, const TensorUses& u, const Op& root) {
  if (!elementwise(root)) return std::nullopt;
  std::set<TensorId> leaves;  // results read outside the chain: leaves, not chain ops
  std::set<const Op*> chain;
  std::optional<TensorId> x;
  bool ok = true;
  std::function<void(TensorId)> visit = [&](TensorId t) {
    if (!ok || g.tensor(t).is_constant()) return;  // a constant: checked against X below
    const Op* p = u.producer.at(t);
    // (An op of constants only is no chain op: eltwise_program would refuse it.)
    const bool computed = p && std::any_of(p->inputs.begin(), p->inputs.end(), [&](TensorId in) { return !g.tensor(in).is_constant(); });
    // (An op already taken is followed no further, whatever the chain's size: a diamond.)
    if (p && computed && elementwise(*p) && !u.outputs.count(t) && !leaves.count(t) && (chain.count(p) || chain.size() < kEltwiseMaxSteps)) {
      if (chain.insert(p).second)
        for (TensorId in : p->inputs) visit(in);
      return;
    }
    if (g.tensor(t).dtype != compiler::DType::F32 || (x && *x != t)) ok = false;  // (constants returned above)
    x = t;
  };
  for (size_t round = 0; round <= g.ops.size(); ++round) {
    chain = {&root}, x.reset(), ok = true;
    for (TensorId in : root.inputs) visit(in);
    // The first op (in graph order) whose result is also read outside the chain becomes a leaf.
    const Op* shared = nullptr;
    for (const Op* op : chain)
      if (op != &root && !shared)
        for (const Op* reader : u.consumers.at(op->output))
          if (!chain.count(reader)) shared = op;
    if (!shared) break;
    leaves.insert(shared->output);
    ok = false;  // unless a later round closes the chain
  }
  if (ok && x && u.producer.at(*x) && chain.count(u.producer.at(*x))) ok = false;  // X must come from outside
  if (!ok || !x || chain.size() < 2) return std::nullopt;
  const auto& shape = g.tensor(*x).shape;
  for (const Op* op : chain) {
    if (g.tensor(op->output).shape != shape) return std::nullopt;
    for (TensorId in : op->inputs)
      if (g.tensor(in).is_constant() && !eltwise_constant(g, in, *x)) return std::nullopt;
  }  // (No chain op but the root has a reader outside the chain: the loop above ended on that.)
  Implementation impl;
  impl.kind = Implementation::Kind::Eltwise;
  impl.anchor = &root;
  impl.ops.assign(chain.begin(), chain.end());  // address order is graph order (one vector)
  impl.inputs = {*x};
  impl.input_layouts = {Layout::NCHW};
  impl.output = root.output;
  impl.family = "eltwise";
  impl.pattern = "eltwise";
  impl.config = eltwise_program(g, impl.ops, *x).describe();
  return impl;
}

// A graph input read only in another layout than NCHW, or an output written only in another
// one, is bound in that layout (edge graphs: an NHWC edge measured alone).
void set_io_layouts(PlanBuilder& b, const compiler::Graph& g, const std::vector<const Implementation*>& chosen) {
  auto only = [&](TensorId t, bool input) -> std::optional<Layout> {
    std::optional<Layout> seen;
    for (const Implementation* impl : chosen) {
      if (input) {
        for (size_t i = 0; i < impl->inputs.size(); ++i)
          if (impl->inputs[i] == t) {
            if (impl->input_layout(i) == Layout::NCHW) return std::nullopt;
            seen = impl->input_layout(i);
          }
      } else if (impl->output == t) {
        if (impl->output_layout == Layout::NCHW) return std::nullopt;
        seen = impl->output_layout;
      }
    }
    return seen;
  };
  for (TensorId t : g.inputs)
    if (auto l = only(t, true)) b.set_io_layout(t, true, *l);
  for (TensorId t : g.outputs)
    if (auto l = only(t, false)) b.set_io_layout(t, false, *l);
}

}  // namespace

const char* config_space_name(ConfigSpace s) {
  switch (s) {
    case ConfigSpace::Heuristic: return "heuristic";
    case ConfigSpace::Pruned: return "pruned";
    case ConfigSpace::Full: return "full";
  }
  return "?";
}

std::string Implementation::layout_words() const {
  if (kind == Kind::Convert) return "";
  std::string out;
  for (const auto& [layout, word] : {std::pair{Layout::NHWC, "nhwc"}, std::pair{Layout::NHWC_Q8, "q8"}}) {
    std::string w;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (input_layout(i) == layout) w += (w.empty() ? "" : ",") + std::string(i == 0 ? "x0" : "x1");
    if (output_layout == layout) w += (w.empty() ? "" : ",") + std::string("y");
    if (!w.empty()) out += " " + std::string(word) + "(" + w + ")";
  }
  return out;
}

std::string Implementation::name() const {
  if (kind == Kind::Convert) return tensor_name + " " + pattern;
  // Read-through ops (a folded Pad) first, as the dispatch names them.
  std::string n;
  for (const auto* list : {&reads_through, &ops})
    for (const Op* op : *list) n += (n.empty() ? "" : "+") + op->name;
  return n;
}

std::vector<Implementation> enumerate_implementations(const compiler::Graph& graph, plan::Precision precision,
                                                      const LoweringTarget& target, ConfigSpace space,
                                                      const std::optional<std::vector<int64_t>>& ranking_values) {
  const TensorUses u(graph);
  const bool coop = precision == plan::Precision::F16 && target.uses_coop();
  std::vector<Implementation> out;
  for (const Op& op : graph.ops) {
    Implementation impl = single_op(graph, op);
    if (impl.kind == Implementation::Kind::PortableConv) {
      // Fusions need a rank-4 input; a conv whose weights are not constant keeps the plain
      // implementation (its lowering names what is missing).
      const auto shape = constant_conv2d_shape(graph, op);
      if (!shape || graph.tensor(op.inputs[0]).shape.size() != 4) {
        out.push_back(std::move(impl));
        continue;
      }
      const std::vector<ConvFusion> fusions =
          conv_fusions(graph, u, op, target.fuse, coop && target.coop_tail, coop && target.coop_head && coop_conv_applicable(*shape));
      for (const ConvFusion& f : fusions)  // (tails and heads are conv2d_coopmat's only)
        if (!f.tail && !f.head) out.push_back(conv_implementation(graph, op, f, Implementation::Kind::PortableConv));
      if (!coop || !coop_conv_applicable(*shape)) continue;
      // A forced configuration of one family keeps the other out (tests check each family).
      const bool forced_up2 = target.force_config && target.force_config->up2;
      const bool forced_plain = target.force_config && !target.force_config->up2;
      const int64_t pixels = conv_pixels(graph, op, ranking_values);
      // The heuristic's own choices (not a test's forced or named configuration) may leave
      // variants out that its picks make slower (below).
      const bool heuristic_own = space == ConfigSpace::Heuristic && !target.force_config && !target.conv_configs.count(op.name);
      // On a small layer of at most 64 channels the heuristic runs an upsampled conv on
      // conv2d_coopmat, upsample and concat fused into its reads, where the cost model, which
      // counts up2's saved multiplies, would take up2's one-phase tiles: OIDN small's dec_conv4a
      // at 1/8 (H200, same-call A/B at 1280x720 / 1920x1088 / 3840x2160: 0.0210 / 0.0238 /
      // 0.0541 -> 0.0123 / 0.0183 / 0.0529 ms; bench/RESULTS.md 2026-11-29, twenty-third
      // session). Balanced's (112 channels, all-phase up2 tiles) ran faster on up2 at 1280x720
      // and 3840x2160 (0.0264 / 0.1713 against 0.0325 / 0.1992), so wider convs keep it.
      const bool small_up2_out = heuristic_own && small_conv(pixels) && shape->c_out <= 64;
      for (const ConvFusion& f : fusions) {
        for (bool up2 : {false, true}) {
          if (up2 && (!target.coop_up2 || forced_plain || small_up2_out || !up2_applicable(graph, op, *shape, f))) continue;
          if (!up2 && forced_up2 && up2_applicable(graph, op, *shape, f)) continue;
          Implementation c = conv_implementation(graph, op, f, Implementation::Kind::CoopConv);
          c.coop.emulate = target.coop_emulate;
          c.coop.subgroup_size = target.coop.subgroup_size;
          std::vector<Implementation> variants = {c};
          if (target.nhwc)
            if (auto v = nhwc_variant(graph, c)) variants.push_back(std::move(*v));
          // With the int8 precision: the same conv writing its output NHWC_Q8 (the int8 convs'
          // first producer; fp16 HEAD and up2 convs stay usable between int8 ones).
          if (target.int8 && !f.tail)
            for (size_t base = 0, bases = variants.size(); base < bases; ++base)
              if (auto v = q8_output_variant(graph, variants[base], *target.int8)) variants.push_back(std::move(*v));
          const int64_t skip = up2 ? up2_skip_channels(graph, *shape, f) : 0;
          std::optional<CoopTail> tail;
          if (f.tail) tail = CoopTail(constant_conv2d_shape(graph, *f.tail)->c_out, shape->c_out);
          std::optional<CoopConvConfig> a_direct_fallback;
          const std::vector<CoopConvConfig> configs = coop_configs(op, *shape, target, f.pool != nullptr, space, up2, skip, !f.concat && !f.upsample,
                                                                   tail, f.head != nullptr, pixels, false, &a_direct_fallback);
          // An up2 conv writing NHWC_Q8 has a heuristic configuration of its own (choose_coop_up2_config).
          auto writes_q8_up2 = [&](const Implementation& v) { return up2 && v.output_layout == Layout::NHWC_Q8; };
          std::optional<CoopConvConfig> q8_out_fallback;
          const std::vector<CoopConvConfig> q8_out_configs =
              std::any_of(variants.begin(), variants.end(), writes_q8_up2)
                  ? coop_configs(op, *shape, target, f.pool != nullptr, space, up2, skip, !f.concat && !f.upsample, tail,
                                 f.head != nullptr, pixels, true, &q8_out_fallback)
                  : std::vector<CoopConvConfig>{};
          // A variant's configurations.
          auto own_configs = [&](const Implementation& v) -> const std::vector<CoopConvConfig>& {
            return writes_q8_up2(v) ? q8_out_configs : configs;
          };
          // ... and an up2 conv reading its upsampled input NHWC_Q8 (X0_Q8; one-phase configs).
          // In the heuristic space not where a variant with an NHWC X0 and the same output runs
          // the heuristic's A_DIRECT pick (it reads an fp16 X0): the cost model, which does not see
          // configurations, would take X0_Q8 for its bytes, where the H200's tuned int8 plans of
          // OIDN small ran dec_conv1a on A_DIRECT reading fp16 (bench/RESULTS.md 2026-11-29,
          // twenty-third session).
          auto a_direct_reads_x0 = [&](Layout output) {
            return heuristic_own && std::any_of(variants.begin(), variants.end(), [&](const Implementation& v) {
              return v.output_layout == output && v.input_layout(0) == Layout::NHWC && !own_configs(v).empty() && own_configs(v).front().a_direct;
            });
          };
          if (up2 && target.int8 && (target.coop.int8 || target.coop_emulate))
            for (size_t base = 0, bases = variants.size(); base < bases; ++base)
              if (!a_direct_reads_x0(variants[base].output_layout))
                if (auto v = q8_x0_variant(graph, variants[base], *target.int8)) variants.push_back(std::move(*v));
          if (!up2 && target.int8 && (target.coop.int8 || target.coop_emulate)) {
            const CoopTail* q8_tail = tail ? &*tail : nullptr;
            std::vector<CoopConvConfig> q8 =
                q8_configs(*shape, target.coop, f.pool != nullptr, target.coop_emulate, space != ConfigSpace::Heuristic, q8_tail, pixels);
            // By output phase (an upsampled X0 and a concat, as conv2d_coopmat_up2 takes them): beside
            // the plain configurations, the cost model prices them lower (4 taps for X0's channels).
            const bool phases = f.concat && up2_applicable(graph, op, *shape, f);
            if (phases)
              for (const CoopConvConfig& qc : q8_phase_configs(*shape, target.coop, target.coop_emulate, space != ConfigSpace::Heuristic))
                q8.push_back(qc);
            auto q8_fits = [&](const CoopConvConfig& qc) {
              return qc.q8 && (!qc.up2 || phases) &&
                     (q8_tail ? q8_tail_fits(qc, *shape, *q8_tail, target.coop, target.coop_emulate)
                              : q8_config_fits(qc, *shape, target.coop, f.pool != nullptr, target.coop_emulate));
            };
            if (target.force_config && q8_fits(*target.force_config)) q8 = {*target.force_config};
            // A configuration named for this conv (LoweringTarget::conv_configs) wins, as for fp16.
            if (auto it = target.conv_configs.find(op.name); it != target.conv_configs.end() && q8_fits(it->second)) q8 = {it->second};
            for (Implementation& q : q8_variants(graph, c, *target.int8))
              for (const CoopConvConfig& qc : q8) {
                q.family = qc.family();
                q.coop.config = qc;
                q.config = qc.describe() + q.layout_words();
                out.push_back(q);
              }
          }
          for (size_t v = 0; v < variants.size(); ++v) {
            // Where an NHWC variant exists, the NCHW one (variants[0]) is measured with the
            // heuristic's configuration only: on the H100 the NHWC variant of a configuration
            // was as fast or faster in every layer of OIDN (bench/RESULTS.md, 2026-11-25), and
            // the layouts would otherwise double the tuning time.
            Implementation& variant = variants[v];
            const std::vector<CoopConvConfig>& own = own_configs(variant);
            const std::optional<CoopConvConfig>& fallback = writes_q8_up2(variant) ? q8_out_fallback : a_direct_fallback;
            const size_t count = v == 0 && variants.size() > 1 ? std::min<size_t>(1, own.size()) : own.size();
            std::vector<CoopConvConfig> taken;  // (the fallback may stand in for several A_DIRECT configurations)
            for (size_t k = 0; k < count; ++k) {
              if (variant.output_layout == Layout::NHWC_Q8 && own[k].tap_sum) continue;  // (no NHWC epilogue)
              CoopConvConfig config = own[k];
              // A_DIRECT reads its NHWC fp16 input itself (coop_configs offered it to no concat,
              // upsample or head but a one-phase up2 conv's X0): another layout takes the
              // heuristic's configuration.
              if (config.a_direct && variant.input_layout(0) != Layout::NHWC) {
                if (!fallback) continue;
                config = *fallback;
              }
              if (variant.input_layout(0) == Layout::NHWC_Q8 && !up2_q8_fits(config, target.coop, target.coop_emulate)) continue;
              if (std::find(taken.begin(), taken.end(), config) != taken.end()) continue;
              taken.push_back(config);
              variant.family = config.family();
              variant.coop.config = config;
              variant.config = config.describe() + variant.layout_words();
              out.push_back(variant);
            }
          }
        }
      }
      continue;
    }
    out.push_back(std::move(impl));
    if (target.fuse)
      if (auto chain = eltwise_chain(graph, u, op)) out.push_back(std::move(*chain));
  }
  // Conversions of every tensor some implementation keeps NHWC.
  std::set<TensorId> nhwc;
  for (const Implementation& impl : out) {
    for (size_t i = 0; i < impl.inputs.size(); ++i)
      if (impl.input_layout(i) == Layout::NHWC) nhwc.insert(impl.inputs[i]);
    if (impl.output_layout == Layout::NHWC) nhwc.insert(impl.output);
  }
  for (TensorId t : nhwc) add_conversions(graph, u, t, Layout::NCHW, Layout::NHWC, out);
  // Quantizing and dequantizing conversions of every tensor some implementation keeps NHWC_Q8.
  std::map<TensorId, TensorQuant> q8;
  for (const Implementation& impl : out) {
    for (size_t i = 0; i < impl.inputs.size(); ++i)
      if (impl.input_layout(i) == Layout::NHWC_Q8) q8[impl.inputs[i]] = i == 0 ? impl.coop.q_x0 : impl.coop.q_x1;
    if (impl.output_layout == Layout::NHWC_Q8) q8[impl.output] = impl.coop.q_y;
  }
  for (const auto& [t, q] : q8) {
    add_conversions(graph, u, t, Layout::NCHW, Layout::NHWC_Q8, out, q);
    if (nhwc.count(t)) add_conversions(graph, u, t, Layout::NHWC, Layout::NHWC_Q8, out, q);
  }
  return out;
}

plan::Plan lower_implementations(const compiler::Graph& graph, plan::Precision precision,
                                 const std::vector<const Implementation*>& chosen) {
  std::map<const Op*, const Implementation*> at_anchor;
  std::set<const Op*> covered;
  // Conversions by the value they read, lowered once it is written.
  std::multimap<std::pair<TensorId, Layout>, const Implementation*> conversions;
  for (const Implementation* impl : chosen) {
    if (impl->kind == Implementation::Kind::Convert) {
      conversions.emplace(std::make_pair(impl->inputs.at(0), impl->input_layout(0)), impl);
      continue;
    }
    for (const Op* op : impl->ops)
      if (!covered.insert(op).second) fail(ErrorCode::Internal, "lowering: " + describe_op(*op) + " is covered by two implementations");
    at_anchor[impl->anchor] = impl;
  }
  PlanBuilder b(graph, precision);
  set_io_layouts(b, graph, chosen);
  auto convert = [&](TensorId t, Layout written) {
    const auto [lo, hi] = conversions.equal_range({t, written});
    for (auto it = lo; it != hi; ++it) {
      const Layout to = it->second->output_layout;
      if (written == Layout::NHWC_Q8 || to == Layout::NHWC_Q8) lower_quantize_conversion(b, t, written, to, it->second->quant);
      else lower_layout_conversion(b, t, written, to);
    }
  };
  for (TensorId t : graph.inputs)
    for (Layout l : {Layout::NCHW, Layout::NHWC, Layout::NHWC_Q8}) convert(t, l);
  for (const Op& op : graph.ops) {
    auto it = at_anchor.find(&op);
    if (it == at_anchor.end()) continue;
    const Implementation& impl = *it->second;
    switch (impl.kind) {
      case Implementation::Kind::Free:
        if (std::holds_alternative<compiler::IdentityAttrs>(op.attrs)) b.alias(op.output, op.inputs.at(0));
        break;  // ShapeValues: computed shapes stay on the host; a float op reading one is reported by b.read()
      case Implementation::Kind::PortableConv: lower_conv2d(b, op, impl.fusion); break;
      case Implementation::Kind::CoopConv: lower_conv2d_coop(b, op, impl.fusion, impl.coop); break;
      case Implementation::Kind::Convert: break;  // not anchored (above)
      case Implementation::Kind::Eltwise: lower_eltwise(b, impl.ops, impl.inputs.at(0)); break;
      case Implementation::Kind::Op:
        std::visit(Overloaded{
                       [&](const compiler::PoolAttrs&) { lower_pool2d(b, op); },
                       [&](const compiler::ActivationAttrs&) { lower_unary(b, op); },
                       [&](const compiler::BinaryAttrs&) { lower_binary(b, op); },
                       [&](const compiler::UpsampleAttrs&) { lower_upsample_nearest(b, op); },
                       [&](const compiler::ConcatAttrs&) { lower_concat(b, op); },
                       [&](const compiler::PadAttrs&) { lower_pad(b, op); },
                       [&](const compiler::SliceAttrs&) { lower_slice(b, op); },
                       [&](const auto&) { fail(ErrorCode::Internal, "lowering: no single-op lowering for " + describe_op(op)); },
                   },
                   op.attrs);
        break;
    }
    convert(impl.output, impl.output_layout);
  }
  for (TensorId out : graph.outputs)
    if (b.is_constant(out))
      fail(ErrorCode::Unsupported, "output '" + graph.tensor(out).name + "' is a constant; the GPU path computes its outputs");
  plan::Plan plan = b.finish();
  plan::validate_plan(plan);
  return plan;
}

}  // namespace denox::kernels
