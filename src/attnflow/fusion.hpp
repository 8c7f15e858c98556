// Head fusion, residual mixing and raw attention (SEMANTICS.md, "Head fusion, then residual").
#pragma once

#include <vector>

#include "attnflow/matrix.hpp"

namespace attnflow {

enum class Fusion { Mean, Max, Min };

/// Divides every row by its sum; a row that sums to 0 stays 0. Entries are assumed >= 0.
void normalizeRows(Matrix& m);

/// Fuses the heads of one layer: `rownorm(mean_h W[h])` (or element-wise max/min, then rownorm),
/// over the heads listed in `selectedHeads` (0-based, any order; empty = all heads). A fused row
/// that sums to 0 stays 0.
/// `heads` points at numHeads * n * n values (float or double), head-major then row-major:
/// W[h][i][j] is at heads[(h * n + i) * n + j]. Floats are widened to double exactly before any
/// arithmetic, so float input gives bitwise the result of the same values as doubles; it is taken
/// as it is because most attention files are float32, and converting them to double first would
/// cost a pass over twice the bytes. `layer` (1-based) is only used in error messages.
/// Only the selected heads are read, so only they are validated.
/// Throws InputError on a NaN/Inf/negative value (naming layer, head, row, column and the value),
/// on a head index out of range or repeated, and on numHeads < 1 or n < 1.
/// Cost: one pass over the selected heads (validation and accumulation together).
template <typename Value>
Matrix fuseHeads(const Value* heads, int numHeads, int n, Fusion fusion,
                 const std::vector<int>& selectedHeads, int layer);
extern template Matrix fuseHeads<float>(const float*, int, int, Fusion, const std::vector<int>&,
                                        int);
extern template Matrix fuseHeads<double>(const double*, int, int, Fusion,
                                         const std::vector<int>&, int);

/// Validates an already fused layer (n * n doubles, row-major) and row-normalises it.
/// Throws InputError like fuseHeads (the message names layer, row and column; there is no head).
Matrix takeFusedLayer(const double* fused, int n, int layer);

/// The grain discardSmallest ranks by (2^-40, about 9.1e-13): far above the rounding differences
/// of computing F in another order, and below any difference that matters: entries closer than
/// that (such as two weights under 1e-12) rank by position.
inline constexpr double kDiscardQuantum = 0x1p-40;

/// jacobgil/vit-explain's "discard_ratio", made deterministic: sets to 0 the floor(ratio * n^2)
/// smallest entries of F, ranked by value rounded to the nearest multiple of kDiscardQuantum, ties
/// broken by row-major position (smallest first), except entry (0, 0), which is never discarded
/// (so fewer entries are zeroed when it is among them). Rows are not re-normalised here:
/// mixResidual does that after adding the identity, as vit-explain does.
/// Throws InputError unless 0 <= ratio < 1.
Matrix discardSmallest(const Matrix& fused, double ratio);

/// `rownorm(alpha * F + (1 - alpha) * I)`. Throws InputError unless 0 <= alpha <= 1 or if F is
/// not square. A zero row of F becomes e_i for alpha < 1 and stays 0 for alpha = 1.
Matrix mixResidual(const Matrix& fused, double alpha);

/// mixResidual applied to every layer of a stack.
LayerStack mixResidual(const LayerStack& fused, double alpha);

}  // namespace attnflow
