// Index forms that TMA copies on sm_90a, checked on ragged shapes against
// fp64 (in the interpreter, and on the GPU, which skips visibly without one):
// - a matmul indexed as Triton's tutorial indexes it: rows and columns taken
//   modulo M and N, so that the last tiles read valid (wrapped) memory, and
//   the store masked to the matrix. TMA reads the wrapped rows and columns as
//   zeros past the tensor's end (lit lowering/tma_wrapped_index.tile); the
//   stored result must not change;
// - masks written on 1-D indices and expanded (`k_ok[None, :]`; lit
//   lowering/tma_expanded_mask.tile).
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {
const char *kWrapped = R"(
@kernel
def wrapped(A: *DT, B: *DT, C: *f32, M: i32, N: i32, K: i32, sam: i32, sak: i32, sbk: i32,
            sbn: i32, scm: i32, scn: i32, BM: constexpr = 128, BN: constexpr = 128,
            BK: constexpr = 64, DT: constexpr = f16, LEAKY: constexpr = False):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    pa = A + (rm % M)[:, None] * sam + rk[None, :] * sak
    pb = B + rk[:, None] * sbk + (rn % N)[None, :] * sbn
    acc = zeros((BM, BN), f32)
    for k in range(0, cdiv(K, BK)):
        a = load(pa, mask=rk[None, :] < K - k * BK, other=0.0)
        b = load(pb, mask=rk[:, None] < K - k * BK, other=0.0)
        acc += dot(a, b)
        pa += BK * sak
        pb += BK * sbk
    if LEAKY:
        acc = where(acc >= 0, acc, 0.01 * acc)
    store(C + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

const char *kExpandedMask = R"(
@kernel
def expanded(A: *DT, B: *DT, C: *f32, M: i32, N: i32, K: i32, sam: i32, sak: i32, sbk: i32,
             sbn: i32, scm: i32, scn: i32, BM: constexpr = 128, BN: constexpr = 128,
             BK: constexpr = 64, DT: constexpr = f16, LEAKY: constexpr = False):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    m_ok = rm < M
    n_ok = rn < N
    acc = zeros((BM, BN), f32)
    for k0 in range(0, K, BK):
        k_ok = rk < K - k0
        a = load(A + rm[:, None] * sam + (k0 + rk)[None, :] * sak, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = load(B + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc += dot(a, b)
    store(C + rm[:, None] * scm + rn[None, :] * scn, acc, mask=m_ok[:, None] & n_ok[None, :])
)";

double wrappedError(Context &ctx, const std::string &dt, int64_t M, int64_t N, int64_t K,
                    int warps, int64_t bm, int64_t bn, int64_t bk, bool leaky, int stages = 4,
                    bool expanded = false) {
  std::mt19937 rng(uint32_t(M * 31 + N * 7 + K));
  DeviceOperand a = uploadOperand(ctx, rng, dt, size_t(M * K));
  DeviceOperand b = uploadOperand(ctx, rng, dt, size_t(K * N));
  DeviceMemory dc = ctx.allocBytes(size_t(M * N) * 4);
  dc.memset(0xFF);
  JitOptions o;
  o.numWarps = warps;
  o.numStages = stages;
  Kernel k = compileString(ctx, expanded ? kExpandedMask : kWrapped, "forms.tile",
                           expanded ? "expanded" : "wrapped",
                           {{"BM", bm}, {"BN", bn}, {"BK", bk}, {"DT", *parseDType(dt)},
                            {"LEAKY", leaky}},
                           o);
  std::vector<uint8_t> hc =
      launchMatmul(ctx, k, Grid::of(cdiv(M, bm), cdiv(N, bn)), a.device, b.device, dc,
                   {int32_t(M), int32_t(N), int32_t(K), int32_t(K), 1, int32_t(N), 1, int32_t(N), 1});
  auto ref = [&](int64_t i, int64_t j) {
    double r = rowMajorProduct(a.host, b.host, K, N, i, j);
    return leaky && r < 0 ? 0.01 * r : r;
  };
  return relErrL2(M, N, ref, [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), false); });
}
} // namespace

TEST_CASE("matmuls with wrapped (modulo M, N) indices or expanded masks match fp64 (interpreter)",
          "[language][interp][matmul]") {
  Context ctx(createInterpreterBackend());
  for (bool leaky : {false, true}) {
    double err = wrappedError(ctx, "f32", 45, 40, 37, 4, 16, 16, 16, leaky);
    INFO("45x40x37 leaky " << leaky << ": rel err " << err);
    CHECK(err < 1e-6);
  }
  double err = wrappedError(ctx, "f32", 45, 40, 37, 4, 16, 16, 16, false, 4, /*expanded=*/true);
  INFO("expanded masks 45x40x37: rel err " << err);
  CHECK(err < 1e-6);
}

TEST_CASE("GPU matmuls with wrapped (modulo M, N) indices or expanded masks match fp64",
          "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  struct Shape {
    int64_t M, N, K;
  };
  for (const char *dt : {"f16", "bf16"})
    for (Shape s : {Shape{1000, 1040, 520}, Shape{333, 328, 100}, Shape{256, 256, 256}, Shape{77, 200, 64}})
      for (auto [warps, bm, bn, bk] :
           {std::tuple<int, int64_t, int64_t, int64_t>{8, 128, 128, 64}, {4, 64, 128, 32}})
        for (bool leaky : {false, true}) {
          double err = wrappedError(*ctx, dt, s.M, s.N, s.K, warps, bm, bn, bk, leaky);
          INFO(dt << " " << s.M << "x" << s.N << "x" << s.K << " warps " << warps << " tile " << bm
                  << "x" << bn << "x" << bk << " leaky " << leaky << ": rel err " << err);
          CHECK(err <= 1e-5);
        }
  for (const char *dt : {"f16", "bf16"})
    for (Shape s : {Shape{1000, 1040, 520}, Shape{333, 328, 100}, Shape{77, 200, 64}}) {
      double err = wrappedError(*ctx, dt, s.M, s.N, s.K, 8, 128, 128, 64, false, 4, /*expanded=*/true);
      INFO("expanded masks " << dt << " " << s.M << "x" << s.N << "x" << s.K << ": rel err " << err);
      CHECK(err <= 1e-5);
    }
  // Warp-specialized rings of 3 and 5 stages (slots and phases by division).
  for (int stages : {3, 5})
    for (Shape s : {Shape{1000, 1040, 520}, Shape{256, 512, 192}}) {
      double err = wrappedError(*ctx, "f16", s.M, s.N, s.K, 8, 128, 256, 64, false, stages);
      INFO(stages << " stages " << s.M << "x" << s.N << "x" << s.K << ": rel err " << err);
      CHECK(err <= 1e-5);
    }
}
