// MaxFlow (Dinic) against a brute-force minimum over all s-t cuts, an independent Edmonds-Karp,
// and the invariants every maximum flow satisfies.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <random>
#include <vector>

#include "attnflow/errors.hpp"
#include "attnflow/maxflow.hpp"

using attnflow::InputError;
using attnflow::MaxFlow;

namespace {

struct TestEdge {
  int from;
  int to;
  double capacity;
};

struct RandomGraph {
  int numNodes;
  std::vector<TestEdge> edges;
};

// Small graphs of several flavours: dense or sparse, capacities continuous, small integers
// (ties), tiny, or zero; parallel edges and self loops occur naturally.
RandomGraph randomGraph(std::mt19937_64& rng, int minNodes, int maxNodes, int maxEdges) {
  std::uniform_int_distribution<int> nodeCount(minNodes, maxNodes);
  RandomGraph g;
  g.numNodes = nodeCount(rng);
  std::uniform_int_distribution<int> node(0, g.numNodes - 1);
  std::uniform_int_distribution<int> edgeCount(0, maxEdges);
  std::uniform_int_distribution<int> flavour(0, 3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int numEdges = edgeCount(rng);
  const int kind = flavour(rng);
  for (int e = 0; e < numEdges; ++e) {
    double capacity = 0.0;
    const double roll = unit(rng);
    if (roll < 0.15) {
      capacity = 0.0;
    } else if (kind == 0) {
      capacity = unit(rng);
    } else if (kind == 1) {
      capacity = std::floor(unit(rng) * 4.0);  // integers 0..3: many equal cuts
    } else if (kind == 2) {
      capacity = unit(rng) * 1e-6;
    } else {
      capacity = std::pow(10.0, -6.0 * unit(rng));  // spread over six orders of magnitude
    }
    g.edges.push_back({node(rng), node(rng), capacity});
  }
  return g;
}

double bruteForceMinCut(const RandomGraph& g, int s, int t) {
  double best = std::numeric_limits<double>::infinity();
  const unsigned subsets = 1u << g.numNodes;
  for (unsigned mask = 0; mask < subsets; ++mask) {
    if (!(mask >> s & 1u) || (mask >> t & 1u)) continue;
    double capacity = 0.0;
    for (const TestEdge& e : g.edges) {
      if ((mask >> e.from & 1u) && !(mask >> e.to & 1u)) capacity += e.capacity;
    }
    best = std::min(best, capacity);
  }
  return best;
}

// The sink side of the minimum cut nearest t, as a bit mask: the nodes on the sink side of every
// minimum cut (cuts within 1e-12 of the minimum count as minimum, as the solver's eps does).
unsigned bruteForceSinkSide(const RandomGraph& g, int s, int t, double minimum) {
  unsigned common = (1u << g.numNodes) - 1u;
  for (unsigned mask = 0; mask < (1u << g.numNodes); ++mask) {
    if (!(mask >> s & 1u) || (mask >> t & 1u)) continue;
    double capacity = 0.0;
    for (const TestEdge& e : g.edges) {
      if ((mask >> e.from & 1u) && !(mask >> e.to & 1u)) capacity += e.capacity;
    }
    if (capacity <= minimum + 1e-12) common &= ~mask;
  }
  return common;
}

// Edmonds-Karp on an aggregated capacity matrix: independent of the Dinic code.
double edmondsKarp(const RandomGraph& g, int s, int t) {
  const auto n = static_cast<std::size_t>(g.numNodes);
  std::vector<std::vector<double>> residual(n, std::vector<double>(n, 0.0));
  for (const TestEdge& e : g.edges) {
    if (e.from != e.to) residual[static_cast<std::size_t>(e.from)][static_cast<std::size_t>(e.to)] += e.capacity;
  }
  double total = 0.0;
  for (;;) {
    std::vector<int> parent(n, -1);
    parent[static_cast<std::size_t>(s)] = s;
    std::queue<int> queue;
    queue.push(s);
    while (!queue.empty() && parent[static_cast<std::size_t>(t)] < 0) {
      const int u = queue.front();
      queue.pop();
      for (std::size_t v = 0; v < n; ++v) {
        if (parent[v] < 0 && residual[static_cast<std::size_t>(u)][v] > 1e-12) {
          parent[v] = u;
          queue.push(static_cast<int>(v));
        }
      }
    }
    if (parent[static_cast<std::size_t>(t)] < 0) return total;
    double bottleneck = std::numeric_limits<double>::infinity();
    for (int v = t; v != s; v = parent[static_cast<std::size_t>(v)]) {
      bottleneck = std::min(bottleneck, residual[static_cast<std::size_t>(parent[static_cast<std::size_t>(v)])][static_cast<std::size_t>(v)]);
    }
    for (int v = t; v != s; v = parent[static_cast<std::size_t>(v)]) {
      const auto u = static_cast<std::size_t>(parent[static_cast<std::size_t>(v)]);
      residual[u][static_cast<std::size_t>(v)] -= bottleneck;
      residual[static_cast<std::size_t>(v)][u] += bottleneck;
    }
    total += bottleneck;
  }
}

MaxFlow build(const RandomGraph& g) {
  MaxFlow mf(g.numNodes);
  for (const TestEdge& e : g.edges) mf.addEdge(e.from, e.to, e.capacity);
  return mf;
}

// Checks that `sourceSide` (true for the source side) is a minimum s-t cut of the flow in `mf`:
// its forward edges are saturated, nothing flows back across it, and its capacity is `value`.
void checkMinimumCut(const MaxFlow& mf, const std::vector<bool>& sourceSide, int s, int t,
                     double value, double tol) {
  REQUIRE(sourceSide.size() == static_cast<std::size_t>(mf.numNodes()));
  REQUIRE(sourceSide[static_cast<std::size_t>(s)]);
  REQUIRE_FALSE(sourceSide[static_cast<std::size_t>(t)]);
  double cutCapacity = 0.0;
  for (int id = 0; id < mf.numEdges(); ++id) {
    const MaxFlow::Edge e = mf.edge(id);
    const bool fromS = sourceSide[static_cast<std::size_t>(e.from)];
    const bool toS = sourceSide[static_cast<std::size_t>(e.to)];
    if (fromS && !toS) {
      cutCapacity += e.capacity;
      REQUIRE(e.capacity - e.flow <= 1e-12);  // saturated (eps)
    }
    if (!fromS && toS) REQUIRE(e.flow <= 1e-12);  // nothing flows back across a min cut
  }
  REQUIRE(std::abs(cutCapacity - value) <= tol);
}

// Checks every invariant of a maximum flow of value `value` from s to t; tol absorbs rounding.
void checkFlowInvariants(const MaxFlow& mf, int s, int t, double value, double tol) {
  const auto n = static_cast<std::size_t>(mf.numNodes());
  std::vector<double> net(n, 0.0);  // outflow - inflow
  for (int id = 0; id < mf.numEdges(); ++id) {
    const MaxFlow::Edge e = mf.edge(id);
    REQUIRE(e.flow >= 0.0);
    REQUIRE(e.flow <= e.capacity);
    if (e.from == e.to) REQUIRE(e.flow == 0.0);
    net[static_cast<std::size_t>(e.from)] += e.flow;
    net[static_cast<std::size_t>(e.to)] -= e.flow;
  }
  for (std::size_t v = 0; v < n; ++v) {
    if (static_cast<int>(v) == s) {
      REQUIRE(std::abs(net[v] - value) <= tol);
    } else if (static_cast<int>(v) == t) {
      REQUIRE(std::abs(net[v] + value) <= tol);
    } else {
      REQUIRE(std::abs(net[v]) <= tol);
    }
  }
  checkMinimumCut(mf, mf.minCut(s), s, t, value, tol);
  // The same for the cut nearest t: its source side is every node not on the sink side.
  std::vector<bool> notSinkSide = mf.sinkSide(t);
  notSinkSide.flip();
  checkMinimumCut(mf, notSinkSide, s, t, value, tol);
}

}  // namespace

TEST_CASE("max-flow: random small graphs agree with brute-force min cut and Edmonds-Karp") {
  std::mt19937_64 rng(20240601);
  int checked = 0;
  for (int round = 0; round < 4000; ++round) {
    const RandomGraph g = randomGraph(rng, 2, 7, round % 2 == 0 ? 8 : 30);
    std::uniform_int_distribution<int> node(0, g.numNodes - 1);
    const int s = node(rng);
    int t = node(rng);
    if (t == s) t = (s + 1) % g.numNodes;
    CAPTURE(round);
    MaxFlow mf = build(g);
    const double value = mf.flow(s, t);
    const double expected = bruteForceMinCut(g, s, t);
    // eps = 1e-12 per edge lets Dinic stop short of the exact value by at most E * eps.
    REQUIRE(std::abs(value - expected) <= 1e-10);
    REQUIRE(std::abs(value - edmondsKarp(g, s, t)) <= 1e-10);
    checkFlowInvariants(mf, s, t, value, 1e-10);
    const std::vector<bool> sinkSide = mf.sinkSide(t);
    const unsigned expectedSide = bruteForceSinkSide(g, s, t, expected);
    for (int v = 0; v < g.numNodes; ++v) {
      CAPTURE(v);
      REQUIRE(sinkSide[static_cast<std::size_t>(v)] == static_cast<bool>(expectedSide >> v & 1u));
    }
    REQUIRE(mf.flow(s, t) == 0.0);  // already maximal
    ++checked;
  }
  CHECK(checked == 4000);
}

TEST_CASE("max-flow: medium random graphs and layered DAGs agree with Edmonds-Karp") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int round = 0; round < 150; ++round) {
    RandomGraph g;
    int s = 0;
    int t = 1;
    if (round % 2 == 0) {
      g = randomGraph(rng, 10, 40, 300);
      t = g.numNodes - 1;
    } else {
      // The attention-flow shape: layers of width w, edges only to the next layer down.
      const int layers = 2 + round % 5;
      const int width = 2 + round % 7;
      g.numNodes = (layers + 1) * width;
      for (int l = layers; l >= 1; --l) {
        for (int i = 0; i < width; ++i) {
          for (int j = 0; j < width; ++j) {
            const double capacity = unit(rng) < 0.3 ? 0.0 : unit(rng);
            g.edges.push_back({l * width + i, (l - 1) * width + j, capacity});
          }
        }
      }
      s = layers * width + round % width;
      t = (round / 3) % width;
    }
    CAPTURE(round);
    MaxFlow mf = build(g);
    const double value = mf.flow(s, t);
    REQUIRE(std::abs(value - edmondsKarp(g, s, t)) <= 1e-9);
    checkFlowInvariants(mf, s, t, value, 1e-9);
  }
}

TEST_CASE("max-flow: hand-checked graphs") {
  SUBCASE("the classic CLRS network has value 23") {
    MaxFlow mf(6);
    mf.addEdge(0, 1, 16);
    mf.addEdge(0, 2, 13);
    mf.addEdge(2, 1, 4);
    mf.addEdge(1, 3, 12);
    mf.addEdge(3, 2, 9);
    mf.addEdge(2, 4, 14);
    mf.addEdge(4, 3, 7);
    mf.addEdge(3, 5, 20);
    mf.addEdge(4, 5, 4);
    CHECK(mf.flow(0, 5) == doctest::Approx(23.0));
    const std::vector<bool> side = mf.minCut(0);
    CHECK(side == std::vector<bool>{true, true, true, false, true, false});
  }
  SUBCASE("parallel edges add up; a self loop carries nothing") {
    MaxFlow mf(2);
    mf.addEdge(0, 1, 0.25);
    const int loop = mf.addEdge(0, 0, 5.0);
    mf.addEdge(0, 1, 0.5);
    CHECK(mf.flow(0, 1) == doctest::Approx(0.75));
    CHECK(mf.edge(loop).flow == 0.0);
  }
  SUBCASE("no path gives 0 and the cut is the source's component") {
    MaxFlow mf(3);
    mf.addEdge(0, 1, 1.0);
    mf.addEdge(2, 1, 1.0);
    CHECK(mf.flow(0, 2) == 0.0);
    CHECK(mf.minCut(0) == std::vector<bool>{true, true, false});
  }
  SUBCASE("residual capacity within eps counts as saturated") {
    MaxFlow mf(2);
    mf.addEdge(0, 1, 1e-13);
    CHECK(mf.flow(0, 1) == 0.0);
    MaxFlow exact(2, 0.0);
    exact.addEdge(0, 1, 1e-13);
    CHECK(exact.flow(0, 1) == 1e-13);
  }
  SUBCASE("edge() reports the edge as added") {
    MaxFlow mf(3);
    const int a = mf.addEdge(0, 1, 2.0);
    const int b = mf.addEdge(1, 2, 1.5);
    CHECK(a == 0);
    CHECK(b == 1);
    CHECK(mf.numEdges() == 2);
    CHECK(mf.numNodes() == 3);
    CHECK(mf.flow(0, 2) == 1.5);
    const MaxFlow::Edge e = mf.edge(a);
    CHECK(e.from == 0);
    CHECK(e.to == 1);
    CHECK(e.capacity == 2.0);
    CHECK(e.flow == 1.5);
    CHECK(mf.edges().size() == 2);
    CHECK(mf.edges()[1].flow == 1.5);
  }
}

TEST_CASE("max-flow: flow() adds to the existing flow; resetFlow() clears it") {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 300; ++round) {
    RandomGraph g = randomGraph(rng, 3, 7, 20);
    const int s = 0;
    const int t = g.numNodes - 1;
    CAPTURE(round);
    MaxFlow mf = build(g);
    const double first = mf.flow(s, t);
    // New capacity after a flow: the second call must push exactly the increase.
    std::uniform_int_distribution<int> node(0, g.numNodes - 1);
    const TestEdge extra{node(rng), node(rng), 0.5};
    g.edges.push_back(extra);
    mf.addEdge(extra.from, extra.to, extra.capacity);
    const double second = mf.flow(s, t);
    const double expected = bruteForceMinCut(g, s, t);
    REQUIRE(second >= 0.0);
    REQUIRE(std::abs(first + second - expected) <= 1e-10);
    checkFlowInvariants(mf, s, t, first + second, 1e-10);

    mf.resetFlow();
    for (const MaxFlow::Edge& e : mf.edges()) REQUIRE(e.flow == 0.0);
    REQUIRE(std::abs(mf.flow(s, t) - expected) <= 1e-10);
  }
}

TEST_CASE("max-flow: a 200,000-node path does not need a deep call stack") {
  // A recursive DFS would need 200,000 frames here: far beyond a WASM (or ASan) stack.
  const int n = 200000;
  MaxFlow mf(n);
  for (int v = 0; v + 1 < n; ++v) mf.addEdge(v, v + 1, v == n / 2 ? 0.5 : 1.0);
  CHECK(mf.flow(0, n - 1) == 0.5);
  const std::vector<bool> side = mf.minCut(0);
  CHECK(side[static_cast<std::size_t>(n / 2)]);
  CHECK_FALSE(side[static_cast<std::size_t>(n / 2 + 1)]);
  CHECK(mf.edge(n / 2).flow == 0.5);
  CHECK(mf.flow(0, n - 1) == 0.0);
}

TEST_CASE("max-flow: invalid arguments throw InputError") {
  CHECK_THROWS_WITH_AS(MaxFlow(-1), "max-flow: the number of nodes must be >= 0 (got -1)",
                       InputError);
  CHECK_THROWS_AS(MaxFlow(2, -1e-9), InputError);
  CHECK_THROWS_AS(MaxFlow(2, std::nan("")), InputError);
  MaxFlow mf(3);
  CHECK_THROWS_WITH_AS(mf.addEdge(0, 3, 1.0),
                       "max-flow: node 3 is out of range (the graph has 3 nodes)", InputError);
  CHECK_THROWS_AS(mf.addEdge(-1, 0, 1.0), InputError);
  CHECK_THROWS_WITH_AS(mf.addEdge(0, 1, -0.5),
                       "max-flow: capacity of edge 0 -> 1 must be finite and >= 0 (got -0.5)",
                       InputError);
  CHECK_THROWS_AS(mf.addEdge(0, 1, std::nan("")), InputError);
  CHECK_THROWS_AS(mf.addEdge(0, 1, std::numeric_limits<double>::infinity()), InputError);
  CHECK(mf.numEdges() == 0);  // failed calls add nothing
  CHECK_THROWS_WITH_AS(mf.flow(1, 1), "max-flow: source and sink must differ (both are 1)",
                       InputError);
  CHECK_THROWS_AS(mf.flow(0, 5), InputError);
  CHECK_THROWS_AS(mf.flow(-1, 0), InputError);
  CHECK_THROWS_AS(mf.minCut(3), InputError);
  CHECK_THROWS_AS(mf.sinkSide(-1), InputError);
  CHECK_THROWS_WITH_AS(mf.edge(0), "max-flow: edge 0 is out of range (the graph has 0 edges)",
                       InputError);
  MaxFlow empty(0);
  CHECK(empty.numNodes() == 0);
  CHECK_THROWS_AS(empty.flow(0, 0), InputError);
}
