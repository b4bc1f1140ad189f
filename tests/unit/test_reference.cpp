// tests/support/Reference.h: the error measures on hand-made cases (NaN,
// all-zero references, length mismatches) and the fp64 references on small
// inputs worked out by hand.
#include <catch2/catch.hpp>

#include "support/Reference.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace tessera::testing;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
} // namespace

TEST_CASE("reference: relErrL2", "[reference]") {
  CHECK(relErrL2(std::vector<float>{3, 4}, {3, 4}) == 0);
  // ||(0, 1)|| / ||(3, 4)|| = 1 / 5
  CHECK(relErrL2(std::vector<double>{3, 5}, {3, 4}) == Approx(0.2));
  // An all-zero reference: the absolute error.
  CHECK(relErrL2(std::vector<double>{3, 4}, {0, 0}) == Approx(5));
  // An unwritten (NaN) element fails any tolerance, and so does a length mismatch.
  CHECK(relErrL2(std::vector<float>{1, float(kNaN)}, {1, 2}) == kInf);
  CHECK(std::isnan(relErrL2(std::vector<float>{1}, {1, 2})));
  // The accessor form and the accumulator agree with the vector form.
  std::vector<double> got{1, 2, 3, 5}, ref{1, 2, 3, 4};
  double viaAccessors = relErrL2(
      2, 2, [&](int64_t i, int64_t j) { return ref[size_t(i * 2 + j)]; },
      [&](int64_t i, int64_t j) { return got[size_t(i * 2 + j)]; });
  CHECK(viaAccessors == relErrL2(got, ref));
}

TEST_CASE("reference: relErrMax and compareMaxNorm", "[reference]") {
  // max|got - ref| / max|ref| = 0.5 / 4
  CHECK(relErrMax(std::vector<double>{1, 2.5, 4}, std::vector<double>{1, 2, 4}) == 0.125);
  // An all-zero reference: the scale is 1.
  CHECK(relErrMax(std::vector<double>{0, 0.25}, std::vector<double>{0, 0}) == 0.25);
  // NaN in both is equal; in one only, infinite. Equal infinities are equal,
  // and a non-finite reference does not count toward the scale.
  CHECK(relErrMax(std::vector<double>{kNaN, 1}, std::vector<double>{kNaN, 2}) == 0.5);
  CHECK(relErrMax(std::vector<double>{kNaN, 1}, std::vector<double>{1, 1}) == kInf);
  CHECK(relErrMax(std::vector<double>{kInf, 1}, std::vector<double>{kInf, 2}) == 0.5);
  CHECK(std::isnan(relErrMax(std::vector<double>{1}, std::vector<double>{1, 2})));
  MaxNormComparison c =
      compareMaxNorm(std::vector<float>{1, 2, 3.5f, 4, 0}, std::vector<double>{1, 2, 3, 4, 1}, 0.1);
  CHECK(c.relErr == 0.25);
  CHECK(c.above == 2);
  CHECK(c.first == 2);
}

TEST_CASE("reference: fp64 matmul, softmax and layer norm", "[reference]") {
  // [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50]; a 1x2 by 2x3 product.
  CHECK(matmulRef(std::vector<float>{1, 2, 3, 4}, std::vector<float>{5, 6, 7, 8}, 2, 2, 2) ==
        std::vector<double>{19, 22, 43, 50});
  CHECK(matmulRef(std::vector<double>{1, 2}, std::vector<double>{1, 2, 3, 4, 5, 6}, 1, 3, 2) ==
        std::vector<double>{9, 12, 15});

  // Two rows of two columns, stored three apart; the padding column is 0.
  std::vector<double> sm = softmaxRef(std::vector<float>{0, 0, 99, 1, 1 + float(std::log(3.0)), 99},
                                      2, 2, 3);
  REQUIRE(sm.size() == 6);
  CHECK(sm[0] == Approx(0.5));
  CHECK(sm[1] == Approx(0.5));
  CHECK(sm[2] == 0);
  CHECK(sm[3] == Approx(0.25));
  CHECK(sm[4] == Approx(0.75));
  // Large inputs do not overflow (the row maximum is subtracted first).
  std::vector<double> big = softmaxRef(std::vector<double>{1000, 1000}, 1, 2);
  CHECK(big[0] == Approx(0.5));

  // Rows (1, 3) and (4, 6), stored three apart: means 2 and 5, biased
  // variance 1; with eps 0, rstd 1 and y = (x - mean) * w + b.
  LayerNormRef ln = layerNormRef(std::vector<double>{1, 3, 99, 4, 6, 99}, std::vector<double>{2, 3},
                                 std::vector<double>{10, 20}, 2, 2, 0.0, 3);
  CHECK(ln.mean == std::vector<double>{2, 5});
  CHECK(ln.rstd == std::vector<double>{1, 1});
  CHECK(ln.y == std::vector<double>{8, 23, 0, 8, 23, 0});
}
