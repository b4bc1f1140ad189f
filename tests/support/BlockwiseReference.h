// CPU references for the 8-bit blockwise format and the 8-bit Adam step
// (KERNELS.md section 4), written from the specification, independently of
// kernels_dsl/quant and kernels_dsl/optim. Header-only, standard library only.
#ifndef TESSERA_TESTS_SUPPORT_BLOCKWISEREFERENCE_H
#define TESSERA_TESTS_SUPPORT_BLOCKWISEREFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::testing {

/// The specified binary search over a sorted 256-entry code for one value:
/// pivot 127, indices lo = 0 and hi = 255 bracketing it, steps 64 .. 1, then
/// the nearer of pivot and the bracketing code on x's side by their midpoint
/// (an exact midpoint stays on pivot). Real is float (the kernels' precision,
/// for bit-exact checks) or double (the fp64 reference).
template <class Real> int nearestCodeIndex(const std::vector<float> &code, Real x) {
  int pivot = 127, lo = 0, hi = 255;
  for (int step = 64; step >= 1; step /= 2) {
    if (x > Real(code[size_t(pivot)])) {
      lo = pivot;
      pivot += step;
    } else {
      hi = pivot;
      pivot -= step;
    }
  }
  const Real at = Real(code[size_t(pivot)]);
  if (x > at)
    return x > (Real(code[size_t(hi)]) + at) * Real(0.5) ? hi : pivot;
  return x < (Real(code[size_t(lo)]) + at) * Real(0.5) ? lo : pivot;
}

/// Blockwise quantize of float values: absmax per block, x * (1 / absmax) in
/// fp32, the search above.
inline void quantizeBlockwiseRef(const std::vector<float> &x, int blocksize,
                                 const std::vector<float> &code, std::vector<uint8_t> &q,
                                 std::vector<float> &absmax) {
  const size_t n = x.size(), bs = size_t(blocksize);
  q.assign(n, 0);
  absmax.assign((n + bs - 1) / bs, 0.0f);
  for (size_t b = 0; b * bs < n; ++b) {
    const size_t end = std::min(n, (b + 1) * bs);
    float amax = 0.0f;
    for (size_t i = b * bs; i < end; ++i)
      amax = std::max(amax, std::fabs(x[i]));
    absmax[b] = amax;
    const float scale = 1.0f / amax;
    for (size_t i = b * bs; i < end; ++i)
      q[i] = uint8_t(nearestCodeIndex<float>(code, x[i] * scale));
  }
}

/// One element-wise 8-bit AdamW step in fp64 over a tensor (blocks of 256):
/// dequantize the old state, the specified update, the new block absmax,
/// requantize (with the sign fix for m). Inputs are updated in place.
/// The hyper-parameters as the optimizer holds them: floats (0.999f is not 0.999).
struct AdamRef {
  double lr = double(1e-3f), beta1 = double(0.9f), beta2 = double(0.999f), eps = double(1e-8f),
         wd = double(1e-2f);
};

inline void adam8bitStepRef(const AdamRef &h, int64_t t, const std::vector<float> &code1,
                            const std::vector<float> &code2, const std::vector<double> &g,
                            std::vector<double> &p, std::vector<uint8_t> &m8,
                            std::vector<uint8_t> &v8, std::vector<double> &absmax1,
                            std::vector<double> &absmax2, std::vector<double> *mOut = nullptr,
                            std::vector<double> *vOut = nullptr) {
  const size_t n = g.size(), bs = 256;
  const double c1 = 1.0 - std::pow(h.beta1, double(t));
  const double c2 = std::sqrt(1.0 - std::pow(h.beta2, double(t)));
  std::vector<double> m(n), v(n);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(g[i])) {
      m[i] = 0.0, v[i] = 0.0;
      continue;
    }
    m[i] = h.beta1 * double(code1[m8[i]]) * absmax1[i / bs] + (1.0 - h.beta1) * g[i];
    v[i] = h.beta2 * double(code2[v8[i]]) * absmax2[i / bs] + (1.0 - h.beta2) * g[i] * g[i];
    p[i] += -h.lr * (c2 / c1) * m[i] / (std::sqrt(v[i]) + c2 * h.eps);
    if (h.wd > 0)
      p[i] *= 1.0 - h.lr * h.wd;
  }
  for (size_t b = 0; b * bs < n; ++b) {
    const size_t end = std::min(n, (b + 1) * bs);
    double a1 = 0, a2 = 0;
    for (size_t i = b * bs; i < end; ++i)
      a1 = std::max(a1, std::fabs(m[i])), a2 = std::max(a2, v[i]);
    absmax1[b] = a1, absmax2[b] = a2;
    for (size_t i = b * bs; i < end; ++i) {
      int q1 = nearestCodeIndex<double>(code1, m[i] / a1);
      if (std::signbit(code1[size_t(q1)]) != std::signbit(m[i]))
        q1 += m[i] > 0 ? 1 : -1;
      m8[i] = uint8_t(q1 & 255);  // an all-zero block wraps 0 - 1 to 255: code * 0 = 0 either way
      v8[i] = uint8_t(nearestCodeIndex<double>(code2, v[i] / a2));
    }
  }
  if (mOut)
    *mOut = m;
  if (vOut)
    *vOut = v;
}

} // namespace tessera::testing

#endif
