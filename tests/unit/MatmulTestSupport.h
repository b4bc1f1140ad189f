// Operands and results of the GPU matmul tests: values exactly representable
// in every operand type (so an fp64 reference is exact), their bytes in a
// host buffer, and an f32 or i32 result read back. The error measure
// (relErrL2) is in tests/support/Reference.h.
#ifndef TESSERA_TESTS_MATMULTESTSUPPORT_H
#define TESSERA_TESTS_MATMULTESTSUPPORT_H

#include "support/Reference.h"
#include "tessera/Autotune.h"
#include "tessera/Context.h"
#include "tessera/Half.h"
#include "tessera/JIT.h"
#include "tessera/Kernel.h"
#include "tessera/Memory.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tessera::testing {

/// A random operand value of type `dt` (i8, bf16, f16 or f32), as a double.
inline double sampleOperand(std::mt19937 &rng, const std::string &dt) {
  if (dt == "i8")
    return double(int(rng() % 255) - 127);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  float x = u(rng);
  if (dt == "bf16")
    return float(bf16(x));
  if (dt == "f16")
    return float(f16(x));
  return x;
}

/// Writes element i of a `dt` buffer.
inline void putOperand(std::vector<uint8_t> &buf, size_t i, double v, const std::string &dt) {
  if (dt == "i8") {
    buf[i] = uint8_t(int8_t(v));
  } else if (dt == "f32") {
    float f = float(v);
    std::memcpy(&buf[i * 4], &f, 4);
  } else {
    uint16_t bits = dt == "bf16" ? bf16(float(v)).bits : f16(float(v)).bits;
    std::memcpy(&buf[i * 2], &bits, 2);
  }
}

/// Bytes of one `dt` element.
inline size_t operandBytes(const std::string &dt) { return dt == "f32" ? 4 : dt == "i8" ? 1 : 2; }

/// `n` random operand values of type `dt`: as doubles (for the reference)
/// and as the bytes the kernel reads.
struct Operand {
  std::vector<double> vals;
  std::vector<uint8_t> bytes;
};
inline Operand randomOperand(std::mt19937 &rng, const std::string &dt, size_t n) {
  Operand o{std::vector<double>(n), std::vector<uint8_t>(n * operandBytes(dt))};
  for (size_t i = 0; i < n; ++i)
    putOperand(o.bytes, i, o.vals[i] = sampleOperand(rng, dt), dt);
  return o;
}

/// A random operand on the device, with its values for the reference.
struct DeviceOperand {
  Operand host;
  DeviceMemory device;
};
inline DeviceOperand uploadOperand(Context &ctx, std::mt19937 &rng, const std::string &dt,
                                   size_t n) {
  Operand o = randomOperand(rng, dt, n);
  DeviceMemory m = ctx.allocBytes(o.bytes.size());
  m.copyFromHost(o.bytes.data(), o.bytes.size());
  return {std::move(o), std::move(m)};
}

/// A matmul config of the autotuner: tile sizes, warps and stages.
inline Config tileConfig(int64_t bm, int64_t bn, int64_t bk, int warps, int stages) {
  return Config{}.set("BM", bm).set("BN", bn).set("BK", bk).warps(warps).stages(stages);
}

/// Element i of a 4-byte result buffer: i32 when `isInt`, else f32.
inline double resultAt(const std::vector<uint8_t> &buf, size_t i, bool isInt) {
  if (isInt) {
    int32_t v;
    std::memcpy(&v, &buf[i * 4], 4);
    return v;
  }
  float v;
  std::memcpy(&v, &buf[i * 4], 4);
  return v;
}

/// Launches matmul kernel `k` on `grid` with the buffers A, B and C (typed
/// as the kernel's first three parameters) followed by the integer
/// arguments `ints`, and returns C's bytes.
inline std::vector<uint8_t> launchMatmul(Context &ctx, const Kernel &k, Grid grid,
                                         const DeviceMemory &a, const DeviceMemory &b,
                                         const DeviceMemory &c, const std::vector<int32_t> &ints) {
  std::vector<ArgValue> args = makeArgs(DevicePtr<uint8_t>{a.address()},
                                        DevicePtr<uint8_t>{b.address()},
                                        DevicePtr<uint8_t>{c.address()});
  for (int32_t v : ints)
    args.push_back(makeArgs(v)[0]);
  for (size_t p = 0; p < 3; ++p)
    args[p].type = k.signature().params[p].type;
  k.launchWithArgs(ctx.stream(), grid, args);
  ctx.synchronize();
  std::vector<uint8_t> host(c.size());
  c.copyToHost(host.data(), host.size());
  return host;
}

/// Element (i, j) of A @ B in fp64, for row-major A (M x K) and B (K x N).
inline double rowMajorProduct(const Operand &a, const Operand &b, int64_t K, int64_t N, int64_t i,
                              int64_t j) {
  double r = 0;
  for (int64_t q = 0; q < K; ++q)
    r += a.vals[size_t(i * K + q)] * b.vals[size_t(q * N + j)];
  return r;
}

/// A.T @ B as Triton users write it (kernel `mm_ta`): A stored K x M, its
/// (BK, BM) tile loaded as it lies and transposed in the dot; with BT, B
/// stored N x K and transposed too. Grid (cdiv(M, BM), cdiv(N, BN)),
/// arguments A, B, C (f32, M x N), M, N, K.
inline const char *const kTransposedADot = R"(
@kernel
def mm_ta(A: *DT, B: *DT, C: *f32, M: i32, N: i32, K: i32,
          BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 64, DT: constexpr = bf16,
          BT: constexpr = False):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    acc = zeros((BM, BN), f32)
    for k0 in range(0, K, BK):
        at = load(A + (k0 + rk)[:, None] * M + rm[None, :],
                  mask=((k0 + rk)[:, None] < K) & (rm[None, :] < M), other=0.0)
        if BT:  # B stored N x K as well: A.T @ B.T
            bt = load(B + rn[:, None] * K + (k0 + rk)[None, :],
                      mask=(rn[:, None] < N) & ((k0 + rk)[None, :] < K), other=0.0)
            acc = dot(trans(at), trans(bt), acc)
        else:
            b = load(B + (k0 + rk)[:, None] * N + rn[None, :],
                     mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = dot(trans(at), b, acc)
    store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

/// Relative L2 error, against fp64, of kTransposedADot on random M x N x K
/// operands (A stored K x M; B K x N, or N x K with `bt`), at a bm x bn x bk
/// tile with the JIT options `o`.
inline double transposedADotError(Context &ctx, std::mt19937 &rng, const std::string &dt, int64_t M,
                                  int64_t N, int64_t K, bool bt, int64_t bm, int64_t bn, int64_t bk,
                                  const JitOptions &o) {
  DeviceOperand a = uploadOperand(ctx, rng, dt, size_t(K * M)), b = uploadOperand(ctx, rng, dt, size_t(K * N));
  DeviceMemory c = ctx.allocBytes(size_t(M * N) * 4);
  c.memset(0xFF); // NaN: an element never written is an infinite error
  Kernel k = compileString(ctx, kTransposedADot, "mm_ta.tile", "mm_ta",
                           {{"DT", *parseDType(dt)}, {"BT", bt}, {"BM", bm}, {"BN", bn}, {"BK", bk}}, o);
  std::vector<uint8_t> hc = launchMatmul(ctx, k, Grid{unsigned(cdiv(M, bm)), unsigned(cdiv(N, bn))},
                                         a.device, b.device, c, {int32_t(M), int32_t(N), int32_t(K)});
  auto ref = [&](int64_t i, int64_t j) {
    double r = 0;
    for (int64_t q = 0; q < K; ++q)
      r += a.host.vals[size_t(q * M + i)] * b.host.vals[size_t(bt ? j * K + q : q * N + j)];
    return r;
  };
  return relErrL2(M, N, ref, [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), false); });
}

} // namespace tessera::testing

#endif
