// The log callback: an spdlog sink that forwards formatted lines to the caller's function.
// denox logs through spdlog's default logger; setting a callback replaces that logger's sinks.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <new>

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
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  CallbackSink(denox_log_callback fn, void* user) : fn_(fn), user_(user) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text(msg.payload.begin(), msg.payload.end());
    fn_(to_denox(msg.level), text.c_str(), user_);
  }
  void flush_() override {}

 private:
  denox_log_callback fn_;
  void* user_;
};

}  // namespace

extern "C" void denox_set_log_callback(denox_log_callback callback, void* user_data, denox_log_level min_level) {
  denox::api::clear_error();
  try {
    std::shared_ptr<spdlog::logger> logger;
    if (callback != nullptr) {
      logger = std::make_shared<spdlog::logger>("denox", std::make_shared<CallbackSink>(callback, user_data));
    } else {
      logger = spdlog::stderr_color_mt("denox-stderr");
      spdlog::drop("denox-stderr");  // not kept in the registry: set again next time
    }
    logger->set_level(to_spdlog(min_level));
    spdlog::set_default_logger(std::move(logger));
  } catch (const std::bad_alloc&) {
    denox::api::set_error(DENOX_ERROR_OUT_OF_HOST_MEMORY, "denox_set_log_callback", "out of host memory");
  } catch (const std::exception& e) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", e.what());
  } catch (...) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", "unknown exception");
  }
}
