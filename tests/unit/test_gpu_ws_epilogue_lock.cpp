// Scalar atomics after a warp-specialized dot loop: each program waits for
// its turn on a ticket lock, stores its tile, draws a number from a counter
// and passes the lock on. A scalar atomic's result reaches every thread
// through shared memory and the consumers' own barrier (bar 1); when that
// barrier was inline asm, LLVM copied it into thread 0's path and the
// others', so warp 0 reached one aligned barrier at two addresses and this
// pattern hung on an H200 (now the convergent nvvm.barrier intrinsic; lit
// lowering/warp_specialized_dot.tile). Checked against fp64, with the
// programs' order; in the interpreter and on the GPU (which skips visibly
// without one).
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {
const char *kOrderedTiles = R"(
@kernel
def ordered_tiles(A: *f16, B: *f16, C: *f32, Lock: *i32, Order: *i32, Count: *i32, M: i32, N: i32,
                  K: i32, BM: constexpr = 128, BN: constexpr = 64, BK: constexpr = 64):
    pid = program_id(0)
    rm = pid * BM + arange(0, BM)
    rn = arange(0, BN)
    rk = arange(0, BK)
    pa = A + rm[:, None] * K + rk[None, :]
    pb = B + rk[:, None] * N + rn[None, :]
    acc = zeros((BM, BN), f32)
    for k in range(0, K, BK):
        acc += dot(load(pa), load(pb))
        pa += BK
        pb += BK * N
    # Programs start in grid order and all fit on the GPU at once, so the
    # one waited for is running or done.
    while atomic_add(Lock, 0, sem="acquire") != pid:
        pass
    store(C + rm[:, None] * N + rn[None, :], acc)
    store(Order + pid, atomic_add(Count, 1, sem="relaxed"))
    atomic_xchg(Lock, (pid + 1) % num_programs(0), sem="release")
)";

/// Launches ordered_tiles `launches` times on M x N x K (multiples of the
/// tile) with `warps` warps; checks every launch's order and the lock's
/// reset, and returns C's relative error against fp64.
double orderedTilesError(Context &ctx, int64_t M, int64_t N, int64_t K, int warps, int launches) {
  std::mt19937 rng(uint32_t(M + N * 3 + K * 7 + warps));
  DeviceOperand a = uploadOperand(ctx, rng, "f16", size_t(M * K));
  DeviceOperand b = uploadOperand(ctx, rng, "f16", size_t(K * N));
  const int32_t programs = int32_t(M / 128);
  DeviceMemory c = ctx.allocBytes(size_t(M * N) * 4), lock = ctx.allocBytes(4),
               order = ctx.allocBytes(size_t(programs) * 4), count = ctx.allocBytes(4);
  lock.memset(0);
  count.memset(0);
  JitOptions o;
  o.numWarps = warps;
  Kernel k = compileString(ctx, kOrderedTiles, "ordered_tiles.tile", "ordered_tiles", {}, o);
  std::vector<ArgValue> args =
      makeArgs(DevicePtr<uint8_t>{a.device.address()}, DevicePtr<uint8_t>{b.device.address()},
               DevicePtr<float>{c.address()}, DevicePtr<int32_t>{lock.address()},
               DevicePtr<int32_t>{order.address()}, DevicePtr<int32_t>{count.address()}, int32_t(M),
               int32_t(N), int32_t(K));
  args[0].type = args[1].type = k.signature().params[0].type;
  for (int l = 0; l < launches; ++l) {
    c.memset(0xFF);
    k.launchWithArgs(ctx.stream(), Grid::of(programs), args);
    ctx.synchronize();
    std::vector<int32_t> got(size_t(programs) + 1);
    order.copyToHost(got.data(), size_t(programs) * 4);
    lock.copyToHost(&got[size_t(programs)], 4);
    for (int32_t p = 0; p < programs; ++p)
      REQUIRE(got[size_t(p)] == l * programs + p);
    REQUIRE(got[size_t(programs)] == 0);
  }
  std::vector<uint8_t> hc(c.size());
  c.copyToHost(hc.data(), hc.size());
  return relErrL2(M, N, [&](int64_t i, int64_t j) { return rowMajorProduct(a.host, b.host, K, N, i, j); },
                  [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), false); });
}
} // namespace

TEST_CASE("programs pass a ticket lock in order after a dot loop (interpreter)",
          "[language][interp][atomics]") {
  Context ctx(createInterpreterBackend());
  double err = orderedTilesError(ctx, 384, 64, 128, 4, 2);
  INFO("rel err " << err);
  CHECK(err < 1e-6);
}

TEST_CASE("GPU programs pass a ticket lock in order after a warp-specialized dot loop",
          "[gpu][atomics][matmul]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  for (int warps : {4, 8}) {
    double err = orderedTilesError(*ctx, 16 * 128, 64, 512, warps, 50);
    INFO(warps << " warps: rel err " << err);
    CHECK(err <= 1e-5);
  }
}
