// Normalising rollout and flow by receptive field (SEMANTICS.md asks for it for causal models;
// docs/SEMANTICS.md defines it): each score is divided by the score the same method gives when
// every position attends uniformly to what the attention mask lets it see.
#pragma once

#include "attnflow/matrix.hpp"

namespace attnflow {

/// The uninformative twin of a fused stack, residual-mixed like the data: in every layer,
/// rownorm(alpha * U + (1 - alpha) * I), where row i of U is uniform over the columns j with
/// F[l][i][j] > 0 in at least one layer l (the mask, as the data shows it: a causal model's lower
/// triangle, minus padding) and 0 if there is none. All layers are equal, and every path of the
/// data's graph is a path of the twin's, so where the twin's score is 0 the data's is 0 too.
/// Throws InputError if alpha is outside [0, 1], the stack is empty or its layers differ in size.
LayerStack uniformOverMask(const LayerStack& fused, double alpha);

/// scores[i][j] / baseline[i][j] in place, 0 where the baseline is 0. Throws InputError if the
/// shapes differ.
void divideByBaseline(Matrix& scores, const Matrix& baseline);

}  // namespace attnflow
