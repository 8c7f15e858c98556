// Head fusion and residual mixing; see fusion.hpp and SEMANTICS.md.
#include "attnflow/fusion.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "attnflow/errors.hpp"

namespace attnflow {

namespace {

constexpr double kMaxFinite = std::numeric_limits<double>::max();

// Shortest of %.15g..%.17g that reads back as the same double, so -0.2 prints as "-0.2".
// snprintf, not iostreams: <sstream> adds ~120 KB to the WASM module (TOOLCHAIN.md).
std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buffer[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
    if (std::strtod(buffer, nullptr) == v) break;
  }
  return buffer;
}

std::string where(int layer, int head, int row, int column) {
  std::string text = "layer " + std::to_string(layer);
  if (head >= 0) text += ", head " + std::to_string(head);
  return text + ", row " + std::to_string(row) + ", column " + std::to_string(column);
}

[[noreturn]] void throwBadValue(double v, int layer, int head, int row, int column) {
  std::string problem;
  if (std::isnan(v)) {
    problem = "value NaN is not a number";
  } else if (std::isinf(v)) {
    problem = "value " + formatValue(v) + " is not finite";
  } else {
    problem = "value " + formatValue(v) + " is negative (attention weights must be >= 0)";
  }
  throw InputError(where(layer, head, row, column) + ": " + problem);
}

// True when every value of the row is finite and >= 0 (NaN fails both comparisons). The flag is
// as wide as the values, which lets clang vectorise the loop under -msimd128.
template <typename Value>
inline bool rowIsValid(const Value* row, std::size_t n) {
  using Flag = std::conditional_t<sizeof(Value) == 8, std::int64_t, std::int32_t>;
  constexpr Value kMax = std::numeric_limits<Value>::max();
  Flag bad = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const Value v = row[j];
    bad |= !(v >= Value{0} && v <= kMax);
  }
  return bad == 0;
}

// Cold path: find the offending column of a row that failed rowIsValid and throw.
template <typename Value>
[[noreturn]] void throwFirstBad(const Value* row, std::size_t n, int layer, int head, int i) {
  for (std::size_t j = 0; j < n; ++j) {
    const double v = row[j];
    if (!(v >= 0.0 && v <= kMaxFinite)) throwBadValue(v, layer, head, i, static_cast<int>(j));
  }
  throw InputError(where(layer, head, i, 0) + ": invalid value");  // unreachable
}

void checkSize(int n, std::size_t numMatrices, int layer) {
  if (n < 1) {
    throw InputError("layer " + std::to_string(layer) + ": the attention matrices are empty (" +
                     std::to_string(n) + " tokens)");
  }
  // n * n * numMatrices doubles must be addressable (size_t is 32 bits in WASM).
  const std::size_t limit = std::numeric_limits<std::size_t>::max() / sizeof(double);
  const auto un = static_cast<std::size_t>(n);
  if (un > limit / un / numMatrices) {
    throw InputError("layer " + std::to_string(layer) + ": " + std::to_string(n) +
                     " tokens is too large to hold in memory");
  }
}

}  // namespace

void normalizeRows(Matrix& m) {
  const auto rows = static_cast<std::size_t>(m.rows());
  const auto cols = static_cast<std::size_t>(m.cols());
  double* data = m.data();
  for (std::size_t i = 0; i < rows; ++i) {
    double* row = data + i * cols;
    double sum = 0.0;
    for (std::size_t j = 0; j < cols; ++j) sum += row[j];
    if (sum > 0.0) {
      // Division (not multiplication by 1/sum) so the result matches the reference to the ulp.
      for (std::size_t j = 0; j < cols; ++j) row[j] /= sum;
    }
  }
}

template <typename Value>
Matrix fuseHeads(const Value* heads, int numHeads, int n, Fusion fusion,
                 const std::vector<int>& selectedHeads, int layer) {
  if (numHeads < 1) {
    throw InputError("layer " + std::to_string(layer) + " has no heads (" +
                     std::to_string(numHeads) + ")");
  }
  checkSize(n, static_cast<std::size_t>(numHeads), layer);

  std::vector<int> chosen;
  if (selectedHeads.empty()) {
    chosen.resize(static_cast<std::size_t>(numHeads));
    for (int h = 0; h < numHeads; ++h) chosen[static_cast<std::size_t>(h)] = h;
  } else {
    std::vector<bool> seen(static_cast<std::size_t>(numHeads), false);
    for (int h : selectedHeads) {
      if (h < 0 || h >= numHeads) {
        throw InputError("head " + std::to_string(h) + " is out of range (the file has " +
                         std::to_string(numHeads) + " heads)");
      }
      if (seen[static_cast<std::size_t>(h)]) {
        throw InputError("head " + std::to_string(h) + " is selected more than once");
      }
      seen[static_cast<std::size_t>(h)] = true;
    }
    chosen = selectedHeads;
  }

  const auto un = static_cast<std::size_t>(n);
  Matrix fused(n, n);
  double* out = fused.data();
  bool first = true;
  for (int h : chosen) {
    const Value* w = heads + static_cast<std::size_t>(h) * un * un;
    for (std::size_t i = 0; i < un; ++i) {
      const Value* in = w + i * un;
      double* acc = out + i * un;
      if (!rowIsValid(in, un)) throwFirstBad(in, un, layer, h, static_cast<int>(i));
      // The row is still in L1 after the check, so this is effectively the same pass.
      // Each value widened to double first (exact for float), then the double arithmetic.
      const auto value = [in](std::size_t j) { return static_cast<double>(in[j]); };
      if (first) {
        for (std::size_t j = 0; j < un; ++j) acc[j] = value(j);
      } else if (fusion == Fusion::Mean) {
        // A sum, not a mean: the row normalisation below divides the 1/H out anyway.
        for (std::size_t j = 0; j < un; ++j) acc[j] += value(j);
      } else if (fusion == Fusion::Max) {
        for (std::size_t j = 0; j < un; ++j) acc[j] = value(j) > acc[j] ? value(j) : acc[j];
      } else {
        for (std::size_t j = 0; j < un; ++j) acc[j] = value(j) < acc[j] ? value(j) : acc[j];
      }
    }
    first = false;
  }
  normalizeRows(fused);
  return fused;
}

template Matrix fuseHeads<float>(const float*, int, int, Fusion, const std::vector<int>&, int);
template Matrix fuseHeads<double>(const double*, int, int, Fusion, const std::vector<int>&, int);

Matrix takeFusedLayer(const double* fused, int n, int layer) {
  checkSize(n, 1, layer);
  const auto un = static_cast<std::size_t>(n);
  Matrix result(n, n);
  double* out = result.data();
  for (std::size_t i = 0; i < un; ++i) {
    const double* in = fused + i * un;
    if (!rowIsValid(in, un)) throwFirstBad(in, un, layer, -1, static_cast<int>(i));
    for (std::size_t j = 0; j < un; ++j) out[i * un + j] = in[j];
  }
  normalizeRows(result);
  return result;
}

namespace {

void checkAlpha(double alpha) {
  if (!(alpha >= 0.0 && alpha <= 1.0)) {
    throw InputError("alpha must be between 0 and 1 (got " + formatValue(alpha) + ")");
  }
}

Matrix mixOne(const Matrix& fused, double alpha, int layer) {
  if (fused.rows() != fused.cols()) {
    throw InputError((layer > 0 ? "layer " + std::to_string(layer) : std::string("a fused layer")) +
                     " must be square (got " + std::to_string(fused.rows()) + " x " +
                     std::to_string(fused.cols()) + ")");
  }
  Matrix mixed = alpha * fused;
  mixed.diagonal().array() += 1.0 - alpha;
  normalizeRows(mixed);  // only changes anything for a zero row of F (or rounding)
  return mixed;
}

}  // namespace

Matrix discardSmallest(const Matrix& fused, double ratio) {
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    throw InputError("discard must be at least 0 and below 1 (got " + formatValue(ratio) + ")");
  }
  const Eigen::Index size = fused.size();
  const auto count = static_cast<Eigen::Index>(std::floor(ratio * static_cast<double>(size)));
  Matrix kept = fused;
  if (count == 0) return kept;
  std::vector<Eigen::Index> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  // Entries are ranked by their value rounded to a multiple of kDiscardQuantum, then by position.
  // Values equal in exact arithmetic (1/4 and 1/4) come out of another order of operations a few
  // ulps apart (mean of the heads first: 0.24999999999999997), and ranking them by their last
  // bits would move a discard threshold, and the scores by up to the discarded weight, between
  // implementations; rounded, they tie and go by position in every implementation.
  std::vector<std::int64_t> keys(static_cast<std::size_t>(size));
  const double* values = fused.data();
  for (Eigen::Index k = 0; k < size; ++k) {
    keys[static_cast<std::size_t>(k)] = std::llround(values[k] / kDiscardQuantum);
  }
  // Only which entries are the `count` smallest matters, not their order among themselves.
  std::nth_element(order.begin(), order.begin() + (count - 1), order.end(),
                   [&keys](Eigen::Index a, Eigen::Index b) {
                     const std::int64_t ka = keys[static_cast<std::size_t>(a)];
                     const std::int64_t kb = keys[static_cast<std::size_t>(b)];
                     return ka < kb || (ka == kb && a < b);
                   });
  double* out = kept.data();
  for (Eigen::Index k = 0; k < count; ++k) {
    const Eigen::Index position = order[static_cast<std::size_t>(k)];
    if (position != 0) out[position] = 0.0;
  }
  return kept;
}

Matrix mixResidual(const Matrix& fused, double alpha) {
  checkAlpha(alpha);
  return mixOne(fused, alpha, 0);
}

LayerStack mixResidual(const LayerStack& fused, double alpha) {
  checkAlpha(alpha);
  LayerStack mixed;
  mixed.reserve(fused.size());
  for (std::size_t l = 0; l < fused.size(); ++l) {
    mixed.push_back(mixOne(fused[l], alpha, static_cast<int>(l) + 1));
  }
  return mixed;
}

}  // namespace attnflow
