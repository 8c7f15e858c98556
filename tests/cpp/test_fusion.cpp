// Head fusion, validation messages and residual mixing against hand-computed values.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "attnflow/errors.hpp"
#include "attnflow/fusion.hpp"

using attnflow::Fusion;
using attnflow::InputError;
using attnflow::LayerStack;
using attnflow::Matrix;

namespace {

Matrix matrix(int rows, int cols, const std::vector<double>& values) {
  Matrix m(rows, cols);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) m(i, j) = values[static_cast<std::size_t>(i * cols + j)];
  }
  return m;
}

void checkClose(const Matrix& actual, const Matrix& expected, double tol = 1e-15) {
  REQUIRE(actual.rows() == expected.rows());
  REQUIRE(actual.cols() == expected.cols());
  for (Eigen::Index i = 0; i < actual.rows(); ++i) {
    for (Eigen::Index j = 0; j < actual.cols(); ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(std::abs(actual(i, j) - expected(i, j)) <= tol);
    }
  }
}

// Three heads of a 3-token layer, head-major then row-major, as the binding passes them.
// Row 2 of every head is zero except head 1, so max keeps it, min and mean of {0, 2} zero it.
const std::vector<double> kHeads = {
    // head 0
    0.5, 0.5, 0.0,  //
    0.2, 0.2, 0.6,  //
    0.0, 0.0, 0.0,  //
    // head 1
    1.0, 0.0, 0.0,  //
    0.1, 0.6, 0.3,  //
    0.3, 0.3, 0.4,  //
    // head 2 (rows sum to 0.9, 1.1, 0: as if exported with rounding)
    0.3, 0.3, 0.3,  //
    0.5, 0.5, 0.1,  //
    0.0, 0.0, 0.0,  //
};

}  // namespace

TEST_CASE("fusion: mean, max and min over all heads, rows re-normalised") {
  SUBCASE("mean") {
    // Sums: [1.8 0.8 0.3] / 2.9, [0.8 1.3 1.0] / 3.1, [0.3 0.3 0.4] / 1.
    const Matrix expected = matrix(3, 3, {1.8 / 2.9, 0.8 / 2.9, 0.3 / 2.9,  //
                                          0.8 / 3.1, 1.3 / 3.1, 1.0 / 3.1,  //
                                          0.3, 0.3, 0.4});
    checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, Fusion::Mean, {}, 1), expected);
  }
  SUBCASE("max") {
    // Max: [1 0.5 0.3] / 1.8, [0.5 0.6 0.6] / 1.7, [0.3 0.3 0.4].
    const Matrix expected = matrix(3, 3, {1.0 / 1.8, 0.5 / 1.8, 0.3 / 1.8,  //
                                          0.5 / 1.7, 0.6 / 1.7, 0.6 / 1.7,  //
                                          0.3, 0.3, 0.4});
    checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, Fusion::Max, {}, 1), expected);
  }
  SUBCASE("min: a row that fuses to zero stays zero") {
    // Min: [0.3 0 0] -> [1 0 0], [0.1 0.2 0.1] / 0.4, [0 0 0] stays 0.
    const Matrix expected = matrix(3, 3, {1.0, 0.0, 0.0,  //
                                          0.25, 0.5, 0.25,  //
                                          0.0, 0.0, 0.0});
    checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, Fusion::Min, {}, 1), expected);
  }
}

TEST_CASE("fusion: a head subset fuses the chosen heads only, in any order") {
  // Heads {2, 0}: sums [0.8 0.8 0.3] / 1.9, [0.7 0.7 0.7] / 2.1, zero row stays zero.
  const Matrix expected = matrix(3, 3, {0.8 / 1.9, 0.8 / 1.9, 0.3 / 1.9,  //
                                        1.0 / 3, 1.0 / 3, 1.0 / 3,        //
                                        0.0, 0.0, 0.0});
  checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, Fusion::Mean, {2, 0}, 1), expected);
  checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, Fusion::Mean, {0, 2}, 1), expected);
  // A single head is that head, row-normalised.
  const Matrix head2 = matrix(3, 3, {1.0 / 3, 1.0 / 3, 1.0 / 3,  //
                                     0.5 / 1.1, 0.5 / 1.1, 0.1 / 1.1,  //
                                     0.0, 0.0, 0.0});
  for (Fusion f : {Fusion::Mean, Fusion::Max, Fusion::Min}) {
    checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, f, {2}, 1), head2);
  }
  // Max over {0, 2}: [0.5 0.5 0.3] / 1.3, [0.5 0.5 0.6] / 1.6.
  const Matrix max02 = matrix(3, 3, {0.5 / 1.3, 0.5 / 1.3, 0.3 / 1.3,  //
                                     0.5 / 1.6, 0.5 / 1.6, 0.6 / 1.6,  //
                                     0.0, 0.0, 0.0});
  checkClose(attnflow::fuseHeads(kHeads.data(), 3, 3, Fusion::Max, {0, 2}, 1), max02);
}

TEST_CASE("fusion: larger random layers agree with a direct Eigen computation") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int numHeads = 16;
  const int n = 37;
  std::vector<double> heads(static_cast<std::size_t>(numHeads * n * n));
  for (double& v : heads) v = unit(rng) < 0.2 ? 0.0 : unit(rng);
  auto head = [&](int h) {
    return Eigen::Map<const Matrix>(heads.data() + static_cast<std::size_t>(h * n * n), n, n);
  };
  Matrix sum = Matrix::Zero(n, n);
  Matrix mx = head(0);
  Matrix mn = head(0);
  for (int h = 0; h < numHeads; ++h) {
    sum += head(h);
    mx = mx.cwiseMax(head(h));
    mn = mn.cwiseMin(head(h));
  }
  auto rownorm = [](Matrix m) {
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      const double s = m.row(i).sum();
      if (s > 0) m.row(i) /= s;
    }
    return m;
  };
  checkClose(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 4), rownorm(sum), 1e-14);
  checkClose(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Max, {}, 4), rownorm(mx), 1e-14);
  checkClose(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Min, {}, 4), rownorm(mn), 1e-14);
  const Matrix fused = attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 4);
  for (Eigen::Index i = 0; i < n; ++i) CHECK(std::abs(fused.row(i).sum() - 1.0) <= 1e-14);
}

TEST_CASE("fusion: each bad value is reported with layer, head, row, column and value") {
  const int n = 8;
  const int numHeads = 3;
  auto withValue = [&](int h, int i, int j, double v) {
    std::vector<double> heads(static_cast<std::size_t>(numHeads * n * n), 1.0 / n);
    heads[static_cast<std::size_t>((h * n + i) * n + j)] = v;
    return heads;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  {
    const auto heads = withValue(2, 5, 7, -0.2);
    CHECK_THROWS_WITH_AS(
        attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 3),
        "layer 3, head 2, row 5, column 7: value -0.2 is negative (attention weights must be >= 0)",
        InputError);
  }
  {
    const auto heads = withValue(0, 0, 0, nan);
    CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Max, {}, 1),
                         "layer 1, head 0, row 0, column 0: value NaN is not a number",
                         InputError);
  }
  {
    const auto heads = withValue(1, 7, 3, inf);
    CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Min, {}, 12),
                         "layer 12, head 1, row 7, column 3: value Infinity is not finite",
                         InputError);
  }
  {
    const auto heads = withValue(1, 2, 6, -inf);
    CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 2),
                         "layer 2, head 1, row 2, column 6: value -Infinity is not finite",
                         InputError);
  }
  {
    // Tiny negative values print in full, so a user can tell rounding noise from garbage.
    const auto heads = withValue(0, 1, 1, -1e-300);
    CHECK_THROWS_WITH_AS(
        attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 1),
        "layer 1, head 0, row 1, column 1: value -1e-300 is negative (attention weights must be >= 0)",
        InputError);
  }
  {
    // Negative zero is zero: accepted.
    const auto heads = withValue(0, 1, 1, -0.0);
    CHECK_NOTHROW(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 1));
  }
  {
    // Only the selected heads are read, so a bad value in another head is not an error.
    const auto heads = withValue(1, 2, 2, nan);
    CHECK_NOTHROW(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {0, 2}, 1));
    CHECK_THROWS_AS(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {1}, 1),
                    InputError);
  }
}

TEST_CASE("fusion: float heads give bitwise the result of the same values as doubles") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> unit(0.0F, 1.0F);
  const int numHeads = 12;
  const int n = 29;  // not a multiple of the SIMD width: the loops' tails run too
  std::vector<float> heads(static_cast<std::size_t>(numHeads * n * n));
  for (float& v : heads) v = unit(rng) < 0.2F ? 0.0F : unit(rng);
  const std::vector<double> widened(heads.begin(), heads.end());
  for (const Fusion fusion : {Fusion::Mean, Fusion::Max, Fusion::Min}) {
    for (const std::vector<int>& selected : {std::vector<int>{}, std::vector<int>{7, 2, 11}}) {
      const Matrix fromFloats =
          attnflow::fuseHeads(heads.data(), numHeads, n, fusion, selected, 2);
      const Matrix fromDoubles =
          attnflow::fuseHeads(widened.data(), numHeads, n, fusion, selected, 2);
      CHECK((fromFloats.array() == fromDoubles.array()).all());
    }
  }
  // A bad float is named as a bad double is (the value printed as the double it widens to).
  heads[static_cast<std::size_t>((3 * n + 4) * n + 28)] = -0.25F;
  CHECK_THROWS_WITH_AS(
      attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Mean, {}, 5),
      "layer 5, head 3, row 4, column 28: value -0.25 is negative (attention weights must be >= 0)",
      InputError);
  heads[static_cast<std::size_t>((3 * n + 4) * n + 28)] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Max, {}, 5),
                       "layer 5, head 3, row 4, column 28: value Infinity is not finite",
                       InputError);
  heads[static_cast<std::size_t>((3 * n + 4) * n + 28)] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), numHeads, n, Fusion::Min, {}, 5),
                       "layer 5, head 3, row 4, column 28: value NaN is not a number",
                       InputError);
}

TEST_CASE("fusion: head selection and shape errors") {
  const std::vector<double> heads(8 * 2 * 2, 0.25);
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), 8, 2, Fusion::Mean, {0, 9}, 1),
                       "head 9 is out of range (the file has 8 heads)", InputError);
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), 8, 2, Fusion::Mean, {-1}, 1),
                       "head -1 is out of range (the file has 8 heads)", InputError);
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), 8, 2, Fusion::Mean, {3, 1, 3}, 1),
                       "head 3 is selected more than once", InputError);
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), 0, 2, Fusion::Mean, {}, 4),
                       "layer 4 has no heads (0)", InputError);
  CHECK_THROWS_WITH_AS(attnflow::fuseHeads(heads.data(), 8, 0, Fusion::Mean, {}, 4),
                       "layer 4: the attention matrices are empty (0 tokens)", InputError);
  CHECK_THROWS_AS(attnflow::fuseHeads(heads.data(), 8, -3, Fusion::Mean, {}, 4), InputError);
  // Sizes whose byte count overflows size_t (as in wasm32) are refused before any read.
  CHECK_THROWS_AS(attnflow::fuseHeads(heads.data(), 1 << 30, 1 << 30, Fusion::Mean, {}, 1),
                  InputError);
}

TEST_CASE("takeFusedLayer: validates and row-normalises a pre-fused layer") {
  const std::vector<double> fused = {2.0, 2.0,  //
                                     0.0, 0.0};
  checkClose(attnflow::takeFusedLayer(fused.data(), 2, 1), matrix(2, 2, {0.5, 0.5, 0.0, 0.0}));
  const std::vector<double> bad = {0.5, 0.5,  //
                                   0.1, -3.5};
  CHECK_THROWS_WITH_AS(
      attnflow::takeFusedLayer(bad.data(), 2, 6),
      "layer 6, row 1, column 1: value -3.5 is negative (attention weights must be >= 0)",
      InputError);
  const std::vector<double> nan = {std::nan(""), 0.5, 0.1, 0.9};
  CHECK_THROWS_WITH_AS(attnflow::takeFusedLayer(nan.data(), 2, 2),
                       "layer 2, row 0, column 0: value NaN is not a number", InputError);
  CHECK_THROWS_AS(attnflow::takeFusedLayer(fused.data(), 0, 1), InputError);
}

TEST_CASE("normalizeRows: rows sum to 1, zero rows stay zero") {
  Matrix m = matrix(3, 2, {1.0, 3.0, 0.0, 0.0, 0.0, 2.0});
  attnflow::normalizeRows(m);
  checkClose(m, matrix(3, 2, {0.25, 0.75, 0.0, 0.0, 0.0, 1.0}));
}

TEST_CASE("mixResidual: alpha 0, 0.5, 1 and out-of-range alpha") {
  const Matrix f = matrix(3, 3, {0.2, 0.8, 0.0,  //
                                 0.0, 0.0, 0.0,  //
                                 0.5, 0.25, 0.25});
  SUBCASE("alpha = 0.5 is (F + I) / rowsum; a zero row of F becomes e_i") {
    const Matrix expected = matrix(3, 3, {0.6, 0.4, 0.0,  //
                                          0.0, 1.0, 0.0,  //
                                          0.25, 0.125, 0.625});
    checkClose(attnflow::mixResidual(f, 0.5), expected);
  }
  SUBCASE("alpha = 0 is the identity") {
    checkClose(attnflow::mixResidual(f, 0.0), Matrix::Identity(3, 3));
  }
  SUBCASE("alpha = 1 is F; its zero row stays zero") {
    checkClose(attnflow::mixResidual(f, 1.0), f);
  }
  SUBCASE("alpha = 0.25") {
    const Matrix expected = matrix(3, 3, {0.8, 0.2, 0.0,  //
                                          0.0, 1.0, 0.0,  //
                                          0.125, 0.0625, 0.8125});
    checkClose(attnflow::mixResidual(f, 0.25), expected);
  }
  SUBCASE("out of range") {
    CHECK_THROWS_WITH_AS(attnflow::mixResidual(f, 1.5), "alpha must be between 0 and 1 (got 1.5)",
                         InputError);
    CHECK_THROWS_WITH_AS(attnflow::mixResidual(f, -0.1),
                         "alpha must be between 0 and 1 (got -0.1)", InputError);
    CHECK_THROWS_WITH_AS(attnflow::mixResidual(f, std::nan("")),
                         "alpha must be between 0 and 1 (got NaN)", InputError);
    CHECK_THROWS_AS(attnflow::mixResidual(LayerStack{}, 2.0), InputError);
  }
  SUBCASE("stacks: every layer, and a non-square layer is named") {
    const LayerStack mixed = attnflow::mixResidual(LayerStack{f, f}, 0.5);
    REQUIRE(mixed.size() == 2);
    checkClose(mixed[1], attnflow::mixResidual(f, 0.5));
    CHECK_THROWS_WITH_AS(attnflow::mixResidual(LayerStack{f, Matrix::Zero(3, 2)}, 0.5),
                         "layer 2 must be square (got 3 x 2)", InputError);
  }
}

TEST_CASE("discardSmallest zeroes the smallest entries, ties by position, never (0, 0)") {
  attnflow::Matrix f(2, 2);
  f << 0.1, 0.4, 0.2, 0.2;
  // ratio 0.5 of 4 entries: the 2 smallest are (0,0)=0.1 (kept: never discarded) and (1,0)=0.2
  // (ties with (1,1)=0.2 go to the earlier position).
  attnflow::Matrix expected(2, 2);
  expected << 0.1, 0.4, 0.0, 0.2;
  CHECK(attnflow::discardSmallest(f, 0.5) == expected);
  // floor(0.74 * 4) = 2 as well; 0.75 -> 3 smallest: (0,0) kept, (1,0) and (1,1) zeroed.
  CHECK(attnflow::discardSmallest(f, 0.74) == expected);
  expected << 0.1, 0.4, 0.0, 0.0;
  CHECK(attnflow::discardSmallest(f, 0.75) == expected);
  CHECK(attnflow::discardSmallest(f, 0.0) == f);
  // 0.25 and 0.24999999999999997 (1/4 computed as a mean first) are equal in exact arithmetic:
  // they tie, and the earlier position goes first, whatever their last bits say.
  attnflow::Matrix quarters(2, 2);
  quarters << 0.5, 0.25, std::nextafter(0.25, 0.0), 0.75;
  attnflow::Matrix earlierGoes(2, 2);
  earlierGoes << 0.5, 0.0, std::nextafter(0.25, 0.0), 0.75;
  CHECK(attnflow::discardSmallest(quarters, 0.25) == earlierGoes);
  // Values 2^-39 apart (two multiples of the 2^-40 grain) still rank by value.
  quarters(1, 0) = 0.25 - 0x1p-39;
  earlierGoes << 0.5, 0.25, 0.0, 0.75;
  CHECK(attnflow::discardSmallest(quarters, 0.25) == earlierGoes);
  CHECK_THROWS_AS(attnflow::discardSmallest(f, 1.0), attnflow::InputError);
  CHECK_THROWS_AS(attnflow::discardSmallest(f, -0.1), attnflow::InputError);
}
