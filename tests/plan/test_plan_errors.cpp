// Every rejection deserialize_plan promises, each with the message that names the problem.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <limits>

#include "common/error.hpp"
#include "compiler/plan/plan_generated.h"
#include "compiler/plan/plan_serialize.hpp"
#include "plan_fixture.hpp"

using namespace denox;
using namespace denox::plan;

namespace {

void expect_error(std::span<const uint8_t> bytes, ErrorCode code, const std::string& text) {
  try {
    deserialize_plan(bytes);
    FAIL("deserialize_plan accepted the bytes; expected: " << text);
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).rfind("plan: ", 0) == 0);
    CHECK_THAT(e.what(), Catch::Contains(text));
  }
}

// The index of the first instruction with opcode `op` in the sample plan's program.
uint32_t first_instr(const Plan& plan, compiler::IntOp op) {
  const auto& instrs = plan.program.instructions();
  for (uint32_t i = 0; i < instrs.size(); ++i)
    if (instrs[i].op == op) return i;
  FAIL("the sample plan has no such instruction");
  return 0;
}

}  // namespace

TEST_CASE("too short, truncated and padded buffers are named as such") {
  const std::vector<uint8_t> bytes = serialize_plan(test::sample_plan());
  for (size_t n : {size_t{0}, size_t{5}, size_t{11}})
    expect_error(std::span(bytes).first(n), ErrorCode::InvalidModel, "bytes is too short for a plan");
  for (size_t n : {size_t{12}, size_t{64}, bytes.size() / 2, bytes.size() - 1})
    expect_error(std::span(bytes).first(n), ErrorCode::InvalidModel,
                 "truncated: the plan is " + std::to_string(bytes.size()) + " bytes, only " + std::to_string(n) +
                     " were read");
  std::vector<uint8_t> padded = bytes;
  padded.resize(bytes.size() + 8, 0);
  expect_error(padded, ErrorCode::InvalidModel, "8 unexpected bytes after the end of the plan");
}

TEST_CASE("a buffer that is not a plan is named as such") {
  std::vector<uint8_t> bytes = serialize_plan(test::sample_plan());
  std::memcpy(bytes.data() + 8, "ONNX", 4);
  expect_error(bytes, ErrorCode::InvalidModel, "not a denox plan (file identifier 'ONNX', expected 'DNXP')");
  bytes[9] = 0x01;
  expect_error(bytes, ErrorCode::InvalidModel, "file identifier 'O\\x01NX'");
  const std::string text = "this is a text file, not a plan at all";
  expect_error(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), ErrorCode::InvalidModel,
               "not a denox plan");
}

TEST_CASE("plans of another format version are rejected as such") {
  std::vector<uint8_t> bytes = serialize_plan(test::sample_plan());
  auto* root = fb::GetMutableSizePrefixedPlan(bytes.data());
  REQUIRE(root->mutate_format_version(Plan::kFormatVersion + 1));
  expect_error(bytes, ErrorCode::Unsupported,
               "format version " + std::to_string(Plan::kFormatVersion + 1) +
                   " was written by a newer denox (this one reads version " + std::to_string(Plan::kFormatVersion) +
                   "); rebuild the plan from the model");
  REQUIRE(root->mutate_format_version(Plan::kFormatVersion - 1));
  expect_error(bytes, ErrorCode::Unsupported,
               "format version " + std::to_string(Plan::kFormatVersion - 1) + " was written by an older denox");
}

TEST_CASE("a newer plan whose layout differs still reports its version, not corruption") {
  // Field 0 is the version; field 3 (`program` today) holds a scalar that is no valid offset.
  auto build = [](uint32_t version) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto start = fbb.StartTable();
    fbb.AddElement<uint32_t>(flatbuffers::FieldIndexToOffset(0), version, 0);
    fbb.AddElement<uint32_t>(flatbuffers::FieldIndexToOffset(3), 0x7ffffff0u, 0);
    fbb.FinishSizePrefixed(flatbuffers::Offset<fb::PlanHeader>(fbb.EndTable(start)), kPlanFileIdentifier);
    return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  };
  expect_error(build(Plan::kFormatVersion + 1), ErrorCode::Unsupported, "written by a newer denox");
  expect_error(build(Plan::kFormatVersion), ErrorCode::InvalidModel, "corrupt: flatbuffers verification");
}

TEST_CASE("fields that share one payload are corruption, not copied over and over") {
  // 1000 dispatches whose names all point at one 100 KB string: a 100 KB buffer that would
  // copy out 100 MB (a 4.5 MB forged plan made 8 GB before).
  flatbuffers::FlatBufferBuilder fbb;
  const auto name = fbb.CreateString(std::string(100000, 'x'));
  std::vector<flatbuffers::Offset<fb::Dispatch>> dispatches;
  for (int i = 0; i < 1000; ++i) dispatches.push_back(fb::CreateDispatch(fbb, name));
  const auto root = fb::CreatePlan(fbb, Plan::kFormatVersion, fb::Precision::F32, 0, 0, 0, 0, 0, 0, 0, 0, fbb.CreateVector(dispatches));
  fb::FinishSizePrefixedPlanBuffer(fbb, root);
  const std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  expect_error(bytes, ErrorCode::InvalidModel, "corrupt: its fields share payloads");
}

TEST_CASE("a root offset outside the buffer is corruption") {
  std::vector<uint8_t> bytes = serialize_plan(test::sample_plan());
  const uint32_t far = 0x7fffff00u;
  std::memcpy(bytes.data() + 4, &far, 4);
  expect_error(bytes, ErrorCode::InvalidModel, "corrupt: the root table of the plan does not verify");
}

TEST_CASE("a misaligned vector of 8-byte structs is corruption") {
  // flatbuffers 2.0's verifier does not check element alignment, so the loader does. Moving
  // the offset to the instruction vector on by 4 bytes gives a vector that verifies (its length
  // is the low word of instruction 0's imm, set to 1) but whose data is at 4 mod 8.
  std::vector<uint8_t> bytes = serialize_plan(test::sample_plan());
  auto* program = fb::GetMutableSizePrefixedPlan(bytes.data())->mutable_program();
  program->mutable_instrs()->GetMutableObject(0)->mutate_imm(1);
  auto* table = reinterpret_cast<flatbuffers::Table*>(program);
  uint8_t* field = table->GetAddressOf(fb::ShapeProgram::VT_INSTRS);
  REQUIRE(field != nullptr);
  const uint32_t offset = flatbuffers::ReadScalar<uint32_t>(field);
  REQUIRE((field + offset - bytes.data()) % 8 == 4);  // the length word; the data follows at 0 mod 8
  flatbuffers::WriteScalar<uint32_t>(field, offset + 4);
  expect_error(bytes, ErrorCode::InvalidModel, "corrupt: the shape program's instruction vector is misaligned");
}

TEST_CASE("a broken shape program inside a plan is rejected with the instruction") {
  const Plan plan = test::sample_plan();
  const uint32_t mul = first_instr(plan, compiler::IntOp::Mul);
  const uint32_t sym = first_instr(plan, compiler::IntOp::Symbol);
  auto mutated = [&](const std::function<void(fb::ShapeProgram*)>& change) {
    std::vector<uint8_t> bytes = serialize_plan(plan);
    change(fb::GetMutableSizePrefixedPlan(bytes.data())->mutable_program());
    return bytes;
  };
  const std::string at = "plan: shape program instruction %";
  expect_error(mutated([&](fb::ShapeProgram* p) { p->mutable_instrs()->GetMutableObject(mul)->mutate_b(mul); }),
               ErrorCode::InvalidModel, at + std::to_string(mul) + ": operand refers to a later instruction");
  expect_error(mutated([&](fb::ShapeProgram* p) { p->mutable_instrs()->GetMutableObject(sym)->mutate_imm(7); }),
               ErrorCode::InvalidModel, at + std::to_string(sym) + ": symbol index out of range");
  expect_error(mutated([&](fb::ShapeProgram* p) {
                 p->mutable_instrs()->GetMutableObject(mul)->mutate_op(static_cast<fb::IntOp>(200));
               }),
               ErrorCode::InvalidModel, at + std::to_string(mul) + ": unknown opcode");
  // evaluate() reads every operand slot, so the unused ones must be the 0 the schema promises.
  expect_error(mutated([&](fb::ShapeProgram* p) { p->mutable_instrs()->GetMutableObject(mul)->mutate_c(0x10000); }),
               ErrorCode::InvalidModel, at + std::to_string(mul) + ": unused operand c is 65536, must be 0");
  expect_error(mutated([&](fb::ShapeProgram* p) { p->mutable_instrs()->GetMutableObject(sym)->mutate_a(1); }),
               ErrorCode::InvalidModel, at + std::to_string(sym) + ": unused operand a is 1, must be 0");
  expect_error(mutated([&](fb::ShapeProgram* p) { p->mutable_instrs()->GetMutableObject(mul)->mutate_imm(-3); }),
               ErrorCode::InvalidModel, at + std::to_string(mul) + ": immediate -3 of an opcode without one");
  expect_error(mutated([&](fb::ShapeProgram* p) { p->mutable_assertions()->GetMutableObject(0)->mutate_condition(1u << 30); }),
               ErrorCode::InvalidModel, "plan: shape program assertion refers to a missing value");
}

TEST_CASE("semantic violations are rejected with what is wrong and where") {
  struct Case {
    std::function<void(Plan&)> change;
    std::string message;
  };
  using R = Resource;
  using A = Access;
  const size_t values = test::sample_plan().program.size();
  const std::string program_has = ", the program has " + std::to_string(values);
  const std::vector<Case> cases = {
      {[](Plan& p) { p.dispatches[1].pipeline = 7; }, "dispatch 1 ('pool0') uses pipeline 7, the plan has 3"},
      {[](Plan& p) { p.dispatches[0].bindings[3].index = 99; },
       "dispatch 0 ('enc0') binds scratch tensor 99, the plan has 4"},
      {[](Plan& p) { p.dispatches[2].bindings[1].index = 4; },
       "dispatch 2 ('up0+dec0') binds weight range 4, the plan has 4"},
      {[](Plan& p) { p.dispatches[0].bindings[1].access = A::Write; },
       "dispatch 0 ('enc0') binding 1 writes weight range 0 ('enc0.weight'), weights are read-only"},
      {[](Plan& p) { p.dispatches[0].bindings[2].access = A::ReadWrite; }, "binding 2 writes weight range 1"},
      {[](Plan& p) { p.dispatches[1].bindings[0].access = static_cast<A>(9); },
       "dispatch 1 ('pool0') binding 0 has unknown access 9"},
      {[](Plan& p) { p.dispatches[1].bindings[0].resource = static_cast<R>(5); },
       "dispatch 1 ('pool0') binding 0 has unknown resource kind 5"},
      {[](Plan& p) { p.dispatches[1].bindings.pop_back(); },
       "dispatch 1 ('pool0') has 1 bindings, its pipeline 1 ('maxpool') has 2"},
      {[](Plan& p) { p.dispatches[2].push_constants.push_back(0); },
       "dispatch 2 ('up0+dec0') has 5 push constants, its pipeline 2 ('upsample_conv2d') has 4"},
      {[](Plan& p) { p.dispatches[0].push_constants[2] = 1000; },
       "dispatch 0 ('enc0') push constant 2 refers to shape value %1000" + program_has},
      {[](Plan& p) { p.dispatches[2].groups[1] = 5000; },
       "dispatch 2 ('up0+dec0') group count y refers to shape value %5000" + program_has},
      {[values](Plan& p) { p.dispatches[2].groups[0] = static_cast<ValueId>(values); },
       "group count x refers to shape value %" + std::to_string(values)},
      {[](Plan& p) { p.scratch[2].size_bytes = 777; }, "scratch tensor 2 ('pool0') size refers to shape value %777"},
      {[](Plan& p) { p.outputs[0].shape[3] = 999; }, "output 0 ('output') extent W refers to shape value %999"},
      {[](Plan& p) { p.inputs[0].scratch = 4; }, "input 0 ('color') is scratch tensor 4, the plan has 4"},
      {[](Plan& p) { p.weights[3].size = 7; },
       "weight range 3 ('dec0.bias') is bytes [3840, +7) of the weight data, which has 3846 bytes"},
      {[](Plan& p) { p.weights[3].offset = std::numeric_limits<uint64_t>::max() - 255, p.weights[3].size = 512; },
       "weight range 3 ('dec0.bias') is bytes [18446744073709551360, +512)"},
      {[](Plan& p) { p.weights[1].offset = 1800; },
       "weight range 1 ('enc0.bias') starts at byte 1800, not a multiple of 256"},
      {[](Plan& p) { p.pipelines[2].spirv[0] = 0x03022307; },
       "pipeline 2 ('upsample_conv2d') SPIR-V starts with 0x03022307, not the SPIR-V magic number 0x07230203"},
      {[](Plan& p) { p.pipelines[0].spirv = {0x07230203, 0x00010300}; },
       "pipeline 0 ('conv2d') has 2 SPIR-V words, less than a SPIR-V header"},
      {[](Plan& p) { p.pipelines[1].local_size[1] = 0; }, "pipeline 1 ('maxpool') has a zero workgroup size"},
      // Counts the runtime allocates for, checked on a pipeline no dispatch uses too (before,
      // 2^32 - 1 bindings built a 16 GiB vector).
      {[](Plan& p) {
         p.pipelines.push_back(p.pipelines[1]);
         p.pipelines.back().binding_count = 0xFFFFFFFFu;
       },
       "pipeline 3 ('maxpool') has 4294967295 bindings, more than 256"},
      {[](Plan& p) { p.pipelines[0].push_constant_count = 0x40000001u; }, "push constant words, more than 1024"},
      {[](Plan& p) { p.precision = static_cast<Precision>(3); }, "plan: unknown precision 3"},
      // Counts whose handling grows faster than linearly (scratch placement, barriers): a forged
      // plan of millions stalled its load.
      {[](Plan& p) { p.dispatches.resize(16385, p.dispatches[0]); }, "plan: has 16385 dispatches, more than 16384"},
      {[](Plan& p) { p.scratch.resize(16385, p.scratch[0]); }, "plan: has 16385 scratch tensors, more than 16384"},
      {[](Plan& p) { p.pipelines.resize(4097, p.pipelines[0]); }, "plan: has 4097 pipelines, more than 4096"},
      {[](Plan& p) { p.weights.resize(16385, p.weights[0]); }, "plan: has 16385 weight ranges, more than 16384"},
      {[](Plan& p) { p.outputs.resize(257, p.outputs[0]); }, "plan: has 257 outputs, more than 256"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": " << cases[i].message);
    Plan plan = test::sample_plan();
    cases[i].change(plan);
    // The in-memory check and the loader agree.
    CHECK_THROWS_WITH(validate_plan(plan), Catch::Contains(cases[i].message));
    expect_error(serialize_plan(plan), ErrorCode::InvalidModel, cases[i].message);
  }
}
