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

// base_sink<std::mutex> serializes sink_it_, so the caller's callback is never entered twice at
// once from this sink (the header still asks for a thread-safe callback: future sinks may not).
// Without a callback it writes to stderr as spdlog's default logger does. The callback is
// switched under the same mutex, so once set() returns the previous one is never called again.
class SwitchSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set(denox_log_callback fn, void* user) {
    std::lock_guard lock(mutex_);
    fn_ = fn;
    user_ = user;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (fn_ == nullptr) {
      stderr_->log(msg);
      return;
    }
    const std::string text(msg.payload.begin(), msg.payload.end());
    fn_(to_denox(msg.level), text.c_str(), user_);
  }
  void flush_() override {
    if (fn_ == nullptr) stderr_->flush();
  }

 private:
  denox_log_callback fn_ = nullptr;
  void* user_ = nullptr;
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> stderr_ = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
};

// denox's one logger, made spdlog's default by the first denox_set_log_callback. Later calls
// change its sink and level and never swap the default logger again: spdlog::warn on another
// thread (a background job) logs through a raw pointer to the default logger, which a swap
// would free under it.
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

void install_default_logger() {
  // spdlog's own default logger has an empty name; an application's (the CLI's) is kept.
  spdlog::logger* current = spdlog::default_logger_raw();
  if (current != nullptr && !current->name().empty()) return;
  DenoxLogger& denox = denox_logger();
  denox.logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(denox.logger);
}

}  // namespace denox::api

extern "C" void denox_set_log_callback(denox_log_callback callback, void* user_data, denox_log_level min_level) {
  denox::api::clear_error();
  try {
    DenoxLogger& denox = denox_logger();
    denox.sink->set(callback, user_data);
    denox.logger->set_level(to_spdlog(min_level));
    if (spdlog::default_logger_raw() != denox.logger.get()) spdlog::set_default_logger(denox.logger);
  } catch (const std::bad_alloc&) {
    denox::api::set_error(DENOX_ERROR_OUT_OF_HOST_MEMORY, "denox_set_log_callback", "out of host memory");
  } catch (const std::exception& e) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", e.what());
  } catch (...) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", "unknown exception");
  }
}
