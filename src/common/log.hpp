// denox's own logger. denox logs through one spdlog logger ("denox") that it never registers
// and never makes spdlog's default: libdenox shares the process's libspdlog with an engine that
// may use spdlog itself, and a library must not take over the application's default logger or
// its levels (nor see the application's lines in its log callback).
// Its level is warn until set. By default its one sink forwards each line to spdlog's default
// logger of the moment (the application's, or spdlog's own stderr logger), which filters it by
// its own level too; the C API's denox_set_log_callback sends the lines to the caller's
// function instead (api_log.cpp). Each linked image (libdenox.so, the CLI, a test) has its own.
#pragma once

#include <spdlog/spdlog.h>

#include <utility>

namespace denox::log {

spdlog::logger& logger();

// Where the sink sends a line instead of spdlog's default logger (fn nullptr: back to it):
// fn(level, text, target, user), with the `target` and `user` given here (the C API passes the
// caller's callback and its user_data). Called on the logging thread, one line at a time (the
// sink serializes them). A line logged on that thread while it runs (a callback that calls
// denox, or a default logger whose sink does) is dropped instead of re-entering it. Once
// set_forward returns, the previous function is not called again; it may be called from inside
// the function itself.
using Target = void (*)();
using Forward = void (*)(spdlog::level::level_enum level, const char* text, Target target, void* user);
void set_forward(Forward fn, Target target, void* user);

// While one is alive on a thread, denox's lines logged on that thread are held back, and logged
// when the outermost one ends. Code that holds a lock which a log callback's call into denox may
// need (the cache's, through denox_context_get_info) declares one before taking the lock: a
// callback then never runs under that lock, on this thread or, waiting for the sink, on another.
class DeferScope {
 public:
  DeferScope();
  ~DeferScope();
  DeferScope(const DeferScope&) = delete;
  DeferScope& operator=(const DeferScope&) = delete;
};

template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  logger().debug(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  logger().info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  logger().warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  logger().error(fmt, std::forward<Args>(args)...);
}

}  // namespace denox::log
