// Catch2 v2's main for the runtime tests; it destroys the shared device before returning
// (gpu_test_support.hpp's destroy_device()).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "gpu_test_support.hpp"

int main(int argc, char** argv) {
  const int rc = Catch::Session().run(argc, argv);
  denox::testing::destroy_device();
  return rc;
}
