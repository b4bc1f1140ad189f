// fdiv(x, y, ieee_rounding=False) and div_rn(x, y), as Triton's tl.fdiv and
// tl.math.div_rn: against the correctly rounded quotient computed in double
// on the CPU, on fresh random inputs. div_rn and ieee_rounding=True are
// exact; the fast fdiv is within 2 ulp (exact in the interpreter).
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def divs(X: *f32, Y: *f32, Out: *f32, WHICH: constexpr = 0):
    # One division a kernel: LLVM merges equal divisions, keeping only the
    # flags they share.
    r = arange(0, 1024)
    x = load(X + r)
    y = load(Y + r)
    if WHICH == 0:
        store(Out + r, fdiv(x, y))
    elif WHICH == 1:
        store(Out + r, div_rn(x, y))
    else:
        store(Out + r, fdiv(x, y, ieee_rounding=True))
)";

// Distance in units in the last place between two finite floats of one sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(int64_t(ia) - int64_t(ib));
}

void checkDivisions(Context &ctx, int64_t fastUlps) {
  Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<float> x = rng.uniform(1024, 0.5f, 1000.0f), y = rng.uniform(1024, 1e-6f, 50.0f);
  auto xd = ctx.upload(x);
  auto yd = ctx.upload(y);
  std::vector<float> h;
  for (int64_t which = 0; which < 3; ++which) {
    Kernel k = compileString(ctx, kSource, "d.tile", "divs", {{"WHICH", which}});
    auto out = ctx.alloc<float>(1024);
    k.launch(ctx.stream(), Grid{1}, xd, yd, out);
    std::vector<float> part = out.toHost();
    h.insert(h.end(), part.begin(), part.end());
  }
  int64_t worstFast = 0, worstRn = 0;
  for (size_t i = 0; i < 1024; ++i) {
    float exact = float(double(x[i]) / double(y[i]));  // double, then one rounding: correctly rounded
    worstFast = std::max(worstFast, ulps(h[i], exact));
    worstRn = std::max({worstRn, ulps(h[1024 + i], exact), ulps(h[2048 + i], exact)});
  }
  CHECK(worstRn == 0);
  CHECK(worstFast <= fastUlps);
}

} // namespace

TEST_CASE("fdiv and div_rn: exact in the interpreter", "[language][interp][fdiv]") {
  Context ctx(createInterpreterBackend());
  checkDivisions(ctx, 0);
}

TEST_CASE("fdiv within 2 ulp, div_rn exact (GPU)", "[language][gpu][fdiv]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkDivisions(*ctx, 2);
}

TEST_CASE("fdiv: ieee_rounding must be a compile-time bool", "[language][fdiv]") {
  CompileResult r = compileSource("@kernel\ndef k(X: *f32, b: i1):\n    store(X, fdiv(1.0, load(X), ieee_rounding=b))\n",
                                  "d.tile", "k", CompileOptions{}, Stage::Tile);
  CHECK_FALSE(r.ok);
  CHECK(r.diagnostics.find("fdiv() ieee_rounding must be True or False") != std::string::npos);
}
