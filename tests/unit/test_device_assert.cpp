// device_assert(cond, msg, mask) (Triton's tl.device_assert): the
// interpreter stops at the first false element with the message and the
// element; masked-off lanes and a compile-time true condition pass. On the
// GPU a kernel whose assertions hold runs to the end (a failing one ends the
// CUDA context, so it is not run in the test process).
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def roots(X: *f32, n: i32):
    r = arange(0, 128)
    x = load(X + r, mask=r < n, other=-1.0)
    device_assert(x >= 0.0, "x must be non-negative", mask=r < n)
    device_assert(n > 0, "n must be positive")
    device_assert(True)
    store(X + r, sqrt(x), mask=r < n)
)";

void checkHolds(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<float> x = rng.uniform(100, 0.0f, 9.0f);
  Kernel k = compileString(ctx, kSource, "a.tile", "roots");
  auto xd = ctx.upload(x);
  k.launch(ctx.stream(), Grid{1}, xd, int32_t(100));  // lanes 100.. read -1 but are masked off
  ctx.synchronize();
  std::vector<float> h = xd.toHost();
  size_t wrong = 0;
  for (size_t i = 0; i < x.size(); ++i)
    wrong += h[i] != std::sqrt(x[i]);
  CHECK(wrong == 0);
}

} // namespace

TEST_CASE("device_assert: holding assertions pass (interpreter)", "[language][interp][assert]") {
  Context ctx(createInterpreterBackend());
  checkHolds(ctx);
}

TEST_CASE("device_assert: holding assertions pass (GPU)", "[language][gpu][assert]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkHolds(*ctx);
}

TEST_CASE("device_assert: the interpreter names the message and the element", "[language][interp][assert]") {
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, kSource, "a.tile", "roots");
  std::vector<float> x(100, 1.0f);
  x[42] = -2.0f;
  auto xd = ctx.upload(x);
  std::string err = errorOf([&] {
    k.launch(ctx.stream(), Grid{1}, xd, int32_t(100));
    ctx.synchronize();
  });
  CHECK(err.find("device_assert failed: x must be non-negative") != std::string::npos);
  CHECK(err.find("tile element [42] of 128") != std::string::npos);
  CHECK(err.find("a.tile:6") != std::string::npos);
  auto none = ctx.upload(std::vector<float>(4, 1.0f));
  CHECK(errorOf([&] {
          k.launch(ctx.stream(), Grid{1}, none, int32_t(0));
          ctx.synchronize();
        }).find("device_assert failed: n must be positive") != std::string::npos);
}

TEST_CASE("device_assert: a true constant emits nothing; bad messages are diagnostics", "[language][assert]") {
  CompileResult r = compileSource("@kernel\ndef k(X: *f32):\n    device_assert(True, \"never\")\n    store(X, 1.0)\n",
                                  "a.tile", "k", CompileOptions{}, Stage::Tile);
  REQUIRE(r.ok);
  CHECK(r.tileIR.find("tile.assert") == std::string::npos);
  CompileResult bad = compileSource("@kernel\ndef k(X: *f32):\n    device_assert(load(X) > 0.0, 3)\n",
                                    "a.tile", "k", CompileOptions{}, Stage::Tile);
  CHECK_FALSE(bad.ok);
  CHECK(bad.diagnostics.find("device_assert() msg must be a string") != std::string::npos);
}
