// `denox inspect MODEL.onnx`: what the importer made of a model: inputs and outputs with
// symbolic shapes, one line per op, the shape program, and every error at once.
#include <cstdio>
#include <variant>

#include "cli/commands.hpp"
#include "compiler/import/onnx_import.hpp"

namespace denox::cli {
namespace {

using namespace compiler;

std::string describe_attrs(const Graph& g, const Op& op) {
  const ShapeProgram& p = g.program;
  auto window = [&](const auto& a) {
    std::string s = std::to_string(a.kernel[0]) + "x" + std::to_string(a.kernel[1]);
    if (a.stride[0] != 1 || a.stride[1] != 1) s += " stride " + std::to_string(a.stride[0]) + "," + std::to_string(a.stride[1]);
    if (a.dilation[0] != 1 || a.dilation[1] != 1) s += " dilation " + std::to_string(a.dilation[0]) + "," + std::to_string(a.dilation[1]);
    s += " pads " + p.to_string(a.pad_begin[0]) + "," + p.to_string(a.pad_begin[1]) + "," + p.to_string(a.pad_end[0]) + "," +
         p.to_string(a.pad_end[1]);
    return s;
  };
  if (auto* c = std::get_if<ConvAttrs>(&op.attrs)) return window(*c);
  if (auto* pl = std::get_if<PoolAttrs>(&op.attrs)) return window(*pl);
  if (auto* u = std::get_if<UpsampleAttrs>(&op.attrs)) {
    return "x" + std::to_string(u->scale[0]) + "," + std::to_string(u->scale[1]) + (u->is_floor_division() ? "" : " (rounded source index)");
  }
  if (auto* c = std::get_if<ConcatAttrs>(&op.attrs)) return "axis " + std::to_string(c->axis);
  if (auto* pd = std::get_if<PadAttrs>(&op.attrs)) {
    std::string s;
    for (size_t k = 0; k < pd->begin.size(); ++k) s += (s.empty() ? "" : ", ") + p.to_string(pd->begin[k]) + ":" + p.to_string(pd->end[k]);
    return "[" + s + "] value " + std::to_string(pd->value);
  }
  if (auto* sl = std::get_if<SliceAttrs>(&op.attrs)) {
    std::string s;
    for (size_t k = 0; k < sl->start.size(); ++k) s += (s.empty() ? "" : ", ") + p.to_string(sl->start[k]) + " step " + std::to_string(sl->step[k]);
    return "from [" + s + "]";
  }
  return "";
}

int inspect(const std::string& path) {
  Graph g = import_onnx_file(path);
  std::printf("model: %s (opset %lld)\n", path.c_str(), static_cast<long long>(g.opset));
  std::printf("symbols:");
  for (const auto& s : g.program.symbol_names()) std::printf(" %s", s.c_str());
  std::printf("\ninputs:\n");
  for (TensorId t : g.inputs) std::printf("  %-24s %-8s %s\n", g.tensor(t).name.c_str(), dtype_name(g.tensor(t).dtype), g.shape_string(t).c_str());
  std::printf("outputs:\n");
  for (TensorId t : g.outputs) std::printf("  %-24s %-8s %s\n", g.tensor(t).name.c_str(), dtype_name(g.tensor(t).dtype), g.shape_string(t).c_str());
  std::printf("ops (%zu):\n", g.ops.size());
  for (const Op& op : g.ops) {
    std::string ins;
    for (TensorId t : op.inputs) {
      if (g.tensor(t).is_constant()) continue;
      ins += (ins.empty() ? "" : ", ") + g.tensor(t).name;
    }
    std::printf("  %-20s %-16s %-40s (%s) -> %s\n", op.name.c_str(), op_kind_name(op.attrs), describe_attrs(g, op).c_str(),
                ins.c_str(), g.shape_string(op.output).c_str());
  }
  std::printf("shape program (%zu instructions, %zu checks per resolution):\n%s", g.program.size(),
              g.program.assertions().size(), g.program.listing().c_str());
  return 0;
}

}  // namespace

Action register_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show the ops, symbolic shapes and shape program of an ONNX model");
  auto path = std::make_shared<std::string>();
  cmd->add_option("model", *path, "ONNX model file")->required()->check(CLI::ExistingFile);
  return [path] { return inspect(*path); };
}

}  // namespace denox::cli
