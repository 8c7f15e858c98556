// Attention rollout; see rollout.hpp and SEMANTICS.md.
#include "attnflow/rollout.hpp"

#include <cmath>
#include <cstddef>
#include <string>

#include "attnflow/errors.hpp"

namespace attnflow {

namespace {

using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

// next = A * prev with only the centred off-diagonal product in float32 (see rollout.hpp).
// The O(n^2) passes are plain loops over contiguous rows, so their cost stays small next to the
// product (about 15 ms of 272 ms at L=24, n=512 in WASM).
void mixedPrecisionProduct(const Matrix& a, const Matrix& prev, Matrix& next, RowVector& mean,
                           MatrixF& aOff, MatrixF& centred, MatrixF& product) {
  const auto n = static_cast<std::size_t>(a.rows());
  const double* pa = a.data();
  const double* pp = prev.data();
  double* pm = mean.data();
  for (std::size_t j = 0; j < n; ++j) pm[j] = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    const double* row = pp + k * n;
    for (std::size_t j = 0; j < n; ++j) pm[j] += row[j];
  }
  const double inverseN = 1.0 / static_cast<double>(n);
  for (std::size_t j = 0; j < n; ++j) pm[j] *= inverseN;

  float* pao = aOff.data();
  float* pc = centred.data();
  for (std::size_t k = 0; k < n; ++k) {
    const double* aRow = pa + k * n;
    const double* pRow = pp + k * n;
    for (std::size_t j = 0; j < n; ++j) {
      pao[k * n + j] = toFloatFlushed(aRow[j]);
      pc[k * n + j] = toFloatFlushed(pRow[j] - pm[j]);
    }
    pao[k * n + k] = 0.0f;
  }

  product.noalias() = aOff * centred;

  const float* pr = product.data();
  double* pn = next.data();
  for (std::size_t i = 0; i < n; ++i) {
    const double* aRow = pa + i * n;
    const double* pRow = pp + i * n;
    const float* prodRow = pr + i * n;
    double* out = pn + i * n;
    const double diagonal = aRow[i];
    double offSum = 0.0;
    for (std::size_t j = 0; j < n; ++j) offSum += aRow[j];
    offSum -= diagonal;
    for (std::size_t j = 0; j < n; ++j) {
      out[j] = static_cast<double>(prodRow[j]) + offSum * pm[j] + diagonal * pRow[j];
    }
  }
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
  MatrixF aOff, centred, product;
  RowVector mean;
  if (useFloat) {
    aOff.resize(n, n);
    centred.resize(n, n);
    product.resize(n, n);
    mean.resize(n);
  }
  for (std::size_t l = 1; l < A.size(); ++l) {
    Matrix next(n, n);
    if (useFloat) {
      mixedPrecisionProduct(A[l], R[l - 1], next, mean, aOff, centred, product);
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
