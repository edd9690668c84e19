// Every op family of the portable lowering on lavapipe against the CPU reference, at odd sizes
// and channel counts, in fp32 and fp16 storage, with the validation layer on.
#include <catch2/catch.hpp>

#include "../runtime/gpu_test_support.hpp"
#include "graph_builder.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::testing;

namespace {

constexpr int64_t kH = 37, kW = 53;  // odd, and not multiples of any tile size

// Runs the graph on one random input per graph input (constant extents as the graph says, the
// H and W symbols as h and w) in both precisions and checks each against the reference.
void check_against_reference(const GraphBuilder& b, int64_t h = kH, int64_t w = kW) {
  const Graph& g = b.g;
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    std::vector<int64_t> shape;
    for (ValueId v : g.tensor(g.inputs[i]).shape)
      shape.push_back(v == b.H ? h : v == b.W ? w : g.program.constant_value(v));
    inputs.push_back(random_tensor(shape, 100 + i));
  }
  for (plan::Precision p : {plan::Precision::F32, plan::Precision::F16}) {
    INFO("precision " << plan::precision_name(p) << ", " << h << "x" << w);
    const double err = gpu_vs_reference(g, p, inputs);
    CHECK(err <= tolerance(p));
  }
  CHECK(device().validation_errors() == 0);
}

ActivationAttrs act(Activation kind) {
  ActivationAttrs a;
  a.kind = kind;
  if (kind == Activation::LeakyRelu) a.alpha = 0.1f;
  if (kind == Activation::Clip) a.min = -0.25f, a.max = 0.5f;
  return a;
}

}  // namespace

TEST_CASE("conv 3x3 + bias + fused relu, 5 -> 17 channels", "[kernels][conv]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 5);
  const TensorId y = b.conv("conv", x, 17, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 7);
  b.output(b.activation("relu", y, act(Activation::Relu)));
  check_against_reference(b);
}

TEST_CASE("conv variants: 1x1 without bias, strided and dilated 5x5 with asymmetric pads, fused activations",
          "[kernels][conv]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 17);
  const TensorId a = b.conv("pointwise", x, 3, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, 11);
  b.output(b.activation("leaky", a, act(Activation::LeakyRelu)));
  const TensorId s = b.conv("strided", x, 33, {5, 3}, {2, 3}, {2, 1}, {1, 2, 3, 0}, true, 12);
  b.output(b.activation("sigmoid", s, act(Activation::Sigmoid)));
  const TensorId t = b.conv("tanh_conv", x, 9, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 13);
  b.output(b.activation("tanh", t, act(Activation::Tanh)));
  const TensorId c = b.conv("clip_conv", x, 4, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 14);
  b.output(b.activation("clip", c, act(Activation::Clip)));
  check_against_reference(b);
}

TEST_CASE("conv whose output is also a graph output keeps its activation separate", "[kernels][conv]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 3);
  const TensorId y = b.conv("conv", x, 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 21);
  b.output(y);
  b.output(b.activation("relu", y, act(Activation::Relu)));
  check_against_reference(b);
}

TEST_CASE("max and average pooling: 2x2/2, 3x3/2 padded with and without count_include_pad, ceil_mode",
          "[kernels][pool]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 5);
  PoolAttrs max2;
  max2.kind = PoolKind::Max;
  max2.kernel = {2, 2};
  max2.stride = {2, 2};
  b.output(b.pool("max2", x, max2, {0, 0, 0, 0}, false));
  b.output(b.pool("max2_ceil", x, max2, {0, 0, 0, 0}, true));
  PoolAttrs avg = max2;
  avg.kind = PoolKind::Average;
  avg.kernel = {3, 3};
  b.output(b.pool("avg", x, avg, {1, 1, 1, 1}, false));
  avg.count_include_pad = true;
  b.output(b.pool("avg_incl", x, avg, {1, 0, 1, 1}, true));
  PoolAttrs dilated = max2;
  dilated.kernel = {3, 2};
  dilated.dilation = {2, 1};
  dilated.stride = {1, 2};
  b.output(b.pool("max_dilated", x, dilated, {2, 0, 1, 1}, false));
  check_against_reference(b);
}

TEST_CASE("nearest upsampling in every coordinate mode", "[kernels][upsample]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 3);
  const std::vector<std::tuple<CoordinateMode, NearestMode, int64_t, int64_t>> cases = {
      {CoordinateMode::Asymmetric, NearestMode::Floor, 2, 2},
      {CoordinateMode::HalfPixel, NearestMode::RoundPreferFloor, 3, 2},
      {CoordinateMode::PytorchHalfPixel, NearestMode::RoundPreferCeil, 2, 3},
      {CoordinateMode::TfHalfPixelForNearest, NearestMode::Ceil, 4, 1},
      {CoordinateMode::AlignCorners, NearestMode::RoundPreferFloor, 2, 3},
      {CoordinateMode::AlignCorners, NearestMode::Ceil, 3, 2},
  };
  int k = 0;
  for (const auto& [mode, nearest, sh, sw] : cases) {
    UpsampleAttrs a;
    a.scale = {sh, sw};
    a.coordinate_mode = mode;
    a.nearest_mode = nearest;
    b.output(b.op("up" + std::to_string(k++), "Resize", a, {x},
                  {b.c(1), b.c(3), b.g.program.mul(b.H, b.c(sh)), b.g.program.mul(b.W, b.c(sw))}));
  }
  check_against_reference(b, 19, 23);
}

TEST_CASE("concat of three inputs along channels, and along width", "[kernels][concat]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 3), y = b.input("y", 5), z = b.input("z", 17);
  b.output(b.op("cat", "Concat", ConcatAttrs{1}, {x, y, z}, {b.c(1), b.c(25), b.H, b.W}));
  const TensorId r = b.activation("relu", y, act(Activation::Relu));
  b.output(b.op("cat_w", "Concat", ConcatAttrs{-1}, {y, r, y}, {b.c(1), b.c(5), b.H, b.g.program.mul(b.W, b.c(3))}));
  check_against_reference(b);
}

TEST_CASE("constant pad with a value, and negative pads that crop", "[kernels][pad]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 5);
  PadAttrs grow{{b.c(0), b.c(1), b.c(2), b.c(3)}, {b.c(0), b.c(2), b.c(1), b.c(0)}, 0.75f};
  b.output(b.op("pad", "Pad", grow, {x}, {b.c(1), b.c(8), b.add(b.H, b.c(3)), b.add(b.W, b.c(3))}));
  PadAttrs crop{{b.c(0), b.c(0), b.c(-2), b.c(1)}, {b.c(0), b.c(0), b.c(3), b.c(-4)}, 0.0f};
  b.output(b.op("crop", "Pad", crop, {x}, {b.c(1), b.c(5), b.add(b.H, b.c(1)), b.sub(b.W, b.c(3))}));
  check_against_reference(b);
}

TEST_CASE("spatial slices with steps, negative steps and channel ranges", "[kernels][slice]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 5);
  // rows 2, 4, ... < H - 1; columns 1.. W - 2 every 3rd.
  SliceAttrs s{{b.c(0), b.c(1), b.c(2), b.c(1)}, {1, 1, 2, 3}};
  b.output(b.op("slice", "Slice", s, {x},
                {b.c(1), b.c(4), b.div_ceil(b.sub(b.H, b.c(3)), 2), b.div_ceil(b.sub(b.W, b.c(3)), 3)}));
  // Everything reversed in H and W: start at the last element, step -1.
  SliceAttrs r{{b.c(0), b.c(0), b.sub(b.H, b.c(1)), b.sub(b.W, b.c(1))}, {1, 1, -1, -2}};
  b.output(b.op("reverse", "Slice", r, {x}, {b.c(1), b.c(5), b.H, b.div_ceil(b.W, 2)}));
  check_against_reference(b);
}

TEST_CASE("add, sub, mul, div with broadcasting against inputs and constants", "[kernels][binary]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 5), y = b.input("y", 5);
  const TensorId per_channel = b.constant("scale", {5, 1, 1}, random_values(5, 3));
  const TensorId scalar = b.constant("offset", {}, {0.625f});
  const TensorId row = b.input_shaped("row", {b.c(1), b.c(1), b.c(1), b.W});
  const std::vector<ValueId> full = {b.c(1), b.c(5), b.H, b.W};
  b.output(b.op("add", "Add", BinaryAttrs{BinaryKind::Add}, {x, y}, full));
  b.output(b.op("mul", "Mul", BinaryAttrs{BinaryKind::Mul}, {x, per_channel}, full));
  b.output(b.op("sub", "Sub", BinaryAttrs{BinaryKind::Sub}, {scalar, x}, full));
  b.output(b.op("div", "Div", BinaryAttrs{BinaryKind::Div}, {row, y}, full));
  check_against_reference(b);
}

TEST_CASE("standalone activations", "[kernels][unary]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 3);
  for (Activation a : {Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid, Activation::Tanh, Activation::Clip})
    b.output(b.activation(std::string("act") + std::to_string(static_cast<int>(a)), x, act(a)));
  check_against_reference(b);
}

TEST_CASE("Identity aliases its input: no dispatch, same values", "[kernels][identity]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 3);
  const TensorId r = b.activation("relu", x, act(Activation::Relu));
  b.output(b.op("id", "Identity", IdentityAttrs{}, {r}, b.shape(r)));
  b.output(b.op("id_in", "Identity", IdentityAttrs{}, {x}, b.shape(x)));
  const plan::Plan plan = compiled_plan(b.g, plan::Precision::F32);
  CHECK(plan.dispatches.size() == 1);
  check_against_reference(b);
}

TEST_CASE("elementwise chains on one tensor fuse into one eltwise dispatch each", "[kernels][eltwise]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 9), y = b.input("y", 3), z = b.input("z", 2);
  const std::vector<ValueId> nine = {b.c(1), b.c(9), b.H, b.W}, three = {b.c(1), b.c(3), b.H, b.W};
  // The HDR transfer on the colour channels of a 9-channel input: x / (x * mask + 1) (a mask of
  // 0.5, not 1: the inputs lie in [-1, 1], and fp16 would round some to -1 and divide by 0).
  const TensorId mask = b.constant("mask", {1, 9, 1, 1}, {0.5f, 0.5f, 0.5f, 0, 0, 0, 0, 0, 0});
  const TensorId one = b.constant("one", {}, {1.0f});
  const TensorId m = b.op("mul", "Mul", BinaryAttrs{BinaryKind::Mul}, {x, mask}, nine);
  const TensorId d = b.op("add", "Add", BinaryAttrs{BinaryKind::Add}, {m, one}, nine);
  b.output(b.op("div", "Div", BinaryAttrs{BinaryKind::Div}, {x, d}, nine));
  // Its inverse on a 3-channel output: c / (1 - c), c = clip(y, 0, 0.75) (a result read twice).
  ActivationAttrs clip;
  clip.kind = Activation::Clip, clip.min = 0.0f, clip.max = 0.75f;
  const TensorId c = b.activation("clip", y, clip);
  const TensorId s = b.op("sub", "Sub", BinaryAttrs{BinaryKind::Sub}, {one, c}, three);
  b.output(b.op("div_out", "Div", BinaryAttrs{BinaryKind::Div}, {c, s}, three));
  // Two branches from y: tanh(sigmoid(y) - leaky(y)).
  const TensorId sg = b.activation("sigmoid", y, act(Activation::Sigmoid));
  const TensorId lk = b.activation("leaky", y, act(Activation::LeakyRelu));
  b.output(b.activation("tanh", b.op("sub2", "Sub", BinaryAttrs{BinaryKind::Sub}, {sg, lk}, three), act(Activation::Tanh)));
  // Not a chain: the Relu's result is also a graph output, so Relu and Mul stay two dispatches.
  const TensorId r = b.activation("relu", y, act(Activation::Relu));
  b.output(r);
  b.output(b.op("half", "Mul", BinaryAttrs{BinaryKind::Mul}, {r, b.constant("half", {}, {0.5f})}, three));
  // A per-channel chain on 2 channels: at 37 x 54 its element count is a multiple of 4 but its
  // planes are not, so a 4-element vector can straddle two channels.
  const std::vector<ValueId> two = {b.c(1), b.c(2), b.H, b.W};
  const TensorId zs = b.op("zscale", "Mul", BinaryAttrs{BinaryKind::Mul}, {z, b.constant("zs", {1, 2, 1, 1}, {0.5f, -2.0f})}, two);
  b.output(b.op("zshift", "Add", BinaryAttrs{BinaryKind::Add}, {zs, b.constant("zb", {1, 2, 1, 1}, {1.0f, 0.25f})}, two));
  const plan::Plan plan = compiled_plan(b.g, plan::Precision::F32);
  CHECK(plan.dispatches.size() == 6);
  int eltwise = 0;
  for (const auto& disp : plan.dispatches) eltwise += plan.pipelines[disp.pipeline].family == "eltwise";
  CHECK(eltwise == 4);
  check_against_reference(b);         // 37 x 53: element counts not multiples of 4 (scalar path)
  check_against_reference(b, kH, 52);  // the 4-element vector path
  check_against_reference(b, kH, 54);  // z: vectors across channel planes
}

TEST_CASE("an eltwise chain starts after a result that is also read outside it", "[kernels][eltwise]") {
  GraphBuilder b;
  const TensorId y = b.input("y", 3);
  const std::vector<ValueId> three = {b.c(1), b.c(3), b.H, b.W};
  // r = relu(y) is read by tanh (its own dispatch) and by the chain (r * 0.5) / (r + 2): the
  // chain's X is r, not y (before, relu was taken greedily and the whole chain declined).
  const TensorId r = b.activation("relu", y, act(Activation::Relu));
  b.output(b.activation("tanh", r, act(Activation::Tanh)));
  const TensorId m = b.op("mul", "Mul", BinaryAttrs{BinaryKind::Mul}, {r, b.constant("half", {}, {0.5f})}, three);
  const TensorId a = b.op("add", "Add", BinaryAttrs{BinaryKind::Add}, {r, b.constant("two", {}, {2.0f})}, three);
  b.output(b.op("div", "Div", BinaryAttrs{BinaryKind::Div}, {m, a}, three));
  const plan::Plan plan = compiled_plan(b.g, plan::Precision::F32);
  std::string names;
  for (const auto& disp : plan.dispatches) names += "[" + plan.pipelines[disp.pipeline].family + " " + disp.name + "]";
  INFO(names);
  CHECK(plan.dispatches.size() == 3);  // relu, tanh, and one eltwise for mul + add + div
  CHECK(names.find("[eltwise mul+add+div]") != std::string::npos);
  check_against_reference(b);
  check_against_reference(b, kH, 52);
}

TEST_CASE("eltwise chains: a diamond in a full chain, shared results in a row, a leaf that would be a second X", "[kernels][eltwise]") {
  GraphBuilder b;
  const TensorId x = b.input("x", 3), y = b.input("y", 3), z = b.input("z", 3);
  const std::vector<ValueId> three = {b.c(1), b.c(3), b.H, b.W};
  const TensorId half = b.constant("half", {}, {0.5f}), two = b.constant("two", {}, {2.0f});
  auto mul = [&](const std::string& n, TensorId a, TensorId c) { return b.op(n, "Mul", BinaryAttrs{BinaryKind::Mul}, {a, c}, three); };
  auto add = [&](const std::string& n, TensorId a, TensorId c) { return b.op(n, "Add", BinaryAttrs{BinaryKind::Add}, {a, c}, three); };
  auto div = [&](const std::string& n, TensorId a, TensorId c) { return b.op(n, "Div", BinaryAttrs{BinaryKind::Div}, {a, c}, three); };
  // Eight ops with a diamond at r (read by a_mul and a_add): the whole chain is one dispatch
  // (the matcher once took r's second reach, at eight ops, for a second X and declined).
  // (One op per statement: the order of a call's arguments is unspecified, and the names below
  // list the ops in graph order.)
  const TensorId a0 = mul("a_mul0", x, half);
  const TensorId a1 = add("a_add0", a0, two);
  const TensorId a2 = b.activation("a_leaky", a1, act(Activation::LeakyRelu));
  const TensorId a3 = b.activation("a_sigmoid", a2, act(Activation::Sigmoid));
  const TensorId r = b.activation("a_relu", a3, act(Activation::Relu));
  const TensorId rm = mul("a_mul", r, half);
  const TensorId ra = add("a_add", r, two);
  b.output(div("a_div", rm, ra));
  // Shared results in a row: relu(y) and sigmoid of it are each also read by a tanh, so the
  // chain (s * 0.5) / (s + 2) starts after both (two retries).
  const TensorId ry = b.activation("b_relu", y, act(Activation::Relu));
  b.output(b.activation("b_tanh1", ry, act(Activation::Tanh)));
  const TensorId s = b.activation("b_sigmoid", ry, act(Activation::Sigmoid));
  b.output(b.activation("b_tanh2", s, act(Activation::Tanh)));
  const TensorId sm = mul("b_mul", s, half);
  const TensorId sa = add("b_add", s, two);
  b.output(div("b_div", sm, sa));
  // relu(z) is also read outside, and sigmoid(z) is not: the chain ending at c_div would read
  // relu(z) and z, two X, so it is declined (c_sigmoid + c_add alone may still fuse).
  const TensorId rz = b.activation("c_relu", z, act(Activation::Relu));
  b.output(b.activation("c_tanh", rz, act(Activation::Tanh)));
  const TensorId zm = mul("c_mul", rz, half);
  const TensorId zs = b.activation("c_sigmoid", z, act(Activation::Sigmoid));
  const TensorId za = add("c_add", zs, two);
  b.output(div("c_div", zm, za));
  const plan::Plan plan = compiled_plan(b.g, plan::Precision::F32);
  std::string names;
  for (const auto& disp : plan.dispatches) names += "[" + plan.pipelines[disp.pipeline].family + " " + disp.name + "]";
  INFO(names);
  CHECK(names.find("[eltwise a_mul0+a_add0+a_leaky+a_sigmoid+a_relu+a_mul+a_add+a_div]") != std::string::npos);
  CHECK(names.find("[eltwise b_mul+b_add+b_div]") != std::string::npos);
  CHECK(names.find("c_div]") != std::string::npos);            // c_div is a dispatch of its own
  CHECK(names.find("[eltwise c_div") == std::string::npos);
  CHECK(names.find("+c_div]") == std::string::npos);
  check_against_reference(b);
  check_against_reference(b, kH, 52);
}

TEST_CASE("an elementwise op of constants only stays out of eltwise chains (the chain is declined, not an error)", "[kernels][eltwise]") {
  GraphBuilder b;
  // (First an input of H x W, so that the symbols bind and the extent is its: its own output.)
  b.output(b.activation("relu_u", b.input("u", 2), act(Activation::Relu)));
  const TensorId p = b.input_shaped("p", {b.c(1), b.c(3), b.c(1), b.c(1)});
  const TensorId k = b.constant("k", {1, 3, 1, 1}, {-0.5f, 0.25f, 2.0f});
  const std::vector<ValueId> shape = {b.c(1), b.c(3), b.c(1), b.c(1)};
  const TensorId rk = b.activation("relu_k", k, act(Activation::Relu));  // of X's shape, but no X in it
  const TensorId sum = b.op("add", "Add", BinaryAttrs{BinaryKind::Add}, {p, rk}, shape);
  b.output(b.op("mul", "Mul", BinaryAttrs{BinaryKind::Mul}, {sum, p}, shape));
  const plan::Plan plan = compiled_plan(b.g, plan::Precision::F32);
  std::string names;
  for (const auto& disp : plan.dispatches) names += "[" + plan.pipelines[disp.pipeline].family + " " + disp.name + "]";
  INFO(names);
  CHECK(names.find("eltwise") == std::string::npos);  // add + mul read relu_k's result: no single X
  check_against_reference(b);
}
