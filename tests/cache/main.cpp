// Catch2 v2's main for the cache tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
