// Seeded byte-level abuse of a serialized plan: whatever the damage, deserialize_plan either
// throws a denox::Error or returns a plan that passes validation and serializes again. Run
// under -fsanitize=address,undefined to catch reads outside the buffer (see CMakeLists.txt).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "common/error.hpp"
#include "compiler/plan/plan_generated.h"
#include "compiler/plan/plan_serialize.hpp"
#include "plan_fixture.hpp"

using namespace denox;
using namespace denox::plan;

namespace {

// Byte positions outside the weight blob and the SPIR-V words: offsets, vtables, lengths,
// scalars. Flips there exercise the verifier and validate_plan rather than just changing data.
std::vector<size_t> structural_positions(const std::vector<uint8_t>& bytes) {
  std::vector<bool> data(bytes.size(), false);
  auto mark = [&](const uint8_t* p, size_t n) {
    const auto start = static_cast<size_t>(p - bytes.data());
    for (size_t i = start; i < start + n; ++i) data[i] = true;
  };
  const auto* root = fb::GetSizePrefixedPlan(bytes.data());
  mark(root->weight_data()->data(), root->weight_data()->size());
  for (const auto* p : *root->pipelines())
    mark(reinterpret_cast<const uint8_t*>(p->spirv()->data()), p->spirv()->size() * 4);
  std::vector<size_t> out;
  for (size_t i = 0; i < bytes.size(); ++i)
    if (!data[i]) out.push_back(i);
  return out;
}

void set_size_prefix(std::vector<uint8_t>& bytes) {
  const auto n = static_cast<uint32_t>(bytes.size() - 4);
  std::memcpy(bytes.data(), &n, 4);
}

}  // namespace

TEST_CASE("damaged plans give a clean error or a valid plan, never a crash") {
  const std::vector<uint8_t> original = serialize_plan(test::sample_plan());
  const std::vector<size_t> structural = structural_positions(original);
  REQUIRE(structural.size() > 256);
  std::mt19937 rng(20240611);
  auto uniform = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };

  int rejected = 0, accepted = 0;
  constexpr int kIterations = 4000;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<uint8_t> bytes = original;
    const int flips = 1 + static_cast<int>(uniform(4));
    switch (it % 4) {
      case 0:  // random bits anywhere
        for (int k = 0; k < flips; ++k) bytes[uniform(bytes.size())] ^= static_cast<uint8_t>(1 + uniform(255));
        break;
      case 1:  // random bits in the structure
        for (int k = 0; k < flips; ++k) bytes[structural[uniform(structural.size())]] ^= static_cast<uint8_t>(1 + uniform(255));
        break;
      case 2:  // truncated, with a size prefix that agrees (so the verifier has to notice)
        bytes.resize(12 + uniform(bytes.size() - 12));
        set_size_prefix(bytes);
        break;
      case 3: {  // an aligned 32-bit word of the structure set to an extreme value
        static const uint32_t extremes[] = {0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffc, 4, 0x10000};
        const size_t at = structural[uniform(structural.size())] & ~size_t{3};
        if (at >= 4 && at + 4 <= bytes.size()) std::memcpy(bytes.data() + at, &extremes[uniform(8)], 4);
        break;
      }
    }
    INFO("iteration " << it);
    try {
      const Plan plan = deserialize_plan(bytes);
      ++accepted;
      // What the loader returns is a plan the runtime may use: it validates, summarizes,
      // round trips, and its program evaluates (or fails an assertion) cleanly.
      CHECK_NOTHROW(validate_plan(plan));
      CHECK_NOTHROW(plan_summary(plan));
      const std::vector<uint8_t> again = serialize_plan(plan);
      CHECK_NOTHROW(deserialize_plan(again));
      try {
        plan.program.evaluate(std::vector<int64_t>(plan.program.symbol_names().size(), 64));
      } catch (const Error&) {
      }
    } catch (const Error& e) {
      ++rejected;
      CHECK(std::string(e.what()).rfind("plan: ", 0) == 0);
    }
  }
  INFO("accepted " << accepted << ", rejected " << rejected);
  CHECK(accepted + rejected == kIterations);
  CHECK(rejected > kIterations / 4);
  CHECK(accepted > 0);
}
