// Plans survive serialize -> deserialize unchanged, and the program still computes the same.
#include <catch2/catch.hpp>

#include <cstring>

#include "common/error.hpp"
#include "compiler/plan/plan_generated.h"
#include "compiler/plan/plan_serialize.hpp"
#include "plan_fixture.hpp"

using namespace denox;
using namespace denox::plan;

TEST_CASE("plan round trip keeps every field") {
  const Plan plan = test::sample_plan();
  REQUIRE_NOTHROW(validate_plan(plan));
  const std::vector<uint8_t> bytes = serialize_plan(plan);
  const Plan back = deserialize_plan(bytes);
  test::check_same_plan(back, plan);
  // Deterministic: the cache may key or deduplicate by these bytes.
  CHECK(serialize_plan(back) == bytes);
  CHECK(serialize_plan(plan) == bytes);
}

TEST_CASE("round-tripped shape program evaluates to the same values") {
  const Plan plan = test::sample_plan();
  const Plan back = deserialize_plan(serialize_plan(plan));
  for (auto [h, w] : {std::pair<int64_t, int64_t>{8, 8}, {17, 33}, {1080, 1920}, {1088, 1921}}) {
    INFO(h << "x" << w);
    const auto expected = plan.program.evaluate({h, w});
    const auto actual = back.program.evaluate({h, w});
    CHECK(actual == expected);
    // And the values are the ones the plan means: 32 channels at the padded size, fp16.
    const int64_t h16 = (h + 15) / 16 * 16, w16 = (w + 15) / 16 * 16;
    CHECK(actual[back.scratch[1].size_bytes] == 32 * h16 * w16 * 2);
    CHECK(actual[back.dispatches[0].groups[0]] == (w16 + 7) / 8);
  }
  // Assertions survive too, with their messages.
  try {
    back.program.evaluate({4, 64});
    FAIL("expected the H >= 8 assertion to fail");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::ShapeMismatch);
    CHECK(std::string(e.what()).find("H must be at least 8") != std::string::npos);
  }
}

TEST_CASE("empty vectors at any position round trip") {
  // The builder does not align empty vectors, so an empty program's instruction vector (8-byte
  // structs) lands at 4 mod 8 for some model name lengths; the loader must accept that.
  for (size_t length = 0; length < 8; ++length) {
    Plan plan;
    plan.model_name.assign(length, 'm');
    INFO("model name length " << length);
    CHECK(deserialize_plan(serialize_plan(plan)).model_name == plan.model_name);
  }
}

TEST_CASE("an empty plan round trips") {
  const Plan back = deserialize_plan(serialize_plan(Plan{}));
  test::check_same_plan(back, Plan{});
}

TEST_CASE("pipelines whose SPIR-V is not compiled yet round trip") {
  Plan plan = test::sample_plan();
  plan.pipelines[1].spirv.clear();
  test::check_same_plan(deserialize_plan(serialize_plan(plan)), plan);
}

TEST_CASE("deserialize accepts bytes at any alignment") {
  const Plan plan = test::sample_plan();
  const std::vector<uint8_t> bytes = serialize_plan(plan);
  std::vector<uint8_t> shifted(bytes.size() + 3);
  std::memcpy(shifted.data() + 3, bytes.data(), bytes.size());
  test::check_same_plan(deserialize_plan(std::span<const uint8_t>(shifted).subspan(3)), plan);
}

TEST_CASE("serialized plan layout: identifier, size prefix, aligned weights") {
  const Plan plan = test::sample_plan();
  const std::vector<uint8_t> bytes = serialize_plan(plan);
  REQUIRE(bytes.size() > 12);
  CHECK(std::memcmp(bytes.data() + 8, kPlanFileIdentifier, 4) == 0);
  uint32_t prefix = 0;
  std::memcpy(&prefix, bytes.data(), 4);
  CHECK(prefix == bytes.size() - 4);
  const auto* root = fb::GetSizePrefixedPlan(bytes.data());
  CHECK(root->format_version() == Plan::kFormatVersion);
  const auto offset = root->weight_data()->data() - bytes.data();
  CHECK(offset % 16 == 0);
}

TEST_CASE("plan summary names the counts and sizes") {
  const std::string s = plan_summary(test::sample_plan());
  INFO(s);
  CHECK(s.find("'tiny-unet'") != std::string::npos);
  CHECK(s.find("fp16") != std::string::npos);
  CHECK(s.find("dispatches:  3") != std::string::npos);
  CHECK(s.find("pipelines:   3") != std::string::npos);
  CHECK(s.find("(3846 bytes)") != std::string::npos);
  CHECK(s.find("symbols (H, W)") != std::string::npos);
  CHECK(s.find("'color' [1, 3, H, W]") != std::string::npos);
  CHECK_NOTHROW(plan_summary(Plan{}));
}

TEST_CASE("plan summary stays short when an extent expands to a huge expression") {
  // %i = %(i-1) + %(i-1): printed in full, value 60 would be 2^60 symbols long.
  std::vector<compiler::Instr> instrs = {{compiler::IntOp::Symbol, 0, 0, 0, 0}};
  for (ValueId i = 1; i <= 60; ++i) instrs.push_back({compiler::IntOp::Add, i - 1, i - 1, 0, 0});
  Plan plan;
  plan.program = compiler::ShapeProgram::from_parts(std::move(instrs), {"H"}, {});
  plan.scratch = {{"x", 0}};
  plan.inputs = {{"x", {0, 1, 2, 60}, 0}};
  const std::string s = plan_summary(plan);
  INFO(s);
  CHECK(s.find("'x' [H, (H + H), ((H + H) + (H + H)), %60]") != std::string::npos);
  CHECK(s.size() < 2000);
}
