// A value constant over runs of rows (axis info's constancy) is computed once
// per run a thread touches, not once per element: counted in the PTX (a
// remainder by a run-time divisor, one per run), and checked on the GPU
// against C++ (skipped visibly without a GPU).
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;

namespace {

// 128 x 32 f32 over 4 warps: a thread holds rows t/8 + 16*i, i < 8, which
// fall in 4 runs of 32 rows (the hash of a 32-row tile, as in ROAST).
const char *kRunsSrc = R"(
@kernel
def runs(X: *f32, Y: *f32, m: i32, k0: i32, FROM_PID: constexpr = True):
    if FROM_PID:
        rk = program_id(0) * 128 + arange(0, 128)
    else:
        rk = k0 * 128 + arange(0, 128)
    h = (rk // 32 * 7919) % m
    x = load(X + h[:, None] + arange(0, 32)[None, :])
    store(Y + program_id(0) * 4096 + arange(0, 128)[:, None] * 32 + arange(0, 32)[None, :], x)
)";

size_t remainders(bool fromPid) {
  CompileOptions o;
  o.target = *Target::parse("sm_90a");
  o.constexprs["FROM_PID"] = fromPid;
  CompileResult r = compileSource(kRunsSrc, "runs.tile", "runs", o, Stage::PTX);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  size_t n = 0;
  for (const char *op : {"rem.s32", "rem.u32"})
    for (size_t at = r.ptx.find(op); at != std::string::npos; at = r.ptx.find(op, at + 1))
      ++n;
  return n;
}

} // namespace

TEST_CASE("lowering: a value constant over 32-row runs is computed once per run", "[lowering][memo]") {
  // rk // 32 is constant over aligned runs only when rk is provably
  // non-negative (program_id): then 4 remainders, one per run.
  CHECK(remainders(true) == 4);
  // From a run-time argument that may be negative, nothing is proven: one
  // per chunk of 4 columns the thread copies (8).
  CHECK(remainders(false) == 8);
}

TEST_CASE("GPU lowering: the once-per-run values are right", "[gpu][lowering][memo]") {
  auto ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  tessera::testing::Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<float> x = rng.uniform(5000);
  const int32_t m = 4001;
  Kernel k = compileString(*ctx, kRunsSrc, "runs.tile", "runs");
  auto dx = ctx->upload(x);
  // Program `pid` writes its own 128 x 32 block (programs before it write theirs).
  for (unsigned pid : {0u, 3u}) {
    auto dy = ctx->alloc<float>(size_t(128) * 32 * (pid + 1));
    k.launch(ctx->stream(), Grid{pid + 1}, dx.ptr(), dy.ptr(), m, int32_t(0));
    auto y = dy.toHost();
    int bad = 0;
    for (int r = 0; r < 128; ++r) {
      int64_t h = (int64_t(pid * 128 + unsigned(r)) / 32 * 7919) % m;
      for (int c = 0; c < 32; ++c)
        bad += y[size_t(pid) * 4096 + size_t(r) * 32 + size_t(c)] != x[size_t(h + c)];
    }
    CHECK(bad == 0);
  }
}
