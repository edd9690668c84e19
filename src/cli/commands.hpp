// The `denox` command line: one function per subcommand, registered on a CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace denox::cli {

// Each register_* adds its subcommand and returns the action to run when it was chosen.
using Action = std::function<int()>;
Action register_inspect(CLI::App& app);
Action register_run(CLI::App& app);
Action register_make_model(CLI::App& app);
Action register_make_image(CLI::App& app);
Action register_info(CLI::App& app);
Action register_bench(CLI::App& app);
Action register_cache(CLI::App& app);
Action register_compile(CLI::App& app);

// --device, --precision, --cache, --no-cache, --shipped-cache, --validation, --tuning for the
// Vulkan commands.
struct GpuOptions;
void add_gpu_options(CLI::App* cmd, GpuOptions& options);

}  // namespace denox::cli
