// fp64 references and error measures, shared by the unit tests (tests/unit),
// the benchmarks (bench/) and the basics check (bench/basics_check.cpp).
// Header-only, standard library only.
//
// Two error measures, named by their norm:
//   relErrL2   ||got - ref||_2 / ||ref||_2 over the whole result (the tests and
//              benchmarks; L2Error accumulates it one element at a time for
//              results read through accessors or at sampled entries);
//   relErrMax  max|got - ref| / max|ref| (the basics check, and `tessera run
//              --check`, which has its own copy in the CLI).
// In both, a NaN in `got` where `ref` holds a number is an infinite error, so
// an element the kernel never wrote (outputs start as NaN) fails any tolerance.
#ifndef TESSERA_TESTS_SUPPORT_REFERENCE_H
#define TESSERA_TESTS_SUPPORT_REFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace tessera::testing {

// ---- Error measures ---------------------------------------------------------

/// ||got - ref||_2 / ||ref||_2, accumulated element by element. When the
/// reference is all zeros, the absolute ||got - ref||_2.
class L2Error {
public:
  void add(double got, double ref) {
    if (std::isnan(got) && !std::isnan(ref)) {
      nan_ = true;
      return;
    }
    double d = got - ref;
    num_ += d * d;
    den_ += ref * ref;
  }
  double value() const {
    if (nan_)
      return std::numeric_limits<double>::infinity();
    return den_ == 0 ? std::sqrt(num_) : std::sqrt(num_ / den_);
  }

private:
  double num_ = 0, den_ = 0;
  bool nan_ = false;
};

/// ||got - ref||_2 / ||ref||_2 over two results of the same length (see
/// L2Error); NaN, which fails every comparison, when the lengths differ.
template <class T> double relErrL2(const std::vector<T> &got, const std::vector<double> &ref) {
  if (got.size() != ref.size())
    return std::numeric_limits<double>::quiet_NaN();
  L2Error e;
  for (size_t i = 0; i < ref.size(); ++i)
    e.add(double(got[i]), ref[i]);
  return e.value();
}

/// ||got - ref||_2 / ||ref||_2 over an M x N result whose elements ref(i, j)
/// and got(i, j) give (see L2Error).
template <class Ref, class Got>
double relErrL2(int64_t M, int64_t N, const Ref &ref, const Got &got) {
  L2Error e;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      e.add(double(got(i, j)), double(ref(i, j)));
  return e.value();
}

/// The max-norm comparison of `got` with `ref`, element by element.
struct MaxNormComparison {
  /// max|got - ref| / max|ref| (the scale is 1 when every reference element
  /// is 0; non-finite reference elements do not count toward it). NaN in both
  /// counts as equal, a NaN in one only as an infinite difference, equal
  /// infinities as equal.
  double relErr = 0;
  size_t above = 0; ///< elements whose |got - ref| / max|ref| exceeds the tolerance
  size_t first = 0; ///< the index of the first of them
};

/// Compares `got` with `ref` (both as doubles) under the max norm; an element
/// is above the tolerance when |got - ref| / max|ref| > tol. NaN (relErr) when
/// the lengths differ.
template <class G, class R>
MaxNormComparison compareMaxNorm(const std::vector<G> &got, const std::vector<R> &ref,
                                 double tol = std::numeric_limits<double>::infinity()) {
  MaxNormComparison c;
  if (got.size() != ref.size()) {
    c.relErr = std::numeric_limits<double>::quiet_NaN();
    return c;
  }
  double maxRef = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (std::isfinite(double(ref[i])))
      maxRef = std::max(maxRef, std::fabs(double(ref[i])));
  double scale = maxRef > 0 ? maxRef : 1.0;
  double maxDiff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = double(got[i]), r = double(ref[i]), d;
    if (std::isnan(g) && std::isnan(r))
      d = 0;
    else if (std::isnan(g) || std::isnan(r))
      d = std::numeric_limits<double>::infinity();
    else if (g == r) // also equal infinities
      d = 0;
    else
      d = std::fabs(g - r);
    if (d / scale > tol && c.above++ == 0)
      c.first = i;
    maxDiff = std::max(maxDiff, d);
  }
  c.relErr = maxDiff / scale;
  return c;
}

/// max|got - ref| / max|ref| (see compareMaxNorm).
template <class G, class R> double relErrMax(const std::vector<G> &got, const std::vector<R> &ref) {
  return compareMaxNorm(got, ref).relErr;
}

// ---- fp64 references ----------------------------------------------------------
// Inputs of any arithmetic element type (float, double, ...), read as doubles.

/// C = A B in fp64, all row-major and dense: A is M x K, B is K x N, C is M x N.
template <class TA, class TB>
std::vector<double> matmulRef(const std::vector<TA> &A, const std::vector<TB> &B, size_t M,
                              size_t N, size_t K) {
  std::vector<double> C(M * N, 0.0);
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; ++k) {
      double a = double(A[m * K + k]);
      for (size_t n = 0; n < N; ++n)
        C[m * N + n] += a * double(B[k * N + n]);
    }
  return C;
}

/// Row softmax in fp64, exp(x - max) / sum(exp(x - max)), of the first `cols`
/// elements of each of `rows` rows `stride` elements apart (stride 0: cols).
/// The result has the input's shape; elements past `cols` in a row are 0.
template <class T>
std::vector<double> softmaxRef(const std::vector<T> &x, size_t rows, size_t cols,
                               size_t stride = 0) {
  if (stride == 0)
    stride = cols;
  std::vector<double> y(rows * stride, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const T *row = &x[r * stride];
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t c = 0; c < cols; ++c)
      mx = std::max(mx, double(row[c]));
    for (size_t c = 0; c < cols; ++c)
      sum += std::exp(double(row[c]) - mx);
    for (size_t c = 0; c < cols; ++c)
      y[r * stride + c] = std::exp(double(row[c]) - mx) / sum;
  }
  return y;
}

/// Layer norm forward in fp64, per row of `cols` elements (rows `stride`
/// apart; stride 0: cols): y = (x - mean) * rstd * w + b with
/// rstd = 1 / sqrt(var + eps) and the biased variance. `y` has the input's
/// shape (0 past `cols` in a row); `mean` and `rstd` one element per row.
struct LayerNormRef {
  std::vector<double> y, mean, rstd;
};
template <class T>
LayerNormRef layerNormRef(const std::vector<T> &x, const std::vector<T> &w,
                          const std::vector<T> &b, size_t rows, size_t cols, double eps,
                          size_t stride = 0) {
  if (stride == 0)
    stride = cols;
  LayerNormRef out{std::vector<double>(rows * stride, 0.0), std::vector<double>(rows),
                   std::vector<double>(rows)};
  for (size_t r = 0; r < rows; ++r) {
    const T *row = &x[r * stride];
    double mean = 0, var = 0;
    for (size_t c = 0; c < cols; ++c)
      mean += double(row[c]);
    mean /= double(cols);
    for (size_t c = 0; c < cols; ++c) {
      double d = double(row[c]) - mean;
      var += d * d;
    }
    var /= double(cols);
    double rstd = 1 / std::sqrt(var + eps);
    out.mean[r] = mean;
    out.rstd[r] = rstd;
    for (size_t c = 0; c < cols; ++c)
      out.y[r * stride + c] = (double(row[c]) - mean) * rstd * double(w[c]) + double(b[c]);
  }
  return out;
}

} // namespace tessera::testing

#endif
