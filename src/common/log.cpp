#include "common/log.hpp"

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace denox::log {

namespace {

// Set while this thread is inside the sink (forwarding or calling the caller's function).
thread_local bool in_sink = false;

// DeferScope: how many are alive on this thread, and the lines they hold back. A pointer (trivially
// destructible, allocated only while a scope is alive): a thread_local vector would be destroyed
// at thread exit before static destructors that may still log through a scope.
using Lines = std::vector<std::pair<spdlog::level::level_enum, std::string>>;
thread_local int defer_depth = 0;
thread_local Lines* deferred_lines = nullptr;

// One line at a time, under the sink's own mutex (base_sink's is null_mutex: a line logged from
// inside the sink on the same thread is dropped by `in_sink` instead of deadlocking on it).
// set() takes the same mutex, so once it returns the previous function is never called again;
// from inside the sink (a callback that switches callbacks) it already holds it.
class ForwardSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  void set(Forward fn, Target target, void* user) {
    std::unique_lock lock(mutex_, std::defer_lock);
    if (!in_sink) lock.lock();
    fn_ = fn;
    target_ = target;
    user_ = user;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (in_sink) return;
    if (defer_depth > 0) {
      try {
        if (deferred_lines == nullptr) deferred_lines = new Lines();
        deferred_lines->emplace_back(msg.level, std::string(msg.payload.begin(), msg.payload.end()));
      } catch (...) {  // (out of memory: the line is lost, not the caller's work)
      }
      return;
    }
    std::lock_guard lock(mutex_);
    // Reset also if what it calls throws (spdlog swallows it): set() must lock again after.
    struct InSink {
      InSink() { in_sink = true; }
      ~InSink() { in_sink = false; }
    } scope;
    if (fn_ != nullptr) {
      const std::string text(msg.payload.begin(), msg.payload.end());
      fn_(msg.level, text.c_str(), target_, user_);
      return;
    }
    // A reference, not spdlog's raw default pointer: the application may swap its default
    // logger on another thread meanwhile. Straight to its sinks, filtered by its level and
    // theirs, so that the line keeps denox's name ("[denox]" in its format).
    // Its flush level is honoured (an application that flushes on warnings keeps denox's last
    // lines if the process then dies). An asynchronous default logger's queue is bypassed: its
    // sinks are called on denox's thread.
    const std::shared_ptr<spdlog::logger> fallback = spdlog::default_logger();
    if (fallback == nullptr || !fallback->should_log(msg.level)) return;
    const bool flush = msg.level >= fallback->flush_level();
    for (const auto& sink : fallback->sinks()) {
      if (!sink->should_log(msg.level)) continue;
      sink->log(msg);
      if (flush) sink->flush();
    }
  }
  void flush_() override {}

 private:
  std::mutex mutex_;
  Forward fn_ = nullptr;
  Target target_ = nullptr;
  void* user_ = nullptr;
};

struct DenoxLogger {
  std::shared_ptr<ForwardSink> sink = std::make_shared<ForwardSink>();
  spdlog::logger logger{"denox", sink};
  DenoxLogger() { logger.set_level(spdlog::level::warn); }
};

DenoxLogger& instance() {
  static DenoxLogger denox;
  return denox;
}

}  // namespace

DeferScope::DeferScope() { ++defer_depth; }

DeferScope::~DeferScope() {
  if (--defer_depth > 0 || deferred_lines == nullptr) return;
  const std::unique_ptr<Lines> lines(std::exchange(deferred_lines, nullptr));
  for (const auto& [level, text] : *lines) {
    try {
      instance().logger.log(level, "{}", text);
    } catch (...) {  // (a destructor: nothing may leave it)
    }
  }
}

spdlog::logger& logger() { return instance().logger; }

void set_forward(Forward fn, Target target, void* user) { instance().sink->set(fn, target, user); }

}  // namespace denox::log
