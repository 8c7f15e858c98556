// Deterministic synthetic attention, the native twin of bench/synthetic.mjs (spec version 1; read
// the spec there). Same PRNG (mulberry32), same draw order (l, h, i, j, one draw per cell, also
// for masked cells), same biases, softmax in float64, stored as float32; then the residual mix
// A[l] = rownorm(alpha * rownorm(sum_h W[l][h]) + (1 - alpha) * I) in float64, exactly as
// mixedLayers() there. Header-only so that the benchmark and the tests share it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attnflow/matrix.hpp"

namespace attnflow {
namespace synthetic {

constexpr double kSpread = 2.0;
constexpr double kDiag = 1.5;
constexpr double kSink = 2.5;
constexpr double kPrev = 1.5;

/// mulberry32: doubles in [0, 1), identical to bench/synthetic.mjs.
class Mulberry32 {
 public:
  explicit Mulberry32(std::uint32_t seed) : state_(seed) {}
  double next() {
    state_ += 0x6D2B79F5u;
    std::uint32_t t = state_;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return static_cast<double>(t ^ (t >> 14)) / 4294967296.0;
  }

 private:
  std::uint32_t state_;
};

struct Shape {
  int layers;
  int heads;
  int tokens;
  std::uint32_t seed = 1;
  bool causal = false;
};

/// A[l] = rownorm(alpha * rownorm(sum_h W[l][h]) + (1 - alpha) * I) for one layer whose head sum
/// is `sum` (float64), exactly as mixedLayers() in bench/synthetic.mjs.
inline Matrix mixLayer(const Matrix& sum, double alpha) {
  const Eigen::Index n = sum.rows();
  Matrix a(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    double rowSum = 0.0;
    for (Eigen::Index j = 0; j < n; ++j) rowSum += sum(i, j);
    for (Eigen::Index j = 0; j < n; ++j) a(i, j) = rowSum > 0.0 ? alpha * sum(i, j) / rowSum : 0.0;
    a(i, i) += 1.0 - alpha;
    double total = 0.0;
    for (Eigen::Index j = 0; j < n; ++j) total += a(i, j);
    if (total > 0.0) {
      for (Eigen::Index j = 0; j < n; ++j) a(i, j) /= total;
    }
  }
  return a;
}

/// The residual-mixed stack A (index 0 = layer 1) for the synthetic attention of `shape`.
inline LayerStack mixedStack(const Shape& shape, double alpha) {
  const int n = shape.tokens;
  Mulberry32 random(shape.seed);
  std::vector<double> logits(static_cast<std::size_t>(n));
  LayerStack stack;
  for (int l = 0; l < shape.layers; ++l) {
    Matrix sum = Matrix::Zero(n, n);
    for (int h = 0; h < shape.heads; ++h) {
      for (int i = 0; i < n; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < n; ++j) {
          double x = kSpread * (2.0 * random.next() - 1.0);
          if (j == i) x += kDiag;
          if (j == 0) x += kSink;
          if (j == i - 1) x += kPrev;
          logits[static_cast<std::size_t>(j)] = x;
          if (!(shape.causal && j > i) && x > max) max = x;
        }
        double total = 0.0;
        for (int j = 0; j < n; ++j) {
          const double e =
              shape.causal && j > i ? 0.0 : std::exp(logits[static_cast<std::size_t>(j)] - max);
          logits[static_cast<std::size_t>(j)] = e;
          total += e;
        }
        for (int j = 0; j < n; ++j) {
          // Stored as float32 (what real models export), then summed in float64.
          sum(i, j) += static_cast<double>(
              static_cast<float>(logits[static_cast<std::size_t>(j)] / total));
        }
      }
    }
    stack.push_back(mixLayer(sum, alpha));
  }
  return stack;
}

}  // namespace synthetic
}  // namespace attnflow
