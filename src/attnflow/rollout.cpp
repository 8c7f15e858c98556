// Attention rollout; see rollout.hpp and SEMANTICS.md.
#include "attnflow/rollout.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "attnflow/errors.hpp"

namespace attnflow {

namespace {

void checkShapes(const LayerStack& A) {
  if (A.empty()) return;
  const Eigen::Index n = A[0].rows();
  for (std::size_t l = 0; l < A.size(); ++l) {
    if (A[l].rows() != n || A[l].cols() != n) {
      throw InputError("layer " + std::to_string(l + 1) + " is " + std::to_string(A[l].rows()) +
                       " x " + std::to_string(A[l].cols()) + "; expected " + std::to_string(n) +
                       " x " + std::to_string(n) + " like layer 1");
    }
  }
}

// Values this small are flushed to 0 before the float32 product: each flushed entry changes a
// result by at most 1e-18 * (a row sum <= 1) or n * 1e-18, far below float32's own rounding,
// while float32 subnormals (below 1.2e-38, reached by long products of small weights) would make
// the product many times slower on x86, natively and in WASM alike.
constexpr double kFlushBelow = 1e-18;

inline float toFloatFlushed(double v) {
  return static_cast<float>(std::abs(v) < kFlushBelow ? 0.0 : v);
}

// The float32 product of the rollout step, c = a * b, for row-major np x np matrices with np a
// multiple of kPanel (the operands are zero-padded). Eigen 3.4 has no WebAssembly SIMD backend:
// its generic GEMM, auto-vectorised under -msimd128, took 275 ms for the 23 products of L=24,
// n=512 in WASM (Node 20), this kernel about 104 ms. It keeps 2 rows x 16 columns of c in 8
// four-lane accumulators (more spill out of V8's 16 SIMD registers) and reads b from a packed 16-column
// panel that stays in L1 across all rows. GCC/Clang vector types, so the one code path is
// compiled natively too (there ~10% slower than Eigen's SSE kernel) and tested under sanitizers.
// The float32 accumulators sum kBlock products at a time and hand their sums to float64 ones,
// because the error of a float32 sum grows with its length: on one causal head with most of
// each row on token 0 (rollout every layer against float64, WASM), all n products summed in
// float32 erred by 2.6e-7 at n = 512 and 4.1e-7 at n = 1,024, where the issue allows 1e-6;
// blocks of 64 gave 1.5e-7 at both (natively, on the doctest's input: 4.6e-7 unblocked, 2.1e-7,
// 1.5e-7 and 1.0e-7 with blocks of 64, 32 and 16). The cost: the whole rollout at L=24, n=512
// 5-10% slower (best of 7 calls, alternating processes: 224-243 -> 246-266 ms). Blocks of 32
// cost ~20%, and the float64 sums moved out of the rows' loop (to spare registers) ~25%.
using Float4 = float __attribute__((vector_size(16)));
using Double4 = double __attribute__((vector_size(32)));
constexpr std::size_t kPanel = 16;
constexpr std::size_t kBlock = 64;

inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}

void multiplyPadded(const float* a, const float* b, double* c, std::size_t np,
                    std::vector<float>& panel) {
  panel.resize(np * kPanel);
  float* packed = panel.data();
  for (std::size_t j0 = 0; j0 < np; j0 += kPanel) {
    for (std::size_t k = 0; k < np; ++k) {
      std::memcpy(packed + k * kPanel, b + k * np + j0, kPanel * sizeof(float));
    }
    for (std::size_t i = 0; i < np; i += 2) {
      const float* a0 = a + i * np;
      const float* a1 = a0 + np;
      Double4 d0[4] = {}, d1[4] = {};
      for (std::size_t k0 = 0; k0 < np; k0 += kBlock) {
        const std::size_t end = std::min(np, k0 + kBlock);
        Float4 c0[4] = {}, c1[4] = {};
        for (std::size_t k = k0; k < end; ++k) {
          const float* p = packed + k * kPanel;
          const Float4 b0 = load4(p), b1 = load4(p + 4), b2 = load4(p + 8), b3 = load4(p + 12);
          // Broadcasts spelled out: `Float4{} + a0[k]` kept a real vector add with zero (it
          // cannot be folded: -0 + 0 is +0), and the kernel took 148 ms instead of 104 in WASM.
          const float xa = a0[k], ya = a1[k];
          const Float4 x = {xa, xa, xa, xa};
          const Float4 y = {ya, ya, ya, ya};
          c0[0] += x * b0, c0[1] += x * b1, c0[2] += x * b2, c0[3] += x * b3;
          c1[0] += y * b0, c1[1] += y * b1, c1[2] += y * b2, c1[3] += y * b3;
        }
        for (int q = 0; q < 4; ++q) {
          d0[q] += __builtin_convertvector(c0[q], Double4);
          d1[q] += __builtin_convertvector(c1[q], Double4);
        }
      }
      std::memcpy(c + i * np + j0, d0, sizeof d0);
      std::memcpy(c + (i + 1) * np + j0, d1, sizeof d1);
    }
  }
}

// Scratch of the float path; the float matrices are np x np, zero beyond n.
struct FloatScratch {
  std::size_t np;
  std::vector<float> aOff, centred, panel;
  std::vector<double> product;
  std::vector<double> offSum;  // per row of the layer being multiplied: its off-diagonal sum
  std::vector<double> mean;    // column mean of the rollout the next product starts from
  std::vector<double> columnSum;
  explicit FloatScratch(std::size_t n)
      : np((n + kPanel - 1) / kPanel * kPanel), aOff(np * np, 0.0f), centred(np * np, 0.0f),
        product(np * np), offSum(n), mean(n), columnSum(n) {}
};

// The column mean of m, for the first layer. Later layers' means come from the output pass of
// mixedPrecisionProduct(), which sums the rows in this same order: bitwise what this would give.
void setColumnMean(const Matrix& m, std::vector<double>& mean) {
  const auto n = static_cast<std::size_t>(m.rows());
  std::fill(mean.begin(), mean.end(), 0.0);
  for (std::size_t k = 0; k < n; ++k) {
    const double* row = m.data() + k * n;
    for (std::size_t j = 0; j < n; ++j) mean[j] += row[j];
  }
  const double inverseN = 1.0 / static_cast<double>(n);
  for (double& v : mean) v *= inverseN;
}

// next = A * prev with only the centred off-diagonal product in float32 (see rollout.hpp);
// s.mean must hold prev's column mean, and holds next's on return. The O(n^2) work is one pass
// before the product (converting A and the centred prev, summing A's off-diagonal rows) and one
// after (the float64 terms, next's column sums), so A is read once and no pass is spent on sums
// alone: at L=24, n=512 that took 1-5% off rolloutAll (2026-12-07, bitwise the same results).
void mixedPrecisionProduct(const Matrix& a, const Matrix& prev, Matrix& next, FloatScratch& s) {
  const auto n = static_cast<std::size_t>(a.rows());
  const std::size_t np = s.np;
  const double* pa = a.data();
  const double* pp = prev.data();
  double* pm = s.mean.data();
  double* offSum = s.offSum.data();
  float* pao = s.aOff.data();
  float* pc = s.centred.data();
  for (std::size_t k = 0; k < n; ++k) {
    const double* aRow = pa + k * n;
    const double* pRow = pp + k * n;
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      sum += aRow[j];
      pao[k * np + j] = toFloatFlushed(aRow[j]);
      pc[k * np + j] = toFloatFlushed(pRow[j] - pm[j]);
    }
    offSum[k] = sum - aRow[k];
    pao[k * np + k] = 0.0f;
  }

  multiplyPadded(pao, pc, s.product.data(), np, s.panel);

  double* columnSum = s.columnSum.data();
  std::fill(s.columnSum.begin(), s.columnSum.end(), 0.0);
  const double* pr = s.product.data();
  double* pn = next.data();
  for (std::size_t i = 0; i < n; ++i) {
    const double* pRow = pp + i * n;
    const double* prodRow = pr + i * np;
    double* out = pn + i * n;
    const double diagonal = pa[i * n + i];
    for (std::size_t j = 0; j < n; ++j) {
      out[j] = prodRow[j] + offSum[i] * pm[j] + diagonal * pRow[j];
      columnSum[j] += out[j];
    }
  }
  const double inverseN = 1.0 / static_cast<double>(n);
  for (std::size_t j = 0; j < n; ++j) pm[j] = columnSum[j] * inverseN;
}

}  // namespace

LayerStack rolloutAll(const LayerStack& A, RolloutPrecision precision) {
  checkShapes(A);
  LayerStack R;
  if (A.empty()) return R;
  R.reserve(A.size());
  R.push_back(A[0]);
  const Eigen::Index n = A[0].rows();
  const bool useFloat = precision == RolloutPrecision::Float ||
                        (precision == RolloutPrecision::Auto && n >= kRolloutFloatMinTokens);
  std::optional<FloatScratch> scratch;
  if (useFloat) {
    scratch.emplace(static_cast<std::size_t>(n));
    setColumnMean(R[0], scratch->mean);
  }
  for (std::size_t l = 1; l < A.size(); ++l) {
    Matrix next(n, n);
    if (useFloat) {
      mixedPrecisionProduct(A[l], R[l - 1], next, *scratch);
    } else {
      next.noalias() = A[l] * R[l - 1];
    }
    R.push_back(std::move(next));
  }
  return R;
}

Matrix rolloutRows(const LayerStack& A, int layer, const std::vector<int>& rows) {
  const int numLayers = static_cast<int>(A.size());
  if (layer < 1 || layer > numLayers) {
    throw InputError("layer " + std::to_string(layer) + " is out of range (the input has " +
                     std::to_string(numLayers) + " layers)");
  }
  checkShapes(A);
  const Eigen::Index n = A[0].rows();
  Matrix result(static_cast<Eigen::Index>(rows.size()), n);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const int row = rows[k];
    if (row < 0 || row >= n) {
      throw InputError("row " + std::to_string(row) + " is out of range (the input has " +
                       std::to_string(n) + " tokens)");
    }
    result.row(static_cast<Eigen::Index>(k)) = A[static_cast<std::size_t>(layer - 1)].row(row);
  }
  // All requested rows move down together: a (rows x n) * (n x n) product per layer.
  Matrix scratch(result.rows(), n);
  for (int l = layer - 2; l >= 0; --l) {
    scratch.noalias() = result * A[static_cast<std::size_t>(l)];
    result.swap(scratch);
  }
  return result;
}

}  // namespace attnflow
