// validate_plan: the invariants the runtime relies on without checking again. A deserialized
// plan comes from an untrusted file, so everything the runtime indexes with, sizes with or
// hands to Vulkan is checked here, with a message that says where the plan is wrong.
#include <cstdio>
#include <string>

#include "common/error.hpp"
#include "compiler/plan/plan_serialize.hpp"

namespace denox::plan {

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr uint32_t kMaxBindings = 256;
constexpr uint32_t kMaxPushConstantWords = 1024;
constexpr size_t kSpirvHeaderWords = 5;  // magic, version, generator, bound, schema
constexpr uint64_t kWeightAlignment = 256;
// How many of each a plan may hold. Placing scratch memory and deriving barriers grow faster than
// linearly with these, so a forged plan of millions would stall its load. A plan denox compiles
// stays far below (OIDN's largest: ~40 dispatches; the importer's cap of 1024 operators, each a
// few dispatches at most).
constexpr size_t kMaxDispatches = 16384, kMaxScratchTensors = 16384, kMaxPipelines = 4096, kMaxWeightRanges = 16384,
                 kMaxIoTensors = 256;  // (the importer refuses models with more: onnx_import.hpp's kMaxGraphIo)

[[noreturn]] void bad(const std::string& what) { fail(ErrorCode::InvalidModel, "plan: " + what); }

std::string quoted(const std::string& s) { return "'" + s + "'"; }

class Validator {
 public:
  explicit Validator(const Plan& plan) : plan_(plan), values_(plan.program.size()) {}

  void run() {
    if (static_cast<unsigned>(plan_.precision) > static_cast<unsigned>(Precision::F16))
      bad("unknown precision " + std::to_string(static_cast<unsigned>(plan_.precision)));
    count("dispatches", plan_.dispatches.size(), kMaxDispatches);
    count("scratch tensors", plan_.scratch.size(), kMaxScratchTensors);
    count("pipelines", plan_.pipelines.size(), kMaxPipelines);
    count("weight ranges", plan_.weights.size(), kMaxWeightRanges);
    count("inputs", plan_.inputs.size(), kMaxIoTensors);
    count("outputs", plan_.outputs.size(), kMaxIoTensors);
    io_tensors("input", plan_.inputs);
    io_tensors("output", plan_.outputs);
    for (size_t i = 0; i < plan_.pipelines.size(); ++i) pipeline(i);
    for (size_t i = 0; i < plan_.scratch.size(); ++i)
      value("scratch tensor " + std::to_string(i) + " (" + quoted(plan_.scratch[i].name) + ") size",
            plan_.scratch[i].size_bytes);
    for (size_t i = 0; i < plan_.weights.size(); ++i) weight_range(i);
    for (size_t i = 0; i < plan_.dispatches.size(); ++i) dispatch(i);
  }

 private:
  static void count(const char* what, size_t n, size_t limit) {
    if (n > limit) bad("has " + std::to_string(n) + " " + what + ", more than " + std::to_string(limit));
  }

  // A ValueId used by `who` must name an instruction of the program.
  void value(const std::string& who, ValueId v) const {
    if (v >= values_)
      bad(who + " refers to shape value %" + std::to_string(v) + ", the program has " + std::to_string(values_));
  }

  void io_tensors(const char* kind, const std::vector<IoTensor>& ts) const {
    static const char* const dims[4] = {"N", "C", "H", "W"};
    for (size_t i = 0; i < ts.size(); ++i) {
      const std::string who = std::string(kind) + " " + std::to_string(i) + " (" + quoted(ts[i].name) + ")";
      for (size_t k = 0; k < 4; ++k) value(who + " extent " + dims[k], ts[i].shape[k]);
      if (ts[i].scratch >= plan_.scratch.size())
        bad(who + " is scratch tensor " + std::to_string(ts[i].scratch) + ", the plan has " +
            std::to_string(plan_.scratch.size()));
    }
  }

  void pipeline(size_t i) const {
    const Pipeline& p = plan_.pipelines[i];
    const std::string who = "pipeline " + std::to_string(i) + " (" + quoted(p.family) + ")";
    // Empty SPIR-V means "not compiled yet" (the compiler fills it in after planning); anything
    // else goes to vkCreateShaderModule, which must not see garbage.
    if (!p.spirv.empty()) {
      if (p.spirv.size() < kSpirvHeaderWords)
        bad(who + " has " + std::to_string(p.spirv.size()) + " SPIR-V words, less than a SPIR-V header");
      if (p.spirv[0] != kSpirvMagic) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08x", p.spirv[0]);
        bad(who + " SPIR-V starts with " + hex + ", not the SPIR-V magic number 0x07230203");
      }
    }
    for (size_t k = 0; k < 3; ++k)
      if (p.local_size[k] == 0) bad(who + " has a zero workgroup size");
    // Counts the runtime allocates for before any device limit is compared (pipelines no
    // dispatch uses included): far above what a denox shader has (a few dozen), far below what
    // would cost memory.
    if (p.binding_count > kMaxBindings)
      bad(who + " has " + std::to_string(p.binding_count) + " bindings, more than " + std::to_string(kMaxBindings));
    if (p.push_constant_count > kMaxPushConstantWords)
      bad(who + " has " + std::to_string(p.push_constant_count) + " push constant words, more than " + std::to_string(kMaxPushConstantWords));
  }

  void weight_range(size_t i) const {
    const WeightRange& w = plan_.weights[i];
    const std::string who = "weight range " + std::to_string(i) + " (" + quoted(w.name) + ")";
    const uint64_t total = plan_.weight_data.size();
    // Written as two comparisons so that offset + size cannot overflow.
    if (w.offset > total || w.size > total - w.offset)
      bad(who + " is bytes [" + std::to_string(w.offset) + ", +" + std::to_string(w.size) +
          ") of the weight data, which has " + std::to_string(total) + " bytes");
    if (w.offset % kWeightAlignment != 0)
      bad(who + " starts at byte " + std::to_string(w.offset) + ", not a multiple of 256");
  }

  void dispatch(size_t i) const {
    const Dispatch& d = plan_.dispatches[i];
    const std::string who = "dispatch " + std::to_string(i) + " (" + quoted(d.name) + ")";
    if (d.pipeline >= plan_.pipelines.size())
      bad(who + " uses pipeline " + std::to_string(d.pipeline) + ", the plan has " +
          std::to_string(plan_.pipelines.size()));
    const Pipeline& p = plan_.pipelines[d.pipeline];
    if (d.bindings.size() != p.binding_count)
      bad(who + " has " + std::to_string(d.bindings.size()) + " bindings, its pipeline " +
          std::to_string(d.pipeline) + " (" + quoted(p.family) + ") has " + std::to_string(p.binding_count));
    for (size_t k = 0; k < d.bindings.size(); ++k) binding(who, k, d.bindings[k]);
    if (d.push_constants.size() != p.push_constant_count)
      bad(who + " has " + std::to_string(d.push_constants.size()) + " push constants, its pipeline " +
          std::to_string(d.pipeline) + " (" + quoted(p.family) + ") has " + std::to_string(p.push_constant_count));
    for (size_t k = 0; k < d.push_constants.size(); ++k)
      value(who + " push constant " + std::to_string(k), d.push_constants[k]);
    for (size_t k = 0; k < 3; ++k) value(who + " group count " + "xyz"[k], d.groups[k]);
  }

  void binding(const std::string& who, size_t k, const Binding& b) const {
    const std::string at = who + " binding " + std::to_string(k);
    if (static_cast<unsigned>(b.access) > static_cast<unsigned>(Access::ReadWrite))
      bad(at + " has unknown access " + std::to_string(static_cast<unsigned>(b.access)));
    switch (b.resource) {
      case Resource::Scratch:
        if (b.index >= plan_.scratch.size())
          bad(who + " binds scratch tensor " + std::to_string(b.index) + ", the plan has " +
              std::to_string(plan_.scratch.size()));
        return;
      case Resource::Weights:
        if (b.index >= plan_.weights.size())
          bad(who + " binds weight range " + std::to_string(b.index) + ", the plan has " +
              std::to_string(plan_.weights.size()));
        // Weights are uploaded once and shared by every frame: a write would corrupt them.
        if (b.access != Access::Read)
          bad(at + " writes weight range " + std::to_string(b.index) + " (" +
              quoted(plan_.weights[b.index].name) + "), weights are read-only");
        return;
    }
    bad(at + " has unknown resource kind " + std::to_string(static_cast<unsigned>(b.resource)));
  }

  const Plan& plan_;
  const size_t values_;
};

}  // namespace

void validate_plan(const Plan& plan) { Validator(plan).run(); }

}  // namespace denox::plan
