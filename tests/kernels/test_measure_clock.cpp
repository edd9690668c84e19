// Which edges measure() times again after the clock keeper read the GPU's clock down
// (runtime/measure/measure.hpp, clock_dip_edges; measure.cpp step 4 says why). On lavapipe the
// keeper reads no clock, so the selection is checked here on made-up rates.
#include <catch2/catch.hpp>

#include "runtime/measure/measure.hpp"

using denox::measure::clock_dip_edges;
using denox::measure::TimedEdgeClock;

TEST_CASE("edges whose runs began or ended with the clock down are timed again", "[measure]") {
  // Rates in iterations per ms; each edge's floor 95 (0.95 of a best of 100); the end read after
  // the last edge: 100 unless a section says otherwise.
  const double floor = 95;
  SECTION("a clock that stays up: none") {
    CHECK(clock_dip_edges({{0, 100, 100, 95}, {1, 99, 97, 95}, {2, 100, 100, 95}}, 100, floor).empty());
  }
  SECTION("a clock found low that no warm-up got back: the edge before (its runs ended low) and this one") {
    CHECK(clock_dip_edges({{0, 100, 100, 95}, {1, 85, 80, 95}, {2, 100, 100, 95}}, 100, floor) == std::vector<size_t>{0, 1});
  }
  SECTION("a clock found low before an edge, warmed up before its runs: the edge timed before it") {
    // Edge 2 found the clock at 80 (edge 1's runs ended with it down), warmed it up to 99.
    CHECK(clock_dip_edges({{0, 100, 100, 95}, {1, 100, 100, 95}, {2, 99, 80, 95}, {3, 100, 100, 95}}, 100, floor) == std::vector<size_t>{1});
  }
  SECTION("both, and the pending indices of the edges, not their order") {
    CHECK(clock_dip_edges({{7, 90, 90, 95}, {3, 100, 100, 95}, {5, 100, 90, 95}}, 100, floor) == std::vector<size_t>{7, 3});
  }
  SECTION("a rate not read (0) counts as neither") {
    CHECK(clock_dip_edges({{0, 0, 0, 95}, {1, 100, 0, 95}, {2, 0, 100, 95}}, 100, floor).empty());
  }
  SECTION("the last edge: its end is the reading after the loop") {
    CHECK(clock_dip_edges({{0, 100, 100, 95}, {1, 94, 94, 95}}, 100, floor) == std::vector<size_t>{0, 1});
    CHECK(clock_dip_edges({{0, 100, 100, 95}, {1, 100, 100, 95}}, 100, floor).empty());
    CHECK(clock_dip_edges({{0, 100, 100, 95}, {1, 100, 100, 95}}, 90, floor) == std::vector<size_t>{1});
  }
  SECTION("each reading against the floor of its time: a best lowered later excuses no earlier edge") {
    // Edge 0 ran at 90 while the floor was 95; the best later fell to 90 (floor 85.5).
    CHECK(clock_dip_edges({{0, 90, 90, 95}, {1, 90, 90, 85.5}}, 90, 85.5) == std::vector<size_t>{0});
  }
}
