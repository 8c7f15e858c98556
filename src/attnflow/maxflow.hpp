// A general maximum-flow solver (Dinic) with real capacities.
//
// Source: E. A. Dinic (1970), "Algorithm for solution of a problem of maximum flow in networks
// with power estimation", Soviet Math. Doklady 11; API shaped after atcoder's mf_graph
// (add_edge returns an id, flow(s, t), min_cut(s), per-edge reports).
//
// Description: repeated phases; each phase labels nodes by BFS distance from s over arcs with
// residual capacity > eps, then finds a blocking flow in that level graph by DFS with
// current-arc pointers. O(V^2 E) in general.
// Capacities are doubles; residual capacities <= eps count as saturated, so rounding noise never
// creates phantom augmenting paths (and the phase count stays bounded by V). The blocking-flow
// search is iterative (explicit path stack), so the depth of a graph never touches the (small)
// WASM call stack.
//
// Status: tests/cpp/test_maxflow.cpp checks, on thousands of random small graphs (parallel edges,
// self loops, zero capacities), the value against a brute-force minimum over all s-t cuts, that
// the reported cut's capacity equals the value, conservation, 0 <= flow <= capacity, repeated
// flow() calls, resetFlow(), and a 200,000-node path.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace attnflow {

class MaxFlow {
 public:
  struct Edge {
    int from;
    int to;
    double capacity;
    double flow;  // in [0, capacity]
  };

  /// A graph with nodes 0..numNodes-1 and no edges.
  /// Constraints: numNodes >= 0; eps finite and >= 0 (throws InputError otherwise).
  explicit MaxFlow(int numNodes, double eps = 1e-12);

  /// Adds a directed edge and returns its id (0, 1, 2, ... in order of addition). Parallel edges
  /// and self loops are allowed (a self loop never carries flow).
  /// Constraints: 0 <= from, to < numNodes; capacity finite and >= 0 (throws InputError).
  /// Complexity: amortised O(1).
  int addEdge(int from, int to, double capacity);

  /// Pushes as much additional flow from s to t as possible (on top of any flow already present)
  /// and returns the amount pushed; so a second call with the same s, t returns 0.
  /// Constraints: 0 <= s, t < numNodes, s != t (throws InputError).
  /// Complexity: O(V^2 E); uses O(V + E) extra memory and no recursion.
  double flow(int s, int t);

  /// After flow(s, t): minCut[v] is true iff v is reachable from s in the residual graph (arcs
  /// with residual capacity > eps). The edges from the true side to the false side form a
  /// minimum s-t cut (their capacities sum to the flow value, up to eps per edge).
  /// Constraints: 0 <= s < numNodes. Complexity: O(V + E).
  std::vector<bool> minCut(int s) const;
  /// After flow(s, t): sinkSide[v] is true iff t is reachable from v in the residual graph (arcs
  /// with residual capacity > eps, as the solver itself judged them). The edges from the false
  /// side into the true side form the minimum s-t cut nearest t: every minimum cut's sink side
  /// contains the true side.
  /// Constraints: 0 <= t < numNodes. Complexity: O(V + E).
  std::vector<bool> sinkSide(int t) const;

  /// The edge with this id as added, with its current flow. Constraints: 0 <= id < numEdges().
  Edge edge(int id) const;
  std::vector<Edge> edges() const;
  int numEdges() const;
  int numNodes() const;

  /// Sets every edge's flow back to 0 (the graph is kept). Complexity: O(E).
  void resetFlow();

 private:
  struct Arc {
    int to;
    int reverse;  // index of the paired arc in adjacency_[to]
    double residual;
  };
  bool buildLevels(int s, int t);
  /// Nodes reachable from `start` over arcs with residual > eps (forward), or from which `start`
  /// is reachable so (backward).
  std::vector<bool> residualReach(int start, bool forward) const;
  double blockingFlow(int s, int t);

  double eps_;
  std::vector<std::vector<Arc>> adjacency_;
  std::vector<std::pair<int, int>> edgePosition_;  // edge id -> (node, index in adjacency_)
  std::vector<double> edgeCapacity_;
  std::vector<int> level_;
  std::vector<std::size_t> nextArc_;
  std::vector<int> queue_;                             // BFS scratch
  std::vector<std::pair<int, std::size_t>> pathStack_;  // DFS scratch: (node, arc index)
};

}  // namespace attnflow
