// GPU checks of B given K-contiguous: dot(a, trans(b)), C = A @ B^T with B
// given as N x K rows (the form of Q K^T), and dot(a, b) with B column-major
// (a K x N tile whose columns are contiguous: a linear layer's N x K weight
// read through strides). On sm_90a either tile is copied as it is into a
// K-major stage that wgmma reads for every operand type (no transposition in
// shared memory or registers); on sm_80, mma.sync reads its B fragments from
// that stage with ldmatrix. Against fp64 on the CPU,
// at ragged shapes (partial tiles, misaligned rows: the pipelined loop with
// element-wise copies) and aligned ones (the warp-specialized loop). Skips
// visibly without a GPU.
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

using namespace tessera;
using namespace tessera::testing;

namespace {
const char *kMatmulNT = R"(
@kernel
def mm_nt(A: *DT, B: *DT, C: *OUT, M: i32, N: i32, K: i32, sa: i32, sb: i32, sc: i32,
          BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 32, DT: constexpr = bf16,
          ACC: constexpr = f32, OUT: constexpr = f32):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    pa = A + rm[:, None] * sa + rk[None, :]
    pb = B + rn[:, None] * sb + rk[None, :]
    acc = zeros((BM, BN), ACC)
    for k0 in range(0, K, BK):
        a = load(pa, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0)
        bt = load(pb, mask=(rn[:, None] < N) & (rk[None, :] < K - k0), other=0)
        acc = dot(a, trans(bt), acc)
        pa += BK
        pb += BK
    store(C + rm[:, None] * sc + rn[None, :], acc.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

// The same product with B's K x N tile read column-major: element (k, n) at
// B + n * sb + k.
const char *kMatmulColMajorB = R"(
@kernel
def mm_cm(A: *DT, B: *DT, C: *OUT, M: i32, N: i32, K: i32, sa: i32, sb: i32, sc: i32,
          BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 32, DT: constexpr = bf16,
          ACC: constexpr = f32, OUT: constexpr = f32):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    pa = A + rm[:, None] * sa + rk[None, :]
    pb = B + rk[:, None] + rn[None, :] * sb
    acc = zeros((BM, BN), ACC)
    for k0 in range(0, K, BK):
        a = load(pa, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0)
        b = load(pb, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0)
        acc = dot(a, b, acc)
        pa += BK
        pb += BK
    store(C + rm[:, None] * sc + rn[None, :], acc.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

// ||C - ref|| / ||ref|| over the M x N result (C is f32, or i32 for i8).
double run(Context &ctx, const std::string &dt, int64_t M, int64_t N, int64_t K, int warps,
           int stages, int64_t bm, int64_t bn, int64_t bk, const char *arch = "",
           bool colMajor = false) {
  std::mt19937 rng(uint32_t(M * 131 + N * 7 + K));
  bool isInt = dt == "i8";
  Operand a = randomOperand(rng, dt, size_t(M * K));
  Operand b = randomOperand(rng, dt, size_t(N * K));
  DeviceMemory da = ctx.allocBytes(a.bytes.size()), db = ctx.allocBytes(b.bytes.size());
  DeviceMemory dc = ctx.allocBytes(size_t(M * N) * 4);
  da.copyFromHost(a.bytes.data(), a.bytes.size());
  db.copyFromHost(b.bytes.data(), b.bytes.size());
  dc.memset(0xFF);
  JitOptions o;
  o.numWarps = warps;
  o.numStages = stages;
  o.target = Target::parse(arch); // "" = the device
  std::map<std::string, ConstexprValue> cx = {
      {"BM", bm}, {"BN", bn}, {"BK", bk}, {"DT", *parseDType(dt)},
      {"ACC", *parseDType(isInt ? "i32" : "f32")}, {"OUT", *parseDType(isInt ? "i32" : "f32")}};
  Kernel k = colMajor ? compileString(ctx, kMatmulColMajorB, "mm_cm.tile", "mm_cm", cx, o)
                      : compileString(ctx, kMatmulNT, "mm_nt.tile", "mm_nt", cx, o);
  std::vector<uint8_t> hc =
      launchMatmul(ctx, k, Grid::of(cdiv(M, bm), cdiv(N, bn)), da, db, dc,
                   {int32_t(M), int32_t(N), int32_t(K), int32_t(K), int32_t(K), int32_t(N)});
  auto ref = [&](int64_t i, int64_t j) {
    double r = 0;
    for (int64_t q = 0; q < K; ++q)
      r += a.vals[size_t(i * K + q)] * b.vals[size_t(j * K + q)];
    return r;
  };
  return relErrL2(M, N, ref,
                  [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), isInt); });
}
} // namespace

TEST_CASE("GPU dot with a transposed B (A @ B^T) matches fp64", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  struct Shape {
    int64_t M, N, K;
  };
  for (const char *dt : {"bf16", "f16", "f32", "i8"}) {
    // tf32 rounds the operands to 10 mantissa bits; bf16/f16 products are exact.
    double tol = std::string(dt) == "i8" ? 0 : std::string(dt) == "f32" ? 3e-3 : 1e-5;
    int64_t bk = std::string(dt) == "i8" ? 64 : 32;
    for (Shape s : {Shape{300, 200, 190}, Shape{256, 384, 512}, Shape{129, 136, 96}})
      for (auto [warps, bm, bn] : {std::tuple<int, int64_t, int64_t>{8, 128, 128}, {4, 64, 128}}) {
        double err = run(*ctx, dt, s.M, s.N, s.K, warps, 4, bm, bn, bk);
        INFO(dt << " " << s.M << "x" << s.N << "x" << s.K << " warps " << warps << " tile " << bm
                << "x" << bn << "x" << bk << ": rel err " << err);
        CHECK(err <= tol);
      }
  }
  // sm_80 code (runs on sm_90 too): mma.sync with B's fragments from the K-major stage.
  for (const char *dt : {"bf16", "f16"})
    for (Shape s : {Shape{300, 200, 190}, Shape{256, 384, 512}}) {
      double err = run(*ctx, dt, s.M, s.N, s.K, 4, 3, 128, 128, 32, "sm_80");
      INFO(dt << " sm_80 " << s.M << "x" << s.N << "x" << s.K << ": rel err " << err);
      CHECK(err <= 1e-5);
    }
}

TEST_CASE("GPU dot with a column-major B matches fp64", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  struct Shape {
    int64_t M, N, K;
  };
  for (const char *dt : {"bf16", "f16", "f32", "i8"}) {
    double tol = std::string(dt) == "i8" ? 0 : std::string(dt) == "f32" ? 3e-3 : 1e-5;
    int64_t bk = std::string(dt) == "i8" ? 128 : std::string(dt) == "f32" ? 32 : 64;
    // Ragged (element-wise copies at the edges), then aligned (warp-specialized, TMA).
    for (Shape s : {Shape{300, 200, 190}, Shape{256, 512, 512}, Shape{129, 136, 96}})
      for (auto [warps, bm, bn] : {std::tuple<int, int64_t, int64_t>{8, 128, 256}, {4, 64, 128}}) {
        double err = run(*ctx, dt, s.M, s.N, s.K, warps, 4, bm, bn, bk, "", /*colMajor=*/true);
        INFO(dt << " " << s.M << "x" << s.N << "x" << s.K << " warps " << warps << " tile " << bm
                << "x" << bn << "x" << bk << ": rel err " << err);
        CHECK(err <= tol);
      }
  }
  for (const char *dt : {"bf16", "f16"})
    for (Shape s : {Shape{300, 200, 190}, Shape{256, 384, 512}}) {
      double err = run(*ctx, dt, s.M, s.N, s.K, 4, 3, 128, 128, 32, "sm_80", /*colMajor=*/true);
      INFO(dt << " sm_80 " << s.M << "x" << s.N << "x" << s.K << ": rel err " << err);
      CHECK(err <= 1e-5);
    }
}
