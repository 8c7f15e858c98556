// Shared dense types of the attnflow core.
#pragma once

#include <Eigen/Dense>
#include <vector>

namespace attnflow {

/// A dense float64 matrix stored row-major, so that row i of an attention matrix (the
/// attending token) is contiguous and a flat JS array of shape [n][n] maps onto it directly.
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<double, 1, Eigen::Dynamic>;

/// A stack of per-layer n x n matrices; index 0 is layer 1 (the first block).
using LayerStack = std::vector<Matrix>;

}  // namespace attnflow
