// fp64 references for the ROAST tests, written from docs/kernels/roast.md
// (KERNELS.md section 1) independently of the library's host hash: the layer's
// index map IDX, then W = lambda * M[IDX] built explicitly, and the products
// and scatter-adds over it; the lookup's gather and scatter with the hashes
// evaluated in 128-bit integers, without the library's reductions mod P.
#ifndef TESSERA_TESTS_ROASTTESTSUPPORT_H
#define TESSERA_TESTS_ROASTTESTSUPPORT_H

#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/tessera.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::testing::roastref {

/// RzLinear's R = [P, r1, ..., r7], each r drawn from [0, P).
inline std::array<int32_t, 8> randomR(Seeded &s) {
  std::array<int32_t, 8> R{};
  R[0] = 45007;
  for (size_t i = 1; i < 8; ++i)
    R[i] = int32_t(s.range(0, 45006));
  return R;
}

/// One ROAST-MM layer as the reference sees it.
struct MmLayer {
  int64_t K, N, HK, HN, H;
  std::array<int32_t, 8> R;
  bool aligned;
  double lambda;

  int64_t loc(int64_t kb, int64_t nb) const {
    const int64_t P = 45007;
    int64_t l = ((((kb * R[3] + nb * R[2] + R[1]) % P) * P) + ((kb * R[7] + nb * R[5] + R[4]) % P)) %
                (H - HK * HN);
    return aligned ? l / 32 * 32 : l; // the aligned format: multiples of 32 elements
  }
  /// IDX: K x N positions in M.
  std::vector<int64_t> indexMap() const {
    std::vector<int64_t> idx(size_t(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        idx[size_t(k * N + n)] = loc(k / HK, n / HN) + (k % HK) * HN + n % HN;
    return idx;
  }
  /// W = lambda * M[IDX], K x N, materialised (the reference may; the layer may not).
  std::vector<double> weight(const std::vector<float> &M) const {
    std::vector<int64_t> idx = indexMap();
    std::vector<double> W(idx.size());
    for (size_t i = 0; i < idx.size(); ++i)
      W[i] = lambda * double(M[size_t(idx[i])]);
    return W;
  }
  /// Y = X @ W (B x N).
  std::vector<double> forward(const std::vector<float> &X, const std::vector<float> &M,
                              int64_t B) const {
    std::vector<double> W = weight(M), Y(size_t(B * N), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k) {
        double x = X[size_t(b * K + k)];
        for (int64_t n = 0; n < N; ++n)
          Y[size_t(b * N + n)] += x * W[size_t(k * N + n)];
      }
    return Y;
  }
  /// dX = dY @ W^T (B x K).
  std::vector<double> inputGrad(const std::vector<float> &dY, const std::vector<float> &M,
                                int64_t B) const {
    std::vector<double> W = weight(M), dX(size_t(B * K), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n)
          s += double(dY[size_t(b * N + n)]) * W[size_t(k * N + n)];
        dX[size_t(b * K + k)] = s;
      }
    return dX;
  }
  /// dM += lambda * scatter-add of (X^T dY)[k, n] at IDX[k, n] (into `dM`, H elements).
  void addMemoryGrad(const std::vector<float> &X, const std::vector<float> &dY, int64_t B,
                     std::vector<double> &dM) const {
    std::vector<int64_t> idx = indexMap();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t b = 0; b < B; ++b)
          s += double(X[size_t(b * K + k)]) * double(dY[size_t(b * N + n)]);
        dM[size_t(idx[size_t(k * N + n)])] += lambda * s;
      }
  }
};

/// The lookup's hashes straight from the formulas, in 128-bit integers.
struct Lookup {
  int64_t rows, dim, Z, H;
  std::array<int32_t, 6> RL;
  bool sign;
  double lambda;

  int64_t index(int64_t r, int64_t c) const {
    const __int128 P = 2038074743;
    __int128 v = (__int128(r) * RL[0] + __int128(c / Z) * RL[1] + RL[2]) % P;
    return int64_t(v % (H - Z + 1)) + c % Z;
  }
  double signOf(int64_t r, int64_t c) const {
    if (!sign)
      return 1.0;
    const __int128 P = 2038074743;
    __int128 x = __int128(r) * ((dim + Z - 1) / Z) + c / Z;
    // x*x*g1 can pass 2^127 for x near 2^48; (x*x mod P)*g1 cannot, and is the same mod P.
    __int128 v = (x * RL[3] + (x * x % P) * RL[4] + RL[5]) % P;
    return double(2 * int(v % 2) - 1);
  }
};

/// The contexts a test runs on: the interpreter (CI), and the GPU when there
/// is one (else a visible skip), with the relative tolerance each computes to
/// (fp32 dots in the interpreter, tf32 tensor cores on the GPU).
struct Target {
  std::string name;
  std::unique_ptr<Context> ctx;
  double tol;
};
inline std::vector<Target> targets() {
  std::vector<Target> t;
  t.push_back({"interpreter", std::make_unique<Context>(createInterpreterBackend()), 2e-5});
  if (auto gpu = gpuOrSkip())
    t.push_back({"gpu", std::move(gpu), 3e-3});
  return t;
}

} // namespace tessera::testing::roastref

#endif
