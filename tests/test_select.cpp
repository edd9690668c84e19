// Select: the minimum-latency subgraph of a supergraph, checked against brute force on small
// random supergraphs with injected costs, plus the cases that make the problem hard (a value
// shared by two consumers is paid once) and the errors.
#include <catch2/catch.hpp>

#include <random>

#include "common/error.hpp"
#include "compiler/select/select.hpp"

using namespace denox::compiler::select;

TEST_CASE("select prefers a fused edge when it is cheaper than the chain it replaces", "[select]") {
  // 0 -> 1 -> 2 as two edges (1 + 1), or 0 -> 2 fused (1.5); a layout-converting detour 0 -> 3 -> 2.
  Supergraph g;
  g.node_count = 4;
  g.edges = {{{0}, 1, 1.0}, {{1}, 2, 1.0}, {{0}, 2, 1.5}, {{0}, 3, 0.2}, {{3}, 2, 0.2}};
  g.sources = {0};
  g.targets = {2};
  const Selection s = select_min_latency(g);
  REQUIRE(s.feasible);
  CHECK(s.cost == Approx(0.4));
  CHECK(s.edges == std::vector<uint32_t>{3, 4});
  CHECK(derives_targets(g, s.edges));
}

TEST_CASE("select pays once for a value that two consumers share", "[select]") {
  // Skip connection: 1 feeds both 2 and the concat-conv 3. Producing 1 expensively once (5) and
  // reusing it beats two separate cheap-looking paths that each recompute it.
  Supergraph g;
  g.node_count = 5;
  g.edges = {{{0}, 1, 5.0}, {{1}, 2, 1.0}, {{1, 2}, 3, 1.0}, {{0}, 4, 3.5}, {{4}, 2, 3.5}};
  g.sources = {0};
  g.targets = {3};
  const Selection s = select_min_latency(g);
  REQUIRE(s.feasible);
  CHECK(s.cost == Approx(7.0));
  CHECK(select_brute_force(g).cost == Approx(7.0));
}

TEST_CASE("select reports an underivable target and rejects malformed supergraphs", "[select]") {
  Supergraph g;
  g.node_count = 3;
  g.edges = {{{0}, 1, 1.0}};
  g.sources = {0};
  g.targets = {2};
  CHECK_FALSE(select_min_latency(g).feasible);
  CHECK_FALSE(select_brute_force(g).feasible);

  Supergraph cyclic = g;
  cyclic.edges = {{{1}, 2, 1.0}, {{2}, 1, 1.0}};
  CHECK_THROWS_AS(select_min_latency(cyclic), denox::Error);
  Supergraph out_of_range = g;
  out_of_range.edges = {{{7}, 1, 1.0}};
  CHECK_THROWS_AS(select_min_latency(out_of_range), denox::Error);
  Supergraph negative = g;
  negative.edges = {{{0}, 1, -1.0}};
  CHECK_THROWS_AS(select_min_latency(negative), denox::Error);
}

namespace {

// A random layered DAG: nodes in topological order, every edge reads 1..3 earlier nodes.
Supergraph random_supergraph(std::mt19937& rng, uint32_t nodes, uint32_t edges) {
  Supergraph g;
  g.node_count = nodes;
  std::uniform_real_distribution<double> cost(0.1, 10.0);
  const uint32_t sources = 1 + rng() % 2;
  for (uint32_t s = 0; s < sources; ++s) g.sources.push_back(s);
  for (uint32_t i = 0; i < edges; ++i) {
    Edge e;
    e.output = sources + rng() % (nodes - sources);
    const uint32_t arity = 1 + rng() % 3;
    for (uint32_t k = 0; k < arity; ++k) e.inputs.push_back(rng() % e.output);
    e.cost = cost(rng);
    g.edges.push_back(e);
  }
  g.targets = {nodes - 1};
  if (rng() % 3 == 0) g.targets.push_back(sources + rng() % (nodes - sources));
  return g;
}

}  // namespace

TEST_CASE("select matches brute force on random supergraphs", "[select]") {
  std::mt19937 rng(2026);
  int feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Supergraph g = random_supergraph(rng, 4 + rng() % 6, 3 + rng() % 12);
    const Selection fast = select_min_latency(g);
    const Selection slow = select_brute_force(g);
    INFO("trial " << trial);
    REQUIRE(fast.feasible == slow.feasible);
    if (!fast.feasible) continue;
    ++feasible;
    CHECK(fast.cost == Approx(slow.cost).epsilon(1e-12));
    CHECK(derives_targets(g, fast.edges));
    double sum = 0;
    for (uint32_t e : fast.edges) sum += g.edges[e].cost;
    CHECK(sum == Approx(fast.cost).epsilon(1e-12));
  }
  CHECK(feasible > 100);  // the comparison must have had something to compare
}

TEST_CASE("select searches a chain of 200000 values without recursing per value", "[select]") {
  // Two producers per value; the recursive search overflowed the stack on long chains.
  Supergraph g;
  const uint32_t n = 200000;
  g.node_count = n;
  g.sources = {0};
  g.targets = {n - 1};
  for (uint32_t v = 1; v < n; ++v) {
    g.edges.push_back(Edge{{v - 1}, v, 1.0});
    g.edges.push_back(Edge{{v - 1}, v, 0.5});
  }
  const Selection s = select_min_latency(g);
  REQUIRE(s.feasible);
  CHECK(s.edges.size() == n - 1);
  CHECK(s.cost == Approx(0.5 * (n - 1)));
}

TEST_CASE("select stays small on a U-Net-shaped supergraph", "[select]") {
  // 4 levels down and up, 3 layouts per value, each op with 4 configs per layout pair, and
  // fused edges that swallow the pool / the upsample+concat: 720 edges.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.05, 2.0);
  const uint32_t layouts = 3, levels = 4;
  Supergraph g;
  uint32_t next = 0;
  auto value = [&] {
    const uint32_t first = next;
    next += layouts;
    return first;
  };
  auto connect = [&](std::vector<uint32_t> inputs, uint32_t output, int configs) {
    for (uint32_t lo = 0; lo < layouts; ++lo)
      for (uint32_t li = 0; li < layouts; ++li)
        for (int c = 0; c < configs; ++c) {
          Edge e;
          for (uint32_t in : inputs) e.inputs.push_back(in + li);
          e.output = output + lo;
          e.cost = cost(rng);
          g.edges.push_back(e);
        }
  };
  const uint32_t input = value();
  uint32_t x = value();
  connect({input}, x, 4);
  std::vector<uint32_t> skips;
  for (uint32_t l = 0; l < levels; ++l) {
    const uint32_t conv = value(), pooled = value();
    connect({x}, conv, 4);
    connect({conv}, pooled, 1);
    connect({x}, pooled, 4);  // conv + pool fused
    skips.push_back(pooled);
    x = pooled;
  }
  for (uint32_t l = levels; l-- > 0;) {
    const uint32_t up = value(), cat = value(), conv = value();
    connect({x}, up, 1);
    connect({up, skips[l]}, cat, 1);
    connect({cat}, conv, 4);
    connect({x, skips[l]}, conv, 4);  // upsample + concat + conv fused
    x = conv;
  }
  g.node_count = next;
  g.sources = {input};  // the caller's layout only
  g.targets = {x};
  SelectStats stats;
  const Selection s = select_min_latency(g, &stats);
  REQUIRE(s.feasible);
  CHECK(derives_targets(g, s.edges));
  INFO("edges " << g.edges.size() << ", states " << stats.states << ", pruned " << stats.pruned);
  CHECK(g.edges.size() > 500);
  CHECK(stats.states < 20000);
}
