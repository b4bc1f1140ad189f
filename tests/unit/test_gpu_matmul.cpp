// GPU checks of kernels_dsl/basics/matmul.tile for every operand type, at
// ragged shapes, against an fp64 CPU reference. The configs cover each
// lowering of dot: the pipelined wgmma loop (sm_90a, unit inner strides),
// mma.sync (num_stages = 1), and the FMA path (f32, i8); padded and odd
// leading dimensions exercise the masked and misaligned copy paths.
// Skips visibly without a GPU.
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
struct Case {
  int64_t M, N, K;
  int64_t lda, ldb, ldc; // leading dimensions (row strides), >= K, N, N
};
struct Cfg {
  int64_t bm, bn, bk;
  int warps, stages;
  const char *arch = ""; // "" = the device's (sm_90a on an H100/H200)
  // Non-zero: matmul_persistent.tile with this many programs (-1: one per SM).
  int64_t programs = 0;
  bool tma = true; // JitOptions::tma
};

std::string kernelPath() { return std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile"; }

// Relative error ||C - ref|| / ||ref|| over the M x N result; an element that
// was not written keeps its poison (the output is 0xFF bytes first: NaN in
// f32, an infinite error).
double runCase(Context &ctx, const std::string &dt, const Case &c, const Cfg &cfg, uint64_t seed) {
  std::mt19937 rng{uint32_t(seed)};
  bool isInt = dt == "i8";
  Operand a = randomOperand(rng, dt, size_t(c.M * c.lda));
  Operand b = randomOperand(rng, dt, size_t(c.K * c.ldb));
  DeviceMemory da = ctx.allocBytes(a.bytes.size()), db = ctx.allocBytes(b.bytes.size());
  DeviceMemory dc = ctx.allocBytes(size_t(c.M * c.ldc) * 4);
  da.copyFromHost(a.bytes.data(), a.bytes.size());
  db.copyFromHost(b.bytes.data(), b.bytes.size());
  dc.memset(0xFF);
  JitOptions o;
  o.numWarps = cfg.warps;
  o.numStages = cfg.stages;
  o.target = Target::parse(cfg.arch); // "" = the device
  o.tma = cfg.tma;
  std::map<std::string, ConstexprValue> cx = {
      {"BM", cfg.bm}, {"BN", cfg.bn}, {"BK", cfg.bk}, {"GROUP", int64_t(4)},
      {"DT", *parseDType(dt)}, {"ACC", *parseDType(isInt ? "i32" : "f32")},
      {"OUT", *parseDType(isInt ? "i32" : "f32")}};
  bool persistent = cfg.programs != 0;
  Kernel k = persistent ? compile(ctx, std::string(TESSERA_SOURCE_DIR) +
                                           "/kernels_dsl/basics/matmul_persistent.tile",
                                  "matmul_persistent", cx, o)
                        : compile(ctx, kernelPath(), "matmul", cx, o);
  int64_t tiles = cdiv(c.M, cfg.bm) * cdiv(c.N, cfg.bn);
  int64_t programs = !persistent ? tiles : cfg.programs < 0 ? ctx.smCount() : cfg.programs;
  std::vector<ArgValue> args =
      makeArgs(DevicePtr<uint8_t>{da.address()}, DevicePtr<uint8_t>{db.address()},
               DevicePtr<uint8_t>{dc.address()}, int32_t(c.M), int32_t(c.N), int32_t(c.K),
               int32_t(c.lda), int32_t(1), int32_t(c.ldb), int32_t(1), int32_t(c.ldc), int32_t(1));
  for (size_t p = 0; p < 3; ++p)
    args[p].type = k.signature().params[p].type;
  k.launchWithArgs(ctx.stream(), Grid::of(programs), args);
  ctx.synchronize();
  std::vector<uint8_t> hc(dc.size());
  dc.copyToHost(hc.data(), hc.size());
  // Padding columns between N and ldc keep their poison: nothing is stored
  // outside the matrix (the result would not be comparable otherwise).
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = c.N * 4; j < c.ldc * 4; ++j)
      if (hc[size_t(i * c.ldc * 4 + j)] != 0xFF)
        return 1e9;
  auto ref = [&](int64_t i, int64_t j) {
    double r = 0;
    for (int64_t q = 0; q < c.K; ++q)
      r += a.vals[size_t(i * c.lda + q)] * b.vals[size_t(q * c.ldb + j)];
    return r;
  };
  return relErrL2(c.M, c.N, ref, [&](int64_t i, int64_t j) {
    return resultAt(hc, size_t(i * c.ldc + j), isInt);
  });
}
} // namespace

TEST_CASE("GPU matmul matches fp64 for f16, bf16, f32 and i8 at ragged shapes", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  const std::vector<Case> cases = {
      {300, 200, 190, 190, 200, 200}, // odd K: misaligned A rows, partial K chunks
      {257, 136, 512, 520, 136, 140}, // padded leading dimensions
      {128, 256, 64, 64, 256, 256},   // exact tiles
      // Ragged M, N and K, all multiples of 16 with aligned rows: whole-chunk
      // masks, so sm_90a loops are warp-specialized (a producer warpgroup).
      {208, 144, 272, 272, 160, 160},
  };
  // wgmma: one or two 64-row blocks per warpgroup (the kernel's default tile
  // with 4 warps has two); the cp.async + ldmatrix + mma.sync pipeline (targets
  // without wgmma, run here as sm_90 / sm_80 code); mma.sync unpipelined
  // (num_stages = 1).
  const std::vector<Cfg> tensorCore = {{128, 128, 64, 8, 3},         {64, 64, 32, 4, 4},
                                       {128, 256, 64, 8, 4},         {128, 128, 32, 4, 3},
                                       {256, 128, 64, 8, 4},         {128, 128, 32, 8, 4, "sm_90"},
                                       {64, 128, 64, 4, 3, "sm_80"}, {64, 64, 16, 4, 1}};
  // f32: tf32 wgmma as C^T = B^T A^T (BN a multiple of 16 * warps: one or two
  // 64-row blocks of B^T per warpgroup, N of the wgmma = BM down to 32), tf32
  // wgmma with B transposed in shared memory (4 stages) or through registers
  // (3 stages) when BN is not, and the FMA path (num_stages = 1). i8: s8 wgmma
  // and FMA.
  const std::vector<Cfg> f32 = {{128, 128, 32, 8, 4}, {64, 64, 32, 4, 3},  {128, 128, 32, 4, 4},
                                {32, 64, 32, 4, 3},   {128, 64, 32, 8, 4}, {128, 64, 32, 8, 3},
                                {64, 64, 16, 4, 1}};
  const std::vector<Cfg> i8 = {{128, 128, 128, 8, 4}, {64, 64, 64, 4, 3}, {64, 64, 16, 4, 1}};
  uint64_t seed = tessera::testing::freshSeed();
  INFO("seed " << seed);
  for (std::string dt : {"bf16", "f16", "f32", "i8"}) {
    bool half = dt == "bf16" || dt == "f16";
    for (const Cfg &cfg : half ? tensorCore : dt == "f32" ? f32 : i8)
      for (const Case &c : cases) {
        double rel = runCase(*ctx, dt, c, cfg, seed++);
        INFO(dt << " " << c.M << "x" << c.N << "x" << c.K << " BM=" << cfg.bm << " BN=" << cfg.bn
                << " BK=" << cfg.bk << " warps=" << cfg.warps << " stages=" << cfg.stages
                << " arch=" << cfg.arch
                << ": relative error " << rel);
        // 16-bit: exact products, f32 accumulation, far below the 1e-2.
        // f32 on tensor cores rounds operands to tf32 (bound 3e-3; about 3e-4
        // expected); the FMA path is fp32. i8 is exact.
        bool tensorCoreF32 = dt == "f32" && cfg.stages > 2;
        CHECK(rel <= (dt == "i8" ? 0.0 : tensorCoreF32 ? 3e-3 : 1e-5));
      }
  }
}

// TMA tensor maps (sm_90a, warp-specialized loops): extents from the masks,
// so ragged M, N and a K that is no multiple of 16 are clipped by the copy
// engine (zeros past them); row pitches are 16-byte aligned. The same
// launches without TMA (cp.async) must agree with fp64 as well.
TEST_CASE("GPU matmul with TMA tensor maps at ragged extents matches fp64", "[gpu][matmul][tma]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  const std::vector<Case> cases = {
      {200, 136, 1000, 1008, 144, 144}, // K % 16 != 0: only TMA keeps the producer warpgroup
      {64, 256, 40, 48, 256, 256},      // a single partial K tile
      {333, 520, 512, 512, 528, 520},   // ragged M and N, aligned K
  };
  const std::vector<Cfg> half = {{128, 128, 64, 8, 4}, {128, 256, 64, 8, 4}, {64, 64, 32, 4, 4}};
  const std::vector<Cfg> f32 = {{128, 128, 32, 8, 4}, {128, 256, 32, 8, 4}};
  uint64_t seed = tessera::testing::freshSeed();
  INFO("seed " << seed);
  for (std::string dt : {"bf16", "f16", "f32"})
    for (bool tma : {true, false})
      for (Cfg cfg : dt == "f32" ? f32 : half)
        for (const Case &c : cases) {
          cfg.tma = tma;
          double rel = runCase(*ctx, dt, c, cfg, seed++);
          INFO(dt << " " << c.M << "x" << c.N << "x" << c.K << " BM=" << cfg.bm << " BN=" << cfg.bn
                  << " BK=" << cfg.bk << " warps=" << cfg.warps << " tma=" << tma
                  << ": relative error " << rel);
          CHECK(rel <= (dt == "f32" ? 3e-3 : 1e-5));
        }
}

// Kernel pointer arguments are assumed 16-byte aligned; a TMA tensor map
// cannot take anything else. A misaligned operand is an error at launch,
// before anything runs, and the context stays usable.
TEST_CASE("GPU matmul with TMA rejects a misaligned operand with a clear error", "[gpu][matmul][tma]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  JitOptions o;
  o.numWarps = 8;
  std::map<std::string, ConstexprValue> cx = {
      {"BM", int64_t(128)}, {"BN", int64_t(256)}, {"BK", int64_t(64)},
      {"DT", *parseDType("bf16")}, {"OUT", *parseDType("f32")}};
  Kernel k = compile(*ctx, kernelPath(), "matmul", cx, o);
  const int32_t n = 256;
  DeviceMemory a = ctx->allocBytes(size_t(n) * n * 2 + 16), b = ctx->allocBytes(size_t(n) * n * 2);
  DeviceMemory c = ctx->allocBytes(size_t(n) * n * 4);
  a.memset(0);
  b.memset(0);
  auto args = [&](DeviceAddress pa) {
    std::vector<ArgValue> v = makeArgs(DevicePtr<uint8_t>{pa}, DevicePtr<uint8_t>{b.address()},
                                       DevicePtr<uint8_t>{c.address()}, n, n, n, n, int32_t(1), n,
                                       int32_t(1), n, int32_t(1));
    for (size_t p = 0; p < 3; ++p)
      v[p].type = k.signature().params[p].type;
    return v;
  };
  CHECK_THROWS_WITH(k.launchWithArgs(ctx->stream(), Grid::of(2), args(a.address() + 2)),
                    Catch::Contains("TMA tensor map 0: the address passed as argument 0 is not "
                                    "16-byte aligned"));
  k.launchWithArgs(ctx->stream(), Grid::of(2), args(a.address()));
  ctx->synchronize();
}

// The persistent matmul: each program walks over several tiles. With M, N,
// K multiples of 16 and aligned rows the tile loop is warp-specialized as a
// whole (mbarrier phases carried from tile to tile; 3 programs for 15 tiles
// wrap the stage ring many times); other shapes run the ordinary pipeline
// inside the tile loop.
TEST_CASE("GPU matmul_persistent matches fp64", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  const std::vector<Case> cases = {
      {528, 544, 272, 272, 560, 560}, // 5 x 3 tiles of 128 x 256, warp-specialized
      {208, 144, 272, 272, 160, 160}, // fewer tiles than programs
      {300, 200, 190, 190, 200, 200}, // not multiples of 16: the per-tile pipeline
  };
  const std::vector<Cfg> cfgs = {{128, 256, 32, 8, 8, "", 3}, {128, 256, 64, 8, 4, "", -1},
                                 {128, 128, 32, 4, 4, "", 2}};
  uint64_t seed = tessera::testing::freshSeed();
  INFO("seed " << seed);
  for (std::string dt : {"bf16", "f32"})
    for (const Cfg &cfg : cfgs)
      for (const Case &c : cases) {
        double rel = runCase(*ctx, dt, c, cfg, seed++);
        INFO(dt << " " << c.M << "x" << c.N << "x" << c.K << " BM=" << cfg.bm << " BN=" << cfg.bn
                << " BK=" << cfg.bk << " warps=" << cfg.warps << " stages=" << cfg.stages
                << " programs=" << cfg.programs << ": relative error " << rel);
        CHECK(rel <= (dt == "f32" ? 3e-3 : 1e-5));
      }
}

// ROAST-MM forward: the hashed W tile has a computed base each K-step but
// contiguous rows, so its loads pipeline too (B operand; through registers for
// tf32, by cp.async for bf16). Misaligned hash offsets (RzLinear's mapping)
// are copied from 16-byte boundaries and read shifted when BN <= HN (tf32),
// else as 4-byte copies.
TEST_CASE("GPU roast_mm_fwd on the pipelined tensor-core path matches fp64", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  uint64_t seed = tessera::testing::freshSeed();
  INFO("seed " << seed);
  std::mt19937 rng{uint32_t(seed)};
  const int64_t HK = 32, HN = 64, P = 45007, Bn = 300, K = 200, N = 250, memSize = 30011;
  const float lam = 0.75f;
  std::vector<int32_t> R(8);
  for (auto &r : R)
    r = int32_t(1 + rng() % (P - 1));
  auto loc = [&](int64_t kb, int64_t nb) {
    int64_t hi = (kb * R[3] + nb * R[2] + R[1]) % P, lo = (kb * R[7] + nb * R[5] + R[4]) % P;
    return (hi * P + lo) % (memSize - HK * HN);
  };
  for (std::string dt : {"f32", "bf16"}) {
    Operand x = randomOperand(rng, dt, size_t(Bn * K));
    Operand mem = randomOperand(rng, dt, size_t(memSize));
    std::vector<double> ref(size_t(Bn * N), 0.0);
    for (int64_t b = 0; b < Bn; ++b)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          ref[size_t(b * N + n)] += x.vals[size_t(b * K + k)] * mem.vals[size_t(loc(k / HK, n / HN) + (k % HK) * HN + n % HN)];
    DeviceMemory dx = ctx->allocBytes(x.bytes.size()), dm = ctx->allocBytes(mem.bytes.size());
    DeviceMemory dy = ctx->allocBytes(size_t(Bn * N) * 4);
    dx.copyFromHost(x.bytes.data(), x.bytes.size());
    dm.copyFromHost(mem.bytes.data(), mem.bytes.size());
    // BN <= HN: one hash per K-step; BN = 128 > HN: one hash per column, the
    // rows contiguous in runs of HN (axis info through / and % by HN).
    // SPLIT_K > 1: the small-batch form (32-row tiles), partial sums added
    // into a zeroed Y with f32 atomics.
    struct Shape {
      int warps;
      int64_t bm, bn, split;
    };
    for (auto [warps, bm, bn, split] : {Shape{8, 128, 64, 1}, Shape{4, 64, 64, 1}, Shape{8, 128, 128, 1},
                                        Shape{4, 32, 128, 3}, Shape{8, 32, 256, 2}, Shape{4, 32, 64, 4},
                                        Shape{4, 256, 64, 2}}) {
      JitOptions o;
      o.numWarps = warps;
      o.numStages = 3;
      Kernel k = compile(*ctx, std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/roast/roast_mm.tile",
                         "roast_mm_fwd",
                         {{"BM", bm}, {"BN", bn}, {"BK", int64_t(32)}, {"GROUP", int64_t(4)},
                          {"DT", *parseDType(dt)}, {"SPLIT_K", split}},
                         o);
      dy.memset(split > 1 ? 0 : 0xFF);
      std::vector<ArgValue> args = makeArgs(
          DevicePtr<uint8_t>{dx.address()}, DevicePtr<uint8_t>{dm.address()}, DevicePtr<float>{dy.address()},
          R[1], R[2], R[3], R[4], R[5], R[7], int32_t(Bn), int32_t(K), int32_t(N), int32_t(memSize), lam,
          int32_t(K), int32_t(1), int32_t(N), int32_t(1));
      for (size_t p = 0; p < 2; ++p)
        args[p].type = k.signature().params[p].type;
      k.launchWithArgs(ctx->stream(), Grid::of(cdiv(Bn, bm) * cdiv(N, bn), split), args);
      ctx->synchronize();
      std::vector<float> y(size_t(Bn * N));
      dy.copyToHost(y.data(), y.size() * 4);
      L2Error err;
      for (size_t i = 0; i < y.size(); ++i)
        err.add(y[i], ref[i] * lam);
      double rel = err.value();
      INFO(dt << " BM=" << bm << " BN=" << bn << " SPLIT_K=" << split << ": relative error " << rel);
      CHECK(rel <= (dt == "f32" ? 3e-3 : 1e-5));
    }
  }
}
