// The log callback: an spdlog sink that forwards formatted lines to the caller's function.
// denox logs through spdlog's default logger; the first denox_set_log_callback makes denox's
// own logger (one switchable sink) the default, later ones only switch what its sink calls.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "api/api_internal.hpp"

namespace {

denox_log_level to_denox(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return DENOX_LOG_DEBUG;
    case spdlog::level::info: return DENOX_LOG_INFO;
    case spdlog::level::warn: return DENOX_LOG_WARN;
    default: return DENOX_LOG_ERROR;
  }
}

spdlog::level::level_enum to_spdlog(denox_log_level level) {
  switch (level) {
    case DENOX_LOG_DEBUG: return spdlog::level::debug;
    case DENOX_LOG_INFO: return spdlog::level::info;
    case DENOX_LOG_WARN: return spdlog::level::warn;
    case DENOX_LOG_ERROR: return spdlog::level::err;
    case DENOX_LOG_OFF: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// The sink serializes the callback with its own mutex, so the caller's callback is never
// entered twice at once from this sink (the header still asks for a thread-safe callback).
// Without a callback it writes to stderr as spdlog's default logger does. The callback is
// switched under the same mutex, so once set() returns the previous one is never called again.
// A callback may itself call denox_set_log_callback (to unregister, say): this thread then
// already holds the mutex (in_callback), so set() changes the fields without taking it. A line
// logged from inside the callback (an engine whose callback logs through spdlog's default
// logger, which is denox's) is dropped: the callback would re-enter itself, and base_sink's own
// mutex (so null_mutex here) would have deadlocked on it.
thread_local bool in_callback = false;

class SwitchSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  void set(denox_log_callback fn, void* user) {
    std::unique_lock lock(switch_mutex_, std::defer_lock);
    if (!in_callback) lock.lock();
    fn_ = fn;
    user_ = user;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (in_callback) return;
    std::lock_guard lock(switch_mutex_);
    if (fn_ == nullptr) {
      stderr_->log(msg);
      return;
    }
    const std::string text(msg.payload.begin(), msg.payload.end());
    // Reset also if the callback throws (spdlog swallows it): set() must lock again after.
    struct InCallback {
      InCallback() { in_callback = true; }
      ~InCallback() { in_callback = false; }
    } scope;
    fn_(to_denox(msg.level), text.c_str(), user_);
  }
  void flush_() override {
    if (in_callback) return;
    std::lock_guard lock(switch_mutex_);
    if (fn_ == nullptr) stderr_->flush();
  }

 private:
  std::mutex switch_mutex_;
  denox_log_callback fn_ = nullptr;
  void* user_ = nullptr;
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> stderr_ = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
};

// denox's one logger, made spdlog's default by the first context or denox_set_log_callback
// (install, below). Later calls change its sink and level and never swap the default logger
// again: spdlog::warn on another thread (a background job) logs through a raw pointer to the
// default logger, which a swap would free under it.
struct DenoxLogger {
  std::shared_ptr<SwitchSink> sink = std::make_shared<SwitchSink>();
  std::shared_ptr<spdlog::logger> logger = std::make_shared<spdlog::logger>("denox", sink);
};

DenoxLogger& denox_logger() {
  static DenoxLogger instance;
  return instance;
}

}  // namespace

namespace denox::api {

namespace {

std::mutex install_mutex;  // denox's own installs, from context creation and set_log_callback

// Makes denox's logger the default: always (`replace_any`), or only over spdlog's own default
// logger, which has an empty name (an application's, the CLI's, is kept).
void install(bool replace_any, spdlog::level::level_enum level) {
  std::lock_guard lock(install_mutex);
  DenoxLogger& denox = denox_logger();
  const std::shared_ptr<spdlog::logger> current = spdlog::default_logger();  // (a reference, not a raw pointer)
  if (current == denox.logger) {
    if (replace_any) denox.logger->set_level(level);
    return;
  }
  if (!replace_any && current != nullptr && !current->name().empty()) return;
  denox.logger->set_level(level);
  spdlog::set_default_logger(denox.logger);
}

}  // namespace

void install_default_logger() { install(false, spdlog::level::warn); }

}  // namespace denox::api

extern "C" void denox_set_log_callback(denox_log_callback callback, void* user_data, denox_log_level min_level) {
  denox::api::clear_error();
  try {
    denox_logger().sink->set(callback, user_data);
    // From inside a callback the logger is already the default (the callback runs through it),
    // and install() would take spdlog's registry lock under the sink's: the level alone.
    if (in_callback) denox_logger().logger->set_level(to_spdlog(min_level));
    else denox::api::install(true, to_spdlog(min_level));
  } catch (const std::bad_alloc&) {
    denox::api::set_error(DENOX_ERROR_OUT_OF_HOST_MEMORY, "denox_set_log_callback", "out of host memory");
  } catch (const std::exception& e) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", e.what());
  } catch (...) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", "unknown exception");
  }
}
