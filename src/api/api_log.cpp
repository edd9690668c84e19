// The log callback. denox logs through its own logger (common/log.hpp), never spdlog's default
// one: denox_set_log_callback points that logger's sink at the caller's function (or, given
// NULL, back at spdlog's default logger) and sets its level. The application's spdlog setup
// (default logger, levels) is not touched.
#include <new>

#include "api/api_internal.hpp"
#include "common/log.hpp"

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

// `target` is the caller's callback, stored as a generic function pointer (converting it back
// to its own type is well defined).
void forward_to_callback(spdlog::level::level_enum level, const char* text, denox::log::Target target, void* user) {
  reinterpret_cast<denox_log_callback>(target)(to_denox(level), text, user);
}

}  // namespace

extern "C" void denox_set_log_callback(denox_log_callback callback, void* user_data, denox_log_level min_level) {
  denox::api::clear_error();
  try {
    if (callback == nullptr) denox::log::set_forward(nullptr, nullptr, nullptr);
    else denox::log::set_forward(forward_to_callback, reinterpret_cast<denox::log::Target>(callback), user_data);
    denox::log::logger().set_level(to_spdlog(min_level));
  } catch (const std::bad_alloc&) {
    denox::api::set_error(DENOX_ERROR_OUT_OF_HOST_MEMORY, "denox_set_log_callback", "out of host memory");
  } catch (const std::exception& e) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", e.what());
  } catch (...) {
    denox::api::set_error(DENOX_ERROR_INTERNAL, "denox_set_log_callback", "unknown exception");
  }
}
