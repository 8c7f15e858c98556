// The one embind file: exposes the attnflow core to JS with flat float64 buffers and explicit
// shapes. It owns no maths. Errors follow TOOLCHAIN.md's pattern D: every entry point catches
// C++ exceptions, records them in `g_pendingError` and returns normally; web/engine.mjs checks
// the flag after each call and throws an AttnflowError. Nothing is ever thrown across the
// wasm/JS boundary, so no stack or argument memory leaks per error.
#include <emscripten/bind.h>
#include <emscripten/emscripten.h>
#include <emscripten/val.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "attnflow/attention_flow.hpp"
#include "attnflow/errors.hpp"
#include "attnflow/fusion.hpp"
#include "attnflow/receptive_field.hpp"
#include "attnflow/rollout.hpp"

using emscripten::val;

namespace {

struct PendingError {
  int flag = 0;
  std::string code;  // AttnflowError code, or "" for an internal error
  std::string message;
} g_pendingError;

template <typename F>
auto guarded(F&& body) -> decltype(body()) {
  using R = decltype(body());
  try {
    return body();
  } catch (const attnflow::Cancelled& e) {
    g_pendingError = {1, "E_CANCELLED", e.what()};
  } catch (const attnflow::InputError& e) {
    g_pendingError = {1, "E_INPUT", e.what()};
  } catch (const std::bad_alloc&) {
    g_pendingError = {1, "E_TOO_LARGE",
                      "out of memory in the WebAssembly module (wasm32 holds at most 4 GB): "
                      "pre-fuse the heads or use fewer tokens"};
  } catch (const std::exception& e) {
    g_pendingError = {1, "", e.what()};
  }
  if constexpr (std::is_same_v<R, val>) {
    return val::undefined();
  } else if constexpr (!std::is_void_v<R>) {
    return R{};
  }
}

val takePendingError() {
  g_pendingError.flag = 0;
  val error = val::object();
  error.set("code", g_pendingError.code);
  error.set("message", g_pendingError.message);
  return error;
}

template <typename T>
const T* fromAddress(std::uintptr_t address) {
  return reinterpret_cast<const T*>(address);
}

std::vector<int> intList(std::uintptr_t address, int count) {
  const int* first = fromAddress<int>(address);
  return std::vector<int>(first, first + count);
}

std::vector<double> doubleList(std::uintptr_t address, int count) {
  const double* first = fromAddress<double>(address);
  return std::vector<double>(first, first + count);
}

Eigen::Map<attnflow::Matrix> outputMatrix(std::uintptr_t out, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<attnflow::Matrix>(reinterpret_cast<double*>(out), rows, cols);
}

void copyOut(const attnflow::Matrix& m, std::uintptr_t out) {
  outputMatrix(out, m.rows(), m.cols()) = m;
}

/// Copies rows `rows` of `m`, in that order, into `target` (rows.size() x m.cols()).
template <typename Target>
void gatherRows(const attnflow::Matrix& m, const std::vector<int>& rows, Target&& target) {
  for (std::size_t i = 0; i < rows.size(); ++i) target.row(static_cast<Eigen::Index>(i)) = m.row(rows[i]);
}

/// Writes rows `rows` of `m`, in that order, to `out`.
void copyRowsOut(const attnflow::Matrix& m, const std::vector<int>& rows, std::uintptr_t out) {
  gatherRows(m, rows, outputMatrix(out, static_cast<Eigen::Index>(rows.size()), m.cols()));
}

/// The fused layers of one input, with the residual-mixed stack and the full rollout cached for
/// the last alpha and discard used: a page that switches methods, rows and layers recomputes nothing.
class Session {
 public:
  explicit Session(int numTokens) : numTokens_(numTokens) {}

  int numLayers() const { return static_cast<int>(fused_.size()); }

  /// Appends the next layer from numHeads x n x n head-major weights, floats if `float32` (the
  /// file's own values, copied in as they are), else doubles.
  void addHeads(std::uintptr_t heads, bool float32, int numHeads, int fusion,
                std::uintptr_t selected, int numSelected) {
    guarded([&] {
      const auto fuse = [&](const auto* values) {
        return attnflow::fuseHeads(values, numHeads, numTokens_,
                                   static_cast<attnflow::Fusion>(fusion),
                                   intList(selected, numSelected), numLayers() + 1);
      };
      fused_.push_back(float32 ? fuse(fromAddress<float>(heads))
                               : fuse(fromAddress<double>(heads)));
      invalidate();
    });
  }

  /// Appends the next layer from an already fused n x n matrix.
  void addFused(std::uintptr_t matrix) {
    guarded([&] {
      fused_.push_back(attnflow::takeFusedLayer(fromAddress<double>(matrix), numTokens_,
                                                numLayers() + 1));
      invalidate();
    });
  }

  void raw(int layer, std::uintptr_t rows, int numRows, std::uintptr_t out) {
    guarded([&] {
      const attnflow::Matrix& f = fused_.at(static_cast<std::size_t>(layer - 1));
      copyRowsOut(f, intList(rows, numRows), out);
    });
  }

  /// Rows of R[layer]; with receptiveField, divided by the uniform-over-mask baseline's and, when
  /// normalize, re-normalised (docs/SEMANTICS.md).
  void rollout(double alpha, double discard, bool receptiveField, bool normalize, int layer,
               std::uintptr_t rows, int numRows, std::uintptr_t out) {
    guarded([&] {
      const std::vector<int> rowList = intList(rows, numRows);
      const attnflow::LayerStack& a = mixed(alpha, discard);  // first: drops stale rollouts
      // Few rows: O(layer n^2) vector-matrix products. Many rows: one O(L n^3) pass, cached, as
      // the rows of every layer are then usually wanted (the heatmap, 'all' rows).
      const bool fewRows = static_cast<long long>(numRows) * 8 < numTokens_;
      if (!receptiveField) {
        if (!rolloutAll_ && fewRows) {
          copyOut(attnflow::rolloutRows(a, layer, rowList), out);
          return;
        }
        copyRowsOut(fullRollout(alpha, discard).at(static_cast<std::size_t>(layer - 1)), rowList, out);
        return;
      }
      attnflow::Matrix ratio;
      if (!receptiveRolloutAll_ && fewRows) {
        ratio = attnflow::rolloutRows(a, layer, rowList);
        attnflow::divideByBaseline(ratio, attnflow::rolloutRows(baseline(alpha), layer, rowList));
      } else {
        if (!receptiveRolloutAll_) {
          // In float64: a structural zero (a token the mask hides) must stay exactly 0 in both
          // stacks, where the float32 path leaves ~1e-7 of noise that a ratio would magnify.
          receptiveRolloutAll_ = attnflow::rolloutAll(a, attnflow::RolloutPrecision::Double);
          const attnflow::LayerStack base =
              attnflow::rolloutAll(baseline(alpha), attnflow::RolloutPrecision::Double);
          for (std::size_t l = 0; l < base.size(); ++l) attnflow::divideByBaseline((*receptiveRolloutAll_)[l], base[l]);
        }
        ratio.resize(numRows, numTokens_);
        gatherRows(receptiveRolloutAll_->at(static_cast<std::size_t>(layer - 1)), rowList, ratio);
      }
      if (normalize) attnflow::normalizeRows(ratio);
      copyOut(ratio, out);
    });
  }

  /// The address of R[layer] (row-major n x n) in the full rollout of these options, computed and
  /// cached if need be: a caller that wants every row of the layer copies them from there, not
  /// through a buffer of its own (at L=24, n=512, a 50 MB copy less for all layers). Valid until
  /// the next call.
  std::uintptr_t rolloutLayer(double alpha, double discard, int layer) {
    return guarded([&] {
      return reinterpret_cast<std::uintptr_t>(
          fullRollout(alpha, discard).at(static_cast<std::size_t>(layer - 1)).data());
    });
  }

  /// The address of fused layer `layer` (row-major n x n), as rolloutLayer().
  std::uintptr_t rawLayer(int layer) {
    return guarded([&] {
      return reinterpret_cast<std::uintptr_t>(fused_.at(static_cast<std::size_t>(layer - 1)).data());
    });
  }

  /// Flow for each of `numLayers` layers (1-based list) and the same rows, written layer after
  /// layer; with receptiveField divided by the uniform-over-mask baseline's flow, and rows
  /// re-normalised when normalize. `onProgress(done, total)` is called after the first problems,
  /// then at most every 50 ms; returning false cancels.
  /// sinkValues: 0, or the address of the numTokens certificate sink values of this request
  /// (certificateSinkValues, computed in parts by a pool of workers); sourceFlags: 0, or the
  /// address of its numLayers x numRows certificate source flags (certificateSourceFlags, int32).
  /// requestRows: 0, or the row count of the whole request these rows are a share of
  /// (attnflow::CertificateParts::requestRows).
  /// claim: undefined, or a function returning the next (layer, row) unit to compute (see
  /// attnflow::ClaimUnit); the rows of units it does not hand out are 0.
  void flow(double alpha, double discard, std::uintptr_t layers, int numLayers, std::uintptr_t rows, int numRows,
            bool normalize, bool receptiveField, std::uintptr_t sinkValues, std::uintptr_t sourceFlags,
            int requestRows, val claim, val onProgress, std::uintptr_t out) {
    guarded([&] {
      const attnflow::LayerStack& a = mixed(alpha, discard);
      const std::vector<int> layerList = intList(layers, numLayers);
      const std::vector<int> rowList = intList(rows, numRows);
      const std::size_t perLayer = static_cast<std::size_t>(numRows) * static_cast<std::size_t>(numTokens_);
      const std::size_t total = perLayer * layerList.size() * (receptiveField ? 2 : 1);
      // web/index.mjs passes a function or undefined for both callbacks. A handle comparison, not
      // typeOf().as<std::string>(): that went through JS glue for strings, ~0.1-0.3 ms the first
      // time in a process (a CLI call's --timing compute).
      const bool reports = !onProgress.isUndefined();
      double lastReport = -1e300;  // the first report goes through: a caller may cancel at once
      std::size_t doneBefore = 0;  // problems of the data's flow, when the baseline's runs
      attnflow::Progress progress = [&](std::size_t done, std::size_t) {
        if (!reports) return true;
        const double now = emscripten_get_now();
        if (now - lastReport < 50.0) return true;
        lastReport = now;
        return onProgress(static_cast<double>(doneBefore + done), static_cast<double>(total))
                   .as<bool>();
      };
      // All layers in one call: they share the sink halves of the flow certificate.
      const int* flags = fromAddress<int>(sourceFlags);
      const attnflow::CertificateParts parts{
          doubleList(sinkValues, sinkValues ? numTokens_ : 0),
          std::vector<char>(flags, flags + (sourceFlags ? numLayers * numRows : 0)),
          static_cast<std::size_t>(requestRows)};
      attnflow::ClaimUnit claimUnit;
      std::vector<std::size_t> claimed;  // the baseline's flow (receptiveField) takes the same units
      if (!claim.isUndefined()) {
        claimUnit = [&] {
          const double u = claim().as<double>();
          if (!(u >= 0.0) || u != std::floor(u)) {
            throw attnflow::InputError("claim() must return a unit index, an integer >= 0 (got " + std::to_string(u) + ")");
          }
          constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();  // past every unit
          claimed.push_back(u < static_cast<double>(kNone) ? static_cast<std::size_t>(u) : kNone);
          return claimed.back();
        };
      }
      std::vector<attnflow::Matrix> values =
          attnflow::attentionFlowLayers(a, layerList, rowList, progress, parts, claimUnit, &flowSolver_);
      if (receptiveField) {
        doneBefore = total / 2;
        std::size_t replayed = 0;
        const attnflow::ClaimUnit sameUnits = [&] { return claimed[replayed++]; };
        const std::vector<attnflow::Matrix> base = attnflow::attentionFlowLayers(
            baseline(alpha), layerList, rowList, progress,
            attnflow::CertificateParts{{}, {}, static_cast<std::size_t>(requestRows)},
            claimUnit ? sameUnits : attnflow::ClaimUnit{});
        for (std::size_t k = 0; k < values.size(); ++k) attnflow::divideByBaseline(values[k], base[k]);
      }
      double* target = reinterpret_cast<double*>(out);
      for (attnflow::Matrix& layerValues : values) {
        if (normalize) attnflow::normalizeRows(layerValues);
        copyOut(layerValues, reinterpret_cast<std::uintptr_t>(target));
        target += perLayer;
      }
      if (reports) onProgress(static_cast<double>(total), static_cast<double>(total));
    });
  }

  /// The middle layer of the flow certificate for these layers and a share of numRows rows (0: none).
  int certificateMiddleLayer(std::uintptr_t layers, int numLayers, int numRows) {
    return guarded([&] {
      return attnflow::certificateMiddleLayer(fused_, intList(layers, numLayers), static_cast<std::size_t>(numRows));
    });
  }

  /// Writes the certificate sink values of sinks first..last-1 at middle layer h to out.
  void certificateSinkValues(double alpha, double discard, int h, int first, int last, std::uintptr_t out) {
    guarded([&] {
      const std::vector<double> values = attnflow::certificateSinkValues(mixed(alpha, discard), h, first, last, &flowSolver_);
      std::copy(values.begin(), values.end(), reinterpret_cast<double*>(out));
    });
  }

  /// Writes the certificate source flags of these layers and rows (layer-major, int32) to out;
  /// requestRows as for flow().
  void certificateSourceFlags(double alpha, double discard, std::uintptr_t layers, int numLayers,
                              std::uintptr_t rows, int numRows, int requestRows, std::uintptr_t out) {
    guarded([&] {
      const std::vector<char> flags = attnflow::certificateSourceFlags(
          mixed(alpha, discard), intList(layers, numLayers), intList(rows, numRows), &flowSolver_,
          static_cast<std::size_t>(requestRows));
      std::copy(flags.begin(), flags.end(), reinterpret_cast<std::int32_t*>(out));
    });
  }

  /// {value, cut: [{layer, from, to, capacity}]} for the flow from (layer, row) to token.
  val bottleneck(double alpha, double discard, int layer, int row, int token) {
    return guarded([&] {
      const attnflow::FlowBottleneck b = attnflow::flowBottleneck(mixed(alpha, discard), layer, row, token, &flowSolver_);
      val cut = val::array();
      // set(index, ...) instead of call("push"): embind's method callers are built with
      // new Function, which the page's Content-Security-Policy (no 'unsafe-eval') forbids.
      unsigned index = 0;
      for (const attnflow::LayerEdge& e : b.cut) {
        val edge = val::object();
        edge.set("layer", e.layer);
        edge.set("from", e.from);
        edge.set("to", e.to);
        edge.set("capacity", e.capacity);
        cut.set(index++, edge);
      }
      val result = val::object();
      result.set("value", b.value);
      result.set("cut", cut);
      return result;
    });
  }

  /// Builds the residual-mixed layers now (the first computation with these options would) and,
  /// for a layer > 0, the flow solvers for requests of numRows sources at that layer.
  void prepare(double alpha, double discard, int layer, int numRows) {
    guarded([&] {
      const attnflow::LayerStack& a = mixed(alpha, discard);
      if (layer > 0) flowSolver_.prepare(a, layer, static_cast<std::size_t>(numRows));
    });
  }

  void mixedLayer(double alpha, double discard, int layer, std::uintptr_t out) {
    guarded([&] { copyOut(mixed(alpha, discard).at(static_cast<std::size_t>(layer - 1)), out); });
  }

 private:
  /// A[l] = rownorm(alpha * discardSmallest(F[l], discard) + (1 - alpha) * I), cached.
  const attnflow::LayerStack& mixed(double alpha, double discard) {
    if (!mixed_ || mixedAlpha_ != alpha || mixedDiscard_ != discard) {
      flowSolver_.clear();  // it refers to the old stack
      if (discard == 0.0) {
        mixed_ = attnflow::mixResidual(fused_, alpha);
      } else {
        attnflow::LayerStack kept;
        kept.reserve(fused_.size());
        for (const attnflow::Matrix& f : fused_) kept.push_back(attnflow::discardSmallest(f, discard));
        mixed_ = attnflow::mixResidual(kept, alpha);
      }
      mixedAlpha_ = alpha;
      mixedDiscard_ = discard;
      rolloutAll_.reset();
      receptiveRolloutAll_.reset();
    }
    return *mixed_;
  }

  /// R[1..L] of mixed(alpha, discard), cached with it.
  const attnflow::LayerStack& fullRollout(double alpha, double discard) {
    const attnflow::LayerStack& a = mixed(alpha, discard);  // first: drops a stale rollout
    if (!rolloutAll_) rolloutAll_ = attnflow::rolloutAll(a);
    return *rolloutAll_;
  }

  /// uniformOverMask(fused, alpha), cached (it does not depend on discard).
  const attnflow::LayerStack& baseline(double alpha) {
    if (!baseline_ || baselineAlpha_ != alpha) {
      baseline_ = attnflow::uniformOverMask(fused_, alpha);
      baselineAlpha_ = alpha;
    }
    return *baseline_;
  }

  void invalidate() {
    flowSolver_.clear();
    mixed_.reset();
    rolloutAll_.reset();
    receptiveRolloutAll_.reset();
    baseline_.reset();
  }

  int numTokens_;
  attnflow::LayerStack fused_;
  std::optional<attnflow::LayerStack> mixed_;
  attnflow::FlowSolverCache flowSolver_;  // of mixed_: the solvers of the last requests
  double mixedAlpha_ = -1;
  double mixedDiscard_ = 0;
  std::optional<attnflow::LayerStack> rolloutAll_;  // of mixed_
  std::optional<attnflow::LayerStack> receptiveRolloutAll_;  // of mixed_, over the baseline's
  std::optional<attnflow::LayerStack> baseline_;
  double baselineAlpha_ = -1;
};

}  // namespace

EMSCRIPTEN_BINDINGS(attnflow) {
  emscripten::function("pendingErrorFlagAddress", emscripten::optional_override([] {
                         return reinterpret_cast<std::uintptr_t>(&g_pendingError.flag);
                       }));
  emscripten::function("takePendingError", &takePendingError);
  emscripten::class_<Session>("Session")
      .constructor<int>()
      .function("numLayers", &Session::numLayers)
      .function("addHeads", &Session::addHeads)
      .function("addFused", &Session::addFused)
      .function("raw", &Session::raw)
      .function("rollout", &Session::rollout)
      .function("rolloutLayer", &Session::rolloutLayer)
      .function("rawLayer", &Session::rawLayer)
      .function("flow", &Session::flow)
      .function("certificateMiddleLayer", &Session::certificateMiddleLayer)
      .function("certificateSinkValues", &Session::certificateSinkValues)
      .function("certificateSourceFlags", &Session::certificateSourceFlags)
      .function("bottleneck", &Session::bottleneck)
      .function("prepare", &Session::prepare)
      .function("mixedLayer", &Session::mixedLayer);
}
