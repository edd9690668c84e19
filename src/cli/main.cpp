// denox: inspect, run and (later) compile and benchmark ONNX denoisers.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <new>
#include <exception>
#include <vector>

#include "cli/commands.hpp"
#include "cli/gpu_session.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

int main(int argc, char** argv) {
  CLI::App app{"denox: neural denoisers compiled to Vulkan compute"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, denox::cli::Action>> commands;
  auto add = [&](auto reg) {
    size_t before = app.get_subcommands({}).size();
    auto action = reg(app);
    commands.emplace_back(app.get_subcommands({}).at(before), action);
  };
  add(denox::cli::register_inspect);
  add(denox::cli::register_run);
  add(denox::cli::register_make_model);
  add(denox::cli::register_make_image);
  add(denox::cli::register_info);
  add(denox::cli::register_bench);
  add(denox::cli::register_cache);
  add(denox::cli::register_compile);
  add(denox::cli::register_calibrate);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what denox does");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Logs go to stderr: stdout carries results (tables, --json objects).
  spdlog::set_default_logger(spdlog::stderr_color_mt("denox-cli"));
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  // denox's loggers forward to that default one: libdenox's (through the C API) and this
  // program's own copy (the cache and reference code it links directly).
  denox_set_log_callback(nullptr, nullptr, verbose ? DENOX_LOG_DEBUG : DENOX_LOG_WARN);
  denox::log::logger().set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  try {
    for (auto& [sub, action] : commands) {
      if (sub->parsed()) return action();
    }
  } catch (const denox::ApiError& e) {
    std::fprintf(stderr, "denox: %s\n", e.what());
    return 1;
  } catch (const denox::Error& e) {
    std::fprintf(stderr, "denox: %s: %s\n", denox::error_code_name(e.code()), e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "denox: out of host memory\n");  // (not a broken invariant: the input may just be too large)
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "denox: internal error: %s\n", denox::printable_message(e.what()).c_str());
    return 1;
  }
  return 2;
}
