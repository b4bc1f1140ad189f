// Static tile slices (x[:, 8:24], x[-16:], x[:8]), list shapes
// (zeros([16, 8], f32)) and permute: against C++ on fresh random inputs in
// the interpreter and, when there is one, on the GPU; they compile for sm_80
// and sm_90a; bad slices are diagnostics at the slice.
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
def slices(X: *f32, A: *f32, B: *f32, C: *f32, P: *f32):
    rows = arange(0, 32)
    cols = arange(0, 32)
    x = load(X + rows[:, None] * 32 + cols[None, :])
    # columns 8..23 of every row: a (32, 16) tile
    a = x[:, 8:24]
    store(A + rows[:, None] * 16 + arange(0, 16)[None, :], a)
    # the last 16 rows, first 8 columns, plus a list-shaped tile
    b = x[-16:, :8] + zeros([16, 8], f32) + full([16, 1], 0.5, f32)
    store(B + arange(0, 16)[:, None] * 8 + arange(0, 8)[None, :], b)
    # a slice of a 1-D tile computed in registers
    s = sum(x, axis=1)
    store(C + arange(0, 4), s[4:8])
    # permute with the axes one by one and as a list
    t = reshape(x[0:8, 0:16], (2, 4, 16))
    p = permute(t, 2, 0, 1) + permute(t, [2, 0, 1])
    store(P + arange(0, 16)[:, None, None] * 8 + arange(0, 2)[None, :, None] * 4 +
          arange(0, 4)[None, None, :], p)
)";

void checkSlices(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<float> x = rng.uniform(32 * 32);
  Kernel k = compileString(ctx, kSource, "slices.tile", "slices");
  auto xd = ctx.upload(x);
  auto a = ctx.alloc<float>(32 * 16), b = ctx.alloc<float>(16 * 8), c = ctx.alloc<float>(4),
       p = ctx.alloc<float>(16 * 8);
  k.launch(ctx.stream(), Grid{1}, xd, a, b, c, p);
  auto A = a.toHost(), B = b.toHost(), C = c.toHost(), P = p.toHost();
  size_t wrong = 0;
  for (int r = 0; r < 32; ++r)
    for (int j = 0; j < 16; ++j)
      wrong += A[size_t(r * 16 + j)] != x[size_t(r * 32 + 8 + j)];
  for (int r = 0; r < 16; ++r)
    for (int j = 0; j < 8; ++j)
      wrong += B[size_t(r * 8 + j)] != x[size_t((16 + r) * 32 + j)] + 0.5f;
  double err = 0;
  for (int r = 0; r < 4; ++r) {
    double s = 0;
    for (int j = 0; j < 32; ++j)
      s += x[size_t((4 + r) * 32 + j)];
    err = std::max(err, std::fabs(C[size_t(r)] - s) / (1 + std::fabs(s)));
  }
  // t[i][j][c] = x[i*4 + j][c]; p[c][i][j] = 2 * t[i][j][c]
  for (int c = 0; c < 16; ++c)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        wrong += P[size_t(c * 8 + i * 4 + j)] != 2.0f * x[size_t((i * 4 + j) * 32 + c)];
  CHECK(wrong == 0);
  CHECK(err < 1e-5);
}

} // namespace

TEST_CASE("tile slices, list shapes and permute (interpreter)", "[language][interp][slice]") {
  Context ctx(createInterpreterBackend());
  checkSlices(ctx);
}

TEST_CASE("tile slices, list shapes and permute (GPU)", "[language][gpu][slice]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkSlices(*ctx);
}

TEST_CASE("tile slices compile for sm_80 and sm_90a", "[language][slice]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(kSource, "slices.tile", "slices", o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    CHECK(r.ok);
  }
}

TEST_CASE("tile slices: bad bounds are diagnostics at the slice", "[language][slice]") {
  auto diag = [](const std::string &body) {
    std::string src = "@kernel\ndef k(X: *f32, n: i32):\n    x = load(X + arange(0, 32))\n" + body;
    CompileResult r = compileSource(src, "s.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    y = x[0:12]\n").find("s.tile:4:12: error: a tile slice must have a power-of-two "
                                      "length, got 12") != std::string::npos);
  CHECK(diag("    y = x[16:48]\n").find("slice 16:48 is empty or outside the 32 elements of "
                                       "dimension 0") != std::string::npos);
  CHECK(diag("    y = x[0:n]\n").find("tile slice bounds must be constexpr integers") !=
        std::string::npos);
  CHECK(diag("    y = permute(x, 1)\n").find("permute() order must be a permutation of 0..0") !=
        std::string::npos);
}
