// Catch2 v2's main for the C API tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
