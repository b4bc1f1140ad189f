// Persistent launch (CompileOptions::persistentLaunch): a kernel that is one
// output tile indexed by program_id(0) runs as one wave of blocks that walk
// the grid's programs. The wave's size (without a GPU); on the GPU, grids
// larger than a wave at ragged shapes against fp64, persistent and a block
// per program.
#include "GpuTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/Half.h"
#include "tessera/JIT.h"

#include <catch2/catch.hpp>

#include <random>

using namespace tessera;

namespace {

// Triton's tutorial matmul shape (grouped program order, indices wrapped
// modulo M and N), plus num_programs(0) added to every element: a persistent
// launch must still see the grid it was launched with.
const char *kSource = R"(
@kernel
def mm(a_ptr: *f16, b_ptr: *f16, c_ptr: *f32, M: i32, N: i32, K: i32,
       sam: i32, sak: i32, sbk: i32, sbn: i32, scm: i32, scn: i32,
       BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 64, GROUP: constexpr = 8):
    pid = program_id(axis=0)
    num_m = cdiv(M, BM)
    num_n = cdiv(N, BN)
    in_group = GROUP * num_n
    first_m = (pid // in_group) * GROUP
    group_m = min(num_m - first_m, GROUP)
    pid_m = first_m + ((pid % in_group) % group_m)
    pid_n = (pid % in_group) // group_m
    rm = (pid_m * BM + arange(0, BM)) % M
    rn = (pid_n * BN + arange(0, BN)) % N
    rk = arange(0, BK)
    pa = a_ptr + (rm[:, None] * sam + rk[None, :] * sak)
    pb = b_ptr + (rk[:, None] * sbk + rn[None, :] * sbn)
    acc = zeros((BM, BN), f32)
    for k in range(0, cdiv(K, BK)):
        a = load(pa, mask=rk[None, :] < K - k * BK, other=0.0)
        b = load(pb, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = dot(a, b, acc)
        pa += BK * sak
        pb += BK * sbk
    acc += num_programs(0).to(f32)
    cm = pid_m * BM + arange(0, BM)
    cn = pid_n * BN + arange(0, BN)
    store(c_ptr + scm * cm[:, None] + scn * cn[None, :], acc,
          mask=(cm[:, None] < M) & (cn[None, :] < N))
)";

} // namespace

TEST_CASE("a persistent launch runs about one wave of blocks", "[runtime][persistent]") {
  auto x = [](Grid g, unsigned resident) { return detail::persistentGrid(g, resident).x; };
  CHECK(x(Grid{153}, 132) == 132); // more programs than a wave: one wave walks them
  CHECK(x(Grid{85}, 132) == 85);   // fewer: a block each
  CHECK(x(Grid{153}, 264) == 153); // two blocks per SM hold them all
  // With y and z, x shrinks so that all blocks together make one wave.
  CHECK(x(Grid{100, 4, 1}, 132) == 33);
  CHECK(x(Grid{100, 2, 3}, 132) == 22);
  CHECK(x(Grid{100, 200, 1}, 132) == 1); // y alone fills the device
  CHECK(detail::persistentGrid(Grid{100, 4, 2}, 132).y == 4);
  CHECK(detail::persistentGrid(Grid{100, 4, 2}, 132).z == 2);
}

TEST_CASE("GPU persistent launch walks grids larger than a wave, exactly", "[gpu][matmul]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  uint32_t seed = tessera::testing::freshSeed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // Ragged M and N (their last tiles wrap), K a multiple of 16 but not of BK;
  // N and K multiples of 16 (16-byte aligned rows), so that the loop is
  // warp-specialized with TMA. 17 x 9 = 153 tiles of 128 x 128 and 17 x 5 = 85
  // of 128 x 256; one wave on an H100 or H200 is 132 blocks of these (one per
  // SM), so the first grid wraps.
  const int32_t M = 2100, N = 1104, K = 208;
  std::vector<f16> ha(size_t(M) * K), hb(size_t(K) * N);
  for (auto &v : ha)
    v = f16(u(rng));
  for (auto &v : hb)
    v = f16(u(rng));
  auto a = ctx->upload(ha), b = ctx->upload(hb);
  auto c = ctx->alloc<float>(size_t(M) * N);
  std::vector<double> ref(size_t(M) * N, 0.0);
  for (int32_t i = 0; i < M; ++i)
    for (int32_t q = 0; q < K; ++q) {
      double x = double(ha[size_t(i) * K + q].toFloat());
      for (int32_t j = 0; j < N; ++j)
        ref[size_t(i) * N + j] += x * double(hb[size_t(q) * N + j].toFloat());
    }
  for (int64_t bn : {128, 256})
    for (bool persistent : {true, false}) {
      JitOptions o;
      o.numWarps = 8;
      o.numStages = 3;
      o.persistentLaunch = persistent;
      Kernel k = compileString(*ctx, kSource, "persistent_mm.tile", "mm", {{"BN", bn}}, o);
      const int32_t grid = int32_t(cdiv(M, 128) * cdiv(N, bn));
      std::vector<ArgValue> args = makeArgs(a, b, c, M, N, K, K, 1, N, 1, N, 1);
      INFO("BN " << bn << ", persistent " << persistent << ", grid " << grid);
      // The JIT took the persistent path exactly when asked to (sm_90a).
      unsigned resident = k.variantFor(args).residentBlocks;
      if (persistent && ctx->target() == "sm_90") {
        CHECK(resident >= unsigned(ctx->smCount()));
        if (bn == 128)
          CHECK(unsigned(grid) > resident); // the blocks walk more than one tile each
      } else {
        CHECK(resident == 0);
      }
      c.memory().memset(0xFF); // NaN: an element never written fails the check
      k.launchWithArgs(ctx->stream(), Grid::of(grid), args);
      ctx->synchronize();
      std::vector<float> got = c.toHost();
      std::vector<double> want = ref;
      for (double &w : want)
        w += grid;
      double rel = tessera::testing::relErrL2(got, want);
      INFO("relative error " << rel);
      CHECK(rel <= 1e-5);
    }
}
