#include "plan_fixture.hpp"

#include <catch2/catch.hpp>

namespace denox::plan::test {

using compiler::IntOp;
using compiler::ShapeProgram;

std::vector<uint32_t> fake_spirv(uint32_t seed, size_t body) {
  std::vector<uint32_t> words = {0x07230203, 0x00010300, 0x00080001, 64 + seed, 0};
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < body; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    words.push_back(x);
  }
  return words;
}

Plan sample_plan() {
  Plan plan;
  plan.precision = Precision::F16;
  plan.model_name = "tiny-unet";

  ShapeProgram& p = plan.program;
  const ValueId h = p.symbol("H"), w = p.symbol("W");
  const ValueId c1 = p.constant(1), c2 = p.constant(2), c3 = p.constant(3), c8 = p.constant(8);
  const ValueId c16 = p.constant(16), c32 = p.constant(32), elem = p.constant(2);  // fp16
  // Padded to a multiple of 16, halved by the pool, as a U-Net does.
  const ValueId h16 = p.mul(p.binary(IntOp::DivCeil, h, c16), c16);
  const ValueId w16 = p.mul(p.binary(IntOp::DivCeil, w, c16), c16);
  const ValueId h2 = p.binary(IntOp::DivFloor, h16, c2), w2 = p.binary(IntOp::DivFloor, w16, c2);
  p.require(p.binary(IntOp::Le, c8, h), "input 'color': H must be at least 8");
  p.require(p.binary(IntOp::Le, c8, w), "input 'color': W must be at least 8");
  const ValueId in_bytes = p.mul(p.mul(p.mul(c3, h), w), elem);
  const ValueId conv_bytes = p.mul(p.mul(p.mul(c32, h16), w16), elem);
  const ValueId pool_bytes = p.mul(p.mul(p.mul(c32, h2), w2), elem);
  const ValueId gx = p.binary(IntOp::DivCeil, w16, c8), gy = p.binary(IntOp::DivCeil, h16, c8);
  const ValueId gx2 = p.binary(IntOp::DivCeil, p.mul(w2, h2), p.constant(64));
  const ValueId crop = p.select(p.binary(IntOp::Lt, h, h16), c1, p.constant(0));

  plan.inputs = {{"color", {c1, c3, h, w}, 0}};
  plan.outputs = {{"output", {c1, c3, h, w}, 3}};
  plan.scratch = {{"color", in_bytes}, {"enc0", conv_bytes}, {"pool0", pool_bytes}, {"output", in_bytes}};

  plan.pipelines.push_back({"conv2d", {{"ACTIVATION", "relu"}, {"CIN", "3"}, {"COUT", "32"}}, fake_spirv(1, 40), 4, 3, {8, 8, 1}});
  plan.pipelines.push_back({"maxpool", {{"KERNEL", "2"}}, fake_spirv(2, 17), 2, 2, {64, 1, 1}});
  plan.pipelines.push_back({"upsample_conv2d", {{"CIN", "32"}, {"COUT", "3"}, {"SCALE", "2"}}, fake_spirv(3, 123), 4, 4, {8, 8, 1}});

  // Weights at 256-byte aligned offsets, the gaps zero.
  plan.weights = {{"enc0.weight", 0, 3 * 32 * 9 * 2}, {"enc0.bias", 1792, 64},
                  {"dec0.weight", 2048, 32 * 3 * 9 * 2}, {"dec0.bias", 3840, 6}};
  plan.weight_data.assign(3846, 0);
  uint32_t x = 12345;
  for (const WeightRange& r : plan.weights)
    for (uint64_t i = r.offset; i < r.offset + r.size; ++i) {
      x = x * 1103515245u + 12345u;
      plan.weight_data[i] = static_cast<uint8_t>(x >> 16);
    }

  using R = Resource;
  using A = Access;
  plan.dispatches.push_back({"enc0", 0,
                             {{R::Scratch, 0, A::Read}, {R::Weights, 0, A::Read}, {R::Weights, 1, A::Read}, {R::Scratch, 1, A::Write}},
                             {h, w, h16}, {gx, gy, c1}});
  plan.dispatches.push_back({"pool0", 1, {{R::Scratch, 1, A::Read}, {R::Scratch, 2, A::Write}}, {h2, w2}, {gx2, c1, c1}});
  plan.dispatches.push_back({"up0+dec0", 2,
                             {{R::Scratch, 2, A::Read}, {R::Weights, 2, A::Read}, {R::Weights, 3, A::Read}, {R::Scratch, 3, A::ReadWrite}},
                             {h, w, crop, w16}, {gx, gy, c1}});
  return plan;
}

void check_same_plan(const Plan& actual, const Plan& expected) {
  CHECK(actual.precision == expected.precision);
  CHECK(actual.model_name == expected.model_name);

  const auto& ai = actual.program.instructions();
  const auto& ei = expected.program.instructions();
  REQUIRE(ai.size() == ei.size());
  for (size_t i = 0; i < ai.size(); ++i) {
    INFO("instruction %" << i);
    CHECK(ai[i].op == ei[i].op);
    CHECK(ai[i].a == ei[i].a);
    CHECK(ai[i].b == ei[i].b);
    CHECK(ai[i].c == ei[i].c);
    CHECK(ai[i].imm == ei[i].imm);
  }
  CHECK(actual.program.symbol_names() == expected.program.symbol_names());
  REQUIRE(actual.program.assertions().size() == expected.program.assertions().size());
  for (size_t i = 0; i < actual.program.assertions().size(); ++i) {
    CHECK(actual.program.assertions()[i].condition == expected.program.assertions()[i].condition);
    CHECK(actual.program.assertions()[i].message == expected.program.assertions()[i].message);
  }

  auto check_io = [](const std::vector<IoTensor>& a, const std::vector<IoTensor>& e) {
    REQUIRE(a.size() == e.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].name == e[i].name);
      CHECK(a[i].shape == e[i].shape);
      CHECK(a[i].scratch == e[i].scratch);
    }
  };
  check_io(actual.inputs, expected.inputs);
  check_io(actual.outputs, expected.outputs);

  REQUIRE(actual.pipelines.size() == expected.pipelines.size());
  for (size_t i = 0; i < actual.pipelines.size(); ++i) {
    INFO("pipeline " << i);
    const Pipeline &a = actual.pipelines[i], &e = expected.pipelines[i];
    CHECK(a.family == e.family);
    CHECK(a.defines == e.defines);
    CHECK(a.spirv == e.spirv);
    CHECK(a.binding_count == e.binding_count);
    CHECK(a.push_constant_count == e.push_constant_count);
    CHECK(a.local_size == e.local_size);
  }

  REQUIRE(actual.scratch.size() == expected.scratch.size());
  for (size_t i = 0; i < actual.scratch.size(); ++i) {
    CHECK(actual.scratch[i].name == expected.scratch[i].name);
    CHECK(actual.scratch[i].size_bytes == expected.scratch[i].size_bytes);
  }
  REQUIRE(actual.weights.size() == expected.weights.size());
  for (size_t i = 0; i < actual.weights.size(); ++i) {
    CHECK(actual.weights[i].name == expected.weights[i].name);
    CHECK(actual.weights[i].offset == expected.weights[i].offset);
    CHECK(actual.weights[i].size == expected.weights[i].size);
  }
  CHECK(actual.weight_data == expected.weight_data);

  REQUIRE(actual.dispatches.size() == expected.dispatches.size());
  for (size_t i = 0; i < actual.dispatches.size(); ++i) {
    INFO("dispatch " << i);
    const Dispatch &a = actual.dispatches[i], &e = expected.dispatches[i];
    CHECK(a.name == e.name);
    CHECK(a.pipeline == e.pipeline);
    REQUIRE(a.bindings.size() == e.bindings.size());
    for (size_t k = 0; k < a.bindings.size(); ++k) {
      CHECK(a.bindings[k].resource == e.bindings[k].resource);
      CHECK(a.bindings[k].index == e.bindings[k].index);
      CHECK(a.bindings[k].access == e.bindings[k].access);
    }
    CHECK(a.push_constants == e.push_constants);
    CHECK(a.groups == e.groups);
  }
}

}  // namespace denox::plan::test
