// Catch2 v2's main for the kernel tests. The [coop] tests' device runs under the validation layer
// only on request (coop_support.hpp); its errors are counted, not asserted in each test, so this
// main names every test case that added some and fails the run when any were reported. It
// destroys the shared devices before returning (gpu_test_support.hpp's destroy_device()).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdint>
#include <iostream>
#include <stdexcept>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"

namespace {

struct CoopValidationListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  uint64_t errors_before = 0;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TestEventListenerBase::testCaseStarting(info);
    errors_before = denox::testing::coop_validation_errors();
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const uint64_t added = denox::testing::coop_validation_errors() - errors_before;
    if (added > 0)
      std::cerr << "validation layer: " << added << " error(s) on the [coop] device in test case '"
                << stats.testInfo.name << "' (the messages are in the log above)\n";
    TestEventListenerBase::testCaseEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(CoopValidationListener)

int main(int argc, char** argv) {
  try {
    (void)denox::testing::test_shard();
  } catch (const std::invalid_argument& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  int rc = Catch::Session().run(argc, argv);
  if (const uint64_t errors = denox::testing::coop_validation_errors(); errors > 0) {
    std::cerr << "validation layer: " << errors << " error(s) on the [coop] device; failing the run\n";
    if (rc == 0) rc = 1;
  }
  denox::testing::destroy_coop_device();
  denox::testing::destroy_device();
  return rc;
}
