// Catch2 v2's main for the C API tests; it destroys the engine's device before returning
// (api_test_util.hpp's destroy_engine_device()).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "api_test_util.hpp"

int main(int argc, char** argv) {
  const int rc = Catch::Session().run(argc, argv);
  denox::test::destroy_engine_device();
  return rc;
}
