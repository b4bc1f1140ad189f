// Every @autotune config of ROAST-MM's forward and dX kernels on the GPU, at
// small ragged shapes, against the fp64 reference (W = lambda * M[IDX] built
// explicitly). The layer's tests see only the config the tuner picks, and
// the interpreter tests do not lower; a config that the GPU gets wrong at
// shapes smaller than its tile would otherwise show only when a faster
// kernel changed the tuner's pick (bench/NOTES.md, session 25).
#include "GpuTestSupport.h"
#include "RoastTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/Autotune.h"
#include "tessera/Compiler.h"
#include "tessera/KernelLibrary.h"
#include "tessera/roast/Linear.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;
using roastref::MmLayer;

namespace {

/// The configs of `kernel`'s @autotune space, as its file declares them.
std::vector<Config> spaceOf(const std::string &path, const std::string &kernel) {
  CompileResult r = compileFile(path, kernel, CompileOptions{});
  REQUIRE(r.ok);
  REQUIRE(r.configSpaces.count(kernel));
  return r.configSpaces.at(kernel)->configs;
}

/// Whether roast_mm_fwd's static_asserts accept config `c` for an HK x HN
/// hash tile (BK divides HK; BN divides HN or is a multiple of it).
bool forwardFits(const Config &c, int64_t HK, int64_t HN) {
  const int64_t BK = c.get("BK"), BN = c.get("BN");
  return HK % BK == 0 && (HN % BN == 0 || BN % HN == 0);
}

/// A config's constexprs with the layer's hash tile and mapping on top.
std::map<std::string, ConstexprValue> constexprsFor(const Config &c, int64_t HK, int64_t HN,
                                                    bool aligned) {
  std::map<std::string, ConstexprValue> cx = c.constexprs;
  cx["HK"] = HK;
  cx["HN"] = HN;
  cx["ALIGNED"] = aligned;
  return cx;
}

/// roast_mm_fwd at config `c` (its constexprs `cx`) on X and Mem, into a Y
/// poisoned with NaN (zeroed for a split K, whose splits add into it), as
/// the host reads Y back.
std::vector<float> forwardAt(Context &ctx, const std::string &path, const Config &c,
                             const std::map<std::string, ConstexprValue> &cx,
                             const DeviceBuffer<float> &X, const DeviceBuffer<float> &Mem,
                             const std::array<int32_t, 8> &R, int64_t B, int64_t K, int64_t N,
                             int64_t H, float lam) {
  JitOptions o;
  c.applyTo(o);
  Kernel k = compile(ctx, path, "roast_mm_fwd", cx, o);
  const int64_t split = c.getOr("SPLIT_K", 1);
  auto Y = ctx.alloc<float>(size_t(B * N));
  if (split > 1)
    Y.zero();
  else
    Y.memsetBytes(0xFF);
  k.launch(ctx.stream(), roast::forwardGrid(c, B, N), X, Mem, Y,
           R[1], R[2], R[3], R[4], R[5], R[7], int32_t(B), int32_t(K), int32_t(N), int32_t(H), lam,
           int32_t(K), int32_t(1), int32_t(N), int32_t(1));
  ctx.synchronize();
  return Y.toHost();
}

} // namespace

TEST_CASE("GPU roast: every forward and dX config matches fp64 at ragged shapes smaller than "
          "its tile",
          "[gpu][roast]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Seeded s;
  INFO("seed " << s.seed);
  const int64_t HK = 32, HN = 64, B = 17 + s.range(0, 30), K = 70 + s.range(0, 60),
                N = 90 + s.range(0, 70), H = K * N / 3 + s.range(0, 999);
  const float lam = 0.7f;
  INFO("B " << B << " K " << K << " N " << N << " H " << H);
  std::array<int32_t, 8> R = roastref::randomR(s);
  std::vector<float> x = s.uniform(size_t(B * K)), dy = s.uniform(size_t(B * N)),
                     mem = s.uniform(size_t(H));
  auto X = ctx->upload(x), dY = ctx->upload(dy), Mem = ctx->upload(mem);
  const std::string dir = kernelLibraryDir() + "/roast/";
  int ran = 0;
  for (bool aligned : {false, true}) {
    MmLayer ref{K, N, HK, HN, H, R, aligned, lam};
    std::vector<double> y = ref.forward(x, mem, B), dx = ref.inputGrad(dy, mem, B);
    for (const char *kernel : {"roast_mm_fwd", "roast_mm_dx"}) {
      const bool fwd = std::string(kernel) == "roast_mm_fwd";
      const std::string path = dir + (fwd ? "roast_mm.tile" : "roast_mm_dx.tile");
      for (const Config &c : spaceOf(path, kernel)) {
        std::map<std::string, ConstexprValue> cx = constexprsFor(c, HK, HN, aligned);
        INFO(kernel << " aligned " << aligned << " BM " << c.get("BM") << " BK " << c.get("BK")
                    << " BN " << c.get("BN") << " warps " << c.numWarps.value_or(4) << " stages "
                    << c.numStages.value_or(4));
        if (fwd && !forwardFits(c, HK, HN))
          continue;
        if (fwd) {
          CHECK(relErrL2(forwardAt(*ctx, path, c, cx, X, Mem, R, B, K, N, H, lam), y) < 3e-3);
        } else {
          JitOptions o;
          c.applyTo(o);
          Kernel k = compile(*ctx, path, kernel, cx, o);
          auto dX = ctx->alloc<float>(size_t(B * K));
          dX.memsetBytes(0xFF);
          k.launch(ctx->stream(), Grid::of(cdiv(B, c.get("BM")) * cdiv(K, c.get("BK"))), dY, Mem, dX, R[1], R[2],
                   R[3], R[4], R[5], R[7], int32_t(B), int32_t(K), int32_t(N), int32_t(H), lam,
                   int32_t(N), int32_t(1), int32_t(K), int32_t(1));
          ctx->synchronize();
          CHECK(relErrL2(dX.toHost(), dx) < 3e-3);
        }
        ++ran;
      }
    }
  }
  CHECK(ran >= 20);
}

// RzLinear's runs at every 4-byte offset go by bulk copies from the 16-byte
// boundary at or below them (DotLoopEmitter::bBulk): an aligned run starts
// its copy 16 bytes early (shift 16) unless it sits at the base itself
// (shift 0). A memory array just larger than the hash tile puts every tile
// at the first few offsets, the base among them.
TEST_CASE("GPU roast: forward configs with tiles at the memory array's first offsets",
          "[gpu][roast]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Seeded s;
  INFO("seed " << s.seed);
  const int64_t HK = 32, HN = 64, B = 40 + s.range(0, 30), K = 96 + s.range(0, 60),
                N = 150 + s.range(0, 70);
  const float lam = 0.7f;
  std::array<int32_t, 8> R = roastref::randomR(s);
  std::vector<float> x = s.uniform(size_t(B * K));
  auto X = ctx->upload(x);
  const std::string path = kernelLibraryDir() + "/roast/roast_mm.tile";
  int ran = 0;
  for (int64_t H : {HK * HN + 1, HK * HN + 8}) {
    std::vector<float> mem = s.uniform(size_t(H));
    auto Mem = ctx->upload(mem);
    MmLayer ref{K, N, HK, HN, H, R, /*aligned=*/false, lam};
    std::vector<double> y = ref.forward(x, mem, B);
    for (const Config &c : spaceOf(path, "roast_mm_fwd")) {
      if (!forwardFits(c, HK, HN))
        continue;
      INFO("H " << H << " BM " << c.get("BM") << " BK " << c.get("BK") << " BN " << c.get("BN")
                << " split " << c.getOr("SPLIT_K", 1));
      CHECK(relErrL2(forwardAt(*ctx, path, c, constexprsFor(c, HK, HN, /*aligned=*/false), X, Mem, R,
                               B, K, N, H, lam),
                     y) < 3e-3);
      ++ran;
    }
  }
  CHECK(ran >= 20);
}
