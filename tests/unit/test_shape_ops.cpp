// flip, join, split, interleave and cat (Triton's tl.flip, tl.join,
// tl.split, tl.interleave, tl.cat), written as gathers and selects: against
// C++ indexing on fresh random inputs, in the interpreter and, when there is
// one, on the GPU; they also compile for sm_80 and sm_90a. Bad shapes are
// diagnostics.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def shapes(A: *f32, B: *f32, F0: *f32, F1: *f32, J: *f32, S0: *f32, S1: *f32, I: *f32, C: *f32):
    offs = arange(0, 8)[:, None] * 16 + arange(0, 16)[None, :]
    a = load(A + offs)
    b = load(B + offs)
    store(F0 + offs, flip(a, 0))
    store(F1 + offs, flip(a))                                  # the last dimension
    j = join(a, b)                                             # (8, 16, 2)
    store(J + offs[:, :, None] * 2 + arange(0, 2)[None, None, :], j)
    lo, hi = split(j)
    store(S0 + offs, lo)
    store(S1 + offs, hi)
    store(I + arange(0, 8)[:, None] * 32 + arange(0, 32)[None, :], interleave(a, b))
    store(C + arange(0, 16)[:, None] * 16 + arange(0, 16)[None, :], cat(a, b))
)";

void checkShapes(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const int R = 8, Cn = 16, n = R * Cn;
  std::vector<float> A = rng.uniform(size_t(n)), B = rng.uniform(size_t(n));
  Kernel k = compileString(ctx, kSource, "s.tile", "shapes");
  auto ad = ctx.upload(A);
  auto bd = ctx.upload(B);
  std::vector<DeviceBuffer<float>> o;
  for (size_t sz : {n, n, 2 * n, n, n, 2 * n, 2 * n})
    o.push_back(ctx.alloc<float>(size_t(sz)));
  k.launch(ctx.stream(), Grid{1}, ad, bd, o[0], o[1], o[2], o[3], o[4], o[5], o[6]);
  std::vector<std::vector<float>> h;
  for (auto &b : o)
    h.push_back(b.toHost());
  size_t wrong = 0;
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Cn; ++c) {
      size_t i = size_t(r * Cn + c);
      wrong += h[0][i] != A[size_t((R - 1 - r) * Cn + c)];
      wrong += h[1][i] != A[size_t(r * Cn + Cn - 1 - c)];
      wrong += h[2][2 * i] != A[i] || h[2][2 * i + 1] != B[i];
      wrong += h[3][i] != A[i] || h[4][i] != B[i];
      wrong += h[5][size_t(r * 2 * Cn + 2 * c)] != A[i] || h[5][size_t(r * 2 * Cn + 2 * c + 1)] != B[i];
      wrong += h[6][i] != A[i] || h[6][size_t(n) + i] != B[i];
    }
  CHECK(wrong == 0);
}

} // namespace

TEST_CASE("flip, join, split, interleave, cat (interpreter)", "[language][interp][shape]") {
  Context ctx(createInterpreterBackend());
  checkShapes(ctx);
}

TEST_CASE("flip, join, split, interleave, cat (GPU)", "[language][gpu][shape]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkShapes(*ctx);
}

TEST_CASE("flip, join, split, interleave, cat compile for sm_80 and sm_90a", "[language][shape]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(kSource, "s.tile", "shapes", o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    CHECK(r.ok);
  }
}

TEST_CASE("split and cat: bad shapes are diagnostics", "[language][shape]") {
  auto diag = [](const std::string &body) {
    std::string src = "@kernel\ndef k(X: *f32):\n    x = load(X + arange(0, 8)[:, None] * 4 + arange(0, 4)[None, :])\n" + body;
    CompileResult r = compileSource(src, "s.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    lo, hi = split(x)\n").find("split() needs a last dimension of size 2") != std::string::npos);
  CHECK(diag("    y = cat(x, trans(x))\n").find("cat() needs tiles that differ only in dimension 0") !=
        std::string::npos);
  CHECK(diag("    y = cat(x, load(X + arange(0, 4)[:, None] * 4 + arange(0, 4)[None, :]))\n")
            .find("not a power of two") != std::string::npos);
}
