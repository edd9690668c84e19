// The `denox` command line: one function per subcommand, registered on a CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "common/host_tensor.hpp"

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
Action register_calibrate(CLI::App& app);

// "WIDTHxHEIGHT" (or X), each 1 to 65536, nothing else in the string; the error names `option`.
std::pair<uint32_t, uint32_t> parse_extent(const std::string& s, const std::string& option = "--size");

// Whether `path` holds a denox plan (`denox compile --plan`, denox_model_export_plan: its
// flatbuffers identifier, plan::looks_like_plan) rather than an ONNX model. The Vulkan commands
// load such a file with denox_model_load_plan. Errors name the path.
bool is_plan_file(const std::string& path);

// A tensor file: .npy (float32, NCHW) or .pfm (a color image, 1x3xHxW); errors name the path.
HostTensor read_tensor(const std::string& path);

// --device, --precision, --calibration, --cache, --no-cache, --shipped-cache, --validation, --tuning for the
// Vulkan commands.
struct GpuOptions;
void add_gpu_options(CLI::App* cmd, GpuOptions& options);

}  // namespace denox::cli
