// Small helpers on the in-memory plan: names and the summary the CLI prints.
#include <algorithm>
#include <sstream>

#include "compiler/plan/plan.hpp"
#include "compiler/plan/plan_serialize.hpp"

namespace denox::plan {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::F32: return "fp32";
    case Precision::F16: return "fp16";
  }
  return "unknown";
}

std::string pipeline_key(const Pipeline& p) {
  std::string key = p.family;
  for (const auto& [name, value] : p.defines) key += " " + name + "=" + value;
  return key;
}

namespace {

// "1.5 MiB (1572864 bytes)": readable, and exact for tests and diffs.
std::string bytes_text(uint64_t n) {
  std::ostringstream os;
  if (n >= (uint64_t{1} << 20))
    os << static_cast<double>(n) / static_cast<double>(uint64_t{1} << 20) << " MiB (" << n << " bytes)";
  else if (n >= 1024)
    os << static_cast<double>(n) / 1024.0 << " KiB (" << n << " bytes)";
  else
    os << n << " bytes";
  return os.str();
}

// ShapeProgram::to_string expands shared subexpressions, so a program that reuses values (x+x,
// then that plus itself, ...) would print exponentially long text, and a long chain would
// recurse deeply. The number of nodes each value expands to, saturated, keeps the summary short
// whatever the plan holds.
constexpr uint64_t kMaxPrintedNodes = 64;

std::vector<uint64_t> expanded_sizes(const compiler::ShapeProgram& program) {
  std::vector<uint64_t> nodes(program.size(), 1);
  const auto& instrs = program.instructions();
  for (size_t i = 0; i < instrs.size(); ++i) {
    const compiler::Instr& in = instrs[i];
    if (in.op == compiler::IntOp::Const || in.op == compiler::IntOp::Symbol) continue;
    // An upper bound: unused operands (0) are counted too. Operands are earlier instructions.
    for (ValueId operand : {in.a, in.b, in.c})
      if (operand < i) nodes[i] = std::min(nodes[i] + nodes[operand], kMaxPrintedNodes + 1);
  }
  return nodes;
}

std::string io_text(const Plan& plan, const std::vector<IoTensor>& ts) {
  const std::vector<uint64_t> nodes = expanded_sizes(plan.program);
  std::string out;
  for (const IoTensor& t : ts) {
    if (!out.empty()) out += ", ";
    out += "'" + t.name + "' [";
    for (size_t k = 0; k < t.shape.size(); ++k) {
      if (k) out += ", ";
      // Shapes of a deserialized plan are validated; guard anyway, the summary must not throw
      // on a plan that the compiler is still building.
      const ValueId v = t.shape[k];
      if (v >= plan.program.size())
        out += "?";
      else if (nodes[v] > kMaxPrintedNodes)
        out += "%" + std::to_string(v);
      else
        out += plan.program.to_string(v);
    }
    out += "]";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string plan_summary(const Plan& plan) {
  uint64_t spirv_bytes = 0;
  for (const Pipeline& p : plan.pipelines) spirv_bytes += p.spirv.size() * sizeof(uint32_t);
  std::string symbols;
  for (const std::string& s : plan.program.symbol_names()) symbols += (symbols.empty() ? "" : ", ") + s;

  std::ostringstream os;
  os << "plan '" << plan.model_name << "' (format " << Plan::kFormatVersion << ", "
     << precision_name(plan.precision) << ")\n";
  os << "  inputs:      " << io_text(plan, plan.inputs) << "\n";
  os << "  outputs:     " << io_text(plan, plan.outputs) << "\n";
  os << "  program:     " << plan.program.size() << " instructions, " << plan.program.assertions().size()
     << " assertions, symbols (" << symbols << ")\n";
  os << "  dispatches:  " << plan.dispatches.size() << "\n";
  os << "  pipelines:   " << plan.pipelines.size() << ", SPIR-V " << bytes_text(spirv_bytes) << "\n";
  os << "  scratch:     " << plan.scratch.size() << " tensors\n";
  os << "  weights:     " << plan.weights.size() << " ranges, " << bytes_text(plan.weight_data.size()) << "\n";
  return os.str();
}

}  // namespace denox::plan
