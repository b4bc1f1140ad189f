// GPU checks of dot loops whose operand rows are not provably contiguous:
// transposed A, B read every other column, and unit strides that the
// compiler was not told about (no specialization). The pipeline copies such
// operands element by element into its stages (StageCopier's gathered
// copies: 4-byte cp.async, or loads and shared stores for 1- and 2-byte
// elements) and still multiplies on the tensor cores; a 16-bit A contiguous
// along M is copied whole into an M-major stage that wgmma reads transposed.
// Against fp64 on the CPU, at ragged shapes. Skips visibly without a GPU.
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/KernelLibrary.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {
// Element strides of A (M x K), B (K x N) and C (M x N).
struct Strides {
  int64_t am, ak, bk, bn;
};
struct Cfg {
  int64_t bm, bn, bk;
  int warps;
  const char *arch = ""; // "" = the device's
  bool persistent = false;
  bool specialize = true;
  bool tma = true;
  bool warpSpecialize = true;
};

// Relative L2 error of kernels_dsl/basics/matmul.tile (or matmul_persistent)
// on operands laid out with `s` (buffers sized for the largest offset).
double stridedError(Context &ctx, const std::string &dt, int64_t M, int64_t N, int64_t K,
                    Strides s, const Cfg &cfg, uint64_t seed) {
  std::mt19937 rng{uint32_t(seed)};
  bool isInt = dt == "i8";
  size_t aSize = size_t((M - 1) * s.am + (K - 1) * s.ak + 1);
  size_t bSize = size_t((K - 1) * s.bk + (N - 1) * s.bn + 1);
  DeviceOperand a = uploadOperand(ctx, rng, dt, aSize), b = uploadOperand(ctx, rng, dt, bSize);
  DeviceMemory dc = ctx.allocBytes(size_t(M * N) * 4);
  dc.memset(0xFF); // NaN in f32: an element never written is an infinite error
  JitOptions o;
  o.numWarps = cfg.warps;
  o.numStages = 4;
  o.target = Target::parse(cfg.arch);
  o.specialize = cfg.specialize;
  o.tma = cfg.tma;
  o.warpSpecialize = cfg.warpSpecialize;
  std::map<std::string, ConstexprValue> cx = {
      {"BM", cfg.bm}, {"BN", cfg.bn}, {"BK", cfg.bk}, {"GROUP", int64_t(4)},
      {"DT", *parseDType(dt)}, {"ACC", *parseDType(isInt ? "i32" : "f32")},
      {"OUT", *parseDType(isInt ? "i32" : "f32")}};
  std::string name = cfg.persistent ? "matmul_persistent" : "matmul";
  Kernel k = compile(ctx, kernelLibraryPath("basics/" + name + ".tile"), name, cx, o);
  int64_t tiles = cdiv(M, cfg.bm) * cdiv(N, cfg.bn);
  std::vector<uint8_t> hc = launchMatmul(
      ctx, k, Grid::of(cfg.persistent ? std::min<int64_t>(tiles, ctx.smCount()) : tiles), a.device,
      b.device, dc,
      {int32_t(M), int32_t(N), int32_t(K), int32_t(s.am), int32_t(s.ak), int32_t(s.bk),
       int32_t(s.bn), int32_t(N), 1});
  auto ref = [&](int64_t i, int64_t j) {
    double r = 0;
    for (int64_t q = 0; q < K; ++q)
      r += a.host.vals[size_t(i * s.am + q * s.ak)] * b.host.vals[size_t(q * s.bk + j * s.bn)];
    return r;
  };
  return relErrL2(M, N, ref, [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), isInt); });
}

// The error bound of one operand type: 16-bit products are exact in f32, tf32
// rounds f32 operands (bound 3e-3), i8 is exact.
double bound(const std::string &dt) { return dt == "i8" ? 0.0 : dt == "f32" ? 3e-3 : 1e-5; }
// A problem size M x N x K (the cases' ragged and whole shapes).
struct Shape {
  int64_t M, N, K;
};
} // namespace

TEST_CASE("GPU matmul with operands of any strides (gathered copies) matches fp64",
          "[gpu][matmul][gathered]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  uint64_t seed = freshSeed();
  INFO("seed " << seed);
  const int64_t M = 300, N = 200, K = 190;
  // A transposed (column-major, M contiguous), B every other column; then
  // plain row-major operands compiled without facts (what an AOT compile of
  // the kernel sees): both copied element by element.
  const Strides transposedA{1, M + 3, 2 * N + 5, 2}, rowMajor{K, 1, N, 1};
  for (std::string dt : {"bf16", "f16", "f32", "i8"}) {
    int64_t bk = dt == "i8" ? 64 : 32;
    std::vector<Cfg> cfgs = {{128, 128, bk, 4},                  // the kernel's default tile
                             {128, 256, bk, 8},                  // two consumer warpgroups
                             {128, 128, bk, 4, "", true},        // persistent
                             {128, 128, bk, 4, "", false, false}}; // no argument facts
    if (dt == "bf16" || dt == "f16")
      cfgs.push_back({64, 128, 32, 4, "sm_80"}); // cp.async + ldmatrix + mma.sync
    for (const Cfg &cfg : cfgs)
      for (Strides s : {transposedA, rowMajor}) {
        double rel = stridedError(*ctx, dt, M, N, K, s, cfg, seed++);
        INFO(dt << " strides A (" << s.am << ", " << s.ak << ") B (" << s.bk << ", " << s.bn
                << ") tile " << cfg.bm << "x" << cfg.bn << "x" << cfg.bk << " warps " << cfg.warps
                << " arch '" << cfg.arch << "'" << (cfg.persistent ? " persistent" : "")
                << (cfg.specialize ? "" : " no facts") << ": relative error " << rel);
        CHECK(rel <= bound(dt));
      }
  }
}

TEST_CASE("GPU matmul with A stored M-major (A.T @ B) on wgmma's transposed A matches fp64",
          "[gpu][matmul][gathered]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  uint64_t seed = freshSeed();
  INFO("seed " << seed);
  // A column-major (M contiguous) with a 16-byte aligned leading dimension, B
  // row-major: 16-bit types copy A in 16-byte chunks into an M-major stage
  // (TMA when warp-specialized, cp.async otherwise) and set wgmma's
  // transpose-A bit; f32 and i8 have no such bit and stay gathered. At a
  // ragged shape (masked chunks) and at one the tiles divide (whole chunks).
  for (Shape sh : {Shape{300, 200, 190}, Shape{256, 256, 192}})
    for (std::string dt : {"bf16", "f16", "f32", "i8"}) {
      const int64_t lda = (sh.M + 15) / 16 * 16;
      const Strides s{1, lda, sh.N, 1};
      int64_t bk = dt == "i8" ? 64 : 32;
      std::vector<Cfg> cfgs = {{128, 128, bk, 4},                   // TMA, warp-specialized
                               {128, 256, bk, 8},                   // two consumer warpgroups
                               {64, 128, bk, 4},                    // one 64-row block
                               {128, 128, bk, 4, "", true},         // persistent
                               {128, 128, bk, 4, "", false, true, false},        // cp.async
                               {128, 128, bk, 4, "", false, true, true, false}}; // not specialized
      for (const Cfg &cfg : cfgs) {
        double rel = stridedError(*ctx, dt, sh.M, sh.N, sh.K, s, cfg, seed++);
        INFO(dt << " " << sh.M << "x" << sh.N << "x" << sh.K << " lda " << lda << " tile " << cfg.bm
                << "x" << cfg.bn << "x" << cfg.bk << " warps " << cfg.warps
                << (cfg.persistent ? " persistent" : "") << (cfg.tma ? "" : " no TMA")
                << (cfg.warpSpecialize ? "" : " not warp-specialized") << ": relative error " << rel);
        CHECK(rel <= bound(dt));
      }
    }
}

TEST_CASE("GPU dot(trans(a), b) and dot(trans(a), trans(b)) with A stored K x M match fp64",
          "[gpu][matmul][gathered]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  uint64_t seed = freshSeed();
  INFO("seed " << seed);
  // A.T @ B as Triton users write it: A's (BK, BM) tile loaded as it lies
  // and transposed in the dot. 16-bit types: an M-major stage read by wgmma
  // transposed; f32 (tf32): A copied element by element.
  for (Shape sh : {Shape{300, 208, 190}, Shape{256, 256, 192}})
    for (std::string dt : {"bf16", "f16", "f32"})
      for (int warps : {4, 8})
        for (bool bt : {false, true}) {
          std::mt19937 rng{uint32_t(seed++)};
          JitOptions o;
          o.numWarps = warps;
          double rel = transposedADotError(*ctx, rng, dt, sh.M, sh.N, sh.K, bt, 128, 128, 64, o);
          INFO(dt << " " << sh.M << "x" << sh.N << "x" << sh.K << " warps " << warps
                  << (bt ? " B^T" : "") << ": relative error " << rel);
          CHECK(rel <= bound(dt));
        }
}
