// Plan <-> flatbuffer (schema plan.fbs). Writing is a straight copy into the builder. Reading
// treats the bytes as hostile: every structural check flatbuffers offers runs before a single
// field is read, then the semantic checks of validate_plan before the Plan is handed out.
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "common/error.hpp"
#include "compiler/plan/plan_generated.h"
#include "compiler/plan/plan_serialize.hpp"

namespace denox::plan {

namespace fbs = denox::fb;
using compiler::IntOp;

// The schema's enums mirror the C++ ones value for value, so conversion is a cast; a mismatch
// here would silently change the meaning of every stored plan.
#define DENOX_SAME_ENUM(fb_enum, cpp_enum, name) \
  static_assert(static_cast<unsigned>(fb_enum::name) == static_cast<unsigned>(cpp_enum::name))
DENOX_SAME_ENUM(fbs::Precision, Precision, F32);
DENOX_SAME_ENUM(fbs::Precision, Precision, F16);
DENOX_SAME_ENUM(fbs::Access, Access, Read);
DENOX_SAME_ENUM(fbs::Access, Access, Write);
DENOX_SAME_ENUM(fbs::Access, Access, ReadWrite);
DENOX_SAME_ENUM(fbs::Resource, Resource, Scratch);
DENOX_SAME_ENUM(fbs::Resource, Resource, Weights);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Const);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Symbol);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Add);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Sub);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Mul);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, DivTrunc);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, DivFloor);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, DivCeil);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, ModFloor);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, ModTrunc);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Min);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Max);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Eq);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Lt);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Le);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, Select);
DENOX_SAME_ENUM(fbs::IntOp, IntOp, SliceIndex);
#undef DENOX_SAME_ENUM

namespace {

// Matches force_align in plan.fbs; also the alignment deserialize_plan wants its input at.
constexpr size_t kBufferAlignment = 16;
constexpr size_t kPrefixBytes = sizeof(flatbuffers::uoffset_t);
// size prefix, root offset, identifier
constexpr size_t kMinPlanBytes = 2 * sizeof(flatbuffers::uoffset_t) + flatbuffers::kFileIdentifierLength;
static_assert(kMinPlanBytes == 12, "looks_like_plan (plan_serialize.hpp) reads the identifier at bytes 8-11");

[[noreturn]] void bad(const std::string& what, ErrorCode code = ErrorCode::InvalidModel) {
  fail(code, "plan: " + what);
}

// An upper bound of the serialized size: each string, table and vector counted with generous
// overhead (vtable, offsets, padding). Only used to refuse plans over flatbuffers' 2 GiB limit
// before the builder asserts, and to size the builder's first allocation.
uint64_t size_bound(const Plan& plan) {
  auto str = [](const std::string& s) -> uint64_t { return s.size() + 16; };
  constexpr uint64_t kTable = 64;
  uint64_t n = 1024 + str(plan.model_name) + plan.weight_data.size() + kBufferAlignment;
  n += plan.program.size() * sizeof(fbs::Instr);
  for (const auto& s : plan.program.symbol_names()) n += str(s) + 4;
  for (const auto& a : plan.program.assertions()) n += kTable + str(a.message) + 4;
  for (const auto* ts : {&plan.inputs, &plan.outputs})
    for (const IoTensor& t : *ts) n += kTable + str(t.name) + 4;
  for (const Pipeline& p : plan.pipelines) {
    n += kTable + str(p.family) + 4 + p.spirv.size() * 4 + 8;
    for (const auto& [name, value] : p.defines) n += kTable + str(name) + str(value) + 4;
  }
  for (const ScratchTensor& s : plan.scratch) n += kTable + str(s.name) + 4;
  for (const WeightRange& w : plan.weights) n += kTable + str(w.name) + 4;
  for (const Dispatch& d : plan.dispatches)
    n += kTable + str(d.name) + 4 + d.bindings.size() * 8 + d.push_constants.size() * 4 + 16;
  return n;
}

// Bytes the reader may still copy out of the buffer being read. A verified flatbuffer may point
// many fields at the same string or vector: a 4.5 MB plan whose 2000 dispatch names all named one
// 4 MB string made 8 GB of copies. A plan denox writes stores every payload once, so copies past
// the buffer's own size mean shared payloads: refused.
thread_local uint64_t copy_budget = 0;

void charge(uint64_t bytes) {
  if (bytes > copy_budget) bad("corrupt: its fields share payloads (more bytes to copy than the plan holds)");
  copy_budget -= bytes;
}

// (A vector of structs reads as pointers: the struct's size is what each element copies.)
template <class T>
void charge_vector(const flatbuffers::Vector<T>* v) {
  if (v) charge(uint64_t{v->size()} * sizeof(std::remove_pointer_t<T>));
}

std::string text(const flatbuffers::String* s) {
  if (!s) return {};
  charge(s->size());
  return s->str();
}

template <class T>
size_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

std::string printable_identifier(const uint8_t* p) {
  std::string out;
  for (size_t i = 0; i < flatbuffers::kFileIdentifierLength; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f) {
      out += static_cast<char>(p[i]);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", p[i]);
      out += hex;
    }
  }
  return out;
}

// Storage with the alignment flatbuffers' verifier checks (and its readers rely on).
struct alignas(kBufferAlignment) AlignedBlock {
  uint8_t bytes[kBufferAlignment];
};

// How many of a, b, c an opcode reads (the semantics are in shape_program.hpp).
int operand_count(IntOp op) {
  if (op == IntOp::Const || op == IntOp::Symbol) return 0;
  return op == IntOp::Select ? 3 : 2;
}

// The schema stores unused operands (and imm, for opcodes without one) as 0. ShapeProgram's
// evaluate() reads all three operand slots whatever the arity, and from_parts checks only the
// used ones, so a damaged unused operand would index outside the value table: reject it here.
void check_unused_fields(size_t i, const compiler::Instr& in) {
  const auto where = [&] { return "shape program instruction %" + std::to_string(i) + ": "; };
  const ValueId operands[3] = {in.a, in.b, in.c};
  const int used = operand_count(in.op);
  for (int k = used; k < 3; ++k)
    if (operands[k] != 0)
      bad(where() + "unused operand " + "abc"[k] + " is " + std::to_string(operands[k]) + ", must be 0");
  const bool has_imm = in.op == IntOp::Const || in.op == IntOp::Symbol || in.op == IntOp::SliceIndex;
  if (!has_imm && in.imm != 0) bad(where() + "immediate " + std::to_string(in.imm) + " of an opcode without one");
}

// flatbuffers 2.0's Verifier (Debian 12) checks a vector's length field for 4-byte alignment
// but not its elements for theirs; reading an 8-byte-aligned struct from a damaged vector at
// offset 4 mod 8 is undefined behaviour. Vectors of 4-byte-aligned elements are covered by the
// length check (their data follows it); the static_asserts keep that true. An empty vector is
// never read, and the builder does not align it (FlatBufferBuilder::PreAlign skips len 0).
static_assert(alignof(fbs::Binding) <= sizeof(flatbuffers::uoffset_t));
static_assert(alignof(fbs::UInt3) <= sizeof(flatbuffers::uoffset_t));
template <class T>
bool elements_aligned(const flatbuffers::Vector<const T*>* v) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) == 0;
}

compiler::ShapeProgram read_program(const fbs::ShapeProgram* p) {
  std::vector<compiler::Instr> instrs;
  std::vector<std::string> symbols;
  std::vector<compiler::Assertion> assertions;
  if (p) {
    if (!elements_aligned(p->instrs())) bad("corrupt: the shape program's instruction vector is misaligned");
    charge_vector(p->instrs());
    charge_vector(p->symbol_names());
    charge_vector(p->assertions());
    if (p->instrs()) {
      instrs.reserve(p->instrs()->size());
      for (const fbs::Instr* in : *p->instrs())
        instrs.push_back({static_cast<IntOp>(in->op()), in->a(), in->b(), in->c(), in->imm()});
    }
    if (p->symbol_names())
      for (const flatbuffers::String* s : *p->symbol_names()) symbols.push_back(text(s));
    if (p->assertions())
      for (const fbs::Assertion* a : *p->assertions()) assertions.push_back({a->condition(), text(a->message())});
  }
  // from_parts checks what evaluate() relies on (operand order, symbol indices, opcodes).
  compiler::ShapeProgram program;
  try {
    program = compiler::ShapeProgram::from_parts(std::move(instrs), std::move(symbols), std::move(assertions));
  } catch (const Error& e) {
    bad(e.what(), e.code());
  }
  // After from_parts, so that an unknown opcode is reported as such.
  for (size_t i = 0; i < program.size(); ++i) check_unused_fields(i, program.instructions()[i]);
  return program;
}

std::array<ValueId, 4> read_shape(const fbs::Shape4* s) {
  if (!s) return {0, 0, 0, 0};
  return {s->n(), s->c(), s->h(), s->w()};
}

std::array<uint32_t, 3> read_uint3(const fbs::UInt3* v) {
  if (!v) return {0, 0, 0};
  return {v->x(), v->y(), v->z()};
}

std::vector<IoTensor> read_io(const flatbuffers::Vector<flatbuffers::Offset<fbs::IoTensor>>* v) {
  std::vector<IoTensor> out;
  charge_vector(v);
  if (v)
    for (const fbs::IoTensor* t : *v) out.push_back({text(t->name()), read_shape(t->shape()), t->scratch()});
  return out;
}

Pipeline read_pipeline(const fbs::Pipeline* p) {
  Pipeline out;
  out.family = text(p->family());
  charge_vector(p->defines());
  if (p->defines())
    for (const fbs::Define* d : *p->defines()) out.defines.emplace_back(text(d->name()), text(d->value()));
  charge_vector(p->spirv());
  if (p->spirv()) out.spirv.assign(p->spirv()->begin(), p->spirv()->end());
  out.binding_count = p->binding_count();
  out.push_constant_count = p->push_constant_count();
  out.local_size = read_uint3(p->local_size());
  return out;
}

Dispatch read_dispatch(const fbs::Dispatch* d) {
  Dispatch out;
  out.name = text(d->name());
  out.pipeline = d->pipeline();
  charge_vector(d->bindings());
  charge_vector(d->push_constants());
  if (d->bindings())
    for (const fbs::Binding* b : *d->bindings())
      out.bindings.push_back(
          {static_cast<Resource>(b->resource()), b->index(), static_cast<Access>(b->access())});
  if (d->push_constants()) out.push_constants.assign(d->push_constants()->begin(), d->push_constants()->end());
  out.groups = read_uint3(d->groups());
  return out;
}

}  // namespace

std::vector<uint8_t> serialize_plan(const Plan& plan) {
  const uint64_t bound = size_bound(plan);
  if (bound >= FLATBUFFERS_MAX_BUFFER_SIZE)
    bad("too large to serialize (about " + std::to_string(bound) + " bytes, " +
            std::to_string(plan.weight_data.size()) + " of them weights; a plan is limited to 2 GiB)",
        ErrorCode::InvalidArgument);
  flatbuffers::FlatBufferBuilder fbb(static_cast<size_t>(bound));
  auto str = [&](const std::string& s) { return fbb.CreateString(s); };

  // Shape program.
  std::vector<fbs::Instr> instrs;
  instrs.reserve(plan.program.size());
  for (const compiler::Instr& in : plan.program.instructions())
    instrs.emplace_back(in.imm, in.a, in.b, in.c, static_cast<fbs::IntOp>(in.op));
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbols;
  for (const std::string& s : plan.program.symbol_names()) symbols.push_back(str(s));
  std::vector<flatbuffers::Offset<fbs::Assertion>> assertions;
  for (const compiler::Assertion& a : plan.program.assertions())
    assertions.push_back(fbs::CreateAssertion(fbb, a.condition, str(a.message)));
  auto program = fbs::CreateShapeProgram(fbb, fbb.CreateVectorOfStructs(instrs), fbb.CreateVector(symbols),
                                         fbb.CreateVector(assertions));

  auto io = [&](const std::vector<IoTensor>& ts) {
    std::vector<flatbuffers::Offset<fbs::IoTensor>> out;
    for (const IoTensor& t : ts) {
      const fbs::Shape4 shape(t.shape[0], t.shape[1], t.shape[2], t.shape[3]);
      out.push_back(fbs::CreateIoTensor(fbb, str(t.name), &shape, t.scratch));
    }
    return fbb.CreateVector(out);
  };
  auto inputs = io(plan.inputs);
  auto outputs = io(plan.outputs);

  std::vector<flatbuffers::Offset<fbs::Pipeline>> pipelines;
  for (const Pipeline& p : plan.pipelines) {
    std::vector<flatbuffers::Offset<fbs::Define>> defines;
    for (const auto& [name, value] : p.defines) defines.push_back(fbs::CreateDefine(fbb, str(name), str(value)));
    const fbs::UInt3 local_size(p.local_size[0], p.local_size[1], p.local_size[2]);
    pipelines.push_back(fbs::CreatePipeline(fbb, str(p.family), fbb.CreateVector(defines),
                                            fbb.CreateVector(p.spirv), p.binding_count, p.push_constant_count,
                                            &local_size));
  }
  auto pipelines_v = fbb.CreateVector(pipelines);

  std::vector<flatbuffers::Offset<fbs::ScratchTensor>> scratch;
  for (const ScratchTensor& s : plan.scratch) scratch.push_back(fbs::CreateScratchTensor(fbb, str(s.name), s.size_bytes));
  auto scratch_v = fbb.CreateVector(scratch);

  std::vector<flatbuffers::Offset<fbs::WeightRange>> weights;
  for (const WeightRange& w : plan.weights)
    weights.push_back(fbs::CreateWeightRange(fbb, str(w.name), w.offset, w.size));
  auto weights_v = fbb.CreateVector(weights);

  // The generated CreateXDirect helpers do this for force_align; the plain API needs it spelled out.
  fbb.ForceVectorAlignment(plan.weight_data.size(), sizeof(uint8_t), kBufferAlignment);
  auto weight_data = fbb.CreateVector(plan.weight_data);

  std::vector<flatbuffers::Offset<fbs::Dispatch>> dispatches;
  for (const Dispatch& d : plan.dispatches) {
    std::vector<fbs::Binding> bindings;
    for (const Binding& b : d.bindings)
      bindings.emplace_back(b.index, static_cast<fbs::Resource>(b.resource), static_cast<fbs::Access>(b.access));
    const fbs::UInt3 groups(d.groups[0], d.groups[1], d.groups[2]);
    dispatches.push_back(fbs::CreateDispatch(fbb, str(d.name), d.pipeline, fbb.CreateVectorOfStructs(bindings),
                                             fbb.CreateVector(d.push_constants), &groups));
  }
  auto dispatches_v = fbb.CreateVector(dispatches);

  auto root = fbs::CreatePlan(fbb, Plan::kFormatVersion, static_cast<fbs::Precision>(plan.precision),
                              str(plan.model_name), program, inputs, outputs, pipelines_v, scratch_v, weights_v,
                              weight_data, dispatches_v);
  fbs::FinishSizePrefixedPlanBuffer(fbb, root);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

Plan deserialize_plan(std::span<const uint8_t> bytes) {
  const size_t n = bytes.size();
  if (n < kMinPlanBytes) bad(std::to_string(n) + " bytes is too short for a plan (truncated or empty)");
  if (n >= FLATBUFFERS_MAX_BUFFER_SIZE) bad(std::to_string(n) + " bytes is larger than any plan (2 GiB limit)");

  // flatbuffers reads scalars in place, so the buffer must be aligned; a blob from SQLite or a
  // file read at an odd offset is copied once.
  std::unique_ptr<AlignedBlock[]> copy;
  const uint8_t* data = bytes.data();
  if (reinterpret_cast<uintptr_t>(data) % kBufferAlignment != 0) {
    copy.reset(new AlignedBlock[(n + kBufferAlignment - 1) / kBufferAlignment]);
    std::memcpy(copy.get(), data, n);
    data = copy.get()->bytes;
  }

  // Identifier before size: for a foreign file "not a plan" is the useful message.
  if (!flatbuffers::BufferHasIdentifier(data, kPlanFileIdentifier, /*size_prefixed=*/true))
    bad("not a denox plan (file identifier '" + printable_identifier(data + 2 * kPrefixBytes) + "', expected '" +
        kPlanFileIdentifier + "')");
  const uint64_t declared = flatbuffers::ReadScalar<flatbuffers::uoffset_t>(data);
  if (declared > n - kPrefixBytes)
    bad("truncated: the plan is " + std::to_string(declared + kPrefixBytes) + " bytes, only " + std::to_string(n) +
        " were read");
  if (declared < n - kPrefixBytes)
    bad(std::to_string(n - kPrefixBytes - declared) + " unexpected bytes after the end of the plan");

  // The version through PlanHeader first (only the root table and its field 0 are verified),
  // so that a plan of another version is named as such even if the rest of its layout differs.
  {
    flatbuffers::Verifier header(data, n);
    if (!header.VerifySizePrefixedBuffer<fbs::PlanHeader>(kPlanFileIdentifier))
      bad("corrupt: the root table of the plan does not verify");
    const uint32_t version = flatbuffers::GetSizePrefixedRoot<fbs::PlanHeader>(data)->format_version();
    const std::string ours = std::to_string(Plan::kFormatVersion);
    if (version > Plan::kFormatVersion)
      bad("format version " + std::to_string(version) + " was written by a newer denox (this one reads version " +
              ours + "); rebuild the plan from the model",
          ErrorCode::Unsupported);
    if (version < Plan::kFormatVersion)
      bad("format version " + std::to_string(version) + " was written by an older denox (this one reads version " +
              ours + "); rebuild the plan from the model",
          ErrorCode::Unsupported);
  }

  // Full structural verification: every offset, vector length and string inside the buffer,
  // tables not nested absurdly deep, alignment. After this, reading any field is safe.
  flatbuffers::Verifier verifier(data, n);
  if (!fbs::VerifySizePrefixedPlanBuffer(verifier))
    bad("corrupt: flatbuffers verification of the " + std::to_string(n) + "-byte plan failed");
  const fbs::Plan* root = fbs::GetSizePrefixedPlan(data);

  copy_budget = n;
  charge_vector(root->pipelines());
  charge_vector(root->scratch());
  charge_vector(root->weights());
  charge_vector(root->weight_data());
  charge_vector(root->dispatches());
  Plan plan;
  plan.precision = static_cast<Precision>(root->precision());
  plan.model_name = text(root->model_name());
  plan.program = read_program(root->program());
  plan.inputs = read_io(root->inputs());
  plan.outputs = read_io(root->outputs());
  if (root->pipelines()) {
    plan.pipelines.reserve(root->pipelines()->size());
    for (const fbs::Pipeline* p : *root->pipelines()) plan.pipelines.push_back(read_pipeline(p));
  }
  if (root->scratch())
    for (const fbs::ScratchTensor* s : *root->scratch()) plan.scratch.push_back({text(s->name()), s->size_bytes()});
  if (root->weights())
    for (const fbs::WeightRange* w : *root->weights()) plan.weights.push_back({text(w->name()), w->offset(), w->size()});
  if (root->weight_data()) plan.weight_data.assign(root->weight_data()->begin(), root->weight_data()->end());
  if (root->dispatches()) {
    plan.dispatches.reserve(count(root->dispatches()));
    for (const fbs::Dispatch* d : *root->dispatches()) plan.dispatches.push_back(read_dispatch(d));
  }

  validate_plan(plan);
  return plan;
}

}  // namespace denox::plan
