// Plan <-> bytes (flatbuffers, schema plan.fbs), plus the semantic checks a loaded plan must
// pass before the runtime may trust it.
//
// The bytes are a size-prefixed flatbuffer with file identifier "DNXP":
//   [u32 size of the rest][u32 root offset]["DNXP"]...
// so that a truncated or padded blob is reported as such rather than as "corrupt".
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "compiler/plan/plan.hpp"

namespace denox::plan {

// The flatbuffers file identifier of a serialized plan (4 characters).
inline constexpr char kPlanFileIdentifier[] = "DNXP";

// Whether `head` (a file's first bytes, at least 12) starts as a serialized plan does: size
// prefix, root offset, then the identifier (the layout above). For tools that take a plan or an
// ONNX model; inline, so that they need not link the plan library.
inline bool looks_like_plan(std::span<const uint8_t> head) {
  return head.size() >= 12 && std::memcmp(head.data() + 8, kPlanFileIdentifier, 4) == 0;
}

// Serializes `plan` with format_version = Plan::kFormatVersion. Deterministic: equal plans give
// equal bytes (the cache may hash them). Does not validate (see validate_plan); throws
// InvalidArgument when the plan exceeds flatbuffers' 2 GiB limit.
std::vector<uint8_t> serialize_plan(const Plan& plan);

// Parses bytes from an untrusted source (a cache entry, a shipped file). Checks, in order:
// size prefix, file identifier, format version (Unsupported: written by another denox
// version, rebuild it), flatbuffers verification, the shape program (ShapeProgram::from_parts),
// then validate_plan. Every failure is a denox::Error whose message starts with "plan: " and
// names what is wrong; InvalidModel unless said otherwise. `bytes` need not be aligned.
Plan deserialize_plan(std::span<const uint8_t> bytes);

// The semantic invariants the runtime relies on, checked on an in-memory plan: enum values in
// range; every pipeline, scratch and weight index in range; every ValueId inside the program;
// binding and push constant counts equal the pipeline's; weight ranges inside weight_data and
// 256-byte aligned; weights never written; SPIR-V (when filled in) starts with the magic
// number; workgroup sizes non-zero. Throws InvalidModel ("plan: dispatch 12 ('conv3') binds
// scratch tensor 99, the plan has 40"). The compiler may call it on what it built.
void validate_plan(const Plan& plan);

// A few lines for the CLI: counts and byte sizes of each part of the plan.
std::string plan_summary(const Plan& plan);

}  // namespace denox::plan
