// Tests of the CPU reference executor itself: bind_symbols, the executor's checks of its inputs,
// constants and allocations, and a whole U-Net-like graph (the ops one by one: test_reference_ops.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "common/error.hpp"
#include "compiler/ir/graph.hpp"
#include "runtime/bind_shapes.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "runtime/reference/reference_ops.hpp"

using namespace denox;
using namespace denox::compiler;
using Catch::Matchers::Contains;

#include "reference_test_graphs.hpp"

using namespace denox::reftest;

TEST_CASE("bind_symbols: binds, derives and rejects", "[reference][bind]") {
  GraphBuilder b;
  ValueId H = b.g.program.symbol("H"), W = b.g.program.symbol("W");
  b.input("color", {b.c(1), b.c(3), H, W});
  b.input("albedo", {b.c(1), b.c(3), H, b.g.program.add(W, b.c(1))});  // a derived extent

  auto values = runtime::bind_symbols(b.g, {{1, 3, 8, 6}, {1, 3, 8, 7}});
  REQUIRE(values[H] == 8);
  REQUIRE(values[W] == 6);

  SECTION("wrong channel count") {
    auto call = [&] { runtime::bind_symbols(b.g, {{1, 9, 8, 6}, {1, 3, 8, 7}}); };
    REQUIRE_THROWS_WITH(call(), Contains("input 'color': axis 1 expects 3, got 9"));
  }
  SECTION("wrong derived extent") {
    REQUIRE_THROWS_WITH(runtime::bind_symbols(b.g, {{1, 3, 8, 6}, {1, 3, 8, 6}}),
                        Contains("'albedo'") && Contains("expects 7"));
  }
  SECTION("disagreeing symbol names both inputs") {
    try {
      runtime::bind_symbols(b.g, {{1, 3, 8, 6}, {1, 3, 16, 7}});
      FAIL("no error");
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::ShapeMismatch);
      REQUIRE_THAT(e.what(), Contains("'H'") && Contains("color") && Contains("albedo"));
    }
  }
  SECTION("unbound symbol") {
    b.g.program.symbol("S");
    try {
      runtime::bind_symbols(b.g, {{1, 3, 8, 6}, {1, 3, 8, 7}});
      FAIL("no error");
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::InvalidArgument);
      REQUIRE_THAT(e.what(), Contains("symbol 'S'"));
    }
  }
  SECTION("rank, count and non-positive extents") {
    REQUIRE_THROWS_WITH(runtime::bind_symbols(b.g, {{1, 3, 8}, {1, 3, 8, 7}}), Contains("rank"));
    REQUIRE_THROWS_WITH(runtime::bind_symbols(b.g, {{1, 3, 8, 6}}), Contains("2 input(s)"));
    REQUIRE_THROWS_WITH(runtime::bind_symbols(b.g, {{1, 3, 0, 6}, {1, 3, 0, 7}}), Contains("must be positive"));
  }
  SECTION("a failed shape-program assertion") {
    b.g.program.require(b.g.program.binary(IntOp::Eq, b.g.program.binary(IntOp::ModFloor, H, b.c(2)), b.c(0)),
                        "node 'x': H must be even");
    REQUIRE_THROWS_WITH(runtime::bind_symbols(b.g, {{1, 3, 7, 6}, {1, 3, 7, 7}}), Contains("H must be even"));
  }
}

// --- the executor -----------------------------------------------------------------------------

TEST_CASE("executor: checks its inputs, constants and allocations", "[reference][executor]") {
  GraphBuilder b;
  ValueId H = b.g.program.symbol("H"), W = b.g.program.symbol("W");
  TensorId x = b.input("color", {b.c(1), b.c(1), H, W});
  SECTION("input count, dtype and data size") {
    b.g.outputs.push_back(x);
    REQUIRE_THROWS_WITH(reference::run_reference(b.g, {}), Contains("1 input(s), got 0"));
    HostTensor i64;
    i64.shape = {1, 1, 2, 2};
    i64.is_int64 = true;
    i64.i64 = {1, 2, 3, 4};
    REQUIRE_THROWS_WITH(reference::run_reference(b.g, {i64}), Contains("must be float32"));
    REQUIRE_THROWS_WITH(reference::run_reference(b.g, {host({1, 1, 2, 2}, {1, 2, 3})}), Contains("holds 3 values"));
  }
  SECTION("a constant whose data does not fit its shape") {
    TensorId bias = b.constant("bias", {1, 1, 2, 2}, {1, 2, 3});
    b.g.outputs.push_back(b.op("add0", "Add", BinaryAttrs{}, {x, bias}, {b.c(1), b.c(1), H, W}));
    REQUIRE_THROWS_WITH(reference::run_reference(b.g, {random_tensor({1, 1, 2, 2}, 1)}),
                        Contains("add0") && Contains("constant 'bias'"));
  }
  SECTION("a constant graph output") {
    b.g.outputs.push_back(b.constant("k", {2}, {4, 5}));
    auto out = reference::run_reference(b.g, {random_tensor({1, 1, 2, 2}, 1)});
    REQUIRE(out[0].f32 == std::vector<float>{4, 5});
  }
  SECTION("a huge tensor is refused before it is allocated") {
    PadAttrs pad;
    pad.begin = b.cs({0, 0, 0, 0});
    pad.end = {b.c(0), b.c(0), b.c(100000), b.c(100000)};
    auto big = b.g.program.add(H, b.c(100000));
    b.g.outputs.push_back(b.op("pad0", "Pad", pad, {x}, {b.c(1), b.c(1), big, b.g.program.add(W, b.c(100000))}));
    REQUIRE_THROWS_WITH(reference::run_reference(b.g, {random_tensor({1, 1, 2, 2}, 1)}),
                        Contains("pad0") && Contains("refusing"));
  }
  SECTION("a tensor read before any op writes it") {
    TensorId orphan = b.g.add_tensor({"orphan", DType::F32, b.cs({1}), {}, {}});
    b.g.outputs.push_back(b.op("relu0", "Relu", ActivationAttrs{}, {orphan}, b.cs({1})));
    REQUIRE_THROWS_WITH(reference::run_reference(b.g, {random_tensor({1, 1, 2, 2}, 1)}),
                        Contains("relu0") && Contains("before any op produces it"));
  }
}

TEST_CASE("executor: pad to a multiple of 16, conv, pool, upsample, skip concat, crop", "[reference][executor]") {
  // The OIDN pattern in miniature, with every extent in the shape program.
  GraphBuilder b;
  auto& p = b.g.program;
  ValueId H = p.symbol("H"), W = p.symbol("W");
  auto round16 = [&](ValueId v) { return p.mul(p.binary(IntOp::DivCeil, v, b.c(16)), b.c(16)); };
  ValueId PH = round16(H), PW = round16(W);
  TensorId x = b.input("color", {b.c(1), b.c(3), H, W});
  PadAttrs pad;
  pad.begin = b.cs({0, 0, 0, 0});
  pad.end = {b.c(0), b.c(0), p.sub(PH, H), p.sub(PW, W)};
  TensorId padded = b.op("pad", "Pad", pad, {x}, {b.c(1), b.c(3), PH, PW});
  HostTensor w1 = random_tensor({4, 3, 3, 3}, 20), w2 = random_tensor({3, 7, 3, 3}, 21);
  TensorId c1 = b.op("conv1", "Conv", conv_attrs(b, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false),
                     {padded, b.constant("w1", w1.shape, w1.f32)}, {b.c(1), b.c(4), PH, PW});
  TensorId r1 = b.op("relu1", "Relu", ActivationAttrs{}, {c1}, {b.c(1), b.c(4), PH, PW});
  ValueId HH = p.binary(IntOp::DivFloor, PH, b.c(2)), HW = p.binary(IntOp::DivFloor, PW, b.c(2));
  TensorId pool = b.op("pool1", "MaxPool", pool_attrs(b, PoolKind::Max, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}), {r1},
                       {b.c(1), b.c(4), HH, HW});
  TensorId up = b.op("up1", "Resize", UpsampleAttrs{}, {pool}, {b.c(1), b.c(4), PH, PW});
  TensorId cat = b.op("cat1", "Concat", ConcatAttrs{1}, {up, padded}, {b.c(1), b.c(7), PH, PW});
  TensorId c2 = b.op("conv2", "Conv", conv_attrs(b, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false),
                     {cat, b.constant("w2", w2.shape, w2.f32)}, {b.c(1), b.c(3), PH, PW});
  SliceAttrs crop;
  crop.start = b.cs({0, 0, 0, 0});
  crop.step = {1, 1, 1, 1};
  b.g.outputs.push_back(b.op("crop", "Slice", crop, {c2}, {b.c(1), b.c(3), H, W}));

  for (auto [h, w] : {std::pair<int64_t, int64_t>{13, 21}, {16, 16}, {17, 5}}) {
    HostTensor in = random_tensor({1, 3, h, w}, static_cast<unsigned>(h * 100 + w));
    auto out = reference::run_reference(b.g, {in});
    REQUIRE(out[0].shape == std::vector<int64_t>{1, 3, h, w});

    // The same chain through the ops directly, with the extents worked out by hand.
    using namespace reference;
    const int64_t ph = (h + 15) / 16 * 16, pw = (w + 15) / 16 * 16;
    HostTensor t0 = pad_constant(TensorView::of(in), {0, 0, 0, 0}, {0, 0, ph - h, pw - w}, 0.0f, {1, 3, ph, pw});
    Window2d k3{{3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
    HostTensor t1 = conv2d(TensorView::of(t0), TensorView::of(w1), nullptr, k3, {1, 4, ph, pw});
    HostTensor t2 = activation(TensorView::of(t1), ActivationAttrs{});
    HostTensor t3 = pool2d(TensorView::of(t2), PoolKind::Max, {{2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}, false,
                           {1, 4, ph / 2, pw / 2});
    HostTensor t4 = upsample_nearest(TensorView::of(t3), UpsampleAttrs{}, {1, 4, ph, pw});
    HostTensor t5 = concat({TensorView::of(t4), TensorView::of(t0)}, 1, {1, 7, ph, pw});
    HostTensor t6 = conv2d(TensorView::of(t5), TensorView::of(w2), nullptr, k3, {1, 3, ph, pw});
    HostTensor t7 = slice(TensorView::of(t6), {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 3, h, w});
    REQUIRE(out[0].f32 == t7.f32);
  }
}
