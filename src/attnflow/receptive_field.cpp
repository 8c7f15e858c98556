// See receptive_field.hpp and docs/SEMANTICS.md.
#include "attnflow/receptive_field.hpp"

#include <string>

#include "attnflow/errors.hpp"
#include "attnflow/fusion.hpp"

namespace attnflow {

LayerStack uniformOverMask(const LayerStack& fused, double alpha) {
  if (fused.empty()) throw InputError("receptive field: the layer stack is empty");
  const Eigen::Index n = fused[0].rows();
  Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> mask =
      Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Constant(n, n, false);
  for (std::size_t l = 0; l < fused.size(); ++l) {
    if (fused[l].rows() != n || fused[l].cols() != n) {
      throw InputError("receptive field: layer " + std::to_string(l + 1) + " is not " +
                       std::to_string(n) + " x " + std::to_string(n));
    }
    mask = mask || (fused[l].array() > 0.0);
  }
  Matrix uniform = mask.cast<double>();
  normalizeRows(uniform);
  return LayerStack(fused.size(), mixResidual(uniform, alpha));
}

void divideByBaseline(Matrix& scores, const Matrix& baseline) {
  if (scores.rows() != baseline.rows() || scores.cols() != baseline.cols()) {
    throw InputError("receptive field: scores and baseline differ in shape");
  }
  scores = (baseline.array() > 0.0).select(scores.array() / baseline.array(), 0.0);
}

}  // namespace attnflow
