// A general maximum-flow solver (Dinic) with real capacities.
//
// Source: E. A. Dinic (1970), "Algorithm for solution of a problem of maximum flow in networks
// with power estimation"; API shaped after atcoder's mf_graph. O(V^2 E) in general.
// Capacities are doubles; residual capacities <= eps count as saturated, so rounding noise never
// creates phantom augmenting paths. The blocking-flow search is iterative (explicit stack), so
// the depth of a graph never touches the (small) WASM call stack.
#pragma once

#include <vector>

namespace attnflow {

class MaxFlow {
 public:
  struct Edge {
    int from;
    int to;
    double capacity;
    double flow;
  };

  /// A graph with nodes 0..numNodes-1 and no edges.
  explicit MaxFlow(int numNodes, double eps = 1e-12);

  /// Adds a directed edge and returns its id (0, 1, 2, ... in order of addition).
  /// Requires 0 <= from, to < numNodes and capacity >= 0 (throws InputError otherwise).
  int addEdge(int from, int to, double capacity);

  /// Pushes as much additional flow from s to t as possible (on top of any flow already present)
  /// and returns the amount pushed. Requires s != t.
  double flow(int s, int t);

  /// After flow(s, t): minCut[v] is true iff v is reachable from s in the residual graph.
  /// The edges from the true side to the false side form a minimum s-t cut.
  std::vector<bool> minCut(int s) const;

  Edge edge(int id) const;
  int numEdges() const;
  int numNodes() const;

  /// Sets every edge's flow back to 0.
  void resetFlow();

 private:
  struct Arc {
    int to;
    int reverse;  // index of the paired arc in adjacency_[to]
    double residual;
  };
  bool buildLevels(int s, int t);
  double blockingFlow(int s, int t);

  double eps_;
  std::vector<std::vector<Arc>> adjacency_;
  std::vector<std::pair<int, int>> edgePosition_;  // edge id -> (node, index in adjacency_)
  std::vector<double> edgeCapacity_;
  std::vector<int> level_;
  std::vector<std::size_t> nextArc_;
};

}  // namespace attnflow
