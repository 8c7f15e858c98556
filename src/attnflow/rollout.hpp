// Attention rollout (SEMANTICS.md): R[1] = A[1], R[l] = A[l] R[l-1].
#pragma once

#include <vector>

#include "attnflow/matrix.hpp"

namespace attnflow {

/// How rolloutAll computes its n x n x n products.
/// - Double: plain float64 products.
/// - Float: R[l] = diag(A[l]) R[l-1] + offdiag(A[l]) (1 m^T + D), where m is the column mean of
///   R[l-1] and D = R[l-1] - 1 m^T; only offdiag(A[l]) D is multiplied in float32, every other
///   term in float64, and its sums are float32 only over blocks of 64 products. Rollout rows
///   converge with depth, so D is small and so is the float error (tests/cpp/test_rollout.cpp
///   bounds it by 1e-6 against float64, and by 3e-7 on a head with most of each row on token 0;
///   1e-8 to 1.5e-7 is typical at n = 512-1,024). Measured
///   at L=24, n=512 (2 vCPU, Node 20, -O3 -msimd128): WASM about 115 ms with the register-blocked
///   float32 kernel of rollout.cpp (272 ms with Eigen's product) vs 567-618 ms in float64. Plain
///   float32 products erred by up to 1.2e-6 on causal inputs.
/// - Auto: Float when n >= kRolloutFloatMinTokens (where the product dominates), else Double.
enum class RolloutPrecision { Auto, Double, Float };
constexpr int kRolloutFloatMinTokens = 192;

/// R[l] for l = 1..A.size() (index 0 is layer 1). Every row of every R[l] sums to 1 when the
/// rows of A do. Throws InputError unless every layer is square with the same n.
LayerStack rolloutAll(const LayerStack& A, RolloutPrecision precision = RolloutPrecision::Auto);

/// Rows `rows` (0-based) of R[layer] (1-based), computed with vector-matrix products only, in
/// float64: e_i^T A[layer] ... A[1], O(layer * n^2) per row. Returns rows.size() x n.
/// Throws InputError on a layer or row out of range, or on layers of different sizes.
Matrix rolloutRows(const LayerStack& A, int layer, const std::vector<int>& rows);

}  // namespace attnflow
