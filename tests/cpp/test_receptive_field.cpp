// The receptive-field baseline: hand-computed masks, and the fact that defines it: attention that
// is itself uniform over the mask scores exactly 1 everywhere the mask reaches, 0 elsewhere.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attnflow/attention_flow.hpp"
#include "attnflow/errors.hpp"
#include "attnflow/fusion.hpp"
#include "attnflow/receptive_field.hpp"
#include "attnflow/rollout.hpp"

using attnflow::InputError;
using attnflow::LayerStack;
using attnflow::Matrix;

namespace {

Matrix matrix(int n, std::vector<double> values) {
  Matrix m(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) m(i, j) = values[static_cast<std::size_t>(i * n + j)];
  }
  return m;
}

// Row i attends uniformly to tokens 0..i.
Matrix uniformCausal(int n) {
  Matrix m = Matrix::Zero(n, n);
  for (int i = 0; i < n; ++i) m.row(i).head(i + 1).setConstant(1.0 / (i + 1));
  return m;
}

}  // namespace

TEST_CASE("the baseline is uniform over the union of the layers' supports, then residual-mixed") {
  // Layer 1 is causal; layer 2 also lets row 0 see token 2. Token 1 is never attended by row 2
  // in either layer, so it is outside row 2's mask.
  const LayerStack fused = {matrix(3, {1, 0, 0, 0.5, 0.5, 0, 1, 0, 0}),
                            matrix(3, {0.5, 0, 0.5, 0.2, 0.8, 0, 0.9, 0, 0.1})};
  const LayerStack base = attnflow::uniformOverMask(fused, 0.5);
  REQUIRE(base.size() == 2);
  // U = [[1/2, 0, 1/2], [1/2, 1/2, 0], [1/2, 0, 1/2]]; B = (U + I) / 2.
  const Matrix expected = matrix(3, {0.75, 0, 0.25, 0.25, 0.75, 0, 0.25, 0, 0.75});
  CHECK((base[0] - expected).cwiseAbs().maxCoeff() < 1e-16);
  CHECK(base[1] == base[0]);
}

TEST_CASE("a row that is zero in every layer stays zero in the mask; alpha < 1 keeps the identity") {
  const LayerStack fused = {matrix(2, {1, 0, 0, 0})};
  CHECK(attnflow::uniformOverMask(fused, 0.5)[0] == matrix(2, {1, 0, 0, 1}));
  CHECK(attnflow::uniformOverMask(fused, 1.0)[0] == matrix(2, {1, 0, 0, 0}));
}

TEST_CASE("divideByBaseline gives 0 where the baseline is 0") {
  Matrix scores = matrix(2, {0.5, 0.25, 0, 0.3});
  attnflow::divideByBaseline(scores, matrix(2, {0.25, 0, 0, 0.6}));
  CHECK(scores == matrix(2, {2, 0, 0, 0.5}));
  Matrix wrong(2, 3);
  CHECK_THROWS_AS(attnflow::divideByBaseline(wrong, matrix(2, {1, 0, 0, 1})), InputError);
}

TEST_CASE("uniform causal attention scores 1 against its own baseline, for rollout and flow") {
  const int n = 9;
  const int L = 4;
  for (double alpha : {0.5, 1.0}) {
    CAPTURE(alpha);
    const LayerStack fused(L, uniformCausal(n));
    const LayerStack base = attnflow::uniformOverMask(fused, alpha);
    const LayerStack mixed = attnflow::mixResidual(fused, alpha);
    const LayerStack rollout = attnflow::rolloutAll(mixed, attnflow::RolloutPrecision::Double);
    const LayerStack baseRollout = attnflow::rolloutAll(base, attnflow::RolloutPrecision::Double);
    std::vector<int> rows(n);
    for (int i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = i;
    for (int layer = 1; layer <= L; ++layer) {
      Matrix ratio = rollout[static_cast<std::size_t>(layer - 1)];
      attnflow::divideByBaseline(ratio, baseRollout[static_cast<std::size_t>(layer - 1)]);
      Matrix flowRatio = attnflow::attentionFlow(mixed, layer, rows);
      attnflow::divideByBaseline(flowRatio, attnflow::attentionFlow(base, layer, rows));
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          const double expected = j <= i ? 1.0 : 0.0;
          CHECK(std::abs(ratio(i, j) - expected) < 1e-13);
          CHECK(std::abs(flowRatio(i, j) - expected) < 1e-13);
        }
      }
    }
  }
}

TEST_CASE("uniformOverMask rejects an empty stack, layers of different sizes and a bad alpha") {
  CHECK_THROWS_AS(attnflow::uniformOverMask({}, 0.5), InputError);
  CHECK_THROWS_AS(attnflow::uniformOverMask({Matrix::Identity(2, 2), Matrix::Identity(3, 3)}, 0.5), InputError);
  CHECK_THROWS_AS(attnflow::uniformOverMask({Matrix::Identity(2, 2)}, 1.5), InputError);
}
