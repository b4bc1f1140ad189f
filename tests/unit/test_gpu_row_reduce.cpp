// Row reductions (RowReduce.cpp) and what the lowering does with them: integer
// reductions of a warp-wide row as one redux.sync (sum, max, min, signed and
// unsigned, bitwise), narrower rows by shuffles, and a row value broadcast
// back over its rows from registers (row slices). Against C++ on fresh random
// inputs, in the interpreter and, when there is one, on the GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def ints(X: *i32, U: *u32, Out: *i32, UOut: *u32, R: constexpr, C: constexpr):
    offs = arange(0, R)[:, None] * C + arange(0, C)[None, :]
    x = load(X + offs)
    u = load(U + offs)
    rows = arange(0, R)
    store(Out + rows, max(x, 1))
    store(Out + R + rows, min(x, 1))
    store(Out + 2 * R + rows, sum(x, 1))
    store(UOut + rows, max(u, 1))
    store(UOut + R + rows, min(u, 1))

@kernel
def normalize(X: *f32, Y: *f32, R: constexpr, C: constexpr):
    # A row maximum of magnitudes, as integer bits, broadcast back over the row.
    offs = arange(0, R)[:, None] * C + arange(0, C)[None, :]
    x = load(X + offs)
    amax = bitcast(max(bitcast(abs(x), i32), 1), f32)
    store(Y + offs, x * (1.0 / amax)[:, None])
)";

void checkRows(Context &ctx, int64_t R, int64_t C) {
  Seeded rng;
  INFO("seed " << rng.seed << ", " << R << " x " << C);
  const size_t n = size_t(R * C);
  std::vector<int32_t> x(n);
  std::vector<uint32_t> u(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = int32_t(rng.rng() % 2000001) - 1000000;
    u[i] = rng.rng();
  }
  std::map<std::string, ConstexprValue> cx{{"R", R}, {"C", C}};
  {
    Kernel k = compileString(ctx, kSource, "r.tile", "ints", cx);
    auto xd = ctx.upload(x);
    auto ud = ctx.upload(u);
    auto out = ctx.alloc<int32_t>(size_t(3 * R));
    auto uout = ctx.alloc<uint32_t>(size_t(2 * R));
    k.launch(ctx.stream(), Grid{1}, xd, ud, out, uout);
    std::vector<int32_t> h = out.toHost();
    std::vector<uint32_t> hu = uout.toHost();
    size_t wrong = 0;
    for (int64_t r = 0; r < R; ++r) {
      auto xb = x.begin() + r * C;
      auto ub = u.begin() + r * C;
      int32_t s = 0;
      for (int64_t c = 0; c < C; ++c)
        s += xb[c];
      wrong += h[size_t(r)] != *std::max_element(xb, xb + C);
      wrong += h[size_t(R + r)] != *std::min_element(xb, xb + C);
      wrong += h[size_t(2 * R + r)] != s;
      wrong += hu[size_t(r)] != *std::max_element(ub, ub + C);
      wrong += hu[size_t(R + r)] != *std::min_element(ub, ub + C);
    }
    CHECK(wrong == 0);
  }
  {
    std::vector<float> f = rng.uniform(n, -3.0f, 3.0f);
    Kernel k = compileString(ctx, kSource, "r.tile", "normalize", cx);
    auto fd = ctx.upload(f);
    auto y = ctx.alloc<float>(n);
    k.launch(ctx.stream(), Grid{1}, fd, y);
    std::vector<float> h = y.toHost();
    size_t wrong = 0;
    for (int64_t r = 0; r < R; ++r) {
      float amax = 0.0f;
      for (int64_t c = 0; c < C; ++c)
        amax = std::max(amax, std::fabs(f[size_t(r * C + c)]));
      const float scale = 1.0f / amax;
      for (int64_t c = 0; c < C; ++c)
        wrong += h[size_t(r * C + c)] != f[size_t(r * C + c)] * scale;
    }
    CHECK(wrong == 0);
  }
}

void checkAll(Context &ctx) {
  checkRows(ctx, 8, 256);  // rows of two warps: redux.sync, partials across warps
  checkRows(ctx, 2, 1024); // rows of all four warps
  checkRows(ctx, 32, 64);  // rows of 16 lanes: shuffles
}

} // namespace

TEST_CASE("row reductions: integer redux, shuffles and row slices (interpreter)", "[interp][reduce]") {
  Context ctx(createInterpreterBackend());
  checkAll(ctx);
}

TEST_CASE("row reductions: integer redux, shuffles and row slices (GPU)", "[gpu][reduce]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkAll(*ctx);
}
