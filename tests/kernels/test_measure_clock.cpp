// Which edges measure() times again after the clock keeper read the GPU's clock down
// (runtime/measure/measure.hpp, clock_dip_edges; measure.cpp step 4 says why). On lavapipe the
// keeper reads no clock, so the selection is checked here on made-up rates.
#include <catch2/catch.hpp>

#include "runtime/measure/measure.hpp"

using denox::measure::clock_dip_edges;
using denox::measure::TimedEdgeClock;

TEST_CASE("edges whose runs began or ended with the clock down are timed again", "[measure]") {
  // Rates in iterations per ms; the floor is 95 (0.95 of a best of 100).
  const double floor = 95;
  SECTION("a clock that stays up: none") {
    CHECK(clock_dip_edges({{0, 100, 100}, {1, 99, 97}, {2, 100, 100}}, floor).empty());
  }
  SECTION("a clock found low that no warm-up got back: the edge before (its runs ended low) and this one") {
    CHECK(clock_dip_edges({{0, 100, 100}, {1, 85, 80}, {2, 100, 100}}, floor) == std::vector<size_t>{0, 1});
  }
  SECTION("a clock found low before an edge, warmed up before its runs: the edge timed before it") {
    // Edge 2 found the clock at 80 (edge 1's runs ended with it down), warmed it up to 99.
    CHECK(clock_dip_edges({{0, 100, 100}, {1, 100, 100}, {2, 99, 80}, {3, 100, 100}}, floor) == std::vector<size_t>{1});
  }
  SECTION("both, and the pending indices of the edges, not their order") {
    CHECK(clock_dip_edges({{7, 90, 90}, {3, 100, 100}, {5, 100, 90}}, floor) == std::vector<size_t>{7, 3});
  }
  SECTION("a rate not read (0) counts as neither") {
    CHECK(clock_dip_edges({{0, 0, 0}, {1, 100, 0}, {2, 0, 100}}, floor).empty());
  }
  SECTION("the last edge found low: it and the one before; nothing after it to read its end") {
    CHECK(clock_dip_edges({{0, 100, 100}, {1, 94, 94}}, floor) == std::vector<size_t>{0, 1});
    CHECK(clock_dip_edges({{0, 100, 100}, {1, 100, 100}}, floor).empty());
  }
}
