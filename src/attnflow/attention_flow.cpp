// Attention flow: a plain reference (one general Dinic per pair) and a fast exact solver that
// exploits the layered structure of the graph. See ../../shared/FLOW-NOTES.md for the ideas and
// attention_flow.hpp for the contract.
//
// Exactness argument of the fast path, in one place:
// * Every value it returns is either the value of a feasible flow that no augmenting path can
//   increase (Dinic's stopping rule: the sink is unreachable in the residual graph), or the
//   capacity of an s-t cut met by a feasible flow (then flow == cut == maximum), or, for graphs
//   at most a few live nodes wide (narrowMinCut()), the capacity of the minimum cut found by
//   enumerating every cut (max-flow/min-cut). Residual capacities <= kEps (1e-15) count as
//   saturated and "met" means within kMetTol (4e-15), so returned values agree with the true
//   maximum to ~1e-14 on unit-scale capacities; pairs the middle-layer certificate settles, to
//   twice certificateTolerance(n) (4e-15 + n * 1e-15 for n nodes a layer; each of its two half
//   flows may fall short of its cut by that much).
// * Warm starts (keeping the previous sink's flow) and the middle-layer certificate only choose
//   where the search starts or which feasible flow is exhibited; they never skip the proof.
// * The reversed graph (ReversedFlow: every arc turned around, flow from (0, j) to (layer, r)) has
//   the same cuts with the same capacities, so its maximum flow is the same number; its solves
//   start from a saved per-sink state, which again only chooses where the search starts.
#include "attnflow/attention_flow.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "attnflow/errors.hpp"
#include "attnflow/maxflow.hpp"

namespace attnflow {

namespace {

// Residual capacities at or below kEps count as saturated, so rounding noise never creates
// phantom augmenting paths. Capacities here are on the unit scale (rows of A sum to at most 1,
// flows are at most 1), where one rounding is ~1.1e-16; 1e-15 leaves room for a few roundings
// per arc but still counts arcs of 1e-13 (MaxFlow's default 1e-12 dropped two-hop terms of that
// size: 6e-13 short of the closed form on an L = 2 input).
constexpr double kEps = 1e-15;
// A flow within kMetTol of a cut's capacity is reported as that capacity: the true maximum lies
// between the two.
constexpr double kMetTol = 4e-15;
// The same for the middle-layer certificate's tests (see FlowEngine), which compare half flows
// with cuts of n arcs. The solver counts an arc with up to kEps of room as saturated, so a half
// flow that meets such a cut can end up to n * kEps short of its capacity, by an amount that
// depends on the order of the solves: with kMetTol alone, at n >= 128 sink values solved in
// slices (as a pool's workers do) ended 4e-15 to 2e-14 short where all sinks in one run met
// their cut, so the pool certified fewer pairs than one thread, solved the others one by one
// (2 workers 1.6x slower than one thread at L=24, n=512) and gave them different last bits
// (751 values of an L=8, n=256 input).
double certificateTolerance(int n) { return kMetTol + n * kEps; }
// The lowest layer whose sources the middle-layer certificate serves (see FlowEngine): it needs
// a few layers on each side of its middle layer (FlowEngine::middleLayer()). Layer 5 (h = 3)
// since the supplies follow the attention (certificateSupplies()): every row of every layer,
// natively, at alpha 1 -22% (n = 32) to -34% (n = 128, flat and peaky), at alpha 0.5 -5% to -10%
// for n <= 64 and within noise at n = 128 (bench/native/NOTES.md). Layer 4 (h = 2): its sink
// halves are too shallow to gather into one sink, and it was slower.
constexpr int kFirstCertificateLayer = 5;
// The layers of arcs the certificate's sink halves get (a middle layer h gives them h) wherever
// its sources keep three above it (FlowEngine::middleLayer()): supplies sitting on a few tokens
// took about five to gather into one sink.
constexpr int kSinkHalfArcLayers = 5;
// How many rows a request needs for the certificate (FlowEngine::middleLayer()): its sink halves
// cost about as much as one row's flows, and they pay when several rows share them. Below 256
// tokens one row is cheaper without (n = 128: focus rows 15-25% slower with it). From 256 to
// 1,024 tokens, on layers that are not lower-triangular, rows take it whatever their count
// (bench/native/NOTES.md): on the BERT-large input (L=24, H=16, n=512) one row 51-62 -> 31-37 ms
// natively (the CLI's compute_ms 57-65 -> 36-43 ms; its load, which builds the certificate's
// solvers, 40-120 ms longer), every layer of one row 1.1-1.3 -> 0.72-0.84 s, rows 0-3 163 -> 34
// ms; one row of realistic, peaky and focus inputs at n = 384-1,024 0-28% faster, of the sink
// token on its own input 2-6% slower. Causal rows take ~2x as long with it (their sources fail
// its test, which must be built first); above 1,024 tokens, unmeasured, its solvers would add
// about a stack's worth of memory where the heap is nearest its limit.
constexpr std::size_t kCertificateRows = 8;
constexpr int kAnyRowsCertificateTokens = 256;
constexpr int kAnyRowsCertificateMaxTokens = 1024;
// The lowest layer whose sources solve their sinks from last to first (see flowRowInto()).
constexpr int kDescendingSinksFromLayer = 6;
// Node layers t >= depth_ - kDepthFirstLayers of a push-down wave pass what they hold straight
// down to the leaves, depth first (passDown()), instead of flooding their children and taking
// back what those could not pass on (3, i.e. depth first from layer depth_-3 only, until
// 2026-12-07). With 5, on inputs whose heads put most of each row on [CLS] and [SEP] (where a
// warm start's excess used to take ~10 waves a push-down, each child tried in turn), row 0 of
// the last layer at L=12, n=128 took 0.58-0.64x the time natively, every row of it 0.69x; peaky
// and focus rows 0.69-0.85x; flat, alpha = 1, L=24 and BERT-base cases within noise (0.97-1.02x).
// 8 or more made BERT-base 5-15% and the causal last layer 6-9% slower (g++ -O3, the two
// settings alternating in one process, medians of 7-21 pairs). Causal graphs keep 3
// (kDepthFirstLayersCausal): their last layer was 1.02x natively but 1.07x in WASM with 5.
constexpr int kDepthFirstLayers = 5;
constexpr int kDepthFirstLayersCausal = 3;

using Index = std::ptrdiff_t;

// Fills and copies in the solver's hot paths go through these loops with a zero the compiler
// cannot see: LLVM would otherwise turn them into memset/memcpy calls, and the size-optimised
// memset that Emscripten links at -Oz took 40% of the time in WASM (2x slower than the same
// code linked at -O3).
volatile std::uint64_t gOpaqueZero = 0;

// The per-arc helpers of the DFS: clang left some of them out of line in the WASM build, which
// cost 15-20% there (neutral natively).
#define ATTNFLOW_HOT __attribute__((always_inline)) inline

template <typename T>
void zeroFill(T* p, std::size_t count) {
  const T zero = static_cast<T>(gOpaqueZero);
  for (std::size_t k = 0; k < count; ++k) p[k] = zero;
}

void copyWords(const std::uint64_t* from, std::size_t count, std::uint64_t* to) {
  const std::uint64_t zero = gOpaqueZero;
  for (std::size_t k = 0; k < count; ++k) to[k] = from[k] | zero;
}

// copyWords() for doubles and ints, bit for bit.
void copyDoubles(const double* from, std::size_t count, double* to) {
  const std::uint64_t zero = gOpaqueZero;
  for (std::size_t k = 0; k < count; ++k) {
    std::uint64_t bits;
    std::memcpy(&bits, from + k, sizeof bits);
    bits |= zero;
    std::memcpy(to + k, &bits, sizeof bits);
  }
}

void copyInts(const int* from, std::size_t count, int* to) {
  const int zero = static_cast<int>(gOpaqueZero);
  for (std::size_t k = 0; k < count; ++k) to[k] = from[k] | zero;
}

// ------------------------------------------------------------------------------------------
// Validation

int checkStack(const LayerStack& A) {
  if (A.empty()) throw InputError("attention flow: the layer stack is empty");
  const Index n = A[0].rows();
  if (n < 1) throw InputError("attention flow: layer 1 has no tokens");
  for (std::size_t l = 0; l < A.size(); ++l) {
    if (A[l].rows() != n || A[l].cols() != n) {
      throw InputError("attention flow: layer " + std::to_string(l + 1) + " is " +
                       std::to_string(A[l].rows()) + " x " + std::to_string(A[l].cols()) +
                       ", expected " + std::to_string(n) + " x " + std::to_string(n));
    }
  }
  return static_cast<int>(n);
}

void checkLayer(const LayerStack& A, int layer) {
  if (layer < 1 || layer > static_cast<int>(A.size())) {
    throw InputError("attention flow: layer " + std::to_string(layer) +
                     " is out of range (layers are 1.." + std::to_string(A.size()) + ")");
  }
}

void checkRow(int n, int row, int layer) {
  if (row < 0 || row >= n) {
    throw InputError("attention flow: row " + std::to_string(row) + " of layer " +
                     std::to_string(layer) + " is out of range (rows are 0.." +
                     std::to_string(n - 1) + ")");
  }
}

void checkRows(int n, const std::vector<int>& rows, int layer) {
  for (int r : rows) checkRow(n, r, layer);
}

/// Validates a request for `rows` at `layer` and returns n.
int checkRequest(const LayerStack& A, int layer, const std::vector<int>& rows) {
  const int n = checkStack(A);
  checkLayer(A, layer);
  checkRows(n, rows, layer);
  return n;
}

/// Validates a request for several layers and the same rows in each; returns n.
int checkLayersRequest(const LayerStack& A, const std::vector<int>& layers,
                       const std::vector<int>& rows) {
  const int n = checkStack(A);
  for (int layer : layers) {
    checkLayer(A, layer);
    checkRows(n, rows, layer);
  }
  return n;
}

void report(const Progress& progress, std::size_t done, std::size_t total) {
  if (progress && !progress(done, total)) throw Cancelled();
}

// ------------------------------------------------------------------------------------------
// LayeredFlow: max-flow on a layered DAG
//
//   S -> layer 0 -> layer 1 -> ... -> layer D-1 -> T
//
// with n nodes per layer, arc S -> (0, k) of capacity s[k] (fixed by setSource()), arc
// (t, i) -> (t+1, k) of capacity M_t[i][k] (row-major n x n) and arc (D-1, k) -> T of capacity
// c[k] ("leaf arcs", changed between solves).
//
// The full problem from (l, r) to (0, j) is this with s = row r of A[l], M_t = A[l-1-t] and
// c = column j of A[1]. Consecutive sinks of one source differ only in the leaf arcs, so the
// flow is kept between them (a warm start): the excess on leaf arcs whose capacity shrank is
// walked back up along flow-carrying arcs, and pushed down again to other leaves from the
// first layer on the way where it can be.
// (The reversed orientation, searching from the sink, was tried and was 4x slower on model-like
// inputs.) The halves of the middle-layer certificate have the same shape.
//
// The residual graph is kept as bitsets next to the flow values: per arc row, the arcs with
// residual > kEps; per column, the arcs carrying flow > kEps (the reverse arcs, so upward scans
// read a few words instead of a strided column); per BFS level, the live nodes of each layer.
// A scan for the next usable arc is then an AND of two bitsets; dense scans of rows and columns
// had been 70% of the time on inputs where the certificate decides nothing (4-5x faster).

// The whole state a LayeredFlowT solve reads (source, reach, flows, residual bitsets), for
// ReversedFlow's per-sink starting points. loadState() after saveState() makes the solver
// exactly as it was then, whatever ran in between, so a solve from it is the same bitwise.
struct SavedFlowState {
  const double* s = nullptr;
  double sourceCap = 0.0;
  bool inCapReady = false;
  const void* flowFacts = nullptr;
  std::vector<double> inCap, fs, ft, flows;
  std::vector<std::uint64_t> reach, up, residualRows;
  std::vector<int> touched;
};

// An arc of a LayeredFlow's graph: S -> (0, k) when t = -1; (t, i) -> (t+1, k) when
// 0 <= t < depth - 1; the leaf arc (t, i) -> T when t = depth - 1.
struct SolverArc {
  int t;
  int i;
  int k;
};

// The solver's interface; LayeredFlowT below is the solver, for a number of bitset words per
// layer fixed at compile time or not (see makeLayeredFlow()).
class LayeredFlow {
 public:
  virtual ~LayeredFlow() = default;
  virtual void setSource(const double* s) = 0;
  virtual void saveState(SavedFlowState& z) const = 0;
  virtual void loadState(const SavedFlowState& z) = 0;
  virtual void writeStorage() = 0;
  /// Computes and keeps the facts about leaf capacities c that do not depend on the source, as
  /// the first solve or bound with them would.
  virtual void learnLeaves(const double* c) = 0;
  virtual bool lowerTriangular() const = 0;
  virtual bool reachesEveryLeaf() const = 0;
  virtual double upperBound(const double* c) = 0;
  virtual double solve(const double* c, double bound) = 0;
  virtual bool minimumCutNearestSink(const double* c, std::vector<SolverArc>& cut) = 0;
  /// bytesFor() and what the solver has cached since it was built (facts about sinks).
  virtual std::size_t memoryBytes() const = 0;

  /// The memory a solver of numMats arc matrices between n-node layers takes when built: the
  /// flow storage and the per-arc bitsets (the rest is per node, small beside them).
  static std::size_t bytesFor(int n, int numMats) {
    const auto nodes = static_cast<std::size_t>(n);
    const std::size_t words = (nodes + 63) / 64;
    const std::size_t rows = static_cast<std::size_t>(std::max(0, numMats)) * nodes;
    return rows * (nodes * sizeof(double) + 3 * words * sizeof(std::uint64_t) +
                   sizeof(std::pair<int, int>));
  }
};

template <int kWords>
class LayeredFlowT final : public LayeredFlow {
 public:
  LayeredFlowT(int n, std::vector<const double*> mats)
      : n_(n), depth_(static_cast<int>(mats.size()) + 1), mats_(std::move(mats)),
        dynWords_((n + 63) / 64), layerWords_(depth_ * words()) {
    const std::size_t nn = uz(n_) * uz(n_);
    // Not zeroed here: a row is zeroed when first touched (see touch()). At n = 512, L = 24 the
    // matrices are 46 MB, and zeroing them all cost more than a one-row computation.
    flow_.reset(new double[std::max<std::size_t>(1, mats_.size() * nn)]);
    fs_.assign(uz(n_), 0.0);
    ft_.assign(uz(n_), 0.0);
    numNodes_ = depth_ * n_ + 2;
    cur_.assign(uz(numNodes_), 0);
    curStamp_.assign(uz(numNodes_), 0);
    frames_.resize(uz(numNodes_) + 1);
    excess_.assign(uz(n_), 0.0);
    isTouched_.assign(uz(numNodes_), 0);
    excessNext_.assign(uz(n_), 0.0);
    excessBits_.assign(uz(words()), 0);
    waveExcess_.assign(uz(numNodes_), 0.0);
    waveBits_.assign(uz(layerWords_), 0);
    excessNextBits_.assign(uz(words()), 0);
    inCap_.assign(uz(n_), 0.0);
    // Positive-capacity adjacency as bitsets, for cheap reachability.
    adjacency_.assign(mats_.size() * uz(n_) * uz(words()), 0);
    rowSpan_.assign(mats_.size() * uz(n_), std::pair<int, int>(0, 0));
    for (std::size_t t = 0; t < mats_.size(); ++t) {
      for (int i = 0; i < n_; ++i) {
        const double* row = mats_[t] + uz(i) * uz(n_);
        std::uint64_t* bits = adjacency_.data() + (t * uz(n_) + uz(i)) * uz(words());
        // A word at a time without branches, and the span from the words: this runs for every
        // arc of every solver built, a fixed cost of each call (with a per-arc branch, a call's
        // fixed cost was 0.44 ms in WASM at L=12, n=128; 0.28 ms like this).
        int first = -1, last = 0;
        for (int w = 0; w < words(); ++w) {
          const int end = std::min(n_, (w + 1) * 64);
          std::uint64_t word = 0;
          for (int k = w * 64; k < end; ++k) {
            word |= static_cast<std::uint64_t>(row[k] > kEps) << (k % 64);
          }
          bits[w] = word;
          if (word == 0) continue;
          if (first < 0) first = w * 64 + __builtin_ctzll(word);
          last = w * 64 + 64 - __builtin_clzll(word);
        }
        rowSpan_[t * uz(n_) + uz(i)] = first < 0 ? std::pair<int, int>(0, 0)
                                                 : std::pair<int, int>(first, last);
        if (last > i + 1) lowerTriangular_ = false;
      }
    }
    depthFirstLayers_ = lowerTriangular_ ? kDepthFirstLayersCausal : kDepthFirstLayers;
    residual_ = adjacency_;
    up_.assign(adjacency_.size(), 0);
    coreach_.assign(uz(layerWords_), 0);
    reach_.assign(uz(layerWords_), 0);
    visited_.assign(uz(layerWords_), 0);
  }

  /// Fixes the source capacities and clears the flow. Computes which nodes S can reach at all
  /// (others never matter) and, for each layer-(D-1) node, its in-capacity from such nodes.
  void setSource(const double* s) override {
    s_ = s;
    // Only rows that ever carried flow need clearing (a dense clear of every arc would cost more
    // than the solves on inputs where the certificate decides most pairs).
    for (int v : touched_) {
      copyWords(adjacency_.data() + uz(v) * uz(words()), uz(words()),
                residual_.data() + uz(v) * uz(words()));
      isTouched_[uz(v)] = 0;
    }
    touched_.clear();
    flowFacts_ = nullptr;
    zeroFill(up_.data(), up_.size());
    zeroFill(fs_.data(), fs_.size());
    zeroFill(ft_.data(), ft_.size());
    zeroFill(reach_.data(), reach_.size());
    sourceCap_ = 0.0;
    std::uint64_t* top = reachLayer(0);
    for (int k = 0; k < n_; ++k) {
      sourceCap_ += s[k];
      if (s[k] > kEps) top[k / 64] |= std::uint64_t{1} << (k % 64);
    }
    for (int t = 0; t + 1 < depth_; ++t) {
      const std::uint64_t* here = reachLayer(t);
      std::uint64_t* next = reachLayer(t + 1);
      for (int i = 0; i < n_; ++i) {
        if (!test(here, i)) continue;
        const std::uint64_t* bits = adjacencyRow(t, i);
        for (int w = 0; w < words(); ++w) next[w] |= bits[w];
      }
    }
    inCapReady_ = false;
  }

  /// Saves what a solve reads (see SavedFlowState); loadState() puts it back.
  __attribute__((noinline)) void saveState(SavedFlowState& z) const override {
    z.s = s_;
    z.sourceCap = sourceCap_;
    z.inCapReady = inCapReady_;
    z.flowFacts = flowFacts_;
    // Sized once, then written through the copy loops (memcpy at -Oz is slow in WASM).
    const auto copyAll = [](const auto& from, auto& to, auto copy) {
      to.resize(from.size());
      copy(from.data(), from.size(), to.data());
    };
    copyAll(inCap_, z.inCap, copyDoubles);
    copyAll(fs_, z.fs, copyDoubles);
    copyAll(ft_, z.ft, copyDoubles);
    copyAll(reach_, z.reach, copyWords);
    copyAll(up_, z.up, copyWords);
    copyAll(touched_, z.touched, copyInts);
    std::size_t length = 0;
    for (int v : touched_) length += uz(rowSpan_[uz(v)].second - rowSpan_[uz(v)].first);
    z.flows.resize(length);
    z.residualRows.resize(touched_.size() * uz(words()));
    std::size_t at = 0;
    for (std::size_t x = 0; x < touched_.size(); ++x) {
      const int v = touched_[x];
      const std::pair<int, int> span = rowSpan_[uz(v)];
      const std::size_t rowLength = uz(span.second - span.first);
      copyDoubles(flow_.get() + uz(v) * uz(n_) + uz(span.first), rowLength, z.flows.data() + at);
      at += rowLength;
      copyWords(residual_.data() + uz(v) * uz(words()), uz(words()),
                z.residualRows.data() + x * uz(words()));
    }
  }

  __attribute__((noinline)) void loadState(const SavedFlowState& z) override {
    // Rows touched now but not then go back to untouched (the saved rows are written below).
    for (int v : z.touched) isTouched_[uz(v)] = 2;
    for (int v : touched_) {
      if (isTouched_[uz(v)] == 2) continue;
      copyWords(adjacency_.data() + uz(v) * uz(words()), uz(words()),
                residual_.data() + uz(v) * uz(words()));
      isTouched_[uz(v)] = 0;
    }
    // (Copies through copyDoubles()/copyWords(): memcpy at -Oz is slow in WASM, see zeroFill.)
    touched_.resize(z.touched.size());
    copyInts(z.touched.data(), z.touched.size(), touched_.data());
    std::size_t at = 0;
    for (std::size_t x = 0; x < touched_.size(); ++x) {
      const int v = touched_[x];
      isTouched_[uz(v)] = 1;
      const std::pair<int, int> span = rowSpan_[uz(v)];
      const std::size_t length = uz(span.second - span.first);
      copyDoubles(z.flows.data() + at, length, flow_.get() + uz(v) * uz(n_) + uz(span.first));
      at += length;
      copyWords(z.residualRows.data() + x * uz(words()), uz(words()),
                residual_.data() + uz(v) * uz(words()));
    }
    s_ = z.s;
    sourceCap_ = z.sourceCap;
    inCapReady_ = z.inCapReady;
    flowFacts_ = static_cast<const LeafFacts*>(z.flowFacts);
    copyDoubles(z.inCap.data(), z.inCap.size(), inCap_.data());
    copyDoubles(z.fs.data(), z.fs.size(), fs_.data());
    copyDoubles(z.ft.data(), z.ft.size(), ft_.data());
    copyWords(z.reach.data(), z.reach.size(), reach_.data());
    copyWords(z.up.data(), z.up.size(), up_.data());
  }

  /// Writes every row of the flow storage once (zeros; rows are zeroed again when first touched),
  /// so that no solve pays the first-write page faults of fresh memory.
  void writeStorage() override { zeroFill(flow_.get(), mats_.size() * uz(n_) * uz(n_)); }

  void learnLeaves(const double* c) override { (void)leafFacts(c); }

  std::size_t memoryBytes() const override {
    return bytesFor(n_, static_cast<int>(mats_.size())) +
           leafFacts_.size() * uz(layerWords_ + words()) * sizeof(std::uint64_t);
  }

  /// Whether every arc goes from a node to one of the same or a lower index (a causal mask).
  bool lowerTriangular() const override { return lowerTriangular_; }

  /// Whether S reaches every node of the bottom layer.
  bool reachesEveryLeaf() const override { return countBits(reachLayer(depth_ - 1)) == n_; }

  /// A cut bound for leaf capacities c: the source arcs; or, for every layer-(D-1) node that S
  /// reaches, the cheaper of its leaf arc and its in-arcs from reachable nodes.
  double upperBound(const double* c) override {
    if (!inCapReady_) computeInCap();
    // Nodes with c[k] == 0 add nothing, so only the others are visited (on causal inputs the
    // sink's window, about half of the nodes S reaches).
    double sum = 0.0;
    forEachBoth(reachLayer(depth_ - 1), leafFacts(c).positive.data(), [&](int k) {
      sum += std::min(c[k], inCap_[uz(k)]);
      return true;
    });
    return std::min(sum, sourceCap_);
  }

  /// The maximum flow with leaf capacities c, continuing from the previous call's flow. The
  /// values at c must not change during the solver's life (facts about them are cached by
  /// address).
  /// `bound` must be the capacity of some S-T cut (e.g. upperBound(c)); the search stops when
  /// the flow meets it.
  double solve(const double* c, double bound) override {
    c_ = c;
    facts_ = &leafFacts(c);
    // Nodes that cannot reach T carry no flow and are dead ends even in the residual graph;
    // the source arcs into the others are a cut.
    bound = std::min(bound, coreachBound());
    if (isNarrow()) return std::min(bound, narrowMinCut());
    // Phase 1: the layers themselves are a level graph (downward arcs only), so no BFS. The
    // excess of leaf arcs that shrank is walked up along flow-carrying arcs and, at each layer
    // on the way, first pushed back down on these levels (see cancelExcess()); only what cannot
    // go down anywhere reaches S and is pushed again from there.
    takeLeafExcess();
    downwardLevels();
    cancelExcess();
    double value = currentValue();
    if (value >= bound - kMetTol) return bound;
    pushFromSource(bound - value);
    value = currentValue();
    if (value >= bound - kMetTol) return bound;
    for (;;) {
      if (!buildLevels()) return value;
      value += blockingFlow(bound - value);
      if (value >= bound - kMetTol) return bound;
    }
  }

  /// After setSource(): a maximum flow from zero flow with leaf capacities c, to the end (no
  /// bound stops it, as none could tell which of several minimum cuts to report), then the
  /// arcs of the minimum cut nearest T appended to `cut`: the arcs of positive capacity into
  /// the sink side (the nodes that can still reach T in the residual graph, by the same kEps
  /// rule the solve used) from outside it. Returns false, leaving `cut` alone, if S itself can
  /// still reach T, i.e. the flow fell short of a maximum by more than the rounding the rule
  /// allows; flowBottleneck() then asks the general solver.
  /// Why here: the general solver's graph takes ~0.3 GB at L=24, n=512, and this solver is
  /// already built (kept by the session, which asked it for the pair's value).
  __attribute__((noinline)) bool minimumCutNearestSink(const double* c,
                                                       std::vector<SolverArc>& cut) override {
    c_ = c;
    facts_ = &leafFacts(c);
    const double beyond = coreachBound() + 1.0;  // above every flow (sets the live nodes too)
    takeLeafExcess();
    downwardLevels();
    cancelExcess();
    pushFromSource(beyond);
    while (buildLevels()) blockingFlow(beyond);

    std::vector<std::uint64_t> side(uz(layerWords_), 0);
    const auto sideLayer = [&](int t) { return side.data() + uz(t) * uz(words()); };
    const auto meets = [&](const std::uint64_t* a, const std::uint64_t* b) {
      for (int w = 0; w < words(); ++w) {
        if (a[w] & b[w]) return true;
      }
      return false;
    };
    for (int k = 0; k < n_; ++k) {
      if (c[k] - ft_[uz(k)] > kEps) set(sideLayer(depth_ - 1), k);
    }
    // Residual arcs run down (arcs with room) and up (arcs carrying flow, turned around), so
    // sweep up and down until nothing joins.
    for (bool grew = true; grew;) {
      grew = false;
      for (int t = depth_ - 2; t >= 0; --t) {
        for (int i = 0; i < n_; ++i) {
          if (!test(sideLayer(t), i) && meets(residualRow(t, i), sideLayer(t + 1))) {
            set(sideLayer(t), i);
            grew = true;
          }
        }
      }
      for (int t = 0; t + 1 < depth_; ++t) {
        for (int k = 0; k < n_; ++k) {
          if (!test(sideLayer(t + 1), k) && meets(upRow(t, k), sideLayer(t))) {
            set(sideLayer(t + 1), k);
            grew = true;
          }
        }
      }
    }
    for (int k = 0; k < n_; ++k) {
      if (test(sideLayer(0), k) && s_[k] - fs_[uz(k)] > kEps) return false;
    }
    for (int k = 0; k < n_; ++k) {
      if (s_[k] > 0.0 && test(sideLayer(0), k)) cut.push_back(SolverArc{-1, 0, k});
    }
    for (int t = 0; t + 1 < depth_; ++t) {
      for (int i = 0; i < n_; ++i) {
        if (test(sideLayer(t), i)) continue;
        const double* row = mats_[uz(t)] + uz(i) * uz(n_);
        forEachBit(sideLayer(t + 1), [&](int k) {
          if (row[k] > 0.0) cut.push_back(SolverArc{t, i, k});
        });
      }
    }
    for (int i = 0; i < n_; ++i) {
      if (c[i] > 0.0 && !test(sideLayer(depth_ - 1), i)) cut.push_back(SolverArc{depth_ - 1, i, 0});
    }
    return true;
  }

 private:
  struct Frame {
    int layer;  // -1 for S
    int index;
    int level;
    double remaining;  // what the parent still wants from this node
    double pushed;     // what this node has passed on so far
  };

  static std::size_t uz(int v) { return static_cast<std::size_t>(v); }
  // 64-bit words per layer in every bitset: kWords, or (kWords = 0) as many as n needs.
  int words() const { return kWords > 0 ? kWords : dynWords_; }
  // Bit k of a bitset lies in word wordOf(k) under maskOf(k). k is never negative: as unsigned,
  // / 64 and % 64 are a shift and a mask, where signed they need sign fix-ups (1-2% of a flow's
  // time in WASM, old and new builds alternating in one process).
  static std::size_t wordOf(int k) { return static_cast<unsigned>(k) / 64; }
  static std::uint64_t maskOf(int k) { return std::uint64_t{1} << (static_cast<unsigned>(k) % 64); }
  static bool test(const std::uint64_t* bits, int k) { return (bits[wordOf(k)] & maskOf(k)) != 0; }
  // Calls fn(k) for every bit k set in bits (one layer), in increasing order: the per-layer loops
  // below visit only the nodes that matter (on causal inputs a window of each layer).
  template <typename Fn>
  ATTNFLOW_HOT void forEachBit(const std::uint64_t* bits, Fn fn) const {
    for (int w = 0; w < words(); ++w) {
      for (std::uint64_t m = bits[w]; m != 0; m &= m - 1) fn(w * 64 + __builtin_ctzll(m));
    }
  }
  // Calls fn(k) for every k set in both a and b (one layer), in increasing order, while fn
  // returns true. Each word of a & b is read once, so fn may clear bit k itself (the walk is past
  // it) but must not change bits above k. Cheaper than firstBoth() from k + 1 per visit on the
  // wave's hot loops, which visit several children per node.
  template <typename Fn>
  ATTNFLOW_HOT void forEachBoth(const std::uint64_t* a, const std::uint64_t* b, Fn fn) const {
    for (int w = 0; w < words(); ++w) {
      for (std::uint64_t m = a[w] & b[w]; m != 0; m &= m - 1) {
        if (!fn(w * 64 + __builtin_ctzll(m))) return;
      }
    }
  }
  // forEachBoth(), but node `first` (if set in both) comes before the others.
  template <typename Fn>
  ATTNFLOW_HOT void forEachBothFrom(const std::uint64_t* a, const std::uint64_t* b, int first,
                                    Fn fn) const {
    if (test(a, first) && test(b, first) && !fn(first)) return;
    forEachBoth(a, b, [&](int k) { return k == first || fn(k); });
  }
  // The number of bits set in one layer's bitset.
  int countBits(const std::uint64_t* bits) const {
    int count = 0;
    for (int w = 0; w < words(); ++w) count += __builtin_popcountll(bits[w]);
    return count;
  }
  static void set(std::uint64_t* bits, int k) { bits[wordOf(k)] |= maskOf(k); }
  static void clear(std::uint64_t* bits, int k) { bits[wordOf(k)] &= ~maskOf(k); }
  // The first k >= from with bit k set in both a and b, or n_ if none.
  ATTNFLOW_HOT int firstBoth(const std::uint64_t* a, const std::uint64_t* b, int from) const {
    if (from >= n_) return n_;
    int w = from / 64;
    std::uint64_t m = a[w] & b[w] & (~std::uint64_t{0} << (from % 64));
    while (m == 0) {
      if (++w >= words()) return n_;
      m = a[w] & b[w];
    }
    return w * 64 + __builtin_ctzll(m);
  }
  std::size_t rowIndex(int t, int i) const { return (uz(t) * uz(n_) + uz(i)) * uz(words()); }
  // Row i of a per-node bitset given its layer's first row (as the hot loops hold it).
  std::uint64_t* rowIn(std::uint64_t* layerRows, int i) const {
    return layerRows + uz(i) * uz(words());
  }
  std::uint64_t* adjacencyRow(int t, int i) { return adjacency_.data() + rowIndex(t, i); }
  // Arcs (t, i) -> (t+1, k) with residual capacity > kEps.
  std::uint64_t* residualRow(int t, int i) { return residual_.data() + rowIndex(t, i); }
  // Arcs (t, p) -> (t+1, k) carrying flow > kEps, by k: bit p of upRow(t, k).
  std::uint64_t* upRow(int t, int k) { return up_.data() + rowIndex(t, k); }
  std::uint64_t* coreachLayer(int t) { return coreach_.data() + uz(t) * uz(words()); }
  const std::uint64_t* coreachLayer(int t) const { return coreach_.data() + uz(t) * uz(words()); }
  std::uint64_t* reachLayer(int t) { return reach_.data() + uz(t) * uz(words()); }
  const std::uint64_t* reachLayer(int t) const { return reach_.data() + uz(t) * uz(words()); }
  // Live nodes of each layer at one level (level 0 is S, level levelT_ is T).
  std::uint64_t* levelSet(int level) { return levels_.data() + uz(level) * uz(layerWords_); }
  void ensureLevels(int level) {
    const std::size_t need = (uz(level) + 1) * uz(layerWords_);
    if (levels_.size() < need) levels_.resize(need, 0);
  }
  double* waveExcess(int t) { return waveExcess_.data() + uz(t) * uz(n_); }
  std::uint64_t* waveBits(int t) { return waveBits_.data() + uz(t) * uz(words()); }
  double* flowMat(int t) { return flow_.get() + uz(t) * uz(n_) * uz(n_); }
  // Marks the out-arc row of node v (= t * n + i, t < depth_ - 1) as in use, zeroing its flows
  // the first time after setSource(). Flows of a row are read only after this, and only on its
  // arcs (adjacency bits), so only the span from its first to its last arc is zeroed (on causal
  // inputs row i has arcs to 0..i alone).
  ATTNFLOW_HOT void touch(int v) {
    if (!isTouched_[uz(v)]) {
      isTouched_[uz(v)] = 1;
      touched_.push_back(v);
      const std::pair<int, int> span = rowSpan_[uz(v)];
      zeroFill(flow_.get() + uz(v) * uz(n_) + uz(span.first), uz(span.second - span.first));
    }
  }

  // Keep the two bitsets of an arc (t, i) -> (t+1, k) in step with its new flow f: its residual
  // bit (bit k of its tail's residual row) and its flow bit (bit i of its head's up row). Every
  // caller knows which way the flow moved, so only the changes that can follow are made. Where it
  // grew, on an arc chosen for its residual bit (set): that bit cleared if the arc filled, the
  // flow bit set if the flow is above kEps. Writing both bits on every change cost 12% of a row's
  // flow natively on real rows, 1-3% in WASM. The callers pass the capacity and the rows, which
  // the hot loops hold already (one node's out-arcs, or its in-arcs): recomputing both row
  // addresses per arc had cost ~5% of the instructions natively, 2-4% of the time in WASM.
  ATTNFLOW_HOT static void syncGrownArcBits(double cap, double f, std::uint64_t* residual, int k,
                                            std::uint64_t* up, int i) {
    if (cap - f <= kEps) clear(residual, k);
    if (f > kEps) set(up, i);
  }
  // Where the flow shrank: the residual bit set if there is room, the flow bit cleared if the flow
  // is now at most kEps.
  ATTNFLOW_HOT static void syncShrunkArcBits(double cap, double f, std::uint64_t* residual, int k,
                                             std::uint64_t* up, int i) {
    if (cap - f > kEps) set(residual, k);
    if (f <= kEps) clear(up, i);
  }

  // inCap_: for each bottom node, its in-capacity from nodes S reaches (the source arcs when the
  // bottom layer is layer 0). Computed at the first upperBound() after setSource(): a source
  // that fails the certificate's test on reach alone never needs it (n^2 adds).
  void computeInCap() {
    inCapReady_ = true;
    if (depth_ == 1) {
      for (int k = 0; k < n_; ++k) inCap_[uz(k)] = s_[k];
      return;
    }
    zeroFill(inCap_.data(), inCap_.size());
    const std::uint64_t* above = reachLayer(depth_ - 2);
    forEachBit(above, [&](int i) {
      const double* row = mats_[uz(depth_ - 2)] + uz(i) * uz(n_);
      for (int k = 0; k < n_; ++k) inCap_[uz(k)] += row[k];
    });
  }

  // Facts about leaf capacities c that do not depend on the source, kept per array (the callers
  // pass the same arrays again for every source): the nodes that can reach T in the whole graph
  // (see coreachBound()), and the bottom nodes with c[k] > 0, the only ones whose leaf arc can
  // carry flow.
  struct LeafFacts {
    std::vector<std::uint64_t> coreach;   // per layer
    std::vector<std::uint64_t> positive;  // bottom layer
  };

  const LeafFacts& leafFacts(const double* c) {
    if (c == lastFactsKey_) return *lastFacts_;
    auto found = leafFacts_.find(c);
    if (found == leafFacts_.end()) {
      LeafFacts facts;
      facts.positive.assign(uz(words()), 0);
      facts.coreach.assign(uz(layerWords_), 0);
      std::uint64_t* bottom = facts.coreach.data() + uz(depth_ - 1) * uz(words());
      for (int k = 0; k < n_; ++k) {
        if (c[k] > 0.0) set(facts.positive.data(), k);
        if (c[k] > kEps) set(bottom, k);
      }
      for (int t = depth_ - 2; t >= 0; --t) {
        const std::uint64_t* below = facts.coreach.data() + uz(t + 1) * uz(words());
        std::uint64_t* here = facts.coreach.data() + uz(t) * uz(words());
        for (int i = 0; i < n_; ++i) {
          const std::uint64_t* bits = adjacencyRow(t, i);
          for (int w = 0; w < words(); ++w) {
            if (bits[w] & below[w]) {
              set(here, i);
              break;
            }
          }
        }
      }
      found = leafFacts_.emplace(c, std::move(facts)).first;
    }
    lastFactsKey_ = c;
    lastFacts_ = &found->second;
    return found->second;
  }

  /// A second cut bound: the source arcs into layer-0 nodes that can reach T at all.
  double coreachBound() {
    // A node S reaches that can reach T does so through nodes S reaches, so the live set is the
    // static set of leafFacts() intersected with reach_.
    const std::uint64_t* co = facts_->coreach.data();
    for (std::size_t x = 0; x < uz(layerWords_); ++x) coreach_[x] = co[x] & reach_[x];
    const std::uint64_t* top = coreachLayer(0);
    double sum = 0.0;
    forEachBit(top, [&](int k) { sum += s_[k]; });
    return sum;
  }

  // Graphs whose live nodes (coreach_) number at most kNarrow on every layer are solved by
  // enumerating cuts instead (narrowMinCut()): on causal inputs, the pairs whose window j..r is
  // that narrow (506 of the 8,256 pairs of the causal last layer at n = 128). Warm-started, these
  // were the costliest solves per pair: the previous sink's flow had to move almost entirely,
  // and most of them ended below every bound and needed a final BFS. Wider windows cost more to
  // enumerate than to solve (kNarrow = 5 was slower than 4, 4 faster than 3).
  static constexpr int kNarrow = 4;

  bool isNarrow() const {
    for (int t = 0; t < depth_; ++t) {
      if (countBits(coreachLayer(t)) > kNarrow) return false;
    }
    return true;
  }

  // The minimum cut, by dynamic programming over the layers: a cut is a choice of source-side
  // nodes X_t on every layer, and its capacity is a sum of terms that each join two neighbouring
  // layers (S -> layer 0 into nodes outside X_0, arcs from X_t to nodes outside X_t+1, leaf arcs
  // out of X_D-1), so the cheapest cut ending in each subset of a layer follows from those of the
  // layer above. Only live nodes need a side: nodes S does not reach go to T's side and nodes
  // that cannot reach T to S's side, which adds no arc of capacity > kEps (the solver ignores
  // those arcs as well). By max-flow/min-cut this is the maximum flow; the flow itself is left
  // as it was (the next solve starts from the last one that ran).
  double narrowMinCut() const {
    constexpr int kSubsets = 1 << kNarrow;
    int nodes[2][kNarrow] = {};
    double cost[2][kSubsets];
    // Layer 0: S's arcs into the nodes outside X are cut.
    int count = 0;
    forEachBit(coreachLayer(0), [&](int k) { nodes[0][count++] = k; });
    int m = count;
    for (int x = 0; x < (1 << m); ++x) {
      double sum = 0.0;
      for (int a = 0; a < m; ++a) {
        if (!(x >> a & 1)) sum += s_[nodes[0][a]];
      }
      cost[0][x] = sum;
    }
    int cur = 0;
    for (int t = 0; t + 1 < depth_; ++t) {
      const int nxt = cur ^ 1;
      count = 0;
      forEachBit(coreachLayer(t + 1), [&](int k) { nodes[nxt][count++] = k; });
      const int mNext = count;
      const double* mat = mats_[uz(t)];
      // out[a][z]: capacity of the arcs from node a of layer t into the subset z of layer t+1.
      double out[kNarrow][kSubsets];
      for (int a = 0; a < m; ++a) {
        const double* row = mat + uz(nodes[cur][a]) * uz(n_);
        out[a][0] = 0.0;
        for (int z = 1; z < (1 << mNext); ++z) {
          const int lowest = nodes[nxt][__builtin_ctz(static_cast<unsigned>(z))];
          out[a][z] = out[a][z & (z - 1)] + row[lowest];
        }
      }
      const int fullNext = (1 << mNext) - 1;
      for (int y = 0; y <= fullNext; ++y) {
        const int z = fullNext ^ y;
        double cut[kSubsets];
        cut[0] = 0.0;
        double best = cost[cur][0];
        for (int x = 1; x < (1 << m); ++x) {
          cut[x] = cut[x & (x - 1)] + out[__builtin_ctz(static_cast<unsigned>(x))][z];
          best = std::min(best, cost[cur][x] + cut[x]);
        }
        cost[nxt][y] = best;
      }
      cur = nxt;
      m = mNext;
    }
    // The leaf arcs out of X are cut.
    double best = std::numeric_limits<double>::infinity();
    for (int x = 0; x < (1 << m); ++x) {
      double sum = cost[cur][x];
      for (int a = 0; a < m; ++a) {
        if (x >> a & 1) sum += c_[nodes[cur][a]];
      }
      best = std::min(best, sum);
    }
    return best;
  }

  // Leaf flows are non-zero only at bottom nodes that S reaches and whose leaf capacity is
  // positive.
  double currentValue() const {
    double v = 0.0;
    forEachBoth(reachLayer(depth_ - 1), facts_->positive.data(), [&](int k) {
      v += ft_[uz(k)];
      return true;
    });
    return v;
  }

  // Lowers the flow on leaf arcs above their new capacity; the difference stays as excess at
  // the bottom nodes (excess_), for cancelExcess(). The flow is acyclic (all arcs point down), so
  // every unit leaving a node came in through some parent: walking the excess up along arcs that
  // carry flow restores conservation at every node.
  // Only the nodes in excessBits_ may hold a non-zero excess_ (excessNext_ is all zero between
  // layers), so the walk visits those alone instead of every node of every layer.
  // Leaf flows can be non-zero only where the previous solve's leaf capacities were positive
  // (none since setSource()), so only those nodes are visited.
  void takeLeafExcess() {
    zeroFill(excessBits_.data(), excessBits_.size());
    if (flowFacts_ != nullptr) {
      forEachBoth(reachLayer(depth_ - 1), flowFacts_->positive.data(), [&](int k) {
        const double e = ft_[uz(k)] - c_[k];
        if (e > 0.0) {
          excess_[uz(k)] = e;
          ft_[uz(k)] = c_[k];
          set(excessBits_.data(), k);
        }
        return true;
      });
    }
    flowFacts_ = facts_;
  }

  // Moves the excess up one layer at a time (cancelling flow on arcs into it) and, at each layer,
  // first pushes it back down to T along downward residual paths from there, on the phase-1
  // levels (downwardLevels() must be built; see pushDownWave()). Only what cannot go down is
  // walked on up; what reaches layer 0 is taken off the source arcs.
  // The push-downs are ordinary augmentations (from a node's excess to T), so the flow stays
  // feasible and conserving once the rest of the excess is cancelled, and solve()'s cut test or
  // BFS proof still decides the value; they save re-pushing that flow from S through every layer
  // above (the old scheme, a BFS reroute from the bottom excess then cancelling all of it to S,
  // was 1.35x slower on causal inputs and up to 1.4x slower on deep one-row problems). Dead
  // nodes stay dead from layer to layer: cancelling flow on an arc into a node that kept excess
  // (it could not push it down) opens no downward path to T.
  void cancelExcess() {
    bool pushDown = true;
    double room = -1.0;  // not summed yet
    bool any = false;
    for (int w = 0; w < words(); ++w) any = any || excessBits_[uz(w)] != 0;
    if (!any) return;
    for (int t = depth_ - 1; t >= 1; --t) {
      zeroFill(excessNextBits_.data(), excessNextBits_.size());
      forEachBit(excessBits_.data(), [&](int i) {
        const double e = excess_[uz(i)];
        excess_[uz(i)] = 0.0;
        if (e > 0.0) cancelInto(t, i, e, excessNext_.data(), excessNextBits_.data());
      });
      excess_.swap(excessNext_);
      excessBits_.swap(excessNextBits_);
      if (pushDown) {
        double total = 0.0;
        forEachBit(excessBits_.data(), [&](int k) { total += std::max(0.0, excess_[uz(k)]); });
        if (total > kEps) {
          // When the leaf arcs are full (often: the sink's in-arcs are the cut) no push-down can
          // succeed, and trying costs a search of every layer below. The room is summed once and
          // then lowered by what each push-down delivers (bottom nodes leave the live set with at
          // most kEps of room left, so this stays at or above the live room: a valid budget);
          // summed again when that nears zero, where rounding could keep it just above kEps.
          if (room < 1e-9) room = bottomRoom();
          if (room <= kEps) {
            pushDown = false;
          } else {
            room -= pushDownWave(t - 1, std::min(total, room));
          }
        }
      }
    }
    returnExcessToSource();
  }

  // What layer-0 nodes still hold (excess_, excessBits_) goes back to S: it comes off their source
  // arcs, and the excess is cleared.
  void returnExcessToSource() {
    forEachBit(excessBits_.data(), [&](int k) {
      fs_[uz(k)] = std::max(0.0, fs_[uz(k)] - std::max(0.0, excess_[uz(k)]));
      excess_[uz(k)] = 0.0;
    });
    zeroFill(excessBits_.data(), excessBits_.size());
  }

  // Cancels e units of flow on arcs into node (t, i), t >= 1, from its parents: those with flow
  // > kEps first (a bitset walk), flows at or below kEps only if that was not enough, so e is
  // always cancelled in full (the flow into a node is at least what it must give back). The
  // parents' share goes to parentExcess[p], with bit p set in parentBits.
  void cancelInto(int t, int i, double e, double* parentExcess, std::uint64_t* parentBits) {
    double* f = flowMat(t - 1);
    const double* cap = mats_[uz(t - 1)];
    std::uint64_t* residualOfLayer = residualRow(t - 1, 0);
    std::uint64_t* parents = upRow(t - 1, i);
    // Cancels min(flow, e) on arc p -> i and hands it to parent p.
    const auto takeFrom = [&](int p) {
      const std::size_t arc = uz(p) * uz(n_) + uz(i);
      double& fp = f[arc];
      const double x = std::min(fp, e);
      fp -= x;
      e -= x;
      parentExcess[uz(p)] += x;
      set(parentBits, p);
      syncShrunkArcBits(cap[arc], fp, rowIn(residualOfLayer, p), i, parents, p);
    };
    for (int w = 0; w < words() && e > 0.0; ++w) {
      std::uint64_t bits = parents[w];
      while (bits != 0 && e > 0.0) {
        const int p = w * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        takeFrom(p);
      }
    }
    for (int p = 0; p < n_ && e > 0.0; ++p) {
      if (!isTouched_[uz((t - 1) * n_ + p)] || !test(adjacencyRow(t - 1, p), i)) continue;
      if (f[uz(p) * uz(n_) + uz(i)] > 0.0) takeFrom(p);
    }
  }

  // Passes up to `amount` from node (depth_-2, i) straight through its arcs to live bottom nodes
  // and their leaf arcs; returns how much went. Bottom nodes whose leaf arc fills leave the live
  // set.
  // Its own leaf, through the arc to the bottom node of the same index (the residual stream's,
  // at least 1 - alpha and usually the widest), is tried first, then the others in index order.
  // In index order alone every node that held a little excess filled the lowest live leaf first:
  // on causal inputs the new sink's own bottom node, whose room the flow coming down the sink's
  // diagonal needed, so a BFS phase had to move it back (paths down to that node, up to one of
  // these parents and down to its leaf). Causal last layer 8% faster; non-causal cases ~4%.
  ATTNFLOW_HOT double passToLeaves(int t, int i, double amount) {
    std::uint64_t* bottom = levelSet(t + 2) + uz(t + 1) * uz(words());
    std::uint64_t* res = residualRow(t, i);
    std::uint64_t* upOfLayer = upRow(t, 0);
    const double* cap = mats_[uz(t)] + uz(i) * uz(n_);
    double* f = flowMat(t) + uz(i) * uz(n_);
    touch(t * n_ + i);
    double left = amount;
    if (left <= kEps) return 0.0;
    forEachBothFrom(res, bottom, i, [&](int k) {
      const double room = c_[k] - ft_[uz(k)];
      const double x = std::min(std::min(left, cap[k] - f[k]), room);
      if (x > 0.0) {
        f[k] += x;
        syncGrownArcBits(cap[k], f[k], res, k, rowIn(upOfLayer, k), i);
        ft_[uz(k)] += x;
        left -= x;
      }
      if (room - x <= kEps) clear(bottom, k);
      return left > kEps;
    });
    return amount - left;
  }

  // Passes up to `amount` from node (t, i) down to the leaves at once, depth first: each live
  // child is offered what the arc has room for and passes on what it can at once; a child that
  // passes less is dead for the phase-1 levels (every arc from it to a live child is full or the
  // child is dead). Returns how much went. Only the wave calls it, from the layers
  // depth_ - depthFirstLayers_ .. depth_ - 3, so the node is at most kDepthFirstLayers - 2 layers
  // above those that pass straight to the leaves.
  double passDown(int t, int i, double amount) {
    static_assert(kDepthFirstLayers - 2 == 3 && kDepthFirstLayersCausal <= kDepthFirstLayers);
    switch (depth_ - 2 - t) {
      case 1: return passDownFrom<1>(t, i, amount);
      case 2: return passDownFrom<2>(t, i, amount);
      default: return passDownFrom<3>(t, i, amount);
    }
  }

  // passDown() from a node kHeight layers above the layer that passes to the leaves: one
  // function per height, each inlined into the one above, so that a push-down runs as nested
  // loops rather than a call per node. As a recursive function it made a call for each of the
  // ~1,350 nodes a sink's push-downs visit (row 0 of the last layer at L=12, n=128, real rows).
  template <int kHeight>
  ATTNFLOW_HOT double passDownFrom(int t, int i, double amount) {
    if constexpr (kHeight == 0) {
      return passToLeaves(t, i, amount);
    } else {
      if (amount <= kEps) return 0.0;
      std::uint64_t* res = residualRow(t, i);
      std::uint64_t* upOfLayer = upRow(t, 0);
      std::uint64_t* below = levelSet(t + 2) + uz(t + 1) * uz(words());
      const double* cap = mats_[uz(t)] + uz(i) * uz(n_);
      double* f = flowMat(t) + uz(i) * uz(n_);
      touch(t * n_ + i);
      double left = amount;
      forEachBoth(res, below, [&](int k) {
        const double offer = std::min(left, cap[k] - f[k]);
        const double got = passDownFrom<kHeight - 1>(t + 1, k, offer);
        if (got > 0.0) {
          f[k] += got;
          syncGrownArcBits(cap[k], f[k], res, k, rowIn(upOfLayer, k), i);
          left -= got;
        }
        if (offer - got > kEps) clear(below, k);
        return left > kEps;
      });
      return amount - left;
    }
  }

  // Pushes the excess held at layer t0 (excess_), at most `allow` of it, down to T on the phase-1
  // levels a layer at a time (a preflow wave, as in Karzanov's blocking flow) instead of one DFS
  // path at a time: amounts that several nodes send through one node below are merged there, so
  // a path shared by many small pushes is walked once per wave rather than once per push (a DFS
  // from the excess, used before, walked the new sink's chain of nodes again for every parent
  // whose excess it carried: 86% of its frames on causal inputs). A node that cannot pass on all
  // it holds is dead for the phase-1 levels (every arc to a live child is saturated) and gives
  // back what it holds to its parents (cancelling flow on arcs into it), which try their other
  // children in the next wave; each wave either empties every node below t0 or kills one, so it
  // ends. The layers near the bottom hold nothing: nodes of layer depth_-2 pass straight through
  // their leaf arcs, and nodes of the layers above them down from depth_-depthFirstLayers_ offer
  // each child only what it passes on at once (passDown(); flooding the children of layer
  // depth_-3 and taking the rest back made the non-causal cases 10-15% slower).
  // Nodes of layer t0 that cannot pass on their excess keep it (cancelExcess() walks it on up).
  // Only feasibility matters here: the flow stays conserving once the excess is cancelled, and
  // solve()'s cut test or BFS proof decides the value.
  // Returns what reached T.
  double pushDownWave(int t0, double allow) {
    const double allowed = allow;
    // Each wave but the last kills a node or moves the remainders below kEps; the cap is only a
    // guard against rounding ping-pong (the last wave gives everything back to layer t0).
    const int maxWaves = (depth_ - t0) * n_ + 2;
    // The lowest layer that may hold excess: the sweeps stop there (the two layers above the
    // bottom never hold any, nor, near the top, the layers the waves have not reached yet).
    int deepest = t0;
    for (int wave = 0;; ++wave) {
      const bool last = wave >= maxWaves;
      // Forward: every live node holding excess pushes it to live children, top layer first.
      for (int t = t0; t <= deepest; ++t) {
        std::uint64_t* held = t == t0 ? excessBits_.data() : waveBits(t);
        double* ex = t == t0 ? excess_.data() : waveExcess(t);
        std::uint64_t* live = levelSet(t + 1) + uz(t) * uz(words());
        for (int w = 0; w < words(); ++w) {
          for (std::uint64_t bits = held[w] & live[w]; bits != 0; bits &= bits - 1) {
            const int i = w * 64 + __builtin_ctzll(bits);
            const double e0 = ex[uz(i)];
            double e = t == t0 ? std::min(e0, allow) : e0;
            if (e <= kEps) continue;
            const double tried = e;
            if (t + 1 < depth_) {
              std::uint64_t* res = residualRow(t, i);
              std::uint64_t* upOfLayer = upRow(t, 0);
              std::uint64_t* below = levelSet(t + 2) + uz(t + 1) * uz(words());
              double* exBelow = waveExcess(t + 1);
              std::uint64_t* heldBelow = waveBits(t + 1);
              const double* cap = mats_[uz(t)] + uz(i) * uz(n_);
              double* f = flowMat(t) + uz(i) * uz(n_);
              if (t + 2 == depth_) {
                e -= passToLeaves(t, i, e);
              } else if (t + depthFirstLayers_ >= depth_) {
                e -= passDown(t, i, e);
              } else {
                touch(t * n_ + i);
                deepest = std::max(deepest, t + 1);
                forEachBoth(res, below, [&](int k) {
                  const double x = std::min(e, cap[k] - f[k]);
                  f[k] += x;
                  syncGrownArcBits(cap[k], f[k], res, k, rowIn(upOfLayer, k), i);
                  exBelow[uz(k)] += x;
                  set(heldBelow, k);
                  e -= x;
                  return e > kEps;
                });
              }
            } else {
              const double room = c_[i] - ft_[uz(i)];
              const double x = std::min(e, room);
              ft_[uz(i)] += x;
              e -= x;
              if (room - x <= kEps) clear(live, i);
            }
            if (t == t0) {
              allow -= tried - e;
              ex[uz(i)] = e0 - (tried - e);
            } else {
              ex[uz(i)] = e;
            }
            // A node left with nothing drops out of the held set (nothing to give back).
            if (ex[uz(i)] == 0.0) held[w] &= ~maskOf(i);
            if (e > kEps) clear(live, i);
          }
        }
      }
      // Backward, bottom layer first: dead nodes (and tiny remainders) give back what they hold;
      // live nodes that hold more than kEps try again in the next wave.
      bool again = false;
      for (int t = deepest; t > t0; --t) {
        std::uint64_t* held = waveBits(t);
        double* ex = waveExcess(t);
        const std::uint64_t* live = levelSet(t + 1) + uz(t) * uz(words());
        double* exAbove = t - 1 == t0 ? excess_.data() : waveExcess(t - 1);
        std::uint64_t* heldAbove = t - 1 == t0 ? excessBits_.data() : waveBits(t - 1);
        for (int w = 0; w < words(); ++w) {
          for (std::uint64_t bits = held[w]; bits != 0; bits &= bits - 1) {
            const int i = w * 64 + __builtin_ctzll(bits);
            const double e = ex[uz(i)];
            if (e > kEps && test(live, i) && !last) {
              again = true;
              continue;
            }
            ex[uz(i)] = 0.0;
            held[w] &= ~maskOf(i);
            if (e > 0.0) {
              cancelInto(t, i, e, exAbove, heldAbove);
              if (t - 1 == t0) allow += e;
            }
          }
        }
      }
      if (!again && !last && allow > kEps) {
        const std::uint64_t* live = levelSet(t0 + 1) + uz(t0) * uz(words());
        for (int w = 0; w < words() && !again; ++w) {
          for (std::uint64_t bits = excessBits_[uz(w)] & live[w]; bits != 0; bits &= bits - 1) {
            if (excess_[uz(w * 64 + __builtin_ctzll(bits))] > kEps) {
              again = true;
              break;
            }
          }
        }
      }
      if (!again) return allowed - allow;
    }
  }

  // Phase 1 from S, as a wave too (pushDownWave() rooted at layer 0): the source arcs into live
  // top nodes are filled, at most `want` is pushed down, and what the top nodes keep goes back to
  // S. (Faster than the DFS from S on the non-causal cases, 1.3x on the last layer at n = 128.)
  void pushFromSource(double want) {
    const std::uint64_t* live = levelSet(1);
    forEachBit(live, [&](int k) {
      const double r = s_[k] - fs_[uz(k)];
      if (r > kEps) {
        fs_[uz(k)] += r;
        excess_[uz(k)] = r;
        set(excessBits_.data(), k);
      }
    });
    (void)pushDownWave(0, want);
    returnExcessToSource();
  }

  // What the live bottom nodes of the phase-1 levels can still pass to T: a bound on any flow
  // pushed down on those levels.
  double bottomRoom() {
    const std::uint64_t* bottom = levelSet(depth_) + uz(depth_ - 1) * uz(words());
    double room = 0.0;
    for (int w = 0; w < words(); ++w) {
      std::uint64_t bits = bottom[w];
      while (bits != 0) {
        const int k = w * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        room += c_[k] - ft_[uz(k)];
      }
    }
    return room;
  }

  // Phase 1 levels: layer t is level t+1, T is level depth_+1 (downward arcs only, no BFS).
  // Nodes that cannot reach T, and bottom nodes whose leaf arc is full, are left out.
  void downwardLevels() {
    levelT_ = depth_ + 1;
    ensureLevels(levelT_);
    zeroFill(levels_.data(), (uz(levelT_) + 1) * uz(layerWords_));
    for (int t = 0; t < depth_; ++t) {
      copyWords(coreachLayer(t), uz(words()), levelSet(t + 1) + uz(t) * uz(words()));
    }
    std::uint64_t* bottom = levelSet(depth_) + uz(depth_ - 1) * uz(words());
    forEachBit(coreachLayer(depth_ - 1), [&](int k) {
      if (c_[k] - ft_[uz(k)] <= kEps) clear(bottom, k);
    });
  }

  // BFS levels from S in the residual graph, as bitsets of live nodes per level; nodes that
  // cannot reach T are left out. Returns whether T is reachable.
  // Every arc joins neighbouring layers, so the nodes of one level lie on layers of one parity
  // (level l: layers l-1, l-3, ...), within one layer further on each side than the level before.
  // Only those layers of a level are scanned, cleared and written (a level's other layers keep
  // stale bits, which nothing reads: the DFS looks for a node's children one layer up or down
  // from it, one level on). On causal inputs, whose frontiers are a few nodes on a few layers,
  // scanning every layer at every level made the BFS about a third slower.
  bool buildLevels() {
    const std::uint64_t lastMask =
        n_ % 64 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (n_ % 64)) - 1;
    for (int t = 0; t < depth_; ++t) {
      const std::uint64_t* live = coreachLayer(t);
      std::uint64_t* seen = visited_.data() + uz(t) * uz(words());
      for (int w = 0; w < words(); ++w) seen[w] = ~live[w];
      seen[words() - 1] |= ~lastMask;
    }
    ensureLevels(1);
    {
      std::uint64_t* first = levelSet(1);
      zeroFill(first, uz(words()));
      for (int k = 0; k < n_; ++k) {
        if (!test(visited_.data(), k) && s_[k] - fs_[uz(k)] > kEps) set(first, k);
      }
      for (int w = 0; w < words(); ++w) visited_[uz(w)] |= first[w];
    }
    // Layers lo, lo + 2, ..., hi of the current level may hold nodes.
    int lo = 0, hi = 0;
    for (int level = 1;; ++level) {
      ensureLevels(level + 1);
      const std::uint64_t* here = levelSet(level);
      std::uint64_t* next = levelSet(level + 1);
      const int nextLo = lo == 0 ? 1 : lo - 1;
      const int nextHi = hi == depth_ - 1 ? depth_ - 2 : hi + 1;
      for (int t = nextLo; t <= nextHi; t += 2) zeroFill(next + uz(t) * uz(words()), uz(words()));
      bool any = false, reachesT = false;
      for (int t = lo; t <= hi; t += 2) {
        const std::uint64_t* h = here + uz(t) * uz(words());
        for (int w = 0; w < words(); ++w) {
          std::uint64_t bits = h[w];
          while (bits != 0) {
            const int i = w * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            any = true;
            if (t + 1 < depth_) {
              const std::uint64_t* row = residualRow(t, i);
              std::uint64_t* out = next + uz(t + 1) * uz(words());
              for (int x = 0; x < words(); ++x) out[x] |= row[x];
            } else if (c_[i] - ft_[uz(i)] > kEps) {
              reachesT = true;
            }
            if (t >= 1) {
              const std::uint64_t* row = upRow(t - 1, i);
              std::uint64_t* out = next + uz(t - 1) * uz(words());
              for (int x = 0; x < words(); ++x) out[x] |= row[x];
            }
          }
        }
      }
      if (!any) return false;
      if (reachesT) {
        // Nodes at T's level or beyond lie on no shortest path.
        for (int t = nextLo; t <= nextHi; t += 2) zeroFill(next + uz(t) * uz(words()), uz(words()));
        levelT_ = level + 1;
        return true;
      }
      // The next level: what is new, on the layers that still hold nodes.
      lo = depth_;
      hi = -1;
      for (int t = nextLo; t <= nextHi; t += 2) {
        std::uint64_t* out = next + uz(t) * uz(words());
        std::uint64_t* seen = visited_.data() + uz(t) * uz(words());
        std::uint64_t used = 0;
        for (int w = 0; w < words(); ++w) {
          out[w] &= ~seen[w];
          seen[w] |= out[w];
          used |= out[w];
        }
        if (used != 0) {
          lo = std::min(lo, t);
          hi = t;
        }
      }
    }
  }

  // The first arc >= a of node (t, i) into a live node of level `want` with residual capacity
  // > kEps, or kNoArc; sets its target (layer and index) and residual. t = -1 is S, with arcs
  // 0..n-1 to (0, k); t = depth_ is T. Arcs of (t, i): for t < D-1, 0..n-1 down to (t+1, k),
  // for t = D-1, arc 0 to T; then (t >= 1) n arcs back up to (t-1, p) along the reverse of a
  // flow-carrying arc. Nodes carry (layer, index) so that no division is needed here.
  ATTNFLOW_HOT int findArc(int t, int i, int a, int want, int& tt, int& ti, double& residual) {
    const std::uint64_t* live = levelSet(want);
    if (t < 0) {
      for (int k = firstBoth(live, live, a); k < n_; k = firstBoth(live, live, k + 1)) {
        const double r = s_[k] - fs_[uz(k)];
        if (r > kEps) {
          tt = 0;
          ti = k;
          residual = r;
          return k;
        }
      }
      return kNoArc;
    }
    int down;
    if (t + 1 < depth_) {
      down = n_;
      if (a < n_) {
        const int k = firstBoth(residualRow(t, i), live + uz(t + 1) * uz(words()), a);
        if (k < n_) {
          touch(t * n_ + i);
          const std::size_t idx = uz(i) * uz(n_) + uz(k);
          tt = t + 1;
          ti = k;
          residual = mats_[uz(t)][idx] - flowMat(t)[idx];
          return k;
        }
        a = n_;
      }
    } else {
      down = 1;
      if (a == 0) {
        a = 1;
        const double r = c_[i] - ft_[uz(i)];
        if (want == levelT_ && r > kEps) {
          tt = depth_;
          ti = 0;
          residual = r;
          return 0;
        }
      }
    }
    if (t == 0) return kNoArc;
    const int p = firstBoth(upRow(t - 1, i), live + uz(t - 1) * uz(words()), a - down);
    if (p >= n_) return kNoArc;
    tt = t - 1;
    ti = p;
    residual = flowMat(t - 1)[uz(p) * uz(n_) + uz(i)];
    return down + p;
  }

  ATTNFLOW_HOT void pushArc(int t, int i, int a, double x) {
    if (t < 0) {
      fs_[uz(a)] += x;
      return;
    }
    const int down = (t + 1 < depth_) ? n_ : 1;
    if (a < down) {
      if (t + 1 < depth_) {
        const std::size_t arc = uz(i) * uz(n_) + uz(a);
        double& f = flowMat(t)[arc];
        f += x;
        touch(t * n_ + i);
        // findArc() chose the arc by its residual bit, as syncGrownArcBits() needs.
        syncGrownArcBits(mats_[uz(t)][arc], f, residualRow(t, i), a, upRow(t, a), i);
      } else {
        ft_[uz(i)] += x;
      }
      return;
    }
    const int p = a - down;
    const std::size_t arc = uz(p) * uz(n_) + uz(i);
    double& f = flowMat(t - 1)[arc];
    f -= x;
    syncShrunkArcBits(mats_[uz(t - 1)][arc], f, residualRow(t - 1, p), i, upRow(t - 1, i), p);
  }

  // Blocking flow on the current levels, at most `want`: an iterative DFS with current-arc
  // pointers that pushes a budget down and splits it over children; a node that cannot pass on
  // its whole budget is dead for the phase and leaves its level's live set, so parents skip it
  // a word at a time.
  double blockingFlow(double want) {
    // A fresh current arc for every node: cur_[v] counts only if curStamp_[v] is this call's
    // stamp (zeroing all of cur_ per call cost as much as the search once the excess was pushed
    // down from every layer).
    if (++stamp_ == 0) {
      zeroFill(curStamp_.data(), curStamp_.size());
      stamp_ = 1;
    }
    int top = 0;
    frames_[0] = Frame{-1, 0, 0, want, 0.0};
    for (;;) {
      Frame& f = frames_[uz(top)];
      // cur_ is indexed by layer * n + index, with S last.
      const std::size_t fslot = slot(f.layer, f.index);
      if (curStamp_[fslot] != stamp_) {
        curStamp_[fslot] = stamp_;
        cur_[fslot] = 0;
      }
      int& a = cur_[fslot];
      bool descended = false;
      while (f.remaining > kEps) {
        int tt = 0, ti = 0;
        double r = 0.0;
        a = findArc(f.layer, f.index, a, f.level + 1, tt, ti, r);
        if (a == kNoArc) break;
        if (tt == depth_ - 1 && f.level + 2 == levelT_) {
          // A bottom child whose only usable arc is its leaf arc: push through both arcs here
          // instead of descending into it (the widest fan-out is at the bottom).
          const double room = c_[ti] - ft_[uz(ti)];
          const double amount = std::min(std::min(f.remaining, r), room);
          if (amount > 0.0) {
            pushArc(f.layer, f.index, a, amount);
            ft_[uz(ti)] += amount;
            f.remaining -= amount;
            f.pushed += amount;
          }
          if (room - amount <= kEps) {
            clear(levelSet(f.level + 1) + uz(tt) * uz(words()), ti);
          }
          continue;
        }
        const double amount = std::min(f.remaining, r);
        if (tt == depth_) {
          pushArc(f.layer, f.index, a, amount);
          f.remaining -= amount;
          f.pushed += amount;
          continue;
        }
        frames_[uz(++top)] = Frame{tt, ti, f.level + 1, amount, 0.0};
        descended = true;
        break;
      }
      if (descended) continue;
      if (f.remaining > kEps && f.layer >= 0) {
        clear(levelSet(f.level) + uz(f.layer) * uz(words()), f.index);
      }
      const double got = f.pushed;
      if (top == 0) return got;
      --top;
      Frame& parent = frames_[uz(top)];
      if (got > 0.0) {
        const int pa = cur_[slot(parent.layer, parent.index)];
        pushArc(parent.layer, parent.index, pa, got);
        parent.remaining -= got;
        parent.pushed += got;
      }
    }
  }

  // cur_ index of a DFS node: layer * n + index, then S.
  std::size_t slot(int t, int i) const { return t >= 0 ? uz(t * n_ + i) : uz(depth_ * n_); }

  static constexpr int kNoArc = std::numeric_limits<int>::max();

  int n_;
  int depth_;
  std::vector<const double*> mats_;
  int dynWords_;  // see words()
  int layerWords_;
  int numNodes_ = 0;
  int levelT_ = 0;
  const double* s_ = nullptr;
  const double* c_ = nullptr;
  double sourceCap_ = 0.0;
  std::unique_ptr<double[]> flow_;  // depth_-1 matrices, n x n each; rows valid once touched
  std::vector<int> touched_;  // nodes whose out-arc row of flow_ may be non-zero
  std::vector<char> isTouched_;
  std::vector<double> fs_;    // S -> layer 0
  std::vector<double> ft_;    // layer D-1 -> T
  std::vector<int> cur_;
  std::vector<std::uint32_t> curStamp_;  // cur_[v] is valid while curStamp_[v] == stamp_
  std::uint32_t stamp_ = 0;
  std::vector<Frame> frames_;
  std::vector<double> excess_, excessNext_;
  std::vector<std::uint64_t> excessBits_, excessNextBits_;
  // pushDownWave(): excess held per node of the layers below the wave's top (zero outside it),
  // and per layer the nodes that may hold some.
  std::vector<double> waveExcess_;
  std::vector<std::uint64_t> waveBits_;  // nodes whose excess_ may be non-zero
  std::vector<double> inCap_;
  bool inCapReady_ = false;
  std::vector<std::uint64_t> adjacency_;  // per matrix, per row: bitset of positive arcs
  std::vector<std::pair<int, int>> rowSpan_;  // per matrix, per row: [first arc, last arc + 1)
  bool lowerTriangular_ = true;  // see lowerTriangular()
  int depthFirstLayers_ = kDepthFirstLayers;  // see kDepthFirstLayers
  std::vector<std::uint64_t> residual_;   // per matrix, per row: arcs with residual > kEps
  std::vector<std::uint64_t> up_;         // per matrix, per column: arcs with flow > kEps
  std::vector<std::uint64_t> reach_;      // per layer: nodes S can reach
  std::vector<std::uint64_t> coreach_;    // per layer: nodes that can reach T (scratch)
  std::vector<std::uint64_t> visited_;    // per layer: BFS scratch
  std::vector<std::uint64_t> levels_;     // per level, per layer: live nodes at that level
  // Per leaf-capacity array (see leafFacts()); the last one looked up; the current solve's; the
  // one the leaf flows were last capped to (nullptr: there is no flow).
  std::unordered_map<const double*, LeafFacts> leafFacts_;
  const double* lastFactsKey_ = nullptr;
  const LeafFacts* lastFacts_ = nullptr;
  const LeafFacts* facts_ = nullptr;
  const LeafFacts* flowFacts_ = nullptr;
};

// The solver for n nodes per layer: with two bitset words fixed at compile time where
// n <= 128 (at n <= 64 the second is always zero), else with the count known at run time. With
// the count a constant, every loop over a bitset's words unrolls to straight code. In WASM the
// count read from memory cost 6-15% on every bench case (NOTES round 12): V8 kept each of those
// loops, with a stack guard on every turn, and spilled more around them (natively 4-8%). The
// two kinds sit behind virtual calls (one per solve or per source): a wrapper choosing between
// them with a branch gained nothing, as both kinds' solve() were inlined into its one function.
std::unique_ptr<LayeredFlow> makeLayeredFlow(int n, std::vector<const double*> mats) {
  if (n <= 128) return std::make_unique<LayeredFlowT<2>>(n, std::move(mats));
  return std::make_unique<LayeredFlowT<0>>(n, std::move(mats));
}

// ------------------------------------------------------------------------------------------
// Per-source solving

// Arcs A[from], A[from-1], ..., A[to] (1-based, from >= to): the matrices between node layers
// from-1 ... to-1, top first, as LayeredFlow takes them.
std::vector<const double*> arcMatrices(const LayerStack& A, int from, int to) {
  std::vector<const double*> mats;
  for (int l = from; l >= to; --l) mats.push_back(A[static_cast<std::size_t>(l - 1)].data());
  return mats;
}

// Matrices of the layered graph below source layer `layer` (1-based, >= 2): node layers
// layer-1 (top) down to 1 (bottom), arcs between them from A[layer-1] down to A[2].
std::vector<const double*> innerMatrices(const LayerStack& A, int layer) {
  return arcMatrices(A, layer - 1, 2);
}

// The middle-layer certificate's supplies w at the nodes of layer h (see FlowEngine): the
// uniform distribution over layer h + kSupplySteps carried down to layer h along the arcs between
// (the mean row of A[h + kSupplySteps] ... A[h + 1]), scaled to total 1; uniform if nothing
// arrives. w depends on the stack and h only, so the layers sharing a middle layer share it.
// Why not uniform w (as in FLOW-NOTES.md): where the heads put much of every row on one token
// (the `sink` profile of bench/synthetic.mjs: half of each row of their mean on token 0), every
// node sends a quarter of what it carries to that token's node, which passes little of it on, so
// no source can deliver as little as 1/n there. Uniform w settled no pair, and every row of the
// last layer at L=12, n=128 took 0.83 s natively (one solve per pair); with w carried down 1, 2
// or 3 layers, 41, 32 and 85 ms. On the flat, peaky and model-like inputs measured, 2 layers was
// within noise of uniform w or faster (the last layer of peaky rows at alpha 1: 5.9 -> 4.4 ms).
// bench/native/NOTES.md has the figures.
constexpr int kSupplySteps = 2;

std::vector<double> certificateSupplies(const LayerStack& A, int h) {
  const Index n = A[0].rows();
  RowVector w = RowVector::Constant(n, 1.0 / static_cast<double>(n));
  for (int l = std::min(h + kSupplySteps, static_cast<int>(A.size())); l > h; --l) {
    w = w * A[static_cast<std::size_t>(l - 1)];
  }
  const double total = w.sum();
  if (total > 0.0) {
    w /= total;
  } else {
    w.setConstant(1.0 / static_cast<double>(n));
  }
  return std::vector<double>(w.data(), w.data() + n);
}

// certificateSupplies(A, h), computed once per h into `kept` (whose entries stay at their
// addresses, by which the half solvers keep facts about them).
const std::vector<double>& keptSupplies(std::map<int, std::vector<double>>& kept,
                                        const LayerStack& A, int h) {
  auto it = kept.find(h);
  if (it == kept.end()) it = kept.emplace(h, certificateSupplies(A, h)).first;
  return it->second;
}

// The certificate's half solvers (see FlowEngine). Source halves: node layers layer-1 .. h,
// arcs A[layer-1] .. A[h+1]. Sink halves: node layers h .. 1, arcs A[h] .. A[2].
std::unique_ptr<LayeredFlow> sourceHalfSolver(const LayerStack& A, int layer, int h) {
  return makeLayeredFlow(static_cast<int>(A[0].rows()), arcMatrices(A, layer - 1, h + 1));
}

std::unique_ptr<LayeredFlow> sinkHalfSolver(const LayerStack& A, int h) {
  return makeLayeredFlow(static_cast<int>(A[0].rows()), arcMatrices(A, h, 2));
}

// Exact flows from (layer, r) to every (0, j), written to out[0..n-1]. `firstT` is A[1]
// transposed (row j = the capacities into sink j). `solver` was built for this layer. Sinks with
// skip[j] set are left alone (already known).
void flowRowInto(LayeredFlow* solver, const LayerStack& A, int layer, int r,
                 const Matrix& firstT, double* out, const std::vector<char>* skip = nullptr) {
  const int n = static_cast<int>(A[0].rows());
  if (layer == 1) {
    for (int j = 0; j < n; ++j) out[j] = A[0](r, j);
    return;
  }
  if (layer == 2) {
    // Closed form: every path is (2, r) -> (1, k) -> (0, j) and the paths share no arc, so the
    // maximum is the sum of the path bottlenecks (each term is also its own cut).
    const double* s = A[1].row(r).data();
    for (int j = 0; j < n; ++j) {
      if (skip && (*skip)[static_cast<std::size_t>(j)]) continue;
      const double* c = firstT.row(j).data();
      double sum = 0.0;
      for (int k = 0; k < n; ++k) sum += std::min(s[k], c[k]);
      out[j] = sum;
    }
    return;
  }
  solver->setSource(A[static_cast<std::size_t>(layer - 1)].row(r).data());
  // Sinks from last to first on causal inputs: the flow into j+1 mostly fits into j (the
  // previous-token pattern; sink j's window j..r holds j+1's), so the warm start keeps more of
  // it (first to last: 2.5x slower on the causal last layer at L=12, n=128). Below layer 6 (then
  // the certificate's first layer), where every pair was one solve, first to last on other
  // inputs: in WASM at L=12, n=128, all rows, layer 4 of the peaky synthetic input 0.93 -> 0.71 s,
  // layer 3 -24%, layer 5 -6%; every row of every layer at n=32 -10%. From layer 6 up it was the
  // same or 3-10% slower (row 0 of layer 12 on peaky rows: 4.4 -> 4.9 ms), so those keep last to
  // first.
  const bool descending = solver->lowerTriangular() || layer >= kDescendingSinksFromLayer;
  for (int step = 0; step < n; ++step) {
    const int j = descending ? n - 1 - step : step;
    if (skip && (*skip)[static_cast<std::size_t>(j)]) continue;
    const double* c = firstT.row(j).data();
    const double bound = solver->upperBound(c);
    out[j] = bound > kEps ? solver->solve(c, bound) : std::max(bound, 0.0);
  }
}

// The solver's flow storage written and its facts about these leaf capacities (one row each)
// learned: what FlowSolverCache::prepare() does ahead of a request.
void writeStorageAndLearnLeaves(LayeredFlow& solver, const Matrix& leafRows) {
  solver.writeStorage();
  for (Index r = 0; r < leafRows.rows(); ++r) solver.learnLeaves(leafRows.row(r).data());
}

// Whether some arc of m (an entry above kEps, as the solvers take arcs) goes from a node to one
// of a higher index: false exactly on a causal mask's lower-triangular layers.
bool hasArcAboveDiagonal(const Matrix& m) {
  for (Index i = 0; i < m.rows(); ++i) {
    for (Index k = i + 1; k < m.cols(); ++k) {
      if (m(i, k) > kEps) return true;
    }
  }
  return false;
}

// A solver on the graph of A[first] .. A[last] (1-based) with every arc turned around: its
// matrices are A[first]^T .. A[last]^T, kept here for the solver's life. The flow between two
// nodes is the same either way (the cuts are), so a solve can run from whichever end lets the
// changing capacities be leaf arcs, which LayeredFlow warm-starts across.
class TurnedAroundFlow {
 public:
  TurnedAroundFlow(const LayerStack& A, int first, int last) : n_(static_cast<int>(A[0].rows())) {
    transposed_.reserve(static_cast<std::size_t>(std::max(0, last - first + 1)));
    std::vector<const double*> mats;
    for (int l = first; l <= last; ++l) {
      transposed_.push_back(A[static_cast<std::size_t>(l - 1)].transpose());
      mats.push_back(transposed_.back().data());
    }
    solver_ = makeLayeredFlow(n_, std::move(mats));
  }

  /// The memory one of numMats matrices takes when built (matrices transposed, and solver).
  static std::size_t bytesFor(int n, int numMats) {
    const auto nodes = static_cast<std::size_t>(n);
    return static_cast<std::size_t>(std::max(0, numMats)) * nodes * nodes * sizeof(double) +
           LayeredFlow::bytesFor(n, numMats);
  }

  /// bytesFor() and the solver's caches.
  std::size_t memoryBytes() const {
    const auto n = static_cast<std::size_t>(n_);
    return transposed_.size() * n * n * sizeof(double) + solver_->memoryBytes();
  }

  LayeredFlow& solver() { return *solver_; }

 private:
  int n_;
  std::vector<Matrix> transposed_;
  std::unique_ptr<LayeredFlow> solver_;
};

// Sink-major solving on the reversed graph, for many rows of one layer (see FlowEngine::run).
// The flow from (layer, r) to (0, j) is also the flow from (0, j) to (layer, r) on the graph with
// every arc turned around: a LayeredFlow whose source arcs are column j of A[1] (row j of A[1]
// transposed), whose matrices are A[2]^T .. A[layer-1]^T, and whose leaf arcs are row r of
// A[layer]. Each sink j gets one fixed starting point: the state after a maximum flow from
// (0, j) into the leaf capacities `base_` (the mean row of A[layer], which depends on the stack
// alone), saved once per request and loaded again before each pair, so the number returned for
// (r, j) depends on r and j only, never on which rows were solved before or with it (a pool's
// workers claim rows at run time; their numbers must be bitwise a single thread's). A warm start
// from the base is still only where the search starts: solve()'s cut test or failed BFS proves
// the value, as for a warm start from the previous sink.
// Kept out of line from FlowEngine::run: the forward solver's code must not change when this
// mode exists (NOTES round 9: inlining shifts cost the forward paths 5-12% in WASM).
class ReversedFlow {
 public:
  ReversedFlow(const LayerStack& A, int layer)
      : n_(static_cast<int>(A[0].rows())), graph_(A, 2, layer - 1) {
    const Matrix& top = A[static_cast<std::size_t>(layer - 1)];
    base_.assign(static_cast<std::size_t>(n_), 0.0);
    for (Index r = 0; r < n_; ++r) {
      for (Index k = 0; k < n_; ++k) base_[static_cast<std::size_t>(k)] += top(r, k);
    }
    for (double& b : base_) b /= n_;
    saved_.resize(static_cast<std::size_t>(n_));
    ready_.assign(static_cast<std::size_t>(n_), 0);
  }

  /// Forgets the saved starting points (each request computes its own).
  void newRequest() { std::fill(ready_.begin(), ready_.end(), 0); }

  /// The memory one for sources at `layer` takes when built (matrices transposed, and solver).
  static std::size_t bytesFor(int n, int layer) {
    return TurnedAroundFlow::bytesFor(n, layer - 2);
  }

  /// bytesFor(), the solver's caches and the starting points saved so far.
  std::size_t memoryBytes() const {
    std::size_t bytes = graph_.memoryBytes();
    for (const SavedFlowState& z : saved_) {
      bytes += (z.inCap.capacity() + z.fs.capacity() + z.ft.capacity() + z.flows.capacity()) *
                   sizeof(double) +
               (z.reach.capacity() + z.up.capacity() + z.residualRows.capacity()) *
                   sizeof(std::uint64_t) +
               z.touched.capacity() * sizeof(int);
    }
    return bytes;
  }

  /// The exact flow between source row `leaf` (row r of A[layer]) and sink j.
  __attribute__((noinline)) double flow(const double* leaf, const Matrix& firstT, int j) {
    const auto sj = static_cast<std::size_t>(j);
    LayeredFlow& f = graph_.solver();
    if (!ready_[sj]) {
      f.setSource(firstT.row(j).data());
      const double bound = f.upperBound(base_.data());
      if (bound > kEps) (void)f.solve(base_.data(), bound);
      f.saveState(saved_[sj]);
      ready_[sj] = 1;
    }
    f.loadState(saved_[sj]);
    const double bound = f.upperBound(leaf);
    return bound > kEps ? f.solve(leaf, bound) : std::max(bound, 0.0);
  }

 private:
  int n_;
  TurnedAroundFlow graph_;    // A[2]^T .. A[layer-1]^T
  std::vector<double> base_;  // its address keys the solver's facts: fixed for its life
  std::vector<SavedFlowState> saved_;
  std::vector<char> ready_;
};

// The certificate's source test (can source (layer, r) deliver exactly the supplies w to the
// nodes of middle layer h?) run on the source half with every arc turned around: the supplies
// are its source arcs, the matrices A[h+1]^T .. A[layer-1]^T, and row r of A[layer] its leaf
// arcs, so the maximum flow is the same. Turned around, the rows of one request are leaf
// capacities of one solver, each solve warm-started from the previous row's flow as the forward
// solver does from sink to sink; forward, each row is a new source and a cold start. Natively at
// L=12, n=128, the 128 tests of the last layer: flat rows 4.2 -> 1.8 ms, peaky 13.7 -> 3.6 ms,
// sink rows 20.1 -> 5.7 ms, the same flags (the tests were two thirds of a flat last layer).
// A request starts from setSource() (newRequest()), so its flags do not depend on the requests
// before it. Within a request a flag depends on the rows tested before only where the flow
// lands within rounding of the test's threshold, as the sink halves' values do where a pool's
// workers each start their slice of sinks. Not used on causal stacks: there the forward test
// rejects every source but the last row's by reach alone, before any flow (see
// turnsSourceTestAround()).
class SourceTest {
 public:
  SourceTest(const LayerStack& A, int layer, int h, const std::vector<double>& supplies)
      : supplies_(supplies.data()), graph_(A, h + 1, layer - 1) {}

  /// The memory one for sources at `layer` and middle layer h takes when built.
  static std::size_t bytesFor(int n, int layer, int h) {
    return TurnedAroundFlow::bytesFor(n, layer - 1 - h);
  }

  std::size_t memoryBytes() const { return graph_.memoryBytes(); }

  /// The solver's flow storage written and its facts about these source rows learned (see
  /// FlowSolverCache::prepare()).
  void prepare(const Matrix& sourceRows) { writeStorageAndLearnLeaves(graph_.solver(), sourceRows); }

  void newRequest() { graph_.solver().setSource(supplies_); }

  /// Whether the source whose out-arcs are `sourceRow` (row r of A[layer]) delivers the
  /// supplies, to within `tolerance` of their total, 1.
  bool delivers(const double* sourceRow, double tolerance) {
    LayeredFlow& solver = graph_.solver();
    if (solver.upperBound(sourceRow) < 1.0 - tolerance) return false;
    return solver.solve(sourceRow, 1.0) >= 1.0 - tolerance;
  }

 private:
  const double* supplies_;  // the source arcs (the cache's or engine's: they outlive this)
  TurnedAroundFlow graph_;  // A[h+1]^T .. A[layer-1]^T
};

// Whether the certificate's source test for sources at `layer` runs turned around
// (SourceTest): not on causal stacks (the source layer's matrix lower-triangular), and only
// while its solver and transposed matrices take at most 64 MB (at L=24, n=512: 46 MB for the
// last layer; above n ~ 600 there, or ~ 900 at L=12, the test stays forward), since a request
// near the heap's limit may not have room for them (the forward test's solver is all it needs).
bool turnsSourceTestAround(const LayerStack& A, int layer, int h) {
  const Matrix& top = A[static_cast<std::size_t>(layer - 1)];
  const int n = static_cast<int>(top.rows());
  return SourceTest::bytesFor(n, layer, h) <= (std::size_t{64} << 20) && hasArcAboveDiagonal(top);
}

// Solvers kept for the keys they were built for (a layer, a middle layer, ...), the most
// recently used last. Asked again with a key it holds, one is reused; asked with another, a new
// one is built, after the least recently used ones are dropped for as long as the kept ones and
// the new one (`newBytes`) would take more than `budget` bytes. The newest is always kept,
// whatever its size. A request over many layers asks for a solver per layer; keeping only the
// last one rebuilt them all on every such request, and each worker of a pool did so again (every
// row of every layer at L=12, n=32, alpha 1, in WASM: 3.86-3.98 ms that way, 3.69-3.85 ms with
// every layer's kept). Dropping before building lets the new solver reuse the memory (at n = 512
// one solver takes ~48 MB).
template <typename Solver, typename Key>
class KeptSolvers {
 public:
  template <typename Build>
  Solver& get(const Key& wanted, std::size_t newBytes, std::size_t budget, Build build) {
    for (std::size_t k = 0; k < kept_.size(); ++k) {
      if (kept_[k].first == wanted) {
        std::rotate(kept_.begin() + static_cast<std::ptrdiff_t>(k),
                    kept_.begin() + static_cast<std::ptrdiff_t>(k) + 1, kept_.end());
        return *kept_.back().second;
      }
    }
    std::size_t total = newBytes;
    for (const auto& entry : kept_) total += entry.second->memoryBytes();
    std::size_t dropped = 0;
    while (dropped < kept_.size() && total > budget) {
      total -= kept_[dropped++].second->memoryBytes();
    }
    kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(dropped));
    kept_.emplace_back(wanted, build());
    return *kept_.back().second;
  }

 private:
  std::vector<std::pair<Key, std::unique_ptr<Solver>>> kept_;
};

}  // namespace

// What a FlowSolverCache keeps. Defined here, next to LayeredFlow, which stays internal to this
// file (with external linkage the solver's hot methods were inlined less: +5-10% in WASM).
struct FlowSolverCache::State {
  explicit State(std::size_t budget) : keptBytes(budget) {}

  std::size_t keptBytes;  // per kind of solver below (see KeptSolvers)
  const LayerStack* stack = nullptr;
  Matrix firstT;
  // The certificate's supplies, by middle layer (certificateSupplies()). The half solvers cache
  // facts about them by address, as about sinks, so they live here with the solvers.
  std::map<int, std::vector<double>> supplies;
  KeptSolvers<LayeredFlow, int> layerSolvers;                 // by source layer
  KeptSolvers<LayeredFlow, std::pair<int, int>> sourceHalves;  // by (source layer, middle layer)
  KeptSolvers<LayeredFlow, int> sinkHalves;                    // by middle layer
  KeptSolvers<ReversedFlow, int> reversed;                     // by source layer
  KeptSolvers<SourceTest, std::pair<int, int>> sourceTests;    // by (source layer, middle layer)
  // The values of the last requests for one row (each layer's; a new row forgets the last one's).
  // flowBottleneck() shows the value of one pair as the flow scores did, i.e. from such a
  // request, which it would otherwise run again: the explorer asks for the bottleneck of the row
  // it has just computed (~0.65 s again at L=12, n=1024), and again at each layer and input
  // token the user picks. A request for one row gives each of its layers bitwise the values a
  // request for that layer alone gives (each layer decides on its own whether the certificate
  // serves it, and solves the same sinks in the same order either way).
  struct {
    int row = -1;
    std::map<int, std::vector<double>> byLayer;
  } oneRow;

  void forStack(const LayerStack& A) {
    if (stack == &A) return;
    *this = State(keptBytes);
    stack = &A;
  }

  LayeredFlow& solverFor(const LayerStack& A, int sourceLayer) {
    forStack(A);
    const int n = static_cast<int>(A[0].rows());
    return layerSolvers.get(sourceLayer, LayeredFlow::bytesFor(n, sourceLayer - 2), keptBytes,
                            [&] { return makeLayeredFlow(n, innerMatrices(A, sourceLayer)); });
  }

  LayeredFlow& sourceHalfFor(const LayerStack& A, int sourceLayer, int h) {
    forStack(A);
    const int n = static_cast<int>(A[0].rows());
    return sourceHalves.get({sourceLayer, h}, LayeredFlow::bytesFor(n, sourceLayer - 1 - h),
                            keptBytes, [&] { return sourceHalfSolver(A, sourceLayer, h); });
  }

  LayeredFlow& sinkHalfFor(const LayerStack& A, int h) {
    forStack(A);
    const int n = static_cast<int>(A[0].rows());
    return sinkHalves.get(h, LayeredFlow::bytesFor(n, h - 1), keptBytes,
                          [&] { return sinkHalfSolver(A, h); });
  }

  SourceTest& sourceTestFor(const LayerStack& A, int sourceLayer, int h) {
    forStack(A);
    const int n = static_cast<int>(A[0].rows());
    return sourceTests.get({sourceLayer, h}, SourceTest::bytesFor(n, sourceLayer, h), keptBytes,
                           [&] { return std::make_unique<SourceTest>(A, sourceLayer, h,
                                                                     suppliesAt(A, h)); });
  }

  ReversedFlow& reversedFor(const LayerStack& A, int sourceLayer) {
    forStack(A);
    const int n = static_cast<int>(A[0].rows());
    return reversed.get(sourceLayer, ReversedFlow::bytesFor(n, sourceLayer), keptBytes,
                        [&] { return std::make_unique<ReversedFlow>(A, sourceLayer); });
  }

  /// The remembered values of (layer, row) of A (see oneRow), or null.
  const std::vector<double>* rowValues(const LayerStack& A, int layer, int row) {
    forStack(A);
    if (oneRow.row != row) return nullptr;
    const auto found = oneRow.byLayer.find(layer);
    return found == oneRow.byLayer.end() ? nullptr : &found->second;
  }

  void rememberRow(const LayerStack& A, const std::vector<int>& layers, int row,
                   const std::vector<Matrix>& values) {
    forStack(A);
    if (oneRow.row != row) oneRow.byLayer.clear();
    oneRow.row = row;
    for (std::size_t k = 0; k < layers.size(); ++k) {
      oneRow.byLayer[layers[k]].assign(values[k].data(), values[k].data() + values[k].size());
    }
  }

  const Matrix& firstTransposed(const LayerStack& A) {
    forStack(A);
    if (firstT.size() == 0) firstT = A[0].transpose();
    return firstT;
  }

  const std::vector<double>& suppliesAt(const LayerStack& A, int h) {
    forStack(A);
    return keptSupplies(supplies, A, h);
  }
};

namespace {

// Flows for many rows of one stack, sharing work between rows and layers.
//
// The middle-layer certificate (FLOW-NOTES.md): pick a layer h and supplies w at its nodes
// (total 1; see certificateSupplies()). If source (l, r) can deliver exactly w to layer h (a
// "source half" flow on layers l..h+1), and supplies <= w at layer h can deliver V_j to sink
// (0, j) (a "sink half" flow on layers h..1), then trimming the source half to what the sink
// half uses (scale the paths ending at each node of layer h) and joining the two (they use
// disjoint arcs) gives a feasible flow of value V_j from (l, r) to (0, j). When V_j meets a cut of
// the full graph (the source's out-arcs or the sink's in-arcs), that is the maximum. It costs one
// half flow per source and per sink instead of one full flow per pair; pairs it does not certify
// are solved exactly one by one, so the result is exact on any input.
class FlowEngine {
 public:
  explicit FlowEngine(const LayerStack& A, FlowSolverCache* cache = nullptr)
      : A_(A), cache_(cache), n_(static_cast<int>(A[0].rows())),
        certificateTol_(certificateTolerance(n_)), colsum_(A[0].colwise().sum()) {}

  /// The middle layer that run() uses for every one of these layers that uses one, with this
  /// many rows; 0 if none does or they use different ones (then no sink values can be shared).
  int middleLayerOf(const std::vector<int>& layers, std::size_t numRows) const {
    int h = 0;
    for (int layer : layers) {
      const int own = middleLayer(layer, numRows);
      if (own == 0) continue;
      if (h != 0 && own != h) return 0;
      h = own;
    }
    return h;
  }

  /// Sink halves computed elsewhere (by certificateSinkValues, e.g. split over threads).
  void useSinkHalves(int h, std::vector<double> values) { sinkHalves_[h] = std::move(values); }

  /// V_j (see sinkHalves) for sinks j in [first, last), in that order, as sinkHalves does for
  /// all sinks.
  std::vector<double> sinkHalfValues(int h, int first, int last) {
    std::vector<double> v(static_cast<std::size_t>(std::max(0, last - first)));
    std::unique_ptr<LayeredFlow> own;
    LayeredFlow& half =
        cache_ ? cache_->state().sinkHalfFor(A_, h) : *(own = sinkHalfSolver(A_, h));
    half.setSource(supplies(h).data());
    for (int j = first; j < last; ++j) {
      const double* c = firstT().row(j).data();
      const double bound = half.upperBound(c);
      v[static_cast<std::size_t>(j - first)] = bound > kEps ? half.solve(c, bound) : 0.0;
    }
    return v;
  }

  /// Flows from (layer, rows[q]) into row q of out (rows.size() x n) for each q that nextRow()
  /// gives (it returns -1 when done); calls tick() after each row. requestRows: the row count
  /// the shortcuts are chosen by (rows.size(), or the whole request's when rows are a share of
  /// it). sourceFlags: empty, or the result of sourceFlags() for these rows (then not computed
  /// again).
  template <typename NextRow, typename Tick>
  void run(int layer, const std::vector<int>& rows, std::size_t requestRows, Matrix& out,
           const std::vector<char>& sourceFlags, NextRow nextRow, Tick tick) {
    // Built at the first row the certificate does not settle (at L=12, n=128 building it is
    // 0.1-0.2 ms, and the certificate often settles every row).
    LayeredFlow* solver = nullptr;
    std::unique_ptr<LayeredFlow> ownSolver;  // without a cache
    const int h = middleLayer(layer, requestRows);
    // The sink halves are computed at the first source that passes its test: on causal inputs
    // only the last row's source can (the others reach only the tokens up to their own in the
    // middle layer), so requests without it skip their cost (2% of a last-layer run at L=12,
    // n=128).
    const std::vector<double>* sinkHalf = nullptr;
    OwnSourceTesting ownTesting;  // without a cache
    const SourceTesting testing =
        h > 0 && sourceFlags.empty() ? sourceTestingFor(layer, h, ownTesting) : SourceTesting{};
    std::vector<char> known(static_cast<std::size_t>(n_));
    // Many rows of a non-causal layer: pairs the certificate leaves are solved on the reversed
    // graph from a fixed start per sink (ReversedFlow), built at the first such pair.
    const bool reversedMode = usesReversed(layer, requestRows);
    ReversedFlow* reversed = nullptr;
    std::unique_ptr<ReversedFlow> ownReversed;  // without a cache
    for (std::ptrdiff_t next = nextRow(); next >= 0; next = nextRow()) {
      const auto q = static_cast<std::size_t>(next);
      double* row = out.row(static_cast<Index>(q)).data();
      const int r = rows[q];
      std::fill(known.begin(), known.end(), 0);
      const bool certifiedSource =
          h > 0 && (sourceFlags.empty() ? deliversSupplies(testing, layer, h, r)
                                        : sourceFlags[q] != 0);
      if (certifiedSource) {
        if (!sinkHalf) sinkHalf = &sinkHalves(h);
        const double sourceCap = A_[static_cast<std::size_t>(layer - 1)].row(r).sum();
        for (int j = 0; j < n_; ++j) {
          const double cut = std::min(sourceCap, colsum_(j));
          if ((*sinkHalf)[static_cast<std::size_t>(j)] >= cut - certificateTol_) {
            row[j] = cut;
            known[static_cast<std::size_t>(j)] = 1;
          }
        }
      }
      if (std::find(known.begin(), known.end(), 0) == known.end()) {
        // every pair settled by the certificate
      } else if (reversedMode) {
        if (!reversed) reversed = &reversedFor(layer, ownReversed);
        reversedRowInto(*reversed, layer, r, row, known);
      } else {
        if (!solver && cache_) solver = &cache_->state().solverFor(A_, layer);
        if (!solver) {
          ownSolver = makeLayeredFlow(n_, innerMatrices(A_, layer));
          solver = ownSolver.get();
        }
        flowRowInto(solver, A_, layer, r, firstT(), row, &known);
      }
      tick(q);
    }
  }

  /// Per row of `rows`, whether source (layer, r) passes the certificate's source test (it can
  /// deliver the middle layer's supplies), for the middle layer run() uses with these
  /// arguments; all 0 when it uses none. Needs no sink values, so a thread can do this while it
  /// waits for them.
  std::vector<char> sourceFlags(int layer, const std::vector<int>& rows, std::size_t requestRows) {
    std::vector<char> flags(rows.size(), 0);
    const int h = middleLayer(layer, requestRows);
    if (h == 0) return flags;
    OwnSourceTesting own;
    const SourceTesting testing = sourceTestingFor(layer, h, own);
    for (std::size_t q = 0; q < rows.size(); ++q) {
      flags[q] = deliversSupplies(testing, layer, h, rows[q]) ? 1 : 0;
    }
    return flags;
  }

 private:
  // Whether run() solves the pairs the certificate leaves on the reversed graph (ReversedFlow):
  // exactly where it uses the certificate (middleLayer()), so the two modes switch
  // together for every share or claim of a request; where one saved start per sink fits in
  // ~32 MB (n^3 doubles per inner matrix: n = 32 at any depth, n = 64 up to layer 18, never at
  // n = 128); and not on causal inputs (every inner matrix lower-triangular), where the forward
  // sink order from last to first already keeps most of each flow. (From layer 3, where there is
  // no certificate, peaky rows gained 3% in WASM but flat rows lost 15% and alpha = 1 45%: too
  // many cheap solves, each paying for a saved start.)
  bool usesReversed(int layer, std::size_t numRows) const {
    if (middleLayer(layer, numRows) == 0) return false;
    const double cells = static_cast<double>(n_) * n_ * n_ * (layer - 2);
    if (cells > 4.0 * 1024 * 1024) return false;
    for (int l = 2; l <= layer - 1; ++l) {
      if (hasArcAboveDiagonal(A_[static_cast<std::size_t>(l - 1)])) return true;
    }
    return false;
  }

  __attribute__((noinline)) ReversedFlow& reversedFor(int layer,
                                                      std::unique_ptr<ReversedFlow>& own) {
    ReversedFlow* flow = nullptr;
    if (cache_) {
      flow = &cache_->state().reversedFor(A_, layer);
    } else {
      own = std::make_unique<ReversedFlow>(A_, layer);
      flow = own.get();
    }
    flow->newRequest();
    return *flow;
  }

  __attribute__((noinline)) void reversedRowInto(ReversedFlow& reversed, int layer, int r,
                                                 double* out, const std::vector<char>& known) {
    const double* leaf = A_[static_cast<std::size_t>(layer - 1)].row(r).data();
    const Matrix& sinks = firstT();
    for (int j = 0; j < n_; ++j) {
      if (!known[static_cast<std::size_t>(j)]) out[j] = reversed.flow(leaf, sinks, j);
    }
  }

  // The middle layer for the certificate, or 0 for none. It needs a few layers on each side:
  // above h for a source to spread its unit evenly, below h for even supplies to gather into
  // one sink. h = (layer + 1) / 2, also when a run has several layers (layers 2h - 1 and 2h share
  // their sink halves). A multi-layer run used to take h = 3 for every layer, so that one set of
  // sink halves served all: on the flat synthetic inputs that certified every pair from layer 6
  // up, but on rows as peaky as a trained model's (bench/synthetic.mjs, profile peaky) it
  // settled few pairs of layers 8-12, which fell back to one solve each: layers 6-12 at L=12,
  // n=128 took 2.12 s natively with h = 3 against 0.70 s with h = layer / 2 (flat inputs: 21
  // against 26 ms); every layer 4.95 s -> 2.48 s (flat: 0.84 -> 0.76 s). From layer / 2 to
  // (layer + 1) / 2 (only odd layers change): on peaky and model-like rows the sink halves from
  // layer 3 settled few sinks (2-46 of 128), and every pair of layer 7 was one solve; from layer 4
  // all 128 settle, and layer 7 took 8-19 ms instead of 0.36-0.75 s (every layer: peaky 2.41 ->
  // 2.15 s; bench/native/NOTES.md). Layer 6 keeps h = 3: from 4, two layers of arcs are too few
  // for its sources to spread (flat rows 3.7 -> 190 ms).
  // Layer 8 takes h = 5, not 4 (sharing the sink halves of layers 9 and 10): the sources keep
  // three layers of arcs, which was enough on every input measured, and the sink halves get five. Where heads put most of each row on [CLS] and
  // [SEP] from layer 2 up (numpy-made rows, bench/native/NOTES.md), the supplies sit on those two
  // tokens, and four layers of arcs were too few to gather them into a sink's own token: 3 of 128
  // sink halves from layer 4 reached their cut, 128 from layer 5, and every row of layer 8 took
  // 1.38 s natively instead of 13 ms (every pair there is at the simple cut). Flat rows 4.8 ->
  // 4.3 ms, the sink profile 0.24 -> 0.14 s, peaky rows 16 -> 20 ms. Layer 7 cannot do the same
  // (from h = 5 its sources have two layers of arcs and none passed), nor can layers 5-6.
  // Which requests use it at all: kCertificateRows.
  int middleLayer(int layer, std::size_t numRows) const {
    if (layer < kFirstCertificateLayer) return 0;
    if (numRows < kCertificateRows && !anyRowsTakeCertificate(layer)) return 0;
    return std::max((layer + 1) / 2, std::min(layer - 3, kSinkHalfArcLayers));
  }

  bool anyRowsTakeCertificate(int layer) const {
    if (n_ < kAnyRowsCertificateTokens || n_ > kAnyRowsCertificateMaxTokens) return false;
    auto& known = aboveDiagonal_[static_cast<std::size_t>(layer - 1)];
    if (known < 0) known = hasArcAboveDiagonal(A_[static_cast<std::size_t>(layer - 1)]) ? 1 : 0;
    return known == 1;
  }

  // V_j for every sink with supplies(h) at layer h: node layers h..1, arcs A[h]..A[2].
  // (A sink's value does not depend on the order: solve() returns the bound itself whenever the
  // flow meets it, and only such values certify anything.)
  const std::vector<double>& sinkHalves(int h) {
    auto it = sinkHalves_.find(h);
    if (it != sinkHalves_.end()) return it->second;
    return sinkHalves_.emplace(h, sinkHalfValues(h, 0, n_)).first->second;
  }

  // Built at first use: a call that only runs source halves, or whose pairs the certificate
  // settles with sink values computed elsewhere, never needs it (a split run makes such calls).
  // The solver's facts about sinks are kept by the address of their row here, so with a cache
  // the rows are the cache's.
  const Matrix& firstT() {
    if (cache_) return cache_->state().firstTransposed(A_);
    if (firstT_.size() == 0) firstT_ = A_[0].transpose();
    return firstT_;
  }

  // The source halves' solver: the cache's, or a new one that `own` keeps.
  LayeredFlow* sourceHalfFor(int layer, int h, std::unique_ptr<LayeredFlow>& own) {
    if (cache_) return &cache_->state().sourceHalfFor(A_, layer, h);
    own = sourceHalfSolver(A_, layer, h);
    return own.get();
  }

  // The supplies at middle layer h; with a cache, the cache's (see State::supplies).
  const std::vector<double>& supplies(int h) {
    return cache_ ? cache_->state().suppliesAt(A_, h) : keptSupplies(supplies_, A_, h);
  }

  // The solver of the certificate's source test for sources at `layer` and middle layer h: the
  // source half, or the test turned around (SourceTest; see turnsSourceTestAround()), started for
  // this request. Without a cache, `own` keeps it.
  struct SourceTesting {
    LayeredFlow* forward = nullptr;
    SourceTest* reversed = nullptr;
  };
  struct OwnSourceTesting {
    std::unique_ptr<LayeredFlow> forward;
    std::unique_ptr<SourceTest> reversed;
  };
  SourceTesting sourceTestingFor(int layer, int h, OwnSourceTesting& own) {
    SourceTesting testing;
    if (!turnsSourceTestAround(A_, layer, h)) {
      testing.forward = sourceHalfFor(layer, h, own.forward);
    } else if (cache_) {
      testing.reversed = &cache_->state().sourceTestFor(A_, layer, h);
    } else {
      own.reversed = std::make_unique<SourceTest>(A_, layer, h, supplies(h));
      testing.reversed = own.reversed.get();
    }
    if (testing.reversed) testing.reversed->newRequest();
    return testing;
  }

  // Whether (layer, r) can deliver exactly supplies(h) to the nodes of layer h (the forward
  // solver's depth).
  bool deliversSupplies(const SourceTesting& testing, int layer, int h, int r) {
    const double* sourceRow = A_[static_cast<std::size_t>(layer - 1)].row(r).data();
    if (testing.reversed) return testing.reversed->delivers(sourceRow, certificateTol_);
    LayeredFlow* half = testing.forward;
    half->setSource(sourceRow);
    // The supplies are spread over every node of layer h that an arc leads to, and a source must
    // reach each one (on causal inputs only the last row's source reaches them all).
    if (!half->reachesEveryLeaf()) return false;
    const double* w = supplies(h).data();
    const double bound = half->upperBound(w);
    if (bound < 1.0 - certificateTol_) return false;
    return half->solve(w, 1.0) >= 1.0 - certificateTol_;
  }

  const LayerStack& A_;
  FlowSolverCache* cache_;
  int n_;
  double certificateTol_;  // certificateTolerance(n_)
  Matrix firstT_;  // A[1] transposed (row j: the capacities into sink j); see firstT()
  Eigen::RowVectorXd colsum_;
  std::map<int, std::vector<double>> supplies_;  // by middle layer, without a cache
  std::map<int, std::vector<double>> sinkHalves_;
  // Per layer: whether it has an arc above the diagonal (1), has none (0, a causal mask's), or
  // is not known yet (-1); see anyRowsTakeCertificate().
  mutable std::vector<signed char> aboveDiagonal_ = std::vector<signed char>(A_.size(), -1);
};

}  // namespace

FlowSolverCache::FlowSolverCache(std::size_t keptBytes)
    : state_(std::make_unique<State>(keptBytes)) {}
FlowSolverCache::~FlowSolverCache() = default;

void FlowSolverCache::clear() { *state_ = State(state_->keptBytes); }

void FlowSolverCache::prepare(const LayerStack& A, int layer, std::size_t numRows) {
  checkStack(A);
  checkLayer(A, layer);
  const Matrix& firstT = state_->firstTransposed(A);
  // What the solvers know about each sink (its leaf arcs with capacity, the nodes that can reach
  // it) is the graph's, like their arc bitsets, not a request's: learned here, it is not part of
  // the first request (~0.56 ms natively for the 128 sinks of L=12, n=128, a quarter of one
  // row's flow).
  // Layers 1 and 2 are closed forms: no solver.
  if (layer >= 3) writeStorageAndLearnLeaves(state_->solverFor(A, layer), firstT);
  const int h = certificateMiddleLayer(A, {layer}, numRows);
  if (h > 0) {
    if (turnsSourceTestAround(A, layer, h)) {
      state_->sourceTestFor(A, layer, h).prepare(A[static_cast<std::size_t>(layer - 1)]);
    } else {
      state_->sourceHalfFor(A, layer, h).writeStorage();
    }
    writeStorageAndLearnLeaves(state_->sinkHalfFor(A, h), firstT);
  }
}

namespace {

// The row count the fast path chooses its shortcuts by: requestRows (see
// CertificateParts::requestRows), or rows.size() when that is 0.
std::size_t requestRowsOf(std::size_t requestRows, const std::vector<int>& rows) {
  if (requestRows == 0) return rows.size();
  if (requestRows < rows.size()) {
    throw InputError("attention flow: a share of " + std::to_string(rows.size()) +
                     " rows cannot come from a request of " + std::to_string(requestRows));
  }
  return requestRows;
}

}  // namespace

Matrix attentionFlow(const LayerStack& A, int layer, const std::vector<int>& rows,
                     const Progress& progress) {
  const int n = checkRequest(A, layer, rows);
  Matrix out(static_cast<Index>(rows.size()), n);
  const std::size_t total = rows.size() * static_cast<std::size_t>(n);
  report(progress, 0, total);
  if (rows.empty()) return out;
  FlowEngine engine(A);
  std::size_t next = 0;
  engine.run(
      layer, rows, rows.size(), out, {},
      [&]() { return next < rows.size() ? static_cast<std::ptrdiff_t>(next++) : -1; },
      [&](std::size_t q) { report(progress, (q + 1) * static_cast<std::size_t>(n), total); });
  return out;
}

std::vector<Matrix> attentionFlowLayers(const LayerStack& A, const std::vector<int>& layers,
                                        const std::vector<int>& rows, const Progress& progress,
                                        const CertificateParts& parts, const ClaimUnit& claim,
                                        FlowSolverCache* cache) {
  const int n = checkLayersRequest(A, layers, rows);
  const std::size_t numUnits = layers.size() * rows.size();
  const std::size_t total = numUnits * static_cast<std::size_t>(n);
  report(progress, 0, total);
  // The unit to compute next: claimed (claim() hands out units in increasing order) or simply
  // the next one; numUnits when none is left.
  std::size_t sequential = 0;
  std::size_t unit = 0;
  std::size_t unitsDone = 0;
  const auto claimNext = [&] {
    if (!claim) return sequential < numUnits ? sequential++ : numUnits;
    const std::size_t claimed = claim();
    if (claimed >= numUnits) return numUnits;
    if (claimed < unit + (unitsDone > 0 ? 1 : 0)) {
      throw InputError("attention flow: claimed unit " + std::to_string(claimed) +
                       " does not come after unit " + std::to_string(unit) +
                       "; units must be claimed in increasing order");
    }
    return claimed;
  };
  const std::size_t requestRows = requestRowsOf(parts.requestRows, rows);
  unit = claimNext();
  std::vector<Matrix> result;
  FlowEngine engine(A, cache);
  if (!parts.sinkValues.empty()) {
    const int h = engine.middleLayerOf(layers, requestRows);
    if (h == 0 || parts.sinkValues.size() != static_cast<std::size_t>(n)) {
      throw InputError("attention flow: " + std::to_string(parts.sinkValues.size()) +
                       " certificate sink values given; this request takes " +
                       (h == 0 ? std::string("none") : std::to_string(n)));
    }
    engine.useSinkHalves(h, parts.sinkValues);
  }
  if (!parts.sourceFlags.empty() && parts.sourceFlags.size() != layers.size() * rows.size()) {
    throw InputError("attention flow: " + std::to_string(parts.sourceFlags.size()) +
                     " certificate source flags given; this request takes " +
                     std::to_string(layers.size() * rows.size()));
  }
  std::vector<char> flags;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    result.emplace_back(static_cast<Index>(rows.size()), n);
    // Rows another thread claims stay 0 here.
    if (claim) result.back().setZero();
    const std::size_t end = (k + 1) * rows.size();  // units of this layer: k * rows.size() .. end-1
    if (unit >= end) continue;
    if (!parts.sourceFlags.empty()) {
      const auto first = parts.sourceFlags.begin() + static_cast<std::ptrdiff_t>(k * rows.size());
      flags.assign(first, first + static_cast<std::ptrdiff_t>(rows.size()));
    }
    engine.run(
        layers[k], rows, requestRows, result.back(), flags,
        [&]() { return unit < end ? static_cast<std::ptrdiff_t>(unit - k * rows.size()) : -1; },
        [&](std::size_t) {
          report(progress, ++unitsDone * static_cast<std::size_t>(n), total);
          unit = claimNext();
        });
  }
  if (cache != nullptr && rows.size() == 1 && requestRows == 1 && !claim &&
      parts.sinkValues.empty() && parts.sourceFlags.empty()) {
    cache->state().rememberRow(A, layers, rows[0], result);
  }
  return result;
}

int certificateMiddleLayer(const LayerStack& A, const std::vector<int>& layers,
                           std::size_t numRows) {
  checkStack(A);
  for (int layer : layers) checkLayer(A, layer);
  return FlowEngine(A).middleLayerOf(layers, numRows);
}

std::vector<double> certificateSinkValues(const LayerStack& A, int middleLayer, int first,
                                          int last, FlowSolverCache* cache) {
  const int n = checkStack(A);
  if (middleLayer < 2 || middleLayer > static_cast<int>(A.size()) || first < 0 || first > last ||
      last > n) {
    throw InputError("attention flow: no certificate sink values for middle layer " +
                     std::to_string(middleLayer) + ", sinks " + std::to_string(first) + ".." +
                     std::to_string(last - 1));
  }
  return FlowEngine(A, cache).sinkHalfValues(middleLayer, first, last);
}

std::vector<char> certificateSourceFlags(const LayerStack& A, const std::vector<int>& layers,
                                         const std::vector<int>& rows, FlowSolverCache* cache,
                                         std::size_t requestRows) {
  checkLayersRequest(A, layers, rows);
  std::vector<char> flags;
  FlowEngine engine(A, cache);
  const std::size_t chosenBy = requestRowsOf(requestRows, rows);
  for (int layer : layers) {
    const std::vector<char> part = engine.sourceFlags(layer, rows, chosenBy);
    flags.insert(flags.end(), part.begin(), part.end());
  }
  return flags;
}

// ------------------------------------------------------------------------------------------
// Reference and bottleneck: the general Dinic on the full layered graph.

namespace {

// Node (l, i) of the layered graph has id l * n + i. Edges with capacity 0 are left out (they
// can carry no flow and belong to no cut's capacity).
struct FullGraph {
  MaxFlow graph;
  FullGraph(const LayerStack& A, int layer, int n) : graph((layer + 1) * n, kEps) {
    for (int l = 1; l <= layer; ++l) {
      const Matrix& m = A[static_cast<std::size_t>(l - 1)];
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          const double cap = m(i, j);
          if (cap > 0.0) graph.addEdge(l * n + i, (l - 1) * n + j, cap);
        }
      }
    }
  }
};

}  // namespace

Matrix attentionFlowReference(const LayerStack& A, int layer, const std::vector<int>& rows,
                              const Progress& progress) {
  const int n = checkRequest(A, layer, rows);
  Matrix out(static_cast<Index>(rows.size()), n);
  const std::size_t total = rows.size() * static_cast<std::size_t>(n);
  report(progress, 0, total);
  FullGraph full(A, layer, n);
  std::size_t done = 0;
  for (std::size_t q = 0; q < rows.size(); ++q) {
    for (int j = 0; j < n; ++j) {
      full.graph.resetFlow();
      out(static_cast<Index>(q), j) = full.graph.flow(layer * n + rows[q], j);
      report(progress, ++done, total);
    }
  }
  return out;
}

namespace {

// The minimum cut nearest the sink from the fast solver's own graph (from layer 3 on): the same
// cut as the general Dinic's, with no graph built (at L=24, n=512 the general Dinic's takes
// ~0.3 GB; the solver that gave the value is in `cache`). Appends it to result.cut and returns true when
// its capacity is result.value to within what each saturated arc may hold (kEps) plus the
// solver's tolerance; false, with result.cut untouched, otherwise.
bool fastSolverCut(const LayerStack& A, int layer, int row, int token, FlowSolverCache& cache,
                   FlowBottleneck& result) {
  const int n = static_cast<int>(A[0].rows());
  LayeredFlow* solver = &cache.state().solverFor(A, layer);
  // The leaf capacities, column `token` of A[1]: the solver caches facts about them by address,
  // and the cache's transposed copy stays where it is.
  const double* c = cache.state().firstTransposed(A).row(token).data();
  const Matrix& top = A[static_cast<std::size_t>(layer - 1)];
  solver->setSource(top.row(row).data());
  std::vector<SolverArc> arcs;
  if (!solver->minimumCutNearestSink(c, arcs)) return false;
  // Solver layer t holds the nodes of layer (layer - 1 - t); its arcs below it are A[layer-1-t].
  const int depth = layer - 1;
  std::vector<LayerEdge> cut;
  double capacity = 0.0;
  for (const SolverArc& a : arcs) {
    LayerEdge e{};
    if (a.t < 0) {
      e = LayerEdge{layer, row, a.k, top(row, a.k)};
    } else if (a.t == depth - 1) {
      e = LayerEdge{1, a.i, token, A[0](a.i, token)};
    } else {
      const int l = layer - 1 - a.t;
      e = LayerEdge{l, a.i, a.k, A[static_cast<std::size_t>(l - 1)](a.i, a.k)};
    }
    capacity += e.capacity;
    cut.push_back(e);
  }
  if (std::abs(capacity - result.value) > kMetTol + (static_cast<double>(cut.size()) + n) * kEps) {
    return false;
  }
  std::sort(cut.begin(), cut.end(), [](const LayerEdge& x, const LayerEdge& y) {
    return std::tie(x.layer, x.from, x.to) < std::tie(y.layer, y.from, y.to);
  });
  result.cut = std::move(cut);
  return true;
}

}  // namespace

FlowBottleneck flowBottleneck(const LayerStack& A, int layer, int row, int token,
                              FlowSolverCache* cache) {
  const int n = checkStack(A);
  checkLayer(A, layer);
  checkRow(n, row, layer);
  if (token < 0 || token >= n) {
    throw InputError("attention flow: token " + std::to_string(token) +
                     " is out of range (tokens are 0.." + std::to_string(n - 1) + ")");
  }
  FlowBottleneck result;
  // The value from the fast solver, so that it is the number the flow scores show. A kept solver
  // saves building one per call (~0.1 s at L=24, n=512); without a cache, one built here serves
  // both the value and the cut below.
  FlowSolverCache local;
  if (cache == nullptr) cache = &local;
  const std::vector<double>* shown = cache->state().rowValues(A, layer, row);
  result.value = shown != nullptr
                     ? (*shown)[static_cast<std::size_t>(token)]
                     : attentionFlowLayers(A, {layer}, {row}, {}, {}, {}, cache)[0](0, token);
  // No flow (no path, as above the diagonal of a causal model): no edge of positive capacity
  // leads into the sink side, so the cut is empty.
  if (result.value == 0.0) return result;
  const Matrix& first = A[0];
  double inCapacity = 0.0;
  for (int m = 0; m < n; ++m) inCapacity += first(m, token);
  // The token's in-edges meet the maximum (to the fast solver's tolerance): they are then the
  // minimum cut nearest the sink, and no flow needs to be solved again.
  if (inCapacity - result.value <= certificateTolerance(n)) {
    for (int m = 0; m < n; ++m) {
      if (first(m, token) > 0.0) result.cut.push_back(LayerEdge{1, m, token, first(m, token)});
    }
    return result;
  }
  if (layer >= 3 && fastSolverCut(A, layer, row, token, *cache, result)) return result;
  // Layers 1 and 2 (small graphs, and no fast solver), or a cut the fast solver's residual
  // graph could not give: the general Dinic on the full graph.
  FullGraph full(A, layer, n);
  full.graph.flow(layer * n + row, token);
  // The sink side T: nodes that can still reach the sink in the solver's residual graph. The
  // edges into T from outside are a minimum cut, and T is the smallest sink side of any minimum
  // cut. (Read from the solver's own residual arcs: capacity - flow of the reported edges rounds
  // differently, and at 12 layers of 32 tokens that let T reach the source, giving no cut.)
  const std::vector<bool> sinkSide = full.graph.sinkSide(token);
  for (int l = 1; l <= layer; ++l) {
    const Matrix& m = A[static_cast<std::size_t>(l - 1)];
    for (int i = 0; i < n; ++i) {
      if (sinkSide[static_cast<std::size_t>(l * n + i)]) continue;
      for (int j = 0; j < n; ++j) {
        if (m(i, j) > 0.0 && sinkSide[static_cast<std::size_t>((l - 1) * n + j)]) {
          result.cut.push_back(LayerEdge{l, i, j, m(i, j)});
        }
      }
    }
  }
  return result;
}

}  // namespace attnflow
