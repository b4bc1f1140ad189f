// A dot loop whose B tile sits at an origin computed each iteration (a page
// of a pool chosen by a hash of the K-step, as ROAST's hashed blocks are):
// on sm_90a TMA copies it from coordinates the producer computes (lit
// lowering/tma_computed_origin.tile). Checked on ragged shapes against fp64,
// in the interpreter and on the GPU (which skips visibly without one). An
// offset outside [0, 2^31) stops the kernel with a trap; that path is not
// run here, as the trap leaves the process's CUDA context unusable.
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {
const char *kPaged = R"(
@kernel
def paged(A: *DT, Pool: *DT, C: *f32, seed: i32, pages: i32, M: i32, N: i32, K: i32, sam: i32,
          sak: i32, scm: i32, scn: i32, BM: constexpr = 128, BN: constexpr = 64,
          BK: constexpr = 64, DT: constexpr = f16):
    rm = program_id(0) * BM + arange(0, BM)
    rk = arange(0, BK)
    rn = arange(0, BN)
    pa = A + rm[:, None] * sam + rk[None, :] * sak
    acc = zeros((BM, BN), f32)
    for k in range(0, K, BK):
        page = ((k // BK * 40503 + seed) % pages) * (BK * BN)
        b = load(Pool + page + rk[:, None] * BN + rn[None, :])
        a = load(pa, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0.0)
        acc += dot(a, b)
        pa += BK * sak
    store(C + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

constexpr int64_t kBN = 64, kBK = 64;

double pagedError(Context &ctx, const std::string &dt, int64_t M, int64_t N, int64_t K, int warps,
                  int32_t seed, int32_t pages) {
  std::mt19937 rng(uint32_t(M * 31 + N * 7 + K + seed));
  // A's rows padded to a multiple of 16 elements: the launch then proves
  // them aligned, and the loop is warp-specialized with both copies by TMA.
  int64_t lda = cdiv(K, 16) * 16;
  DeviceOperand a = uploadOperand(ctx, rng, dt, size_t(M * lda));
  DeviceOperand pool = uploadOperand(ctx, rng, dt, size_t(pages * kBK * kBN));
  DeviceMemory dc = ctx.allocBytes(size_t(M * N) * 4);
  dc.memset(0xFF);
  JitOptions o;
  o.numWarps = warps;
  Kernel k = compileString(ctx, kPaged, "paged.tile", "paged", {{"DT", *parseDType(dt)}}, o);
  std::vector<uint8_t> hc = launchMatmul(ctx, k, Grid::of(cdiv(M, 128), 1), a.device, pool.device, dc,
                                         {seed, pages, int32_t(M), int32_t(N), int32_t(K), int32_t(lda), 1,
                                          int32_t(N), 1});
  auto ref = [&](int64_t i, int64_t j) {
    double r = 0;
    for (int64_t q = 0; q < K; ++q) {
      int64_t page = ((q / kBK) * 40503 + seed) % pages;
      r += a.host.vals[size_t(i * lda + q)] * pool.host.vals[size_t(page * kBK * kBN + (q % kBK) * kBN + j)];
    }
    return r;
  };
  return relErrL2(M, N, ref, [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), false); });
}
} // namespace

TEST_CASE("a dot loop reading B at hashed pages matches fp64 (interpreter)", "[language][interp][matmul]") {
  Context ctx(createInterpreterBackend());
  double err = pagedError(ctx, "f32", 45, 40, 150, 4, 17, 5);
  INFO("45x40x150: rel err " << err);
  CHECK(err < 1e-6);
}

TEST_CASE("GPU dot loops reading B at hashed pages (TMA at computed origins) match fp64", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  struct Shape {
    int64_t M, N, K;
  };
  for (const char *dt : {"f16", "bf16"})
    for (Shape s : {Shape{1000, 64, 520}, Shape{333, 50, 100}, Shape{77, 64, 1024}})
      for (int warps : {4, 8}) {
        double err = pagedError(*ctx, dt, s.M, s.N, s.K, warps, 12345, 7);
        INFO(dt << " " << s.M << "x" << s.N << "x" << s.K << " warps " << warps << ": rel err " << err);
        CHECK(err <= 1e-5);
      }
}
