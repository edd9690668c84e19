#include "compiler/select/select.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "common/error.hpp"

namespace denox::compiler::select {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void validate(const Supergraph& g) {
  auto check_node = [&](NodeId n, const std::string& where) {
    if (n >= g.node_count)
      fail(ErrorCode::InvalidArgument, where + " names node " + std::to_string(n) + ", the supergraph has " + std::to_string(g.node_count));
  };
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const Edge& e = g.edges[i];
    const std::string where = "edge " + std::to_string(i);
    check_node(e.output, where);
    for (NodeId in : e.inputs) check_node(in, where);
    if (!(e.cost >= 0) || !std::isfinite(e.cost)) fail(ErrorCode::InvalidArgument, where + " has cost " + std::to_string(e.cost));
  }
  for (NodeId n : g.sources) check_node(n, "a source");
  for (NodeId n : g.targets) check_node(n, "a target");
}

// Topological index of every node (edges point from inputs to the output).
std::vector<uint32_t> topological_index(const Supergraph& g) {
  std::vector<std::vector<uint32_t>> successors(g.node_count);
  std::vector<uint32_t> indegree(g.node_count, 0);
  for (const Edge& e : g.edges) {
    for (NodeId in : e.inputs) {
      successors[in].push_back(e.output);
      ++indegree[e.output];
    }
  }
  std::vector<NodeId> ready;
  for (NodeId n = 0; n < g.node_count; ++n)
    if (indegree[n] == 0) ready.push_back(n);
  std::vector<uint32_t> index(g.node_count, 0);
  uint32_t next = 0;
  while (!ready.empty()) {
    const NodeId n = ready.back();
    ready.pop_back();
    index[n] = next++;
    for (NodeId s : successors[n])
      if (--indegree[s] == 0) ready.push_back(s);
  }
  if (next != g.node_count) fail(ErrorCode::InvalidArgument, "the supergraph's edges form a cycle");
  return index;
}

class Solver {
 public:
  Solver(const Supergraph& g, SelectStats* stats) : g_(g), stats_(stats), topo_(topological_index(g)) {
    source_.assign(g.node_count, false);
    for (NodeId s : g.sources) source_[s] = true;
    producers_.resize(g.node_count);
    for (uint32_t i = 0; i < g.edges.size(); ++i) producers_[g.edges[i].output].push_back(i);
    cheapest_.assign(g.node_count, kInf);
    for (NodeId n = 0; n < g.node_count; ++n) {
      // Cheapest first: the first complete candidate sets a tight bound for the rest.
      std::sort(producers_[n].begin(), producers_[n].end(), [&](uint32_t a, uint32_t b) { return g.edges[a].cost < g.edges[b].cost; });
      if (!producers_[n].empty()) cheapest_[n] = g.edges[producers_[n].front()].cost;
    }
  }

  Selection run() {
    State start = normalize(g_.targets);
    Selection s;
    s.cost = solve(start);
    s.feasible = std::isfinite(s.cost);
    if (!s.feasible) return s;
    // Follow the memoized choices; they were made from the outputs backwards.
    State state = start;
    while (!state.empty()) {
      const uint32_t e = memo_.at(state).choice;
      s.edges.push_back(e);
      state = after(state, e);
    }
    std::reverse(s.edges.begin(), s.edges.end());
    return s;
  }

 private:
  // Pending values, sorted by topological index (the last one is produced next).
  using State = std::vector<NodeId>;
  struct Solved {
    double cost;
    uint32_t choice;
  };

  State normalize(std::vector<NodeId> nodes) const {
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [&](NodeId n) { return source_[n]; }), nodes.end());
    std::sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) { return topo_[a] < topo_[b]; });
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    return nodes;
  }

  // The state after producing the last pending value with edge e. Its inputs come earlier in
  // topological order, so none of them was produced already.
  State after(const State& state, uint32_t e) const {
    State next(state.begin(), state.end() - 1);
    next.insert(next.end(), g_.edges[e].inputs.begin(), g_.edges[e].inputs.end());
    return normalize(std::move(next));
  }

  double lower_bound(const State& state) const {
    double lb = 0;
    for (NodeId n : state) lb += cheapest_[n];
    return lb;
  }

  // Memoized depth-first search over states, with an explicit stack: a chain of N values goes
  // N states deep, and recursion overflowed the stack of a 60000-node chain (and would sooner on
  // an engine thread with a small stack).
  struct Frame {
    State state;
    size_t next_producer = 0;
    double best = kInf;
    uint32_t choice = 0;
    // The candidate whose next state is being solved above this frame.
    uint32_t edge = 0;
    State child;
  };

  double solve(const State& start) {
    if (start.empty()) return 0;
    if (auto it = memo_.find(start); it != memo_.end()) {
      if (stats_) ++stats_->memo_hits;
      return it->second.cost;
    }
    if (stats_) ++stats_->states;
    std::vector<Frame> stack;
    stack.push_back(Frame{start});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (!f.child.empty()) {  // back from solving f.child
        consider(f, f.edge, g_.edges[f.edge].cost + memo_.at(f.child).cost);
        f.child.clear();
      }
      const std::vector<uint32_t>& producers = producers_[f.state.back()];
      bool descended = false;
      while (f.next_producer < producers.size()) {
        const uint32_t e = producers[f.next_producer++];
        State next = after(f.state, e);
        const double cost = g_.edges[e].cost;
        // Exact per state: a candidate is skipped only when even its bound cannot beat the best
        // candidate of this same state, so the memoized value stays the true optimum.
        if (cost + lower_bound(next) >= f.best) {
          if (stats_) ++stats_->pruned;
          continue;
        }
        if (next.empty()) {
          consider(f, e, cost);
          continue;
        }
        if (auto it = memo_.find(next); it != memo_.end()) {
          if (stats_) ++stats_->memo_hits;
          consider(f, e, cost + it->second.cost);
          continue;
        }
        if (stats_) ++stats_->states;
        f.edge = e;
        f.child = next;
        stack.push_back(Frame{std::move(next)});  // (invalidates f)
        descended = true;
        break;
      }
      if (descended) continue;
      memo_.emplace(f.state, Solved{f.best, f.choice});
      stack.pop_back();
    }
    return memo_.at(start).cost;
  }

  static void consider(Frame& f, uint32_t edge, double total) {
    if (total < f.best) {
      f.best = total;
      f.choice = edge;
    }
  }

  const Supergraph& g_;
  SelectStats* stats_;
  std::vector<uint32_t> topo_;
  std::vector<bool> source_;
  std::vector<std::vector<uint32_t>> producers_;
  std::vector<double> cheapest_;
  std::map<State, Solved> memo_;
};

}  // namespace

Selection select_min_latency(const Supergraph& graph, SelectStats* stats) {
  validate(graph);
  return Solver(graph, stats).run();
}

bool derives_targets(const Supergraph& graph, const std::vector<uint32_t>& edges) {
  std::vector<bool> have(graph.node_count, false);
  for (NodeId s : graph.sources) have.at(s) = true;
  for (uint32_t e : edges) {
    const Edge& edge = graph.edges.at(e);
    if (!std::all_of(edge.inputs.begin(), edge.inputs.end(), [&](NodeId n) { return have.at(n); })) return false;
    have.at(edge.output) = true;
  }
  return std::all_of(graph.targets.begin(), graph.targets.end(), [&](NodeId n) { return have.at(n); });
}

Selection select_brute_force(const Supergraph& graph) {
  validate(graph);
  if (graph.edges.size() > 20) fail(ErrorCode::InvalidArgument, "brute force is for at most 20 edges");
  const std::vector<uint32_t> topo = topological_index(graph);
  std::vector<uint32_t> order(graph.edges.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return topo[graph.edges[a].output] < topo[graph.edges[b].output]; });
  Selection best;
  for (uint64_t mask = 0; mask < (uint64_t{1} << graph.edges.size()); ++mask) {
    std::vector<uint32_t> chosen;
    double cost = 0;
    for (uint32_t e : order) {
      if (mask >> e & 1) {
        chosen.push_back(e);
        cost += graph.edges[e].cost;
      }
    }
    if (cost < best.cost && derives_targets(graph, chosen)) {
      best.cost = cost;
      best.edges = chosen;
      best.feasible = true;
    }
  }
  return best;
}

}  // namespace denox::compiler::select
