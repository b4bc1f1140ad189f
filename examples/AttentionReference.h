// The attention that the attention examples (flash_attention.cpp, the fused
// attention tutorial in tutorials.cpp) check against, in double precision on
// the CPU: for each of `heads` [N, D] slices of row-major Q, K, V and dO,
//   S = scale Q K^T (causal: key j > query i masked), P = softmax(S),
//   O = P V, LSE = log(sum_j exp(S)) (natural log),
//   dS = P * (dO V^T - rowsum(dO * O)), dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO.
#ifndef TESSERA_EXAMPLES_ATTENTIONREFERENCE_H
#define TESSERA_EXAMPLES_ATTENTIONREFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

/// max |got - want| / max |want| over a whole output: the relative error the
/// examples' checks report.
inline double relErr(const std::vector<double> &got, const std::vector<double> &want) {
  double e = 0, m = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    e = std::max(e, std::fabs(got[i] - want[i]));
    m = std::max(m, std::fabs(want[i]));
  }
  return e / m;
}

struct AttentionReference {
  std::vector<double> o, lse, dq, dk, dv;
};

inline AttentionReference attentionReference(int32_t heads, int32_t N, int32_t D, bool causal,
                                             const std::vector<double> &q,
                                             const std::vector<double> &k,
                                             const std::vector<double> &v,
                                             const std::vector<double> &dout, double scale) {
  size_t n = size_t(heads) * N * D;
  AttentionReference r{std::vector<double>(n), std::vector<double>(size_t(heads) * N),
                       std::vector<double>(n, 0.0), std::vector<double>(n, 0.0),
                       std::vector<double>(n, 0.0)};
  std::vector<double> p(size_t(N) * N), ds(size_t(N) * N);
  for (int32_t bh = 0; bh < heads; ++bh) {
    size_t base = size_t(bh) * N * D;
    auto at = [&](const std::vector<double> &t, int32_t row, int32_t col) {
      return t[base + size_t(row) * D + col];
    };
    for (int32_t i = 0; i < N; ++i) {
      int32_t last = causal ? i : N - 1;
      double mx = -1e300;
      for (int32_t j = 0; j <= last; ++j) {
        double s = 0;
        for (int32_t d = 0; d < D; ++d)
          s += at(q, i, d) * at(k, j, d);
        p[size_t(i) * N + j] = s * scale;
        mx = std::max(mx, s * scale);
      }
      double sum = 0;
      for (int32_t j = 0; j <= last; ++j)
        sum += std::exp(p[size_t(i) * N + j] - mx);
      for (int32_t j = 0; j < N; ++j)
        p[size_t(i) * N + j] = j <= last ? std::exp(p[size_t(i) * N + j] - mx) / sum : 0.0;
      r.lse[size_t(bh) * N + i] = mx + std::log(sum);
      for (int32_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int32_t j = 0; j <= last; ++j)
          acc += p[size_t(i) * N + j] * at(v, j, d);
        r.o[base + size_t(i) * D + d] = acc;
      }
    }
    for (int32_t i = 0; i < N; ++i) {
      double di = 0;
      for (int32_t d = 0; d < D; ++d)
        di += at(dout, i, d) * r.o[base + size_t(i) * D + d];
      for (int32_t j = 0; j < N; ++j) {
        double s = 0;
        for (int32_t d = 0; d < D; ++d)
          s += at(dout, i, d) * at(v, j, d);
        ds[size_t(i) * N + j] = p[size_t(i) * N + j] * (s - di);
      }
    }
    for (int32_t i = 0; i < N; ++i)
      for (int32_t j = 0; j < N; ++j) {
        double pij = p[size_t(i) * N + j], dsij = ds[size_t(i) * N + j];
        if (pij == 0 && dsij == 0)
          continue;
        for (int32_t d = 0; d < D; ++d) {
          r.dq[base + size_t(i) * D + d] += dsij * at(k, j, d) * scale;
          r.dk[base + size_t(j) * D + d] += dsij * at(q, i, d) * scale;
          r.dv[base + size_t(j) * D + d] += pij * at(dout, i, d);
        }
      }
  }
  return r;
}

#endif
