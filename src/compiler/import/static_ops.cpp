// Converters for nodes whose inputs are all known at import time: constants, and the shape
// subgraphs PyTorch's exporters emit (Shape -> Gather -> Mod/Sub/Div -> Unsqueeze -> Concat ->
// Pad/Slice/Resize). They compute StaticTensors; symbolic elements become shape-program
// expressions of the input extent, so nothing here runs per frame.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>

#include "compiler/import/node_context.hpp"

namespace denox::compiler {
namespace {

// Elements of a constant computed at import (by ConstantOfShape, Range, Expand and the
// data-movement ops on constants). Shape arithmetic makes a handful and weights come from
// initializers, so this is far above need; a ConstantOfShape of 2^27 took 4 GB (fuzzing).
constexpr int64_t kMaxComputedElements = int64_t{1} << 24;

// This cap is checked first: a constant of 2^30 elements is denox's limit ("unsupported"), not
// a claim of more elements than a tensor may have (checked_element_count's "invalid model").
int64_t computed_element_count(const NodeContext& ctx, const std::vector<int64_t>& dims, const std::string& what) {
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
    return checked_element_count(dims, what);  // throws, naming the negative dimension
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
  const double count = std::accumulate(dims.begin(), dims.end(), 1.0, [](double n, int64_t d) { return n * static_cast<double>(d); });
  if (count > static_cast<double>(kMaxComputedElements))
    ctx.unsupported("computes a constant of " + format_double(count) + " elements at import; denox computes at most " +
                    std::to_string(kMaxComputedElements));
  return checked_element_count(dims, what);  // exact, and far inside its own limit now
}

using TP = onnx::TensorProto;

// ---- element-wise ops with numpy broadcasting ------------------------------------------------

std::vector<int64_t> broadcast_dims(const NodeContext& ctx, const std::vector<const StaticTensor*>& ins) {
  size_t rank = 0;
  for (const auto* t : ins) rank = std::max(rank, t->rank());
  std::vector<int64_t> dims(rank, 1);
  for (const auto* t : ins) {
    for (size_t k = 0; k < t->rank(); ++k) {
      int64_t d = t->dims[k];
      int64_t& o = dims[rank - t->rank() + k];
      if (o == 1) o = d;
      else if (d != 1 && d != o) ctx.invalid("inputs of shapes that do not broadcast");
    }
  }
  return dims;
}

// Index of the element of `in` that output element `k` (of `dims`) reads under broadcasting.
int64_t broadcast_index(const StaticTensor& in, const std::vector<int64_t>& dims, int64_t k) {
  int64_t index = 0, in_stride = 1;
  for (size_t a = dims.size(); a-- > 0;) {
    int64_t coord = k % dims[a];
    k /= dims[a];
    size_t ia = a + in.rank() - dims.size();
    if (a + in.rank() < dims.size()) break;
    if (in.dims[ia] != 1) index += coord * in_stride;
    in_stride *= in.dims[ia];
  }
  return index;
}

using SymFn = std::function<SymScalar(SymMath&, const std::vector<SymScalar>&)>;

// Keeps all-constant results dense, so later consumers (weights, Resize scales, graph outputs)
// see plain numbers; a float tensor left symbolic cannot become a graph constant.
StaticTensor densify(SymMath& m, StaticTensor result) {
  if (result.dense) return result;
  for (const auto& s : result.elems) {
    if (!m.is_constant(s)) return result;
  }
  DecodedTensor d;
  d.onnx_type = result.onnx_type;
  d.is_float = result.is_float();
  d.dims = result.dims;
  for (const auto& s : result.elems) {
    if (d.is_float) d.f.push_back(m.constant_double(s));
    else d.i.push_back(m.constant_int(s, "integer result"));
  }
  return make_dense(std::move(d));
}

// Applies `fn` element-wise to the first `arity` inputs (all by default). The result type is
// `out_type`, or the first input's type.
void elementwise(NodeContext& ctx, const SymFn& fn, int32_t out_type = 0, size_t arity = SIZE_MAX) {
  std::vector<const StaticTensor*> ins;
  for (size_t i = 0; i < std::min(arity, ctx.input_count()); ++i) ins.push_back(&ctx.static_input(i, "operand"));
  if (ins.empty()) ctx.invalid("has no inputs");  // (the import checks counts against libonnx's schemas first)
  auto dims = broadcast_dims(ctx, ins);
  int64_t count = checked_element_count(dims, ctx.where());
  if (count > 65536) ctx.unsupported("element-wise arithmetic on a constant of " + std::to_string(count) + " elements");
  SymMath m = ctx.math();
  std::vector<SymScalar> out;
  for (int64_t k = 0; k < count; ++k) {
    std::vector<SymScalar> args;
    for (const auto* t : ins) args.push_back(m.element(*t, static_cast<size_t>(broadcast_index(*t, dims, k))));
    out.push_back(fn(m, args));
  }
  ctx.set_static_output(0, densify(m, make_symbolic(out_type ? out_type : ins[0]->onnx_type, dims, std::move(out))));
}

bool is_integer_type(int32_t t) { return !onnx_type_is_float(t); }

// A constant rounded to what a float type can hold, as ONNX Cast does (round to nearest even);
// without it Cast to float16/bfloat16 would keep double precision.
double round_to_float_type(double v, int32_t type) {
  if (!std::isfinite(v) || v == 0.0) return v;
  if (type == TP::FLOAT) return saturate_to_float(v);
  if (type == TP::FLOAT16) {
    double a = std::fabs(v);
    if (a >= 65520.0) return std::copysign(HUGE_VAL, v);  // beyond the largest half (65504) after rounding
    int e = 0;
    std::frexp(a, &e);  // a in [2^(e-1), 2^e): 11 significant bits, subnormals step by 2^-24
    double quantum = std::ldexp(1.0, std::max(e - 11, -24));
    return std::copysign(std::nearbyint(a / quantum) * quantum, v);
  }
  return v;  // double
}

void cast_input0(NodeContext& ctx, int32_t to);

void register_elementwise(std::map<std::string, Converter>& m) {
  auto binary = [](auto op) {
    return [op](NodeContext& ctx) {
      bool integer = is_integer_type(ctx.static_input(0, "operand").onnx_type);
      elementwise(ctx, [&](SymMath& mm, const std::vector<SymScalar>& a) { return op(mm, a[0], a[1], integer, ctx); });
    };
  };
  m["Add"] = binary([](SymMath& mm, auto& a, auto& b, bool, auto&) { return mm.add(a, b); });
  m["Sub"] = binary([](SymMath& mm, auto& a, auto& b, bool, auto&) { return mm.sub(a, b); });
  m["Mul"] = binary([](SymMath& mm, auto& a, auto& b, bool, auto&) { return mm.mul(a, b); });
  m["Div"] = binary([](SymMath& mm, auto& a, auto& b, bool integer, auto&) { return mm.div(a, b, integer); });
  m["Mod"] = binary([](SymMath& mm, auto& a, auto& b, bool integer, NodeContext& ctx) {
    int64_t fmod = ctx.attr_int("fmod", 0);
    if (!integer && fmod == 0) ctx.invalid("Mod on floating-point values requires fmod=1");
    return mm.mod(a, b, fmod != 0);
  });
  auto variadic = [](bool is_max) {
    return [is_max](NodeContext& ctx) {
      elementwise(ctx, [&](SymMath& mm, const std::vector<SymScalar>& a) {
        SymScalar r = a[0];
        for (size_t i = 1; i < a.size(); ++i) r = is_max ? mm.max(r, a[i]) : mm.min(r, a[i]);
        return r;
      });
    };
  };
  m["Max"] = variadic(true);
  m["Min"] = variadic(false);
  auto unary = [](auto op) {
    return [op](NodeContext& ctx) { elementwise(ctx, [&](SymMath& mm, const std::vector<SymScalar>& a) { return op(mm, a[0]); }); };
  };
  m["Neg"] = unary([](SymMath& mm, auto& a) { return mm.neg(a); });
  m["Abs"] = unary([](SymMath& mm, auto& a) { return mm.abs(a); });
  m["Sign"] = unary([](SymMath& mm, auto& a) { return mm.sub(mm.less(mm.integer(0), a), mm.less(a, mm.integer(0))); });
  m["Floor"] = unary([](SymMath& mm, auto& a) { return mm.floor(a); });
  m["Ceil"] = unary([](SymMath& mm, auto& a) { return mm.ceil(a); });
  auto compare = [](auto op) {
    return [op](NodeContext& ctx) {
      elementwise(ctx, [&](SymMath& mm, const std::vector<SymScalar>& a) { return op(mm, a[0], a[1]); }, TP::BOOL);
    };
  };
  m["Equal"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.equal(a, b); });
  m["Less"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.less(a, b); });
  m["Greater"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.less(b, a); });
  m["LessOrEqual"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.less_equal(a, b); });
  m["GreaterOrEqual"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.less_equal(b, a); });
  m["And"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.mul(mm.is_nonzero(a), mm.is_nonzero(b)); });
  m["Or"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.is_nonzero(mm.add(mm.is_nonzero(a), mm.is_nonzero(b))); });
  m["Xor"] = compare([](SymMath& mm, auto& a, auto& b) { return mm.is_nonzero(mm.sub(mm.is_nonzero(a), mm.is_nonzero(b))); });
  m["Not"] = [](NodeContext& ctx) {
    elementwise(ctx, [](SymMath& mm, const std::vector<SymScalar>& a) { return mm.sub(mm.integer(1), mm.is_nonzero(a[0])); }, TP::BOOL);
  };
  m["Where"] = [](NodeContext& ctx) {
    int32_t type = ctx.static_input(1, "value").onnx_type;
    elementwise(ctx, [](SymMath& mm, const std::vector<SymScalar>& a) { return mm.select(a[0], a[1], a[2]); }, type);
  };
  m["Cast"] = [](NodeContext& ctx) {
    if (!ctx.has_attr("to")) ctx.invalid("has no 'to' attribute");
    // (A plain conversion made a 'to' of 2^32 + 1 into 1, float.)
    const int64_t to = ctx.attr_int("to", 0);
    if (to <= 0 || to > INT32_MAX) ctx.invalid("'to' = " + std::to_string(to) + " is not an ONNX element type");
    cast_input0(ctx, static_cast<int32_t>(to));
  };
  // torchlib casts constants to a tensor's type with CastLike (the Pad value of its
  // constant_pad_nd); the second input, maybe a network tensor, only names the type.
  m["CastLike"] = [](NodeContext& ctx) {
    const ImportedValue& like = ctx.input(1);
    cast_input0(ctx, like.is_data ? (ctx.graph().tensor(like.tensor).dtype == DType::F32 ? TP::FLOAT : TP::INT64)
                                  : like.value.onnx_type);
  };
}

// Cast (and CastLike) of input 0 to `to`.
void cast_input0(NodeContext& ctx, int32_t to) {
  if (!onnx_type_is_float(to) && !onnx_type_is_integer(to)) ctx.unsupported("Cast to " + std::string(onnx_type_name(to)) + " (element type " + std::to_string(to) + ")");
  // ONNX's node tests truncate float32 to bfloat16 while runtimes round to nearest even; no
  // shape computation needs bfloat16, so refuse rather than pick one silently.
  if (to == TP::BFLOAT16) ctx.unsupported("Cast to bfloat16 (its rounding differs between ONNX's test data and runtimes)");
  bool from_float = ctx.static_input(0, "input").is_float();
  elementwise(ctx, [&](SymMath& mm, const std::vector<SymScalar>& a) {
    if (to == TP::BOOL) return mm.is_nonzero(a[0]);
    if (onnx_type_is_float(to) && mm.is_constant(a[0])) return mm.from_double(round_to_float_type(mm.constant_double(a[0]), to));
    SymScalar r = from_float && !onnx_type_is_float(to) ? mm.truncate(a[0]) : a[0];
    // A constant beyond the integer type: ONNX leaves the result to the runtime (wrap or
    // saturate), so refuse rather than keep a value the type cannot hold.
    if (!onnx_type_is_float(to) && mm.is_constant(r)) {
      const double v = mm.constant_double(r);
      const auto [lo, hi] = onnx_integer_range(to);
      if (!(v >= lo && v <= hi))
        ctx.unsupported("casts " + format_double(v) + " to " + onnx_type_name(to) + ", which cannot hold it");
    }
    return r;
  }, to, 1);
}

// ---- structural ops ----------------------------------------------------------------------------

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

void reshape_to(NodeContext& ctx, const StaticTensor& in, std::vector<int64_t> dims) {
  if (checked_element_count(dims, ctx.where()) != static_cast<int64_t>(in.size())) {
    ctx.invalid("cannot reshape " + std::to_string(in.size()) + " elements to the requested shape");
  }
  ctx.set_static_output(0, take(in, std::move(dims), iota(static_cast<int64_t>(in.size()))));
}

void convert_reshape(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  auto target = ctx.constant_ints(1, "shape");
  bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allowzero) {
      if (k >= in.rank()) ctx.invalid("shape entry 0 refers to a missing input axis");
      target[k] = in.dims[k];
    }
    if (target[k] == -1) {
      if (infer >= 0) ctx.invalid("more than one -1 in the target shape");
      infer = static_cast<int64_t>(k);
    } else if (target[k] < 0) {
      ctx.invalid("negative extent in the target shape");
    } else {
      // A product past 2^63 cannot match a constant's size: reshape_to refuses the count.
      if (__builtin_mul_overflow(known, std::max<int64_t>(target[k], 1), &known)) ctx.invalid("the target shape's element count overflows");
    }
  }
  if (infer >= 0) target[static_cast<size_t>(infer)] = known ? static_cast<int64_t>(in.size()) / known : 0;
  reshape_to(ctx, in, target);
}

std::vector<int64_t> squeeze_axes(NodeContext& ctx) {
  if (ctx.opset() >= 13) return ctx.has_input(1) ? ctx.constant_ints(1, "axes") : std::vector<int64_t>{};
  return ctx.attr_ints("axes");
}


void convert_squeeze(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  const auto axes = distinct_axes(ctx, squeeze_axes(ctx), in.rank(), "axes");
  std::vector<int64_t> dims;
  for (size_t k = 0; k < in.rank(); ++k) {
    bool drop = axes.empty() ? in.dims[k] == 1 : false;
    for (size_t a : axes) drop = drop || a == k;
    if (drop && in.dims[k] != 1) ctx.invalid("cannot squeeze axis " + std::to_string(k) + " of extent " + std::to_string(in.dims[k]));
    if (!drop) dims.push_back(in.dims[k]);
  }
  reshape_to(ctx, in, dims);
}

void convert_unsqueeze(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  const auto raw_axes = squeeze_axes(ctx);
  size_t rank = in.rank() + raw_axes.size();
  std::vector<bool> inserted(rank, false);
  for (size_t a : distinct_axes(ctx, raw_axes, rank, "axes")) inserted[a] = true;
  std::vector<int64_t> dims;
  size_t next = 0;
  for (size_t k = 0; k < rank; ++k) dims.push_back(inserted[k] ? 1 : in.dims.at(next++));
  reshape_to(ctx, in, dims);
}

void convert_flatten(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  int64_t axis = ctx.attr_int("axis", 1);
  axis = axis == static_cast<int64_t>(in.rank()) ? axis : normalize_axis(ctx, axis, in.rank());
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= in.dims[static_cast<size_t>(k)];
  reshape_to(ctx, in, {outer, outer ? static_cast<int64_t>(in.size()) / outer : 0});
}

// Output element index -> input element index, for ops described by an input coordinate map.
template <typename CoordFn>
void remap(NodeContext& ctx, const StaticTensor& in, const std::vector<int64_t>& out_dims, CoordFn input_coord) {
  int64_t count = computed_element_count(ctx, out_dims, ctx.where());
  auto in_strides = strides_of(in.dims);
  std::vector<int64_t> index, coord(out_dims.size());
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = k;
    for (size_t a = out_dims.size(); a-- > 0;) {
      coord[a] = rest % out_dims[a];
      rest /= out_dims[a];
    }
    auto ic = input_coord(coord);
    int64_t flat = 0;
    for (size_t a = 0; a < ic.size(); ++a) flat += ic[a] * in_strides[a];
    index.push_back(flat);
  }
  ctx.set_static_output(0, take(in, out_dims, index));
}

void convert_transpose(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) for (size_t k = in.rank(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  if (perm.size() != in.rank()) ctx.invalid("perm has the wrong length");
  const auto axes = distinct_axes(ctx, perm, in.rank(), "perm");
  std::vector<int64_t> dims;
  for (size_t a : axes) dims.push_back(in.dims.at(a));
  remap(ctx, in, dims, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> ic(in.rank());
    for (size_t a = 0; a < axes.size(); ++a) ic[axes[a]] = c[a];
    return ic;
  });
}

void convert_gather(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  const StaticTensor& idx_t = ctx.static_input(1, "indices");
  auto indices = ctx.constant_ints(1, "indices");
  auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), in.rank()));
  for (auto& i : indices) {
    if (i < -in.dims[axis] || i >= in.dims[axis]) ctx.invalid("index " + std::to_string(i) + " is out of range");
    if (i < 0) i += in.dims[axis];
  }
  std::vector<int64_t> dims(in.dims.begin(), in.dims.begin() + static_cast<int64_t>(axis));
  dims.insert(dims.end(), idx_t.dims.begin(), idx_t.dims.end());
  dims.insert(dims.end(), in.dims.begin() + static_cast<int64_t>(axis) + 1, in.dims.end());
  const size_t irank = idx_t.rank();
  remap(ctx, in, dims, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> ic(c.begin(), c.begin() + static_cast<int64_t>(axis));
    int64_t flat = 0;
    for (size_t a = 0; a < irank; ++a) flat = flat * idx_t.dims[a] + c[axis + a];
    ic.push_back(indices[static_cast<size_t>(flat)]);
    ic.insert(ic.end(), c.begin() + static_cast<int64_t>(axis + irank), c.end());
    return ic;
  });
}

void convert_concat(NodeContext& ctx) {
  const StaticTensor& first = ctx.static_input(0, "input");
  auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), first.rank()));
  // Concatenate along `axis` by building the symbolic element list directly.
  std::vector<const StaticTensor*> ins;
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    ins.push_back(&ctx.static_input(i, "input"));
    if (ins.back()->rank() != first.rank()) ctx.invalid("inputs of different ranks");
    for (size_t a = 0; a < first.rank(); ++a) {
      if (a != axis && ins.back()->dims[a] != first.dims[a])
        ctx.invalid("input " + std::to_string(i) + " has " + std::to_string(ins.back()->dims[a]) + " in dimension " + std::to_string(a) +
                    " where input 0 has " + std::to_string(first.dims[a]) + " (only the concat axis, " + std::to_string(axis) + ", may differ)");
    }
    dims[axis] += ins.back()->dims[axis];
  }
  // Listing one input many times makes a small file ask for a huge constant: beyond the cap on
  // computed constants, the output may hold no more elements than its distinct inputs do.
  {
    std::vector<const StaticTensor*> distinct(ins.begin(), ins.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    double given = 0, count = 1;
    for (const auto* t : distinct) given += static_cast<double>(t->size());
    for (const int64_t d : dims) count *= static_cast<double>(d);
    if (count > std::max(given, static_cast<double>(kMaxComputedElements)))
      ctx.unsupported("concatenates its inputs into a constant of " + format_double(count) + " elements at import; denox computes at most " +
                      std::to_string(kMaxComputedElements) + " (or as many as its distinct inputs hold)");
    checked_element_count(dims, ctx.where());
  }
  SymMath m = ctx.math();
  std::vector<SymScalar> out;
  int64_t outer = 1;
  for (size_t a = 0; a < axis; ++a) outer *= first.dims[a];
  for (int64_t o = 0; o < outer; ++o) {
    for (const auto* t : ins) {
      int64_t block = static_cast<int64_t>(t->size()) / std::max<int64_t>(outer, 1);
      for (int64_t k = 0; k < block; ++k) out.push_back(m.element(*t, static_cast<size_t>(o * block + k)));
    }
  }
  // Dense when every input is: a Concat of float constants (weights) must stay usable as a tensor.
  ctx.set_static_output(0, densify(m, make_symbolic(first.onnx_type, dims, std::move(out))));
}

void convert_slice(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() >= 10) {
    starts = ctx.constant_ints(1, "starts");
    ends = ctx.constant_ints(2, "ends");
    if (ctx.has_input(3)) axes = ctx.constant_ints(3, "axes");
    if (ctx.has_input(4)) steps = ctx.constant_ints(4, "steps");
  } else {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  }
  if (axes.empty()) axes = iota(static_cast<int64_t>(starts.size()));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.invalid("starts, ends, axes and steps have different lengths");
  }
  std::vector<int64_t> first(in.rank(), 0), step(in.rank(), 1), dims = in.dims;
  const std::vector<size_t> slice_axes = distinct_axes(ctx, axes, in.rank(), "axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = slice_axes[k];
    int64_t dim = in.dims[a], s = steps[k];
    if (s == 0) ctx.invalid("slice step 0");
    // Any step past the extent takes one element; clamped so that e - b + s cannot overflow.
    s = std::clamp<int64_t>(s, -(int64_t{1} << 40), int64_t{1} << 40);
    if (dim == 0) {  // an empty axis stays empty (std::clamp's bounds below would cross)
      step[a] = s;
      dims[a] = 0;
      continue;
    }
    auto clamp_index = [&](int64_t v, bool is_end) {
      if (v < 0) v = v < -dim ? -1 : v + dim;  // avoid overflow for INT64_MIN
      if (s > 0) return std::clamp<int64_t>(v, 0, dim);
      return std::clamp<int64_t>(v, is_end ? -1 : 0, dim - 1);
    };
    int64_t b = clamp_index(starts[k], false), e = clamp_index(ends[k], true);
    first[a] = b;
    step[a] = s;
    dims[a] = s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s) : std::max<int64_t>(0, (b - e + (-s) - 1) / (-s));
  }
  remap(ctx, in, dims, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> ic(c.size());
    for (size_t a = 0; a < c.size(); ++a) ic[a] = first[a] + c[a] * step[a];
    return ic;
  });
}

void convert_expand(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "input");
  auto shape = ctx.constant_ints(1, "shape");
  StaticTensor target;
  target.dims = shape;
  std::vector<const StaticTensor*> both{&in, &target};
  auto dims = broadcast_dims(ctx, both);
  std::vector<int64_t> index;
  int64_t count = computed_element_count(ctx, dims, ctx.where());
  for (int64_t k = 0; k < count; ++k) index.push_back(broadcast_index(in, dims, k));
  ctx.set_static_output(0, take(in, dims, index));
}

// The "value" attribute of Constant and ConstantOfShape: a tensor, possibly stored as external
// data beside the model; absent: nullopt.
std::optional<DecodedTensor> value_attribute(const NodeContext& ctx) {
  const auto* a = ctx.attr("value");
  if (a == nullptr) return std::nullopt;
  const bool tensor = a->type() == onnx::AttributeProto::TENSOR || (a->type() == onnx::AttributeProto::UNDEFINED && a->has_t());
  if (!tensor) ctx.invalid("attribute 'value' is not a tensor (attribute type " + std::to_string(static_cast<int>(a->type())) + ")");
  return decode_tensor(a->t(), ctx.external(), ctx.where() + " value");
}

void convert_constant_of_shape(NodeContext& ctx) {
  auto dims = ctx.constant_ints(0, "shape");
  DecodedTensor value;
  value.onnx_type = TP::FLOAT;
  value.is_float = true;
  value.f = {0.0};
  if (auto given = value_attribute(ctx)) value = std::move(*given);
  if (value.size() != 1) ctx.invalid("value must hold exactly one element");
  DecodedTensor out;
  out.onnx_type = value.onnx_type;
  out.is_float = value.is_float;
  out.dims = dims;
  int64_t count = computed_element_count(ctx, dims, ctx.where() + " output");
  if (out.is_float) out.f.assign(static_cast<size_t>(count), value.f[0]);
  else out.i.assign(static_cast<size_t>(count), value.i[0]);
  ctx.set_static_output(0, make_dense(std::move(out)));
}

void convert_constant(NodeContext& ctx) {
  DecodedTensor d;
  if (auto given = value_attribute(ctx)) {
    d = std::move(*given);
  } else if (ctx.has_attr("value_float") || ctx.has_attr("value_floats")) {
    d.onnx_type = TP::FLOAT;
    d.is_float = true;
    if (ctx.has_attr("value_float")) d.f = {ctx.attr_float("value_float", 0)};
    else for (float v : ctx.attr_floats("value_floats")) d.f.push_back(v);
    if (ctx.has_attr("value_floats")) d.dims = {static_cast<int64_t>(d.f.size())};
  } else if (ctx.has_attr("value_int") || ctx.has_attr("value_ints")) {
    d.onnx_type = TP::INT64;
    if (ctx.has_attr("value_int")) d.i = {ctx.attr_int("value_int", 0)};
    else d.i = ctx.attr_ints("value_ints");
    if (ctx.has_attr("value_ints")) d.dims = {static_cast<int64_t>(d.i.size())};
  } else {
    ctx.unsupported("Constant without value, value_float(s) or value_int(s) (sparse and string constants)");
  }
  ctx.set_static_output(0, make_dense(std::move(d)));
}

void convert_range(NodeContext& ctx) {
  const StaticTensor& t = ctx.static_input(0, "start");
  SymMath m = ctx.math();
  double start = m.constant_double(m.element(t, 0));
  double limit = m.constant_double(m.element(ctx.static_input(1, "limit"), 0));
  double delta = m.constant_double(m.element(ctx.static_input(2, "delta"), 0));
  if (!m.is_constant(m.element(ctx.static_input(1, "limit"), 0))) ctx.unsupported("Range with a size-dependent limit");
  if (delta == 0) ctx.invalid("Range delta 0");
  // Checked before the cast: an infinite or NaN count would be undefined behaviour there.
  const double length = std::max(0.0, std::ceil((limit - start) / delta));
  if (!(length <= static_cast<double>(kMaxComputedElements)))
    ctx.unsupported("Range of " + format_double(length) + " elements; denox computes at most " + std::to_string(kMaxComputedElements));
  const auto n = static_cast<int64_t>(length);
  DecodedTensor d;
  d.onnx_type = t.onnx_type;
  d.is_float = t.is_float();
  d.dims = {n};
  for (int64_t k = 0; k < n; ++k) {
    double v = start + static_cast<double>(k) * delta;
    // An integer Range near the ends of int64 (start INT64_MAX is 2^63 as a double) must not
    // reach the cast out of range.
    if (!d.is_float && !(v >= -0x1p63 && v < 0x1p63)) ctx.unsupported("an integer Range whose values leave int64");
    if (d.is_float) d.f.push_back(v);
    else d.i.push_back(static_cast<int64_t>(v));
  }
  ctx.set_static_output(0, make_dense(std::move(d)));
}

// Shape and Size of a static tensor (data tensors are handled in tensor_ops.cpp).
void convert_shape_of_static(NodeContext& ctx) {
  const StaticTensor& in = ctx.static_input(0, "data");
  DecodedTensor d;
  d.onnx_type = TP::INT64;
  if (ctx.node().op_type() == "Size") {
    d.i = {static_cast<int64_t>(in.size())};
  } else {
    auto rank = static_cast<int64_t>(in.rank());
    int64_t start = std::clamp<int64_t>(ctx.attr_int("start", 0), -rank, rank);
    int64_t end = std::clamp<int64_t>(ctx.attr_int("end", rank), -rank, rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    for (int64_t a = start; a < end; ++a) d.i.push_back(in.dims[static_cast<size_t>(a)]);
    d.dims = {static_cast<int64_t>(d.i.size())};
  }
  ctx.set_static_output(0, make_dense(std::move(d)));
}

}  // namespace

const std::map<std::string, Converter>& static_converters() {
  static const std::map<std::string, Converter> converters = [] {
    std::map<std::string, Converter> m;
    register_elementwise(m);
    m["Identity"] = [](NodeContext& ctx) { ctx.set_static_output(0, ctx.static_input(0, "input")); };
    m["Reshape"] = convert_reshape;
    m["Squeeze"] = convert_squeeze;
    m["Unsqueeze"] = convert_unsqueeze;
    m["Flatten"] = convert_flatten;
    m["Transpose"] = convert_transpose;
    m["Gather"] = convert_gather;
    m["Concat"] = convert_concat;
    m["Slice"] = convert_slice;
    m["Expand"] = convert_expand;
    m["ConstantOfShape"] = convert_constant_of_shape;
    m["Constant"] = convert_constant;
    m["Range"] = convert_range;
    m["Shape"] = convert_shape_of_static;
    m["Size"] = convert_shape_of_static;
    return m;
  }();
  return converters;
}

}  // namespace denox::compiler
