#include "common/run_on_threads.hpp"

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace denox {

void run_on_threads(unsigned threads, std::atomic<bool>& stop, const std::function<void()>& work) {
  std::mutex first_mutex;
  std::exception_ptr first;
  auto guarded = [&] {
    try {
      work();
    } catch (...) {
      std::lock_guard lock(first_mutex);
      if (!first) first = std::current_exception();
      stop = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {  // (no thread to be had, or no memory for one: the threads running finish the work)
      if (pool.empty()) pool.reserve(threads - 1);
      pool.emplace_back(guarded);
    } catch (...) {
      break;
    }
  }
  guarded();
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace denox
