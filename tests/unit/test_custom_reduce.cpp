// reduce(input, axis, combine_fn, keep_dims) with a user @func (Triton's
// tl.reduce): a sum of squares-free sum, a product, and an argmax over a
// (value, index) pair of tiles, along each axis and over everything, against
// C++ on fresh random inputs, in the interpreter and, when there is one, on
// the GPU; the kernel also compiles for sm_80 and sm_90a. Bad combines are
// diagnostics.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@func
def add(a, b):
    return a + b

@func
def imax(a, b):
    return maximum(a, b)

@func
def argmax_pair(v1, i1, v2, i2):
    take = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return where(take, v1, v2), where(take, i1, i2)

@kernel
def k(X: *f32, Y: *i32, Rows: *f32, Cols: *f32, All: *i32, M: *f32, I: *i32):
    offs = arange(0, 8)[:, None] * 64 + arange(0, 64)[None, :]
    x = load(X + offs)
    store(Rows + arange(0, 8), reduce(x, 1, add))
    store(Cols + arange(0, 64)[None, :], reduce(x, 0, add, keep_dims=True))
    store(All, reduce(load(Y + offs), None, imax))
    idx = broadcast_to(arange(0, 64)[None, :], (8, 64))
    m, i = reduce((x, idx), 1, argmax_pair)
    store(M + arange(0, 8), m)
    store(I + arange(0, 8), i)
)";

void checkReduce(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const int R = 8, Cn = 64, n = R * Cn;
  std::vector<float> x = rng.uniform(size_t(n), -1.0f, 1.0f);
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int32_t &v : y)
    v = int32_t(rng.rng() % 100000) - 50000;
  x[3 * Cn + 10] = x[3 * Cn + 20] = 5.0f;  // a tie: the smaller index wins
  Kernel k = compileString(ctx, kSource, "r.tile", "k");
  auto xd = ctx.upload(x);
  auto yd = ctx.upload(y);
  auto rows = ctx.alloc<float>(R), cols = ctx.alloc<float>(Cn), m = ctx.alloc<float>(R);
  auto all = ctx.alloc<int32_t>(1), idx = ctx.alloc<int32_t>(R);
  k.launch(ctx.stream(), Grid{1}, xd, yd, rows, cols, all, m, idx);
  std::vector<float> hr = rows.toHost(), hc = cols.toHost(), hm = m.toHost();
  std::vector<int32_t> ha = all.toHost(), hi = idx.toHost();
  double worst = 0;
  size_t wrong = 0;
  for (int r = 0; r < R; ++r) {
    double s = 0;
    int best = 0;
    for (int c = 0; c < Cn; ++c) {
      s += x[size_t(r * Cn + c)];
      if (x[size_t(r * Cn + c)] > x[size_t(r * Cn + best)])
        best = c;
    }
    worst = std::max(worst, std::fabs(hr[size_t(r)] - s));
    wrong += hi[size_t(r)] != best || hm[size_t(r)] != x[size_t(r * Cn + best)];
  }
  for (int c = 0; c < Cn; ++c) {
    double s = 0;
    for (int r = 0; r < R; ++r)
      s += x[size_t(r * Cn + c)];
    worst = std::max(worst, std::fabs(hc[size_t(c)] - s));
  }
  wrong += ha[0] != *std::max_element(y.begin(), y.end());
  CHECK(worst < 1e-5);
  CHECK(wrong == 0);
}

} // namespace

TEST_CASE("reduce with a @func combine (interpreter)", "[language][interp][reduce]") {
  Context ctx(createInterpreterBackend());
  checkReduce(ctx);
}

TEST_CASE("reduce with a @func combine (GPU)", "[language][gpu][reduce]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkReduce(*ctx);
}

TEST_CASE("reduce with a @func combine compiles for sm_80 and sm_90a", "[language][reduce]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(kSource, "r.tile", "k", o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    CHECK(r.ok);
  }
}

TEST_CASE("reduce: bad combines are diagnostics", "[language][reduce]") {
  auto diag = [](const std::string &body) {
    std::string src = "@func\ndef two(a, b):\n    return a, b\n\n@kernel\ndef k(X: *f32):\n"
                      "    x = load(X + arange(0, 32))\n" + body;
    CompileResult r = compileSource(src, "r.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    store(X, reduce(x, 0, 3))\n").find("combine_fn must be a @func") != std::string::npos);
  CHECK(diag("    store(X, reduce(x, 0, two))\n").find("combine_fn must return 1 value, got 2") !=
        std::string::npos);
}
