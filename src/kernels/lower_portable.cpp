#include "kernels/lower_portable.hpp"

#include "compiler/schedule/schedule.hpp"

namespace denox::kernels {

std::string LoweringTarget::key() const {
  if (!uses_coop()) return "portable";
  std::string k = "coop(";
  for (const auto& s : coop.shapes)
    k += std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.acc_f16 ? "f16," : "f32,");
  k += "sg" + std::to_string(coop.subgroup_size) + ";smem" + std::to_string(coop.max_shared_bytes) +
       (coop.prefer_f16_accumulate ? ";f16acc" : ";f32acc") + (fuse ? ";fuse" : "") + (coop_emulate ? ";emulate" : "") +
       (coop_up2 ? "" : ";noup2") + (nhwc ? ";nhwc" : "") + (coop_tail ? ";tail" : "") + (coop_head ? ";head" : "");
  if (force_config) k += ";force " + force_config->describe();
  for (const auto& [name, c] : conv_configs) k += ";" + name + " " + c.describe();
  if (coop.int8) k += ";int8";
  if (coop.a_rows) k += ";arows";
  if (int8) k += ";" + quant_table_key(*int8);
  return k + ")";
}

plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision) {
  return build_portable_plan(graph, precision, LoweringTarget{});
}

plan::Plan build_portable_plan(const compiler::Graph& graph, plan::Precision precision, const LoweringTarget& target) {
  // The heuristic schedule: the cost model ranks the implementations (fused before unfused,
  // cooperative matrices before FMA loops) and select picks the cheapest derivation.
  autotune::ScheduleOptions options;
  options.precision = precision;
  options.target = target;
  const autotune::Schedule schedule = autotune::schedule_graph(graph, options);
  return autotune::lower_schedule(graph, schedule, precision);
}

}  // namespace denox::kernels
