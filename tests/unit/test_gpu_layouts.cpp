// GPU checks of tiles that leave the tensor-core accumulator layout: the
// conversions tessera-remove-layout-conversions keeps (a row reduction of a
// dot result reads it in the blocked layout) and the ones it removes (the
// epilogue scaled and cast in the mma layout, stored from it). Row maximum,
// row sum of exp(acc - max) and 0.5 * acc as bf16, against fp64 on the CPU,
// for wgmma (bf16), its transposed tf32 form and mma.sync. Skips visibly
// without a GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

using namespace tessera;

namespace {
const char *kRowStats = R"(
@kernel
def rowstats(A: *DT, B: *DT, Mx: *f32, Se: *f32, C: *bf16, M: i32, K: i32,
             sa: i32, sb: i32, BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 32,
             DT: constexpr = bf16):
    rm = program_id(0) * BM + arange(0, BM)
    rn = arange(0, BN)
    rk = arange(0, BK)
    a_ptrs = A + rm[:, None] * sa + rk[None, :]
    b_ptrs = B + rk[:, None] * sb + rn[None, :]
    rows = rm < M
    acc = zeros((BM, BN), f32)
    for k0 in range(0, K, BK):
        a = load(a_ptrs, mask=rows[:, None] & (rk[None, :] < K - k0), other=0)
        b = load(b_ptrs, mask=rk[:, None] < K - k0, other=0)
        acc = dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * sb
    store(C + rm[:, None] * BN + rn[None, :], (acc * 0.5).to(bf16), mask=rows[:, None])
    m = max(acc, 1)
    store(Mx + rm, m, mask=rows)
    store(Se + rm, sum(exp(acc - m[:, None]), 1), mask=rows)
)";

struct Result {
  double maxErr, sumErr, outErr; // relative errors (2-norm) against fp64
};

Result run(Context &ctx, const std::string &dt, int warps, int stages, int64_t M, int64_t K,
           uint32_t seed) {
  const int64_t N = 128;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  size_t eb = dt == "f32" ? 4 : 2;
  std::vector<double> a(size_t(M * K)), b(size_t(K * N));
  std::vector<uint8_t> ha(a.size() * eb), hb(b.size() * eb);
  auto fill = [&](std::vector<double> &v, std::vector<uint8_t> &h) {
    for (size_t i = 0; i < v.size(); ++i) {
      float x = u(rng);
      if (dt == "bf16") {
        uint16_t bits = bf16(x).bits;
        std::memcpy(&h[i * 2], &bits, 2);
        v[i] = float(bf16(x));
      } else {
        std::memcpy(&h[i * 4], &x, 4);
        v[i] = x;
      }
    }
  };
  fill(a, ha);
  fill(b, hb);
  DeviceMemory da = ctx.allocBytes(ha.size()), db = ctx.allocBytes(hb.size());
  DeviceMemory dm = ctx.allocBytes(size_t(M) * 4), ds = ctx.allocBytes(size_t(M) * 4);
  DeviceMemory dc = ctx.allocBytes(size_t(M * N) * 2);
  da.copyFromHost(ha.data(), ha.size());
  db.copyFromHost(hb.data(), hb.size());
  dm.memset(0xFF);
  ds.memset(0xFF);
  dc.memset(0xFF);
  JitOptions o;
  o.numWarps = warps;
  o.numStages = stages;
  Kernel k = compileString(ctx, kRowStats, "rowstats.tile", "rowstats", {{"DT", *parseDType(dt)}}, o);
  std::vector<ArgValue> args = makeArgs(
      DevicePtr<uint8_t>{da.address()}, DevicePtr<uint8_t>{db.address()},
      DevicePtr<float>{dm.address()}, DevicePtr<float>{ds.address()},
      DevicePtr<uint8_t>{dc.address()}, int32_t(M), int32_t(K), int32_t(K), int32_t(N));
  for (size_t p : {0, 1, 4})
    args[p].type = k.signature().params[p].type;
  k.launchWithArgs(ctx.stream(), Grid::of(cdiv(M, 128)), args);
  ctx.synchronize();
  std::vector<float> gm(static_cast<size_t>(M)), gs(static_cast<size_t>(M));
  std::vector<uint16_t> gc(static_cast<size_t>(M * N));
  dm.copyToHost(gm.data(), gm.size() * 4);
  ds.copyToHost(gs.data(), gs.size() * 4);
  dc.copyToHost(gc.data(), gc.size() * 2);
  tessera::testing::L2Error maxErr, sumErr, outErr;
  std::vector<double> row(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    double mx = -INFINITY;
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < K; ++q)
        acc += a[size_t(i * K + q)] * b[size_t(q * N + j)];
      row[size_t(j)] = acc;
      mx = std::max(mx, acc);
      uint32_t bits = uint32_t(gc[size_t(i * N + j)]) << 16;
      float got;
      std::memcpy(&got, &bits, 4);
      outErr.add(got, 0.5 * acc);
    }
    double se = 0;
    for (double x : row)
      se += std::exp(x - mx);
    maxErr.add(gm[size_t(i)], mx);
    sumErr.add(gs[size_t(i)], se);
  }
  return {maxErr.value(), sumErr.value(), outErr.value()};
}
} // namespace

TEST_CASE("GPU: dot results reduced, scaled and stored across layouts match fp64",
          "[gpu][layouts]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  struct Cfg {
    const char *dt;
    int warps, stages;
    double tol; // bf16 products are exact in f32; tf32 rounds the operands
  };
  // wgmma (bf16), wgmma as C^T = B^T A^T (tf32), mma.sync without a pipeline.
  for (Cfg c : {Cfg{"bf16", 8, 4, 1e-4}, Cfg{"bf16", 4, 3, 1e-4}, Cfg{"f32", 8, 4, 3e-3},
                Cfg{"bf16", 4, 1, 1e-4}}) {
    for (auto [M, K] : {std::pair<int64_t, int64_t>{300, 200}, {128, 64}}) {
      Result r = run(*ctx, c.dt, c.warps, c.stages, M, K, uint32_t(M * 7 + K));
      INFO(c.dt << " warps " << c.warps << " stages " << c.stages << " M " << M << " K " << K
                << ": rel err max " << r.maxErr << ", sum " << r.sumErr << ", out " << r.outErr);
      CHECK(r.maxErr < c.tol);
      CHECK(r.sumErr < 20 * c.tol); // exp amplifies the accumulator's error
      CHECK(r.outErr < 8e-3);       // bf16 output rounding
    }
  }
}
