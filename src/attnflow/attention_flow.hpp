// Attention flow (SEMANTICS.md): the max-flow from node (layer, row) to node (0, j) of the layered
// graph whose edge (l, i) -> (l-1, j) has capacity A[l][i][j] (A = residual-mixed layers).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "attnflow/matrix.hpp"

namespace attnflow {

/// Called between max-flow problems with (problems done, problems in total); returning false
/// stops the computation, which then throws Cancelled.
using Progress = std::function<bool(std::size_t done, std::size_t total)>;

/// Un-normalised ("raw") flow from (layer, r) to every input token, for each r in rows.
/// layer is 1-based (1..A.size()), rows are 0-based. Returns rows.size() x n. Exact: values agree
/// with the true maximum to ~1e-14, or to 2 * (4e-15 + n * 1e-15) for pairs settled by the
/// middle-layer certificate (residuals <= 1e-15 count as saturated; arcs of 1e-14 and up are
/// used). Throws InputError on a layer or row out of range.
Matrix attentionFlow(const LayerStack& A, int layer, const std::vector<int>& rows,
                     const Progress& progress = {});

/// Parts of the middle-layer certificate of one attentionFlowLayers request computed ahead, for
/// splitting the request by rows over threads without each thread repeating the per-sink part
/// (a third of a last-layer run at L=12, n=128), and so that a thread can do its per-source part
/// while it waits for the others' sink values. Each part is empty (computed by the call) or
/// complete; the result is the same either way.
struct CertificateParts {
  /// The n sink values of the request's middle layer: certificateSinkValues over all sinks,
  /// possibly computed in slices and joined.
  std::vector<double> sinkValues;
  /// certificateSourceFlags for the same layers and rows.
  std::vector<char> sourceFlags;
  /// The row count of the whole request when the call computes a share of its rows; 0: the
  /// call's own. The fast path chooses its shortcuts by the request's row count (below 256
  /// tokens the certificate needs at least 8 rows), and a pair's last bits depend on the path,
  /// so every share must choose as the whole request does for its numbers to be the whole
  /// request's bitwise.
  std::size_t requestRows = 0;
};

/// For a request split over threads at run time: returns the next unclaimed unit
/// u = k * rows.size() + q, which stands for (layers[k], rows[q]), or any u >= layers.size() *
/// rows.size() when none is left. Each thread computes the units it claims, so threads balance
/// rows of uneven cost themselves (typically a counter shared by the threads).
using ClaimUnit = std::function<std::size_t()>;

/// The exact solvers kept between requests on one stack: the solvers of the layers asked for
/// (their graphs as arc bitsets, and flow storage), the certificate's half solvers, and A[1]
/// transposed. The next request at a layer, such as another row clicked in an explorer, starts
/// solving at once instead of building them (at L=12, n=128 in WASM building the layer's solver
/// is ~0.3 ms of a ~2 ms one-row request, and in a fresh process the first writes to its 1.4 MB
/// of flow storage cost ~3 ms more; each half solver ~0.05 ms of a ~4 ms last-layer request).
/// Each kind of solver keeps the most recently used ones while they take at most `keptBytes`
/// (the newest whatever its size). No computed value is kept. It refers to the stack it was built
/// for: pass it only with that stack, and clear() it before the stack changes or goes.
class FlowSolverCache {
 public:
  /// 32 MB per kind: every layer's solvers at L=12, n=128 (~7 MB of layer solvers); one at a
  /// time at n = 512 (~48 MB each), as before solvers were kept per layer.
  static constexpr std::size_t kDefaultKeptBytes = std::size_t{32} << 20;

  explicit FlowSolverCache(std::size_t keptBytes = kDefaultKeptBytes);
  ~FlowSolverCache();
  FlowSolverCache(const FlowSolverCache&) = delete;
  FlowSolverCache& operator=(const FlowSolverCache&) = delete;

  /// Builds the solver for sources at `layer` (1-based) of A now, writes all of its memory and
  /// learns what it keeps about each sink (which nodes can reach it); for requests of numRows
  /// rows there that use the flow certificate, its two half solvers too
  /// (built and first written inside the first such request otherwise: ~25 MB each at n = 512).
  /// Throws InputError on a layer out of range.
  void prepare(const LayerStack& A, int layer, std::size_t numRows = 1);
  void clear();

  struct State;  // defined in attention_flow.cpp
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

/// attentionFlow for several layers (1-based, any order, repeats allowed) and the same rows in
/// each; result[k] is rows.size() x n for layers[k]. Faster than one call per layer: layers with
/// the same certificate middle layer share its sink halves. progress counts the (layer, row,
/// token) problems done by this call over all layers of the request. With claim, only the units
/// it hands out are computed (in increasing order, else InputError), and the other rows are 0.
/// With cache, solvers come from it and stay there.
/// Throws InputError on a layer or row out of range, or on parts of the wrong size.
std::vector<Matrix> attentionFlowLayers(const LayerStack& A, const std::vector<int>& layers,
                                        const std::vector<int>& rows,
                                        const Progress& progress = {},
                                        const CertificateParts& parts = {},
                                        const ClaimUnit& claim = {},
                                        FlowSolverCache* cache = nullptr);

/// The certificate's middle layer for these layers and numRows rows: 0 if none of them uses one,
/// or if they use different ones (then sink values cannot be passed in parts). The shares of a
/// request split by rows all use the whole request's (see CertificateParts::requestRows).
int certificateMiddleLayer(const LayerStack& A, const std::vector<int>& layers,
                           std::size_t numRows);
/// The certificate's sink values at middleLayer for sinks first..last-1. With cache, the sink
/// half solver comes from it and stays there.
std::vector<double> certificateSinkValues(const LayerStack& A, int middleLayer, int first,
                                          int last, FlowSolverCache* cache = nullptr);
/// Per (layer, row), layer-major, whether the source passes the certificate's test (it can send
/// exactly the certificate's supplies to the middle layer): what attentionFlowLayers would find
/// for these layers and rows (a share of a request of requestRows rows, see CertificateParts; 0:
/// rows.size()). Needs no sink values. With cache, the source half solver comes from it and
/// stays there.
std::vector<char> certificateSourceFlags(const LayerStack& A, const std::vector<int>& layers,
                                         const std::vector<int>& rows,
                                         FlowSolverCache* cache = nullptr,
                                         std::size_t requestRows = 0);

/// The same numbers by one plain Dinic max-flow per (row, token) pair on the full layered graph.
/// Slow; kept as the reference the fast path is tested against.
Matrix attentionFlowReference(const LayerStack& A, int layer, const std::vector<int>& rows,
                              const Progress& progress = {});

/// One edge of the layered graph: from (layer, from) to (layer - 1, to).
struct LayerEdge {
  int layer;  // 1-based
  int from;
  int to;
  double capacity;
};

/// A minimum cut separating (layer, row) from (0, token): saturated edges whose total capacity
/// equals the flow value. Lets a user see where the bottleneck of a score sits. Of all minimum
/// cuts it is the one nearest the SINK (its sink side, the nodes that can still reach (0, token)
/// in the residual graph of a maximum flow, is the smallest possible), so whenever the token's
/// own layer-1 in-edges form a minimum cut, exactly those edges are reported: the score is then
/// decided by the token's in-edges, not by the layers above. Edges of capacity 0 never appear.
/// `value` is attentionFlow()'s value for the pair (the cut's capacity agrees to ~1e-14).
struct FlowBottleneck {
  double value;
  std::vector<LayerEdge> cut;
};

/// With cache, the value's solver comes from it and stays there (as for attentionFlowLayers), and
/// if the cache's last requests for one row were for `row` and one of them had `layer`, the value
/// is read from its values instead of running that row's n flows again.
FlowBottleneck flowBottleneck(const LayerStack& A, int layer, int row, int token,
                              FlowSolverCache* cache = nullptr);

}  // namespace attnflow
