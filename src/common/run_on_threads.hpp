// Work spread over threads whose exceptions do not end the process: an exception that leaves a
// std::thread calls std::terminate, and so does unwinding past a joinable one. For loops where
// every thread takes the next item of a shared list (shader compiles, driver pipelines).
#pragma once

#include <atomic>
#include <functional>

namespace denox {

// Runs `work` on up to `threads` threads, this one included, and joins them all. The first
// exception any of them throws is kept, `stop` is set (work loops test it, so that the other
// threads leave after their current item), and it is rethrown here once every thread has joined.
// Where the system has no thread (or no memory) to give, the ones started and this one do the work.
void run_on_threads(unsigned threads, std::atomic<bool>& stop, const std::function<void()>& work);

}  // namespace denox
