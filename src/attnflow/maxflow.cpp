// Dinic's maximum flow with real capacities; see maxflow.hpp for the contract.
#include "attnflow/maxflow.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "attnflow/errors.hpp"

namespace attnflow {

namespace {

std::string formatDouble(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

void checkNode(int v, int numNodes, const char* what) {
  if (v < 0 || v >= numNodes) {
    throw InputError(std::string("max-flow: ") + what + " " + std::to_string(v) +
                     " is out of range (the graph has " + std::to_string(numNodes) + " nodes)");
  }
}

}  // namespace

MaxFlow::MaxFlow(int numNodes, double eps) : eps_(eps) {
  if (numNodes < 0) {
    throw InputError("max-flow: the number of nodes must be >= 0 (got " +
                     std::to_string(numNodes) + ")");
  }
  if (!(eps >= 0.0 && std::isfinite(eps))) {
    throw InputError("max-flow: eps must be finite and >= 0 (got " + formatDouble(eps) + ")");
  }
  const auto size = static_cast<std::size_t>(numNodes);
  adjacency_.resize(size);
  level_.assign(size, -1);
  nextArc_.assign(size, 0);
}

int MaxFlow::addEdge(int from, int to, double capacity) {
  checkNode(from, numNodes(), "node");
  checkNode(to, numNodes(), "node");
  if (!(capacity >= 0.0 && std::isfinite(capacity))) {
    throw InputError("max-flow: capacity of edge " + std::to_string(from) + " -> " +
                     std::to_string(to) + " must be finite and >= 0 (got " +
                     formatDouble(capacity) + ")");
  }
  if (edgeCapacity_.size() >= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw InputError("max-flow: too many edges");
  }
  auto& out = adjacency_[static_cast<std::size_t>(from)];
  auto& in = adjacency_[static_cast<std::size_t>(to)];
  const int forwardIndex = static_cast<int>(out.size());
  // For a self loop both arcs land in the same list, so the reverse sits one further on.
  const int reverseIndex = static_cast<int>(in.size()) + (from == to ? 1 : 0);
  out.push_back(Arc{to, reverseIndex, capacity});
  in.push_back(Arc{from, forwardIndex, 0.0});
  const int id = static_cast<int>(edgeCapacity_.size());
  edgePosition_.emplace_back(from, forwardIndex);
  edgeCapacity_.push_back(capacity);
  return id;
}

bool MaxFlow::buildLevels(int s, int t) {
  std::fill(level_.begin(), level_.end(), -1);
  queue_.clear();
  level_[static_cast<std::size_t>(s)] = 0;
  queue_.push_back(s);
  for (std::size_t head = 0; head < queue_.size(); ++head) {
    const int u = queue_[head];
    const int nextLevel = level_[static_cast<std::size_t>(u)] + 1;
    for (const Arc& arc : adjacency_[static_cast<std::size_t>(u)]) {
      if (arc.residual > eps_ && level_[static_cast<std::size_t>(arc.to)] < 0) {
        level_[static_cast<std::size_t>(arc.to)] = nextLevel;
        if (arc.to == t) return true;  // nodes at t's level or beyond cannot help this phase
        queue_.push_back(arc.to);
      }
    }
  }
  return false;
}

// One blocking flow in the level graph: advance along admissible arcs (residual > eps, level + 1)
// from the current-arc pointer, augment when t is reached, retreat (and mark the node dead) when
// a node has no admissible arc left. The path lives in pathStack_, never on the call stack.
double MaxFlow::blockingFlow(int s, int t) {
  std::fill(nextArc_.begin(), nextArc_.end(), 0);
  const int levelT = level_[static_cast<std::size_t>(t)];
  double total = 0.0;
  pathStack_.clear();
  int u = s;
  for (;;) {
    if (u == t) {
      double bottleneck = std::numeric_limits<double>::infinity();
      for (const auto& step : pathStack_) {
        bottleneck = std::min(bottleneck, adjacency_[static_cast<std::size_t>(step.first)][step.second].residual);
      }
      std::size_t firstSaturated = pathStack_.size();
      for (std::size_t k = 0; k < pathStack_.size(); ++k) {
        Arc& arc = adjacency_[static_cast<std::size_t>(pathStack_[k].first)][pathStack_[k].second];
        arc.residual -= bottleneck;
        adjacency_[static_cast<std::size_t>(arc.to)][static_cast<std::size_t>(arc.reverse)].residual += bottleneck;
        if (arc.residual <= eps_ && firstSaturated == pathStack_.size()) firstSaturated = k;
      }
      total += bottleneck;
      // Resume at the tail of the first saturated arc: everything before it still has capacity.
      u = pathStack_[firstSaturated].first;
      pathStack_.resize(firstSaturated);
      continue;
    }
    const auto uIndex = static_cast<std::size_t>(u);
    auto& arcs = adjacency_[uIndex];
    const int wantedLevel = level_[uIndex] + 1;
    std::size_t& next = nextArc_[uIndex];
    bool advanced = false;
    for (; next < arcs.size(); ++next) {
      const Arc& arc = arcs[next];
      const int toLevel = level_[static_cast<std::size_t>(arc.to)];
      if (arc.residual > eps_ && toLevel == wantedLevel && (toLevel < levelT || arc.to == t)) {
        pathStack_.emplace_back(u, next);
        u = arc.to;
        advanced = true;
        break;
      }
    }
    if (advanced) continue;
    // Dead end: no admissible arc leaves u for the rest of this phase.
    level_[uIndex] = -1;
    if (pathStack_.empty()) break;  // u == s
    u = pathStack_.back().first;
    ++nextArc_[static_cast<std::size_t>(u)];
    pathStack_.pop_back();
  }
  return total;
}

double MaxFlow::flow(int s, int t) {
  checkNode(s, numNodes(), "source");
  checkNode(t, numNodes(), "sink");
  if (s == t) {
    throw InputError("max-flow: source and sink must differ (both are " + std::to_string(s) + ")");
  }
  double total = 0.0;
  while (buildLevels(s, t)) total += blockingFlow(s, t);
  return total;
}

std::vector<bool> MaxFlow::minCut(int s) const {
  checkNode(s, numNodes(), "source");
  return residualReach(s, true);
}

std::vector<bool> MaxFlow::sinkSide(int t) const {
  checkNode(t, numNodes(), "sink");
  return residualReach(t, false);
}

std::vector<bool> MaxFlow::residualReach(int start, bool forward) const {
  std::vector<bool> reached(adjacency_.size(), false);
  std::vector<int> stack{start};
  reached[static_cast<std::size_t>(start)] = true;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (const Arc& arc : adjacency_[static_cast<std::size_t>(v)]) {
      // Forward: the arc v -> u has room. Backward: its pair u -> v (in u's list) has room.
      const double room = forward ? arc.residual
          : adjacency_[static_cast<std::size_t>(arc.to)][static_cast<std::size_t>(arc.reverse)].residual;
      if (room > eps_ && !reached[static_cast<std::size_t>(arc.to)]) {
        reached[static_cast<std::size_t>(arc.to)] = true;
        stack.push_back(arc.to);
      }
    }
  }
  return reached;
}

MaxFlow::Edge MaxFlow::edge(int id) const {
  if (id < 0 || id >= numEdges()) {
    throw InputError("max-flow: edge " + std::to_string(id) + " is out of range (the graph has " +
                     std::to_string(numEdges()) + " edges)");
  }
  const auto& position = edgePosition_[static_cast<std::size_t>(id)];
  const Arc& forward = adjacency_[static_cast<std::size_t>(position.first)][static_cast<std::size_t>(position.second)];
  const Arc& reverse = adjacency_[static_cast<std::size_t>(forward.to)][static_cast<std::size_t>(forward.reverse)];
  const double capacity = edgeCapacity_[static_cast<std::size_t>(id)];
  // The reverse residual is the net amount pushed; rounding can leave it an ulp outside [0, cap].
  return Edge{position.first, forward.to, capacity, std::clamp(reverse.residual, 0.0, capacity)};
}

std::vector<MaxFlow::Edge> MaxFlow::edges() const {
  std::vector<Edge> result;
  result.reserve(edgeCapacity_.size());
  for (int id = 0; id < numEdges(); ++id) result.push_back(edge(id));
  return result;
}

int MaxFlow::numEdges() const { return static_cast<int>(edgeCapacity_.size()); }

int MaxFlow::numNodes() const { return static_cast<int>(adjacency_.size()); }

void MaxFlow::resetFlow() {
  for (std::size_t id = 0; id < edgeCapacity_.size(); ++id) {
    const auto& position = edgePosition_[id];
    Arc& forward = adjacency_[static_cast<std::size_t>(position.first)][static_cast<std::size_t>(position.second)];
    forward.residual = edgeCapacity_[id];
    adjacency_[static_cast<std::size_t>(forward.to)][static_cast<std::size_t>(forward.reverse)].residual = 0.0;
  }
}

}  // namespace attnflow
