// Tests of the CPU reference ops: every op on small hand-built graphs, at odd sizes, against
// hand-computed values or an independent naive formula (bind_symbols and the executor's own
// checks: test_reference_executor.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "common/error.hpp"
#include "compiler/ir/graph.hpp"
#include "runtime/bind_shapes.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "runtime/reference/reference_ops.hpp"
#include "reference_test_graphs.hpp"

using namespace denox;
using namespace denox::compiler;
using Catch::Matchers::Contains;

using namespace denox::reftest;

namespace {

// One op whose inputs are all graph inputs with the given (constant) shapes. Attributes that
// hold ValueIds must come from the same builder `b`.
HostTensor run_single(GraphBuilder& b, OpAttrs attrs, const std::vector<HostTensor>& inputs,
                      const std::vector<int64_t>& out_shape, const std::string& onnx_op = "Op") {
  std::vector<TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) ids.push_back(b.input("x" + std::to_string(i), b.cs(inputs[i].shape)));
  b.g.outputs.push_back(b.op("the_op", onnx_op, std::move(attrs), ids, b.cs(out_shape)));
  auto out = reference::run_reference(b.g, inputs);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].shape == out_shape);
  return out[0];
}

HostTensor run_single(OpAttrs attrs, const std::vector<HostTensor>& inputs, const std::vector<int64_t>& out_shape,
                      const std::string& onnx_op = "Op") {
  GraphBuilder b;
  return run_single(b, std::move(attrs), inputs, out_shape, onnx_op);
}

// The ONNX Conv definition, one output element at a time.
std::vector<float> naive_conv(const HostTensor& x, const HostTensor& w, const std::vector<float>& bias,
                              std::array<int64_t, 2> s, std::array<int64_t, 2> d, std::array<int64_t, 2> pb,
                              const std::vector<int64_t>& out_shape) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t M = w.shape[0], KH = w.shape[2], KW = w.shape[3], OH = out_shape[2], OW = out_shape[3];
  std::vector<float> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double sum = bias.empty() ? 0.0 : bias[static_cast<size_t>(m)];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t iy = oy * s[0] - pb[0] + ky * d[0], ix = ox * s[1] - pb[1] + kx * d[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                sum += static_cast<double>(x.f32[static_cast<size_t>(((n * C + c) * H + iy) * W + ix)]) *
                       w.f32[static_cast<size_t>(((m * C + c) * KH + ky) * KW + kx)];
              }
          out.push_back(static_cast<float>(sum));
        }
  return out;
}

void check_conv(const std::vector<int64_t>& x_shape, int64_t M, std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                std::array<int64_t, 2> d, std::array<int64_t, 2> pb, std::array<int64_t, 2> pe, bool with_bias) {
  GraphBuilder b;
  HostTensor x = random_tensor(x_shape, 1);
  HostTensor w = random_tensor({M, x_shape[1], k[0], k[1]}, 2);
  std::vector<float> bias = with_bias ? random_values(static_cast<size_t>(M), 3) : std::vector<float>{};
  TensorId xi = b.input("x", b.cs(x_shape));
  std::vector<TensorId> ins{xi, b.constant("w", w.shape, w.f32)};
  if (with_bias) ins.push_back(b.constant("b", {M}, bias));
  std::vector<int64_t> out_shape{x_shape[0], M, (x_shape[2] + pb[0] + pe[0] - d[0] * (k[0] - 1) - 1) / s[0] + 1,
                                 (x_shape[3] + pb[1] + pe[1] - d[1] * (k[1] - 1) - 1) / s[1] + 1};
  b.g.outputs.push_back(b.op("conv", "Conv", conv_attrs(b, k, s, d, pb, pe, with_bias), ins, b.cs(out_shape)));
  auto out = reference::run_reference(b.g, {x});
  REQUIRE(out[0].shape == out_shape);
  require_close(out[0].f32, naive_conv(x, w, bias, s, d, pb, out_shape));
}

HostTensor run_pool(PoolKind kind, const HostTensor& x, std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                    std::array<int64_t, 2> d, std::array<int64_t, 2> pb, std::array<int64_t, 2> pe,
                    const std::vector<int64_t>& out_shape, bool count_include_pad = false) {
  GraphBuilder b;
  TensorId xi = b.input("x", b.cs(x.shape));
  b.g.outputs.push_back(b.op("pool", kind == PoolKind::Max ? "MaxPool" : "AveragePool",
                             pool_attrs(b, kind, k, s, d, pb, pe, count_include_pad), {xi}, b.cs(out_shape)));
  return reference::run_reference(b.g, {x}).at(0);
}

}  // namespace

// --- Conv -------------------------------------------------------------------------------------

TEST_CASE("conv: 2x2 all-ones kernel on 1..9, hand-computed", "[reference][conv]") {
  GraphBuilder b;
  TensorId x = b.input("x", b.cs({1, 1, 3, 3}));
  TensorId w = b.constant("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  TensorId bias = b.constant("b", {1}, {0.5f});
  b.g.outputs.push_back(
      b.op("conv", "Conv", conv_attrs(b, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true), {x, w, bias}, b.cs({1, 1, 2, 2})));
  auto out = reference::run_reference(b.g, {host({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  require_close(out[0].f32, {12.5f, 16.5f, 24.5f, 28.5f});
}

TEST_CASE("conv: stride 2, dilation 2, asymmetric pads vs the naive formula", "[reference][conv]") {
  check_conv({2, 3, 11, 9}, 4, {3, 2}, {2, 2}, {2, 2}, {1, 2}, {2, 0}, true);
  check_conv({1, 2, 7, 10}, 3, {2, 3}, {1, 3}, {2, 1}, {0, 1}, {3, 2}, false);
}

TEST_CASE("conv: 3x3 pad 1 with bias over several threads vs the naive formula", "[reference][conv]") {
  check_conv({1, 5, 13, 17}, 7, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true);
  check_conv({3, 4, 9, 5}, 2, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true);
}

TEST_CASE("conv: wrong channel count names the op", "[reference][conv]") {
  GraphBuilder b;
  TensorId x = b.input("x", b.cs({1, 3, 5, 5}));
  TensorId w = b.constant("w", {2, 4, 3, 3}, std::vector<float>(72, 1.0f));
  b.g.outputs.push_back(b.op("enc_conv0", "Conv", conv_attrs(b, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false), {x, w},
                             b.cs({1, 2, 5, 5})));
  REQUIRE_THROWS_WITH(reference::run_reference(b.g, {random_tensor({1, 3, 5, 5}, 4)}),
                      Contains("enc_conv0") && Contains("Conv") && Contains("3 channels"));
}

// --- pooling ----------------------------------------------------------------------------------

TEST_CASE("maxpool: padding never wins over negative inputs", "[reference][pool]") {
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -static_cast<float>(i + 1);  // row r, col c: -(4r + c + 1)
  auto out = run_pool(PoolKind::Max, host({1, 1, 3, 4}, x), {2, 2}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1, 2, 3});
  require_close(out.f32, {-1, -2, -4, -5, -6, -8});
}

TEST_CASE("maxpool: dilation, strides, pads and a ceil-mode extent vs the naive formula", "[reference][pool]") {
  HostTensor x = random_tensor({2, 3, 10, 11}, 5);
  // H: (10 + 2 - 2 - 1) / 2 = 4.5 -> floor 5, ceil 6 outputs; W: floor 4 (a 5th would start in the padding).
  const std::vector<int64_t> out_shape{2, 3, 6, 4};
  auto out = run_pool(PoolKind::Max, x, {3, 2}, {2, 3}, {1, 2}, {1, 0}, {1, 2}, out_shape);
  std::vector<float> expected;
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t oy = 0; oy < 6; ++oy)
      for (int64_t ox = 0; ox < 4; ++ox) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 2; ++kx) {
            int64_t iy = oy * 2 - 1 + ky, ix = ox * 3 + kx * 2;
            if (iy >= 0 && iy < 10 && ix >= 0 && ix < 11) m = std::max(m, x.f32[static_cast<size_t>((p * 10 + iy) * 11 + ix)]);
          }
        expected.push_back(m);
      }
  require_close(out.f32, expected, 0.0f);
  // A window that would start in the right padding covers no input: an error, not garbage.
  REQUIRE_THROWS_WITH(run_pool(PoolKind::Max, x, {3, 2}, {2, 3}, {1, 2}, {1, 0}, {1, 2}, {2, 3, 6, 5}),
                      Contains("covers only padding"));
  REQUIRE_THROWS_WITH(run_pool(PoolKind::Max, x, {3, 2}, {2, 3}, {1, 2}, {1, 0}, {1, 2}, {2, 3, 7, 4}),
                      Contains("MaxPool") && Contains("output extent 7"));
}

TEST_CASE("avgpool: count_include_pad both ways, hand-computed", "[reference][pool]") {
  HostTensor x = host({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto without = run_pool(PoolKind::Average, x, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1, 4, 4}, false);
  require_close(without.f32, {1, 1.5f, 2.5f, 3, 2.5f, 3, 4, 4.5f, 5.5f, 6, 7, 7.5f, 7, 7.5f, 8.5f, 9});
  auto with = run_pool(PoolKind::Average, x, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1, 4, 4}, true);
  require_close(with.f32, {0.25f, 0.75f, 1.25f, 0.75f, 1.25f, 3, 4, 2.25f, 2.75f, 6, 7, 3.75f, 1.75f, 3.75f, 4.25f,
                           2.25f});
}

TEST_CASE("avgpool: a ceil-mode window past the padded extent divides by the cells inside it", "[reference][pool]") {
  HostTensor x = host({1, 1, 1, 5}, {1, 2, 3, 4, 10});
  // No padding: the 3rd window covers column 4 only, with or without count_include_pad.
  auto a = run_pool(PoolKind::Average, x, {1, 2}, {1, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1, 1, 3}, true);
  require_close(a.f32, {1.5f, 3.5f, 10});
  // One column of end padding: counted only with count_include_pad (PyTorch and ONNX agree).
  auto b = run_pool(PoolKind::Average, x, {1, 2}, {1, 2}, {1, 1}, {0, 0}, {0, 1}, {1, 1, 1, 3}, true);
  require_close(b.f32, {1.5f, 3.5f, 5});
  auto c = run_pool(PoolKind::Average, x, {1, 2}, {1, 2}, {1, 1}, {0, 0}, {0, 1}, {1, 1, 1, 3}, false);
  require_close(c.f32, {1.5f, 3.5f, 10});
}

// --- activations ------------------------------------------------------------------------------

TEST_CASE("activations", "[reference][activation]") {
  const std::vector<float> in{-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
  HostTensor x = host({1, 5}, in);
  auto run = [&](Activation kind, float alpha = 0.01f, float lo = -3.4e38f, float hi = 3.4e38f) {
    ActivationAttrs a;
    a.kind = kind;
    a.alpha = alpha;
    a.min = lo;
    a.max = hi;
    return run_single(a, {x}, {1, 5}).f32;
  };
  require_close(run(Activation::Relu), {0, 0, 0, 0.5f, 3});
  require_close(run(Activation::LeakyRelu, 0.1f), {-0.2f, -0.05f, 0, 0.5f, 3});
  require_close(run(Activation::Clip, 0.01f, -1.0f, 1.0f), {-1, -0.5f, 0, 0.5f, 1});
  std::vector<float> sig, th;
  for (float v : in) {
    sig.push_back(1.0f / (1.0f + std::exp(-v)));
    th.push_back(std::tanh(v));
  }
  require_close(run(Activation::Sigmoid), sig, 1e-6f);
  require_close(run(Activation::Tanh), th, 1e-6f);

  ActivationAttrs relu;
  auto nan = run_single(relu, {host({1}, {std::numeric_limits<float>::quiet_NaN()})}, {1});
  REQUIRE(std::isnan(nan.f32[0]));
}

// --- binary with broadcasting -----------------------------------------------------------------

TEST_CASE("binary: numpy broadcasting", "[reference][binary]") {
  SECTION("(3,4,5) + (5)") {
    HostTensor a = random_tensor({3, 4, 5}, 6), b = random_tensor({5}, 7);
    auto out = run_single(BinaryAttrs{BinaryKind::Add}, {a, b}, {3, 4, 5});
    for (size_t i = 0; i < 60; ++i) REQUIRE(out.f32[i] == a.f32[i] + b.f32[i % 5]);
  }
  SECTION("per-channel (2,3,4,5) - (1,3,1,1)") {
    HostTensor a = random_tensor({2, 3, 4, 5}, 8), b = random_tensor({1, 3, 1, 1}, 9);
    auto out = run_single(BinaryAttrs{BinaryKind::Sub}, {a, b}, {2, 3, 4, 5});
    for (size_t i = 0; i < 120; ++i) REQUIRE(out.f32[i] == a.f32[i] - b.f32[(i / 20) % 3]);
  }
  SECTION("both sides broadcast: (3,1,5) * (4,1) -> (3,4,5)") {
    HostTensor a = random_tensor({3, 1, 5}, 10), b = random_tensor({4, 1}, 11);
    auto out = run_single(BinaryAttrs{BinaryKind::Mul}, {a, b}, {3, 4, 5});
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j)
        for (size_t k = 0; k < 5; ++k) REQUIRE(out.f32[(i * 4 + j) * 5 + k] == a.f32[i * 5 + k] * b.f32[j]);
  }
  SECTION("scalar divisor") {
    auto out = run_single(BinaryAttrs{BinaryKind::Div}, {host({2, 2}, {1, 2, 3, 4}), host({}, {4})}, {2, 2});
    require_close(out.f32, {0.25f, 0.5f, 0.75f, 1});
  }
  SECTION("shapes that do not broadcast") {
    REQUIRE_THROWS_WITH(run_single(BinaryAttrs{}, {random_tensor({3, 4}, 1), random_tensor({3}, 2)}, {3, 4}, "Add"),
                        Contains("the_op") && Contains("do not broadcast"));
  }
}

// --- nearest upsample -------------------------------------------------------------------------

namespace {

struct NearestCase {
  CoordinateMode coordinate_mode;
  NearestMode nearest_mode;
  int64_t scale;
  std::vector<int64_t> from2, from3;  // source index per output position, input extent 2 and 3
};

// Computed from the ONNX reference implementation (onnx/reference/ops/op_resize.py: neighbour
// selection, _nearest_coeffs, edge padding) in exact rational arithmetic.
const std::vector<NearestCase>& nearest_cases() {
  using C = CoordinateMode;
  using N = NearestMode;
  static const std::vector<NearestCase> cases = {
      {C::HalfPixel, N::RoundPreferFloor, 2, {0, 0, 1, 1}, {0, 0, 1, 1, 2, 2}},
      {C::HalfPixel, N::RoundPreferFloor, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}},
      {C::HalfPixel, N::Floor, 2, {0, 0, 0, 1}, {0, 0, 0, 1, 1, 2}},
      {C::HalfPixel, N::Floor, 3, {0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 1, 1, 1, 2, 2}},
      {C::HalfPixel, N::Ceil, 2, {0, 1, 1, 1}, {0, 1, 1, 2, 2, 2}},
      {C::HalfPixel, N::Ceil, 3, {0, 0, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 2, 2, 2, 2}},
      {C::PytorchHalfPixel, N::RoundPreferCeil, 2, {0, 0, 1, 1}, {0, 0, 1, 1, 2, 2}},
      {C::PytorchHalfPixel, N::RoundPreferCeil, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}},
      {C::PytorchHalfPixel, N::Floor, 3, {0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 1, 1, 1, 2, 2}},
      {C::Asymmetric, N::Floor, 2, {0, 0, 1, 1}, {0, 0, 1, 1, 2, 2}},
      {C::Asymmetric, N::Floor, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}},
      {C::Asymmetric, N::RoundPreferFloor, 2, {0, 0, 1, 1}, {0, 0, 1, 1, 2, 2}},
      {C::Asymmetric, N::RoundPreferFloor, 3, {0, 0, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 2, 2, 2, 2}},
      {C::Asymmetric, N::RoundPreferCeil, 2, {0, 1, 1, 1}, {0, 1, 1, 2, 2, 2}},
      {C::Asymmetric, N::Ceil, 3, {0, 1, 1, 1, 1, 1}, {0, 1, 1, 1, 2, 2, 2, 2, 2}},
      {C::AlignCorners, N::RoundPreferFloor, 2, {0, 0, 1, 1}, {0, 0, 1, 1, 2, 2}},
      {C::AlignCorners, N::RoundPreferFloor, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 1, 2, 2}},
      {C::AlignCorners, N::RoundPreferCeil, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 1, 1, 2, 2, 2}},
      {C::AlignCorners, N::Floor, 3, {0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 1, 1, 1, 1, 2}},
      {C::TfHalfPixelForNearest, N::RoundPreferFloor, 2, {0, 1, 1, 1}, {0, 1, 1, 2, 2, 2}},
      {C::TfHalfPixelForNearest, N::RoundPreferFloor, 3, {0, 0, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 2, 2, 2, 2}},
      {C::TfHalfPixelForNearest, N::RoundPreferCeil, 3, {0, 1, 1, 1, 1, 1}, {0, 1, 1, 1, 2, 2, 2, 2, 2}},
      {C::TfHalfPixelForNearest, N::Floor, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}},
      {C::TfHalfPixelForNearest, N::Ceil, 2, {1, 1, 1, 1}, {1, 1, 2, 2, 2, 2}},
      {C::HalfPixelSymmetric, N::RoundPreferFloor, 2, {0, 0, 1, 1}, {0, 0, 1, 1, 2, 2}},
      {C::HalfPixelSymmetric, N::RoundPreferFloor, 3, {0, 0, 0, 1, 1, 1}, {0, 0, 0, 1, 1, 1, 2, 2, 2}},
      {C::HalfPixelSymmetric, N::Floor, 2, {0, 0, 0, 1}, {0, 0, 0, 1, 1, 2}},
  };
  return cases;
}

}  // namespace

TEST_CASE("upsample: every coordinate mode at scales 2 and 3 matches the ONNX reference", "[reference][upsample]") {
  for (const auto& tc : nearest_cases()) {
    INFO("coordinate mode " << int(tc.coordinate_mode) << ", nearest mode " << int(tc.nearest_mode) << ", scale "
                            << tc.scale);
    // Input 2x3 per plane, value 10 * y + x: each output value says where it was read from.
    UpsampleAttrs attrs;
    attrs.scale = {tc.scale, tc.scale};
    attrs.coordinate_mode = tc.coordinate_mode;
    attrs.nearest_mode = tc.nearest_mode;
    HostTensor x = host({1, 2, 2, 3}, {0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112});
    const int64_t OH = 2 * tc.scale, OW = 3 * tc.scale;
    auto out = run_single(attrs, {x}, {1, 2, OH, OW}, "Resize");
    std::vector<float> expected;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          expected.push_back(static_cast<float>(100 * c + 10 * tc.from2[static_cast<size_t>(oy)] +
                                                tc.from3[static_cast<size_t>(ox)]));
    require_close(out.f32, expected, 0.0f);
  }
}

TEST_CASE("upsample: is_floor_division agrees with the reference source indices", "[reference][upsample]") {
  const CoordinateMode modes[] = {CoordinateMode::HalfPixel, CoordinateMode::PytorchHalfPixel,
                                  CoordinateMode::Asymmetric, CoordinateMode::AlignCorners,
                                  CoordinateMode::TfHalfPixelForNearest, CoordinateMode::HalfPixelSymmetric};
  const NearestMode rounding[] = {NearestMode::RoundPreferFloor, NearestMode::RoundPreferCeil, NearestMode::Floor,
                                  NearestMode::Ceil};
  for (auto cm : modes)
    for (auto nm : rounding)
      for (int64_t scale : {2, 3, 4}) {
        UpsampleAttrs a;
        a.scale = {scale, scale};
        a.coordinate_mode = cm;
        a.nearest_mode = nm;
        if (!a.is_floor_division()) continue;
        for (int64_t in = 1; in <= 40; ++in) {
          INFO("mode " << int(cm) << "/" << int(nm) << " scale " << scale << " extent " << in);
          auto src = reference::nearest_source_indices(in, scale, cm, nm);
          for (int64_t x = 0; x < in * scale; ++x) REQUIRE(src[static_cast<size_t>(x)] == x / scale);
        }
      }
}

// --- concat, pad, slice, identity, shape values -----------------------------------------------

TEST_CASE("concat: channels of rank 4 and the last axis of rank 3", "[reference][concat]") {
  HostTensor a = random_tensor({2, 2, 3, 3}, 12), b = random_tensor({2, 3, 3, 3}, 13);
  auto out = run_single(ConcatAttrs{1}, {a, b}, {2, 5, 3, 3});
  for (size_t n = 0; n < 2; ++n)
    for (size_t c = 0; c < 5; ++c)
      for (size_t i = 0; i < 9; ++i) {
        float expected = c < 2 ? a.f32[(n * 2 + c) * 9 + i] : b.f32[(n * 3 + c - 2) * 9 + i];
        REQUIRE(out.f32[(n * 5 + c) * 9 + i] == expected);
      }
  auto last = run_single(ConcatAttrs{-1}, {host({2, 1, 2}, {1, 2, 3, 4}), host({2, 1, 1}, {5, 6})}, {2, 1, 3});
  require_close(last.f32, {1, 2, 5, 3, 4, 6}, 0.0f);
  REQUIRE_THROWS_WITH(run_single(ConcatAttrs{1}, {a, random_tensor({2, 3, 3, 4}, 1)}, {2, 5, 3, 3}),
                      Contains("does not fit"));
}

TEST_CASE("pad: constant value with negative (cropping) pads", "[reference][pad]") {
  GraphBuilder b;
  const std::vector<int64_t> begin{0, 0, -1, 2}, end{0, 1, 1, -3}, in_shape{1, 2, 4, 5}, out_shape{1, 3, 4, 4};
  PadAttrs attrs;
  attrs.begin = b.cs(begin);
  attrs.end = b.cs(end);
  attrs.value = 7.0f;
  HostTensor x = random_tensor(in_shape, 14);
  auto out = run_single(b, attrs, {x}, out_shape, "Pad");
  size_t i = 0;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t xx = 0; xx < 4; ++xx, ++i) {
        int64_t sc = c - begin[1], sy = y - begin[2], sx = xx - begin[3];
        bool inside = sc < 2 && sy >= 0 && sy < 4 && sx >= 0 && sx < 5;
        INFO("c " << c << " y " << y << " x " << xx);
        REQUIRE(out.f32[i] == (inside ? x.f32[static_cast<size_t>((sc * 4 + sy) * 5 + sx)] : 7.0f));
      }
}

TEST_CASE("slice: step -1 reverses, step -2 skips", "[reference][slice]") {
  GraphBuilder b;
  SliceAttrs attrs;
  attrs.start = b.cs({0, 0, 2, 3});
  attrs.step = {1, 1, -2, -1};
  HostTensor x = random_tensor({1, 2, 3, 4}, 15);
  auto out = run_single(b, attrs, {x}, {1, 2, 2, 4}, "Slice");
  size_t i = 0;
  for (size_t c = 0; c < 2; ++c)
    for (size_t y : {2, 0})
      for (size_t xx : {3, 2, 1, 0}) REQUIRE(out.f32[i++] == x.f32[(c * 3 + y) * 4 + xx]);
  // Three rows from row 2 with step -2 would read row -2.
  GraphBuilder b2;
  attrs.start = b2.cs({0, 0, 2, 3});
  REQUIRE_THROWS_WITH(run_single(b2, attrs, {x}, {1, 2, 3, 4}, "Slice"), Contains("read outside"));
}

TEST_CASE("identity and shape values with symbolic extents", "[reference][shape]") {
  GraphBuilder b;
  ValueId H = b.g.program.symbol("H"), W = b.g.program.symbol("W");
  TensorId x = b.input("color", {b.c(1), b.c(3), H, W});
  ValueId padded_h = b.g.program.mul(b.g.program.binary(IntOp::DivCeil, H, b.c(16)), b.c(16));
  b.g.outputs.push_back(b.op("copy", "Identity", IdentityAttrs{}, {x}, {b.c(1), b.c(3), H, W}));
  b.g.outputs.push_back(
      b.op("shape", "Shape", ShapeValuesAttrs{{b.c(1), H, W, padded_h}}, {}, {b.c(4)}, DType::I64));
  b.g.outputs.push_back(x);  // a graph input is also an output
  HostTensor in = random_tensor({1, 3, 5, 7}, 16);
  auto out = reference::run_reference(b.g, {in});
  REQUIRE(out.size() == 3);
  REQUIRE(out[0].f32 == in.f32);
  REQUIRE(out[1].is_int64);
  REQUIRE(out[1].i64 == std::vector<int64_t>{1, 5, 7, 16});
  REQUIRE(out[2].f32 == in.f32);
}

// --- bind_symbols -----------------------------------------------------------------------------
