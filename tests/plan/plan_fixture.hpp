// A small but complete plan (a conv, a pool, a fused upsample+conv over a symbolic H x W input)
// and a field-by-field comparison, shared by the plan tests.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan/plan.hpp"

namespace denox::plan::test {

// SPIR-V-looking words: the header (magic, version 1.3, generator, bound, schema) then `body`
// words derived from `seed`. Not a valid module; the plan only checks the header.
std::vector<uint32_t> fake_spirv(uint32_t seed, size_t body);

// Every part of a plan populated: symbols, assertions, several pipelines with defines and
// SPIR-V, scratch tensors sized by the program, weights at 256-byte aligned offsets, and
// dispatches using all binding kinds and accesses.
Plan sample_plan();

// CHECKs every field of `actual` against `expected` (Catch reports each difference).
void check_same_plan(const Plan& actual, const Plan& expected);

}  // namespace denox::plan::test
