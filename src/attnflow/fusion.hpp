// Head fusion, residual mixing and raw attention (SEMANTICS.md, "Head fusion, then residual").
#pragma once

#include <vector>

#include "attnflow/matrix.hpp"

namespace attnflow {

enum class Fusion { Mean, Max, Min };

/// Divides every row by its sum; a row that sums to 0 stays 0.
void normalizeRows(Matrix& m);

/// Fuses the heads of one layer: `rownorm(mean_h W[h])` (or element-wise max/min), over the heads
/// listed in `selectedHeads` (0-based; empty = all heads).
/// `heads` points at numHeads * n * n doubles, head-major then row-major: W[h][i][j] is at
/// heads[(h * n + i) * n + j]. `layer` (1-based) is only used in error messages.
/// Throws InputError on a NaN/Inf/negative value (naming layer, head, row, column), on a head
/// index out of range or repeated, and on numHeads < 1 or n < 1.
Matrix fuseHeads(const double* heads, int numHeads, int n, Fusion fusion,
                 const std::vector<int>& selectedHeads, int layer);

/// Validates an already fused layer (n * n doubles, row-major) and row-normalises it.
Matrix takeFusedLayer(const double* fused, int n, int layer);

/// `rownorm(alpha * F + (1 - alpha) * I)`. Throws InputError unless 0 <= alpha <= 1.
Matrix mixResidual(const Matrix& fused, double alpha);

/// mixResidual applied to every layer of a stack.
LayerStack mixResidual(const LayerStack& fused, double alpha);

}  // namespace attnflow
