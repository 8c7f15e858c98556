// Attention rollout (SEMANTICS.md): R[1] = A[1], R[l] = A[l] R[l-1].
#pragma once

#include <vector>

#include "attnflow/matrix.hpp"

namespace attnflow {

/// R[l] for l = 1..A.size() (index 0 is layer 1). Every row of every R[l] sums to 1 when the
/// rows of A do.
LayerStack rolloutAll(const LayerStack& A);

/// Rows `rows` (0-based) of R[layer] (1-based), computed with vector-matrix products only:
/// e_i^T A[layer] ... A[1], O(layer * n^2) per row. Returns rows.size() x n.
/// Throws InputError on a layer or row out of range.
Matrix rolloutRows(const LayerStack& A, int layer, const std::vector<int>& rows);

}  // namespace attnflow
