// The shape program: folding, hash-consing, ONNX integer semantics, assertions, compaction.
#include <catch2/catch.hpp>

#include <random>

#include "common/error.hpp"
#include "compiler/shape_program/shape_program.hpp"

using namespace denox;
using namespace denox::compiler;

TEST_CASE("shape program folds constants and shares equal expressions") {
  ShapeProgram p;
  ValueId h = p.symbol("H");
  CHECK(p.symbol("H") == h);
  CHECK(p.add(p.constant(2), p.constant(3)) == p.constant(5));
  CHECK(p.add(h, p.constant(0)) == h);
  CHECK(p.mul(h, p.constant(1)) == h);
  CHECK(p.add(h, p.constant(15)) == p.add(p.constant(15), h));
  // Conv chains collapse: ((H + 2) - 3) + 1 == H
  CHECK(p.add(p.sub(p.add(h, p.constant(2)), p.constant(3)), p.constant(1)) == h);
  CHECK(p.binary(IntOp::DivFloor, p.mul(h, p.constant(4)), p.constant(4)) == h);
  CHECK(p.binary(IntOp::ModFloor, p.mul(h, p.constant(16)), p.constant(16)) == p.constant(0));
}

TEST_CASE("shape program integer semantics match ONNX") {
  CHECK(div_floor(-7, 2) == -4);
  CHECK(div_ceil(-7, 2) == -3);
  CHECK(div_ceil(7, 2) == 4);
  CHECK(mod_floor(-7, 16) == 9);
  CHECK(mod_floor(7, -16) == -9);
  ShapeProgram p;
  // Symbols are positive extents (the folding relies on it), so a negative value is 0 - x.
  ValueId x = p.sub(p.constant(0), p.symbol("x"));
  ValueId t = p.binary(IntOp::DivTrunc, x, p.constant(2));
  ValueId m = p.binary(IntOp::ModTrunc, x, p.constant(16));
  auto v = p.evaluate({7});
  CHECK(v[t] == -3);
  CHECK(v[m] == -7);
}

TEST_CASE("shape program evaluates the OIDN pad-to-16 expression at random sizes") {
  ShapeProgram p;
  ValueId h = p.symbol("H");
  ValueId sixteen = p.constant(16);
  ValueId pad = p.binary(IntOp::ModFloor, p.sub(sixteen, p.binary(IntOp::ModFloor, h, sixteen)), sixteen);
  ValueId padded = p.add(h, pad);
  CHECK(p.known_nonnegative(pad));
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    int64_t hv = 1 + static_cast<int64_t>(rng() % 5000);
    auto v = p.evaluate({hv});
    CHECK(v[padded] % 16 == 0);
    CHECK(v[padded] >= hv);
    CHECK(v[padded] - hv < 16);
  }
}

TEST_CASE("shape program folds sign tests of extents and the floor division built from them") {
  // The dynamo exporter's floor division from truncating Div:
  //   q = n / c;  where((q * c != n) and ((n < 0) xor (c < 0)), q - 1, q)
  // n is an extent, so the sign test is false and the whole expression is n floordiv c.
  ShapeProgram p;
  ValueId h = p.symbol("H"), c = p.constant(16);
  ValueId n = p.add(h, p.constant(15));
  ValueId q = p.binary(IntOp::DivTrunc, n, c);
  CHECK(q == p.binary(IntOp::DivFloor, n, c));
  ValueId negative = p.binary(IntOp::Lt, n, p.constant(0));
  CHECK(p.is_constant(negative, 0));
  CHECK(p.is_constant(p.binary(IntOp::Lt, p.constant(-1), h), 1));
  CHECK(p.is_constant(p.binary(IntOp::Le, h, p.constant(-1)), 0));
  ValueId inexact = p.sub(p.constant(1), p.binary(IntOp::Eq, p.mul(q, c), n));
  ValueId floor_q = p.select(p.mul(inexact, negative), p.sub(q, p.constant(1)), q);
  CHECK(floor_q == q);
  // (h + 15) floordiv 16 is h ceildiv 16; its pad is non-negative, so max(pad, 0) is the pad.
  CHECK(q == p.binary(IntOp::DivCeil, h, c));
  ValueId padded = p.mul(q, c);
  ValueId pad = p.sub(padded, h);
  CHECK(p.known_nonnegative(pad));
  CHECK(p.is_constant(p.binary(IntOp::Lt, pad, p.constant(0)), 0));
  CHECK(p.max(pad, p.constant(0)) == pad);
  CHECK_FALSE(p.known_nonnegative(p.sub(padded, p.symbol("W"))));
  // h + (padded - h) is padded: the skip extents of the pooled padded input then share ids.
  ValueId x0 = p.add(h, p.sub(padded, h));
  CHECK(x0 == padded);
  ValueId pool8 = p.binary(IntOp::DivFloor, x0, p.constant(8));
  ValueId pool16 = p.binary(IntOp::DivFloor, x0, c);
  CHECK(pool8 == p.mul(pool16, p.constant(2)));
  // But a value that may be negative keeps its sign test.
  ValueId maybe_negative = p.sub(p.constant(3), h);
  CHECK_FALSE(p.is_constant(p.binary(IntOp::Lt, maybe_negative, p.constant(0))));
  CHECK(p.evaluate({37, 5})[pool16] == 3);
}

TEST_CASE("shape program slice indices follow ONNX clamping") {
  ShapeProgram p;
  ValueId d = p.symbol("D");
  ValueId neg = p.slice_index(p.constant(-3), d, 0);
  ValueId big = p.slice_index(p.constant(int64_t{1} << 40), d, 0);
  ValueId start_rev = p.slice_index(p.constant(-1), d, 1);
  ValueId end_rev = p.slice_index(p.constant(-(int64_t{1} << 40)), d, 2);
  auto v = p.evaluate({10});
  CHECK(v[neg] == 7);
  CHECK(v[big] == 10);
  CHECK(v[start_rev] == 9);
  CHECK(v[end_rev] == -1);
}

TEST_CASE("shape program assertions fail with their message at a bad resolution") {
  ShapeProgram p;
  ValueId h = p.symbol("H"), w = p.symbol("W");
  CHECK(p.require_equal(p.binary(IntOp::DivFloor, h, p.constant(2)), w, "node 'cat' (Concat): extents differ"));
  CHECK_NOTHROW(p.evaluate({10, 5}));
  try {
    p.evaluate({11, 6});
    FAIL("expected an assertion failure");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::ShapeMismatch);
    CHECK(std::string(e.what()).find("node 'cat'") != std::string::npos);
  }
  // Known-false at import time is reported by the caller, not recorded.
  CHECK_FALSE(p.require_equal(p.constant(3), p.constant(4), "never"));
}

TEST_CASE("shape program reports overflow and division by zero instead of crashing") {
  ShapeProgram p;
  ValueId h = p.symbol("H");
  ValueId huge = p.mul(h, p.constant(int64_t{1} << 62));
  ValueId quotient = p.binary(IntOp::DivFloor, p.constant(10), p.sub(h, p.constant(3)));
  (void)huge;
  (void)quotient;
  CHECK_THROWS_AS(p.evaluate({3}), Error);
  CHECK_THROWS_AS(p.evaluate({4}), Error);  // 4 * 2^62 overflows
  CHECK_THROWS_AS(p.evaluate({}), Error);   // symbol count mismatch
}

TEST_CASE("shape program compaction keeps what roots need, renumbered in order") {
  ShapeProgram p;
  ValueId h = p.symbol("H");
  ValueId unused = p.mul(h, p.constant(7));
  ValueId used = p.add(h, p.constant(3));
  (void)unused;
  auto remap = p.compact({used});
  CHECK(remap[unused] == UINT32_MAX);
  ValueId u = remap[used];
  CHECK(p.to_string(u) == "(H + 3)");
  CHECK(p.evaluate({5})[u] == 8);
  // Interning still works after compaction.
  CHECK(p.add(p.symbol("H"), p.constant(3)) == u);
}

// A DAG that reuses each value twice, 200 deep: known_nonnegative is a flag per instruction, so
// building and simplifying it is linear. (It used to walk the operands: 2^depth steps, 9 s at
// depth 30 from a fuzzed ONNX model; this test would not finish.) The flags survive compaction
// and a rebuild from parts.
TEST_CASE("shape program sign facts stay linear in a DAG that reuses values") {
  ShapeProgram p;
  const ValueId h = p.symbol("H");
  ValueId x = h;
  for (int depth = 0; depth < 200; ++depth) x = p.add(x, x);
  const ValueId half = p.binary(IntOp::DivTrunc, x, p.constant(2));  // asks whether x >= 0
  CHECK(p.instructions()[half].op == IntOp::DivFloor);  // the sign fact held: trunc became floor
  CHECK(p.known_nonnegative(half));
  const ValueId negative = p.sub(p.constant(0), x);
  CHECK_FALSE(p.known_nonnegative(negative));

  auto remap = p.compact({half, negative});
  CHECK(p.known_nonnegative(remap[half]));
  CHECK_FALSE(p.known_nonnegative(remap[negative]));
  const ShapeProgram rebuilt = ShapeProgram::from_parts(p.instructions(), p.symbol_names(), p.assertions());
  CHECK(rebuilt.known_nonnegative(remap[half]));
  CHECK_FALSE(rebuilt.known_nonnegative(remap[negative]));
}
