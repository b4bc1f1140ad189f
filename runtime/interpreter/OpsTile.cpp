// Tile ops: program ids, ranges, splat/broadcast/transpose, pointer
// arithmetic, checked loads/stores/atomics, dot, reduce and device_print.
#include "Numerics.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace tessera {
namespace interp {
namespace {

//===----------------------------------------------------------------------===//
// Program identity, ranges, shapes
//===----------------------------------------------------------------------===//
bool programIdOp(Exec &e, const Instr &ins) {
  *P<int32_t>(e, ins.dst) = int32_t(e.pid[ins.pred]);
  return true;
}
bool numProgramsOp(Exec &e, const Instr &ins) {
  *P<int32_t>(e, ins.dst) = int32_t(e.rs->grid[ins.pred]);
  return true;
}
// The interpreter runs every program alone: clusters of one.
bool clusterSizeOp(Exec &e, const Instr &ins) {
  *P<int32_t>(e, ins.dst) = 1;
  return true;
}
bool makeRangeOp(Exec &e, const Instr &ins) {
  int32_t *d = P<int32_t>(e, ins.dst);
  int32_t start = int32_t(ins.aux[0]);
  for (int64_t i = 0; i < ins.n; ++i)
    d[i] = start + int32_t(i);
  return true;
}

template <unsigned B> bool splatOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  U v = *P<U>(e, ins.a);
  U *d = P<U>(e, ins.dst);
  std::fill(d, d + N(e, ins), v);
  return true;
}

// dst[idx] = src[sum idx[k] * aux[k]]: broadcast (stride 0) and transpose.
template <unsigned B> bool stridedCopyOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  U *d = P<U>(e, ins.dst);
  const U *s = P<U>(e, ins.a);
  const auto &shape = ins.shape;
  const auto &stride = ins.aux;
  size_t r = shape.size();
  if (r == 0) {
    d[0] = s[0];
    return true;
  }
  int64_t inner = shape[r - 1], istride = stride[r - 1];
  int64_t outerCount = ins.n / std::max<int64_t>(inner, 1);
  int64_t idx[8] = {0};
  for (int64_t o = 0; o < outerCount; ++o) {
    int64_t base = 0;
    for (size_t k = 0; k + 1 < r; ++k)
      base += idx[k] * stride[k];
    const U *src = s + base;
    if (istride == 1)
      std::copy(src, src + inner, d);
    else if (istride == 0)
      std::fill(d, d + inner, src[0]);
    else
      for (int64_t i = 0; i < inner; ++i)
        d[i] = src[i * istride];
    d += inner;
    for (size_t k = r - 1; k-- > 0;) { // odometer over the outer dimensions
      if (++idx[k] < shape[k])
        break;
      idx[k] = 0;
    }
  }
  return true;
}

// dst[c] = src[c with c[axis] = index[c]] (a rank-1 src: src[index[c]]).
// shape: the result's; shape2: src's; pred: the axis; B the element bytes,
// K the index kind. An index outside src is an error, as an out-of-bounds load.
template <unsigned B, EK K> bool gatherOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  using T = IT<K>;
  const U *s = P<U>(e, ins.a);
  const auto *ix = P<typename T::S>(e, ins.b);
  U *d = P<U>(e, ins.dst);
  const auto &shape = ins.shape, &sshape = ins.shape2;
  size_t r = shape.size(), axis = size_t(ins.pred);
  bool table = sshape.size() == 1;
  int64_t extent = sshape[table ? 0 : axis];
  int64_t n = N(e, ins);
  int64_t c[8] = {0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = K == EK::I1 ? int64_t(T::u(ix[i])) : T::s(ix[i]);
    if (v < 0 || v >= extent) {
      std::string at;
      for (size_t k = 0; k < r; ++k)
        at += (k ? ", " : "") + std::to_string(c[k]);
      return fail(e, ins, "gather index out of range",
                  "index " + std::to_string(v) + " at (" + at + ") is outside [0, " +
                      std::to_string(extent) + ")");
    }
    int64_t flat = v;
    if (!table) {
      flat = 0;
      for (size_t k = 0; k < r; ++k)
        flat = flat * sshape[k] + (k == axis ? v : c[k]);
    }
    d[i] = s[flat];
    for (size_t k = r; k-- > 0;) { // odometer over the result's coordinates
      if (++c[k] < shape[k])
        break;
      c[k] = 0;
    }
  }
  return true;
}

template <EK K> bool addPtrOp(Exec &e, const Instr &ins) {
  using T = IT<K>;
  int64_t n = N(e, ins);
  uint64_t *d = P<uint64_t>(e, ins.dst);
  const uint64_t *p = P<uint64_t>(e, ins.a);
  const auto *o = P<typename T::S>(e, ins.b);
  uint64_t sz = ins.elemBytes;
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = K == EK::I1 ? int64_t(T::u(o[i])) : T::s(o[i]);
    d[i] = p[i] + uint64_t(off) * sz;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string laneText(const Instr &ins, int64_t lane) {
  if (ins.shape.empty())
    return "";
  std::vector<int64_t> idx(ins.shape.size());
  int64_t rem = lane;
  for (size_t k = ins.shape.size(); k-- > 0;) {
    idx[k] = rem % ins.shape[k];
    rem /= ins.shape[k];
  }
  std::string s = ", at tile element [";
  for (size_t k = 0; k < idx.size(); ++k)
    s += (k ? ", " : "") + std::to_string(idx[k]);
  s += "] of ";
  for (size_t k = 0; k < ins.shape.size(); ++k)
    s += (k ? "x" : "") + std::to_string(ins.shape[k]);
  return s;
}

bool badAccess(Exec &e, const Instr &ins, const char *what, int64_t lane, uint64_t addr) {
  unsigned esz = ins.elemBytes;
  const auto &bufs = e.rs->opts->buffers;
  std::string detail;
  if (addr % esz != 0 && (bufs.empty() || addr >= 4096)) {
    detail = "address " + hex(addr) + " is not aligned to the " + std::to_string(esz) +
             "-byte element";
  } else if (bufs.empty() || addr < 4096) {
    detail = "null pointer (address " + hex(addr) + ")";
  } else {
    // The nearest buffer, by distance from its [start, end).
    size_t best = 0;
    uint64_t bestDist = ~uint64_t(0);
    for (size_t i = 0; i < bufs.size(); ++i) {
      uint64_t s = bufs[i].first, end = s + bufs[i].second;
      uint64_t dist = addr < s ? s - addr : (addr + esz > end ? addr + esz - end : 0);
      if (dist < bestDist) {
        bestDist = dist;
        best = i;
      }
    }
    uint64_t s = bufs[best].first, size = bufs[best].second;
    if (bestDist <= std::max<uint64_t>(size, 1 << 20)) {
      int64_t byteOff = int64_t(addr - s);
      std::string off = byteOff % int64_t(esz) == 0
                            ? "element offset " + std::to_string(byteOff / int64_t(esz))
                            : "byte offset " + std::to_string(byteOff);
      detail = off + " is outside the buffer of " + std::to_string(size / esz) +
               " elements starting at " + hex(s);
      if (bufs.size() > 1)
        detail += " (InterpOptions::buffers[" + std::to_string(best) + "])";
    } else {
      detail = "address " + hex(addr) + " is not inside any of the " +
               std::to_string(bufs.size()) + " buffers given to the interpreter";
    }
  }
  detail += laneText(ins, lane);
  return fail(e, ins, std::string(addr < 4096 && addr % esz == 0 ? "null-pointer " : "out-of-bounds ") + what,
              detail);
}

inline bool accessible(Exec &e, uint64_t addr, unsigned size) {
  if (addr & (size - 1))
    return false;
  const auto &b = e.rs->bufs;
  if (b.empty())
    return addr >= 4096;
  if (e.lastBuf < b.size() && addr >= b[e.lastBuf].first && addr + size <= b[e.lastBuf].second)
    return true;
  auto it = std::upper_bound(b.begin(), b.end(), addr,
                             [](uint64_t a, const std::pair<uint64_t, uint64_t> &p) {
                               return a < p.first;
                             });
  if (it == b.begin())
    return false;
  --it;
  if (addr + size <= it->second) {
    e.lastBuf = size_t(it - b.begin());
    return true;
  }
  return false;
}

template <unsigned B> bool loadOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  int64_t n = N(e, ins);
  U *d = P<U>(e, ins.dst);
  const uint64_t *p = P<uint64_t>(e, ins.a);
  const uint8_t *m = ins.b >= 0 ? P<uint8_t>(e, ins.b) : nullptr;
  const U *other = ins.c >= 0 ? P<U>(e, ins.c) : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    if (m && !m[i]) {
      d[i] = other ? other[i] : U(0);
      continue;
    }
    if (!accessible(e, p[i], B))
      return badAccess(e, ins, "load", i, p[i]);
    std::memcpy(&d[i], reinterpret_cast<const void *>(p[i]), B);
  }
  return true;
}

template <unsigned B> bool storeOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  int64_t n = N(e, ins);
  const uint64_t *p = P<uint64_t>(e, ins.a);
  const U *v = P<U>(e, ins.b);
  const uint8_t *m = ins.c >= 0 ? P<uint8_t>(e, ins.c) : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    if (m && !m[i])
      continue;
    if (!accessible(e, p[i], B))
      return badAccess(e, ins, "store", i, p[i]);
    std::memcpy(reinterpret_cast<void *>(p[i]), &v[i], B);
  }
  return true;
}

// The new value of an atomic read-modify-write.
template <EK K, class S> S combineRmw(RMW kind, S old, S v) {
  if constexpr (K == EK::F16 || K == EK::BF16 || K == EK::F32 || K == EK::F64) {
    using T = FT<K>;
    auto o = T::ld(old), x = T::ld(v);
    switch (kind) {
    case RMW::Add: return T::st(o + x);
    case RMW::Max: return (x > o || std::isnan(o)) ? v : old;
    case RMW::Min: return (x < o || std::isnan(o)) ? v : old;
    default: return v; // xchg
    }
  } else {
    using T = IT<K>;
    switch (kind) {
    case RMW::Add: return T::from(T::u(old) + T::u(v));
    case RMW::Max: return T::s(v) > T::s(old) ? v : old;
    case RMW::Min: return T::s(v) < T::s(old) ? v : old;
    case RMW::UMax: return T::u(v) > T::u(old) ? v : old;
    case RMW::UMin: return T::u(v) < T::u(old) ? v : old;
    case RMW::And: return T::from(T::u(old) & T::u(v));
    case RMW::Or: return T::from(T::u(old) | T::u(v));
    case RMW::Xor: return T::from(T::u(old) ^ T::u(v));
    default: return v;
    }
  }
}

template <EK K> struct StorageOf { using S = typename IT<K>::S; };
template <> struct StorageOf<EK::F16> { using S = uint16_t; };
template <> struct StorageOf<EK::BF16> { using S = uint16_t; };
template <> struct StorageOf<EK::F32> { using S = float; };
template <> struct StorageOf<EK::F64> { using S = double; };

// Atomics: a compare-and-swap loop per lane on the real memory word, so they
// are atomic with respect to every other worker thread.
template <EK K> bool atomicRmwOp(Exec &e, const Instr &ins) {
  using S = typename StorageOf<K>::S;
  using U = typename UBytes<sizeof(S)>::T;
  int64_t n = N(e, ins);
  S *d = P<S>(e, ins.dst);
  const uint64_t *p = P<uint64_t>(e, ins.a);
  const S *v = P<S>(e, ins.b);
  const uint8_t *m = ins.c >= 0 ? P<uint8_t>(e, ins.c) : nullptr;
  RMW kind = RMW(ins.pred);
  for (int64_t i = 0; i < n; ++i) {
    if (m && !m[i]) {
      d[i] = S(0);
      continue;
    }
    if (!accessible(e, p[i], sizeof(S)))
      return badAccess(e, ins, "atomic", i, p[i]);
    U *addr = reinterpret_cast<U *>(p[i]);
    U old = __atomic_load_n(addr, __ATOMIC_RELAXED);
    for (;;) {
      U nu = bitCast<U>(combineRmw<K, S>(kind, bitCast<S>(old), v[i]));
      if (__atomic_compare_exchange_n(addr, &old, nu, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        break;
    }
    d[i] = bitCast<S>(old);
  }
  return true;
}

template <unsigned B> bool atomicCasOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  int64_t n = N(e, ins);
  U *d = P<U>(e, ins.dst);
  const uint64_t *p = P<uint64_t>(e, ins.a);
  const U *cmp = P<U>(e, ins.b);
  const U *v = P<U>(e, ins.c);
  for (int64_t i = 0; i < n; ++i) {
    if (!accessible(e, p[i], B))
      return badAccess(e, ins, "atomic", i, p[i]);
    U expected = cmp[i];
    __atomic_compare_exchange_n(reinterpret_cast<U *>(p[i]), &expected, v[i], false,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    d[i] = expected; // the old value, whether or not the swap happened
  }
  return true;
}

//===----------------------------------------------------------------------===//
// dot
//===----------------------------------------------------------------------===//
// C[m, :] = fma(A[m, k], B[k, :], C[m, :]) for k in order: each output is a
// chain of fused multiply-adds in k order, like the GPU's FMA path.
#define TESSERA_GEMM_BODY(F, FMA)                                                          \
  for (int64_t m = 0; m < M; ++m) {                                                          \
    F *c = C + m * Nn;                                                                       \
    for (int64_t k = 0; k < K; ++k) {                                                        \
      F a = A[m * K + k];                                                                    \
      const F *b = B + k * Nn;                                                               \
      for (int64_t j = 0; j < Nn; ++j)                                                       \
        c[j] = FMA(a, b[j], c[j]);                                                           \
    }                                                                                        \
  }
__attribute__((target("avx2,fma"))) void gemmFmaF32(const float *A, const float *B, float *C,
                                                    int64_t M, int64_t Nn, int64_t K) {
  TESSERA_GEMM_BODY(float, __builtin_fmaf)
}
__attribute__((target("avx2,fma"))) void gemmFmaF64(const double *A, const double *B, double *C,
                                                    int64_t M, int64_t Nn, int64_t K) {
  TESSERA_GEMM_BODY(double, __builtin_fma)
}
template <class F>
void gemmPortable(const F *A, const F *B, F *C, int64_t M, int64_t Nn, int64_t K) {
  TESSERA_GEMM_BODY(F, std::fma)
}
#undef TESSERA_GEMM_BODY
bool haveFma() {
  static const bool has = __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  return has;
}
void gemm(const float *A, const float *B, float *C, int64_t M, int64_t Nn, int64_t K) {
  if (haveFma())
    gemmFmaF32(A, B, C, M, Nn, K);
  else
    gemmPortable<float>(A, B, C, M, Nn, K);
}
void gemm(const double *A, const double *B, double *C, int64_t M, int64_t Nn, int64_t K) {
  if (haveFma())
    gemmFmaF64(A, B, C, M, Nn, K);
  else
    gemmPortable<double>(A, B, C, M, Nn, K);
}

template <EK K> void toFloat(const void *src, float *dst, int64_t n, bool tf32) {
  const auto *s = static_cast<const typename FT<K>::S *>(src);
  for (int64_t i = 0; i < n; ++i) {
    float v = float(FT<K>::ld(s[i]));
    dst[i] = tf32 ? roundTF32(v) : v;
  }
}

bool dotOp(Exec &e, const Instr &ins) {
  int64_t M = ins.aux[0], K = ins.aux[1], Nn = ins.aux[2];
  EK in = ins.kind2, acc = ins.kind;
  if (in == EK::F64) {
    double *c = P<double>(e, ins.dst);
    std::copy(P<double>(e, ins.c), P<double>(e, ins.c) + M * Nn, c);
    gemm(P<double>(e, ins.a), P<double>(e, ins.b), c, M, Nn, K);
    return true;
  }
  if (in == EK::I8) {
    const int8_t *A = P<int8_t>(e, ins.a), *B = P<int8_t>(e, ins.b);
    uint32_t *c = P<uint32_t>(e, ins.dst);
    std::copy(P<uint32_t>(e, ins.c), P<uint32_t>(e, ins.c) + M * Nn, c);
    for (int64_t m = 0; m < M; ++m) {
      uint32_t *cr = c + m * Nn;
      for (int64_t k = 0; k < K; ++k) {
        int32_t a = A[m * K + k];
        const int8_t *b = B + k * Nn;
        for (int64_t j = 0; j < Nn; ++j)
          cr[j] += uint32_t(a * int32_t(b[j])); // wraps like the GPU's s32 accumulator
      }
    }
    return true;
  }
  // f32 / f16 / bf16 operands, computed in f32.
  bool tf32 = in == EK::F32 && ins.flag && e.rs->opts->tf32;
  const float *A, *B;
  if (in == EK::F32 && !tf32) {
    A = P<float>(e, ins.a);
    B = P<float>(e, ins.b);
  } else {
    e.fa.resize(size_t(M * K));
    e.fb.resize(size_t(K * Nn));
    dispatchFloat(in, [&](auto KI) {
      toFloat<decltype(KI)::value>(e.slot[ins.a], e.fa.data(), M * K, tf32);
    });
    dispatchFloat(EK(ins.pred), [&](auto KI) {
      toFloat<decltype(KI)::value>(e.slot[ins.b], e.fb.data(), K * Nn, tf32);
    });
    A = e.fa.data();
    B = e.fb.data();
  }
  if (acc == EK::F32) {
    float *c = P<float>(e, ins.dst);
    std::copy(P<float>(e, ins.c), P<float>(e, ins.c) + M * Nn, c);
    gemm(A, B, c, M, Nn, K);
    return true;
  }
  // f16 accumulator: summed in f32 and rounded to f16 after every k-step of
  // 16 (one mma.m16n8k16 instruction's worth).
  e.fc.resize(size_t(M * Nn));
  const uint16_t *c0 = P<uint16_t>(e, ins.c);
  uint16_t *d = P<uint16_t>(e, ins.dst);
  for (int64_t i = 0; i < M * Nn; ++i)
    e.fc[size_t(i)] = halfToFloat(c0[i]);
  std::vector<float> a16(size_t(M * 16));
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    int64_t kk = std::min<int64_t>(16, K - k0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < kk; ++k)
        a16[size_t(m * kk + k)] = A[m * K + k0 + k];
    gemm(a16.data(), B + k0 * Nn, e.fc.data(), M, Nn, kk);
    for (auto &x : e.fc)
      x = halfToFloat(floatToHalf(x));
  }
  for (int64_t i = 0; i < M * Nn; ++i)
    d[i] = floatToHalf(e.fc[size_t(i)]);
  return true;
}

// A combiner region's captured outer scalars, broadcast into its slots.
void fillCaptures(Exec &e, const Region &rg) {
  for (auto [outerSlot, innerSlot] : rg.captures) {
    unsigned b = ekSize(e.prog->slots[size_t(innerSlot)].kind);
    for (int64_t i = 0; i < rg.capacity; ++i)
      std::memcpy(e.slot[innerSlot] + i * b, e.slot[outerSlot], b);
  }
}

// One vectorized run of a combiner over `n` element pairs already in its
// argument slots.
bool runCombiner(Exec &e, const Region &rg, int64_t n) {
  int64_t saved = e.regionN;
  e.regionN = n;
  bool ok = runBlock(e, rg.body);
  e.regionN = saved;
  return ok;
}

//===----------------------------------------------------------------------===//
// reduce: a tree of adjacent pairs, each level one vectorized run of the
// combiner over every pair at once. Pairs keep their order (lhs before rhs).
//===----------------------------------------------------------------------===//
bool reduceOp(Exec &e, const Instr &ins) {
  const Region &rg = ins.regions[0];
  size_t k = ins.ins.size();
  int64_t outer = ins.aux[0], R = ins.aux[1], inner = ins.aux[2];
  if (e.scratch.size() < 2 * k)
    e.scratch.resize(2 * k);
  std::vector<const uint8_t *> cur(k);
  std::vector<unsigned> esz(k);
  for (size_t j = 0; j < k; ++j) {
    esz[j] = ekSize(e.prog->slots[size_t(ins.ins[j])].kind);
    cur[j] = e.slot[ins.ins[j]];
  }
  fillCaptures(e, rg);
  int64_t len = R;
  int pingpong = 0;
  while (len > 1) {
    int64_t h = len / 2, odd = len & 1, nl = h + odd;
    int64_t n = outer * h * inner;
    for (size_t j = 0; j < k; ++j) {
      uint8_t *lhs = e.slot[rg.body.args[j]], *rhs = e.slot[rg.body.args[j + k]];
      size_t chunk = size_t(inner) * esz[j];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < h; ++i) {
          std::memcpy(lhs + size_t((o * h + i)) * chunk, cur[j] + size_t(o * len + 2 * i) * chunk, chunk);
          std::memcpy(rhs + size_t((o * h + i)) * chunk, cur[j] + size_t(o * len + 2 * i + 1) * chunk, chunk);
        }
    }
    if (!runCombiner(e, rg, n))
      return false;
    for (size_t j = 0; j < k; ++j) {
      size_t chunk = size_t(inner) * esz[j];
      auto &next = e.scratch[2 * j + size_t(pingpong)];
      if (next.size() < size_t(outer * nl) * chunk)
        next.resize(size_t(outer * nl) * chunk);
      const uint8_t *res = e.slot[rg.results[j]];
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(next.data() + size_t(o * nl) * chunk, res + size_t(o * h) * chunk,
                    size_t(h) * chunk);
        if (odd)
          std::memcpy(next.data() + size_t(o * nl + h) * chunk,
                      cur[j] + size_t(o * len + len - 1) * chunk, chunk);
      }
      cur[j] = next.data();
    }
    pingpong ^= 1;
    len = nl;
  }
  for (size_t j = 0; j < k; ++j)
    std::memcpy(e.slot[ins.outs[j]], cur[j], size_t(outer * inner) * esz[j]);
  return true;
}

//===----------------------------------------------------------------------===//
// scan: Hillis-Steele over the axis. At distance d = 1, 2, 4, ... element j
// takes combine(y[j - d], y[j]) (reverse: combine(y[j + d], y[j])), one
// vectorized run of the combiner over every pair of the level; the left
// argument always covers the elements that come first in the scan's order.
//===----------------------------------------------------------------------===//
bool scanOp(Exec &e, const Instr &ins) {
  const Region &rg = ins.regions[0];
  size_t k = ins.ins.size();
  int64_t outer = ins.aux[0], R = ins.aux[1], inner = ins.aux[2];
  bool reverse = ins.flag;
  std::vector<unsigned> esz(k);
  std::vector<std::vector<uint8_t>> cur(k);
  for (size_t j = 0; j < k; ++j) {
    esz[j] = ekSize(e.prog->slots[size_t(ins.ins[j])].kind);
    const uint8_t *src = e.slot[ins.ins[j]];
    cur[j].assign(src, src + size_t(outer * R * inner) * esz[j]);
  }
  fillCaptures(e, rg);
  for (int64_t d = 1; d < R; d *= 2) {
    int64_t m = R - d; // positions that combine at this level, per outer index
    for (size_t j = 0; j < k; ++j) {
      uint8_t *lhs = e.slot[rg.body.args[j]], *rhs = e.slot[rg.body.args[j + k]];
      size_t chunk = size_t(inner) * esz[j];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < m; ++i) {
          int64_t me = reverse ? i : i + d, other = reverse ? i + d : i;
          std::memcpy(lhs + size_t(o * m + i) * chunk, cur[j].data() + size_t(o * R + other) * chunk,
                      chunk);
          std::memcpy(rhs + size_t(o * m + i) * chunk, cur[j].data() + size_t(o * R + me) * chunk,
                      chunk);
        }
    }
    if (!runCombiner(e, rg, outer * m * inner))
      return false;
    for (size_t j = 0; j < k; ++j) {
      size_t chunk = size_t(inner) * esz[j];
      const uint8_t *res = e.slot[rg.results[j]];
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(cur[j].data() + size_t(o * R + (reverse ? 0 : d)) * chunk,
                    res + size_t(o * m) * chunk, size_t(m) * chunk);
    }
  }
  for (size_t j = 0; j < k; ++j)
    std::memcpy(e.slot[ins.outs[j]], cur[j].data(), cur[j].size());
  return true;
}

//===----------------------------------------------------------------------===//
// sort: each line along the axis by (key, original position), so ties keep
// their order and the result is unique; floats put NaN above +inf.
//===----------------------------------------------------------------------===//
bool sortOp(Exec &e, const Instr &ins) {
  int64_t outer = ins.aux[0], R = ins.aux[1], inner = ins.aux[2];
  bool descending = ins.flag, uns = ins.pred != 0;
  bool fp = ins.kind == EK::F16 || ins.kind == EK::BF16 || ins.kind == EK::F32 || ins.kind == EK::F64;
  unsigned esz = ekSize(ins.kind);
  const uint8_t *src = e.slot[ins.a];
  uint8_t *dst = e.slot[ins.outs[0]];
  int32_t *pos = reinterpret_cast<int32_t *>(e.slot[ins.outs[1]]);
  // Keys as doubles (floats, exactly) or as integers of the key's signedness.
  auto intKey = [&](int64_t i) -> __int128 {
    switch (ins.kind) {
    case EK::I8: return uns ? __int128(src[i]) : __int128(int8_t(src[i]));
    case EK::I16: return uns ? __int128(reinterpret_cast<const uint16_t *>(src)[i])
                             : __int128(reinterpret_cast<const int16_t *>(src)[i]);
    case EK::I32: return uns ? __int128(reinterpret_cast<const uint32_t *>(src)[i])
                             : __int128(reinterpret_cast<const int32_t *>(src)[i]);
    default: return uns ? __int128(reinterpret_cast<const uint64_t *>(src)[i])
                        : __int128(reinterpret_cast<const int64_t *>(src)[i]);
    }
  };
  // less(a, b) on keys: NaN is above everything.
  auto less = [&](int64_t a, int64_t b) {
    if (!fp)
      return intKey(a) < intKey(b);
    double x = elemAsDouble(ins.kind, src, a), y = elemAsDouble(ins.kind, src, b);
    return x < y || (!std::isnan(x) && std::isnan(y));
  };
  std::vector<int32_t> order(static_cast<size_t>(R));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t r) { return (o * R + r) * inner + in; };
      for (int64_t r = 0; r < R; ++r)
        order[size_t(r)] = int32_t(r);
      std::stable_sort(order.begin(), order.end(), [&](int32_t p, int32_t q) {
        return descending ? less(at(q), at(p)) : less(at(p), at(q));
      });
      for (int64_t r = 0; r < R; ++r) {
        std::memcpy(dst + size_t(at(r)) * esz, src + size_t(at(order[size_t(r)])) * esz, esz);
        pos[at(r)] = order[size_t(r)];
      }
    }
  return true;
}

//===----------------------------------------------------------------------===//
// device_print
//===----------------------------------------------------------------------===//
std::string formatElem(EK k, const uint8_t *p, int64_t i) {
  char buf[64];
  switch (k) {
  case EK::F16: case EK::BF16: case EK::F32:
    std::snprintf(buf, sizeof buf, "%.9g", elemAsDouble(k, p, i));
    break;
  case EK::F64:
    std::snprintf(buf, sizeof buf, "%.17g", elemAsDouble(k, p, i));
    break;
  case EK::Ptr:
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, reinterpret_cast<const uint64_t *>(p)[i]);
    break;
  case EK::I64:
    std::snprintf(buf, sizeof buf, "%" PRId64, reinterpret_cast<const int64_t *>(p)[i]);
    break;
  default:
    std::snprintf(buf, sizeof buf, "%" PRId64, int64_t(elemAsDouble(k, p, i)));
  }
  return buf;
}

// One line per scalar print; for tiles one line per element:
//   pid (0, 0, 0) idx (3, 1) prefix: 1.5
// The first false element stops the run with the message (ins.text).
bool assertOp(Exec &e, const Instr &ins) {
  const uint8_t *c = P<uint8_t>(e, ins.a);
  for (int64_t i = 0; i < N(e, ins); ++i)
    if (!c[i])
      return fail(e, ins, "device_assert failed" + (ins.text.empty() ? "" : ": " + ins.text),
                  laneText(ins, i).empty() ? "" : laneText(ins, i).substr(2));
  return true;
}

bool printOp(Exec &e, const Instr &ins) {
  std::vector<std::string> lines;
  std::string pid = "pid (" + std::to_string(e.pid[0]) + ", " + std::to_string(e.pid[1]) +
                    ", " + std::to_string(e.pid[2]) + ")";
  std::string prefix = ins.text;
  bool scalarsOnly = true;
  for (size_t j = 0; j < ins.ins.size(); ++j)
    scalarsOnly &= ins.aux[j] < 0;
  if (scalarsOnly) {
    std::string line = pid + " " + prefix;
    for (size_t j = 0; j < ins.ins.size(); ++j) {
      const SlotInfo &si = e.prog->slots[size_t(ins.ins[j])];
      line += (j ? ", " : " ") + formatElem(si.kind, e.slot[ins.ins[j]], 0);
    }
    lines.push_back(line);
  } else {
    size_t shapeAt = 0;
    for (size_t j = 0; j < ins.ins.size(); ++j) {
      const SlotInfo &si = e.prog->slots[size_t(ins.ins[j])];
      int64_t rank = ins.aux[j] < 0 ? 0 : ins.aux[j];
      std::vector<int64_t> shape(ins.shape.begin() + long(shapeAt),
                                 ins.shape.begin() + long(shapeAt + size_t(rank)));
      shapeAt += size_t(rank);
      std::string suffix = ins.ins.size() > 1 ? " (operand " + std::to_string(j) + ")" : "";
      for (int64_t i = 0; i < si.n; ++i) {
        std::string idx;
        int64_t rem = i;
        std::vector<int64_t> id(shape.size());
        for (size_t q = shape.size(); q-- > 0;) {
          id[q] = rem % shape[q];
          rem /= shape[q];
        }
        for (size_t q = 0; q < id.size(); ++q)
          idx += (q ? ", " : "") + std::to_string(id[q]);
        lines.push_back(pid + " idx (" + idx + ") " + prefix + suffix + " " +
                        formatElem(si.kind, e.slot[ins.ins[j]], i));
      }
    }
  }
  std::lock_guard<std::mutex> lock(e.rs->printMu);
  for (const auto &l : lines) {
    if (e.rs->opts->printSink)
      e.rs->opts->printSink(l);
    else
      std::printf("%s\n", l.c_str());
  }
  if (!e.rs->opts->printSink)
    std::fflush(stdout);
  return true;
}

} // namespace

bool resolveTile(Instr &ins, std::string &err) {
  switch (ins.op) {
  case Op::ProgramId: ins.fn = &programIdOp; return true;
  case Op::NumPrograms: ins.fn = &numProgramsOp; return true;
  case Op::ClusterSize: ins.fn = &clusterSizeOp; return true;
  case Op::MakeRange: ins.fn = &makeRangeOp; return true;
  case Op::Splat:
    ins.fn = dispatchSize(ekSize(ins.kind), [](auto B) -> OpFn { return &splatOp<decltype(B)::value>; });
    return true;
  case Op::Broadcast: case Op::Trans:
    if (ins.shape.size() > 8) {
      err = "tiles of rank above 8 are not supported";
      return false;
    }
    ins.fn = dispatchSize(ekSize(ins.kind), [](auto B) -> OpFn { return &stridedCopyOp<decltype(B)::value>; });
    return true;
  case Op::Gather:
    if (ins.shape.size() > 8) {
      err = "tiles of rank above 8 are not supported";
      return false;
    }
    ins.fn = dispatchSize(ekSize(ins.kind), [&](auto B) -> OpFn {
      return dispatchInt(ins.kind2, [](auto K) -> OpFn {
        return &gatherOp<decltype(B)::value, decltype(K)::value>;
      });
    });
    return true;
  case Op::AddPtr:
    if (!ekIsInt(ins.kind2)) {
      err = "addptr offsets must be integers";
      return false;
    }
    ins.fn = dispatchInt(ins.kind2, [](auto K) -> OpFn { return &addPtrOp<decltype(K)::value>; });
    return true;
  case Op::Load:
    ins.fn = dispatchSize(ins.elemBytes, [](auto B) -> OpFn { return &loadOp<decltype(B)::value>; });
    return true;
  case Op::Store:
    ins.fn = dispatchSize(ins.elemBytes, [](auto B) -> OpFn { return &storeOp<decltype(B)::value>; });
    return true;
  case Op::AtomicRMW:
    switch (ins.kind) {
    case EK::I16: ins.fn = &atomicRmwOp<EK::I16>; return true;
    case EK::I32: ins.fn = &atomicRmwOp<EK::I32>; return true;
    case EK::I64: case EK::Ptr: ins.fn = &atomicRmwOp<EK::I64>; return true;
    case EK::F16: ins.fn = &atomicRmwOp<EK::F16>; return true;
    case EK::BF16: ins.fn = &atomicRmwOp<EK::BF16>; return true;
    case EK::F32: ins.fn = &atomicRmwOp<EK::F32>; return true;
    case EK::F64: ins.fn = &atomicRmwOp<EK::F64>; return true;
    default: err = std::string("atomics on ") + ekName(ins.kind) + " are not supported"; return false;
    }
  case Op::AtomicCAS:
    if (ins.elemBytes < 2) {
      err = "atomic_cas needs elements of at least 16 bits";
      return false;
    }
    ins.fn = dispatchSize(ins.elemBytes, [](auto B) -> OpFn { return &atomicCasOp<decltype(B)::value>; });
    return true;
  case Op::Dot: {
    EK a = ins.kind2, c = ins.kind;
    auto f8 = [](EK k) { return k == EK::F8E4M3 || k == EK::F8E5M2; };
    bool ok = (a == EK::F32 && c == EK::F32) || ((a == EK::F16 || a == EK::BF16) && c == EK::F32) ||
              (a == EK::F16 && c == EK::F16) || (a == EK::I8 && c == EK::I32) ||
              (a == EK::F64 && c == EK::F64) || (f8(a) && f8(EK(ins.pred)) && c == EK::F32);
    if (!ok) {
      err = std::string("dot of ") + ekName(a) + " into " + ekName(c) + " is not supported";
      return false;
    }
    ins.fn = &dotOp;
    return true;
  }
  case Op::Reduce: ins.fn = &reduceOp; return true;
  case Op::Scan: ins.fn = &scanOp; return true;
  case Op::Sort: ins.fn = &sortOp; return true;
  case Op::Print: ins.fn = &printOp; return true;
  case Op::Assert: ins.fn = &assertOp; return true;
  default:
    err = std::string("no tile implementation of ") + opName(ins.op);
    return false;
  }
}

} // namespace interp
} // namespace tessera
