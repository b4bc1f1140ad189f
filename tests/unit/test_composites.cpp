// sigmoid, softmax and clamp (Triton's tl.sigmoid, tl.softmax, tl.clamp),
// against fp64 C++ on fresh random inputs: softmax along either axis of a
// 2-D tile and of a 1-D one, clamp with a NaN in x both ways; in the
// interpreter and, when there is one, on the GPU. Bad arguments are diagnostics.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def act(X: *f32, S: *f32, P0: *f32, P1: *f32, P2: *f32, C: *f32, CN: *f32):
    offs = arange(0, 16)[:, None] * 32 + arange(0, 32)[None, :]
    x = load(X + offs)
    store(S + offs, sigmoid(x))
    store(P0 + offs, softmax(x))                          # axis 0, as Triton's default
    store(P1 + offs, softmax(x, 1, keep_dims=True, ieee_rounding=True))
    r = arange(0, 32)
    store(P2 + r, softmax(load(X + r), 0))
    store(C + offs, clamp(x, -0.5, 0.75))
    store(CN + offs, clamp(x, -0.5, 0.75, propagate_nan=True))
)";

void checkComposites(Context &ctx, double tol) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const int R = 16, Cn = 32, n = R * Cn;
  std::vector<float> x = rng.uniform(size_t(n), -4.0f, 4.0f);
  x[37] = std::numeric_limits<float>::quiet_NaN();
  Kernel k = compileString(ctx, kSource, "c.tile", "act");
  auto xd = ctx.upload(x);
  std::vector<DeviceBuffer<float>> outs;
  for (int i = 0; i < 6; ++i)
    outs.push_back(ctx.alloc<float>(size_t(n)));
  k.launch(ctx.stream(), Grid{1}, xd, outs[0], outs[1], outs[2], outs[3], outs[4], outs[5]);
  std::vector<std::vector<float>> h;
  for (auto &o : outs)
    h.push_back(o.toHost());
  auto softmaxRef = [&](int i, int axis, const std::vector<float> &src, int rows, int cols) {
    int r = i / cols, c = i % cols;
    double mx = -INFINITY, sum = 0;
    int len = axis == 0 ? rows : cols;
    for (int j = 0; j < len; ++j) {
      double v = src[size_t(axis == 0 ? j * cols + c : r * cols + j)];
      mx = std::isnan(v) ? mx : std::max(mx, v);
    }
    for (int j = 0; j < len; ++j)
      sum += std::exp(double(src[size_t(axis == 0 ? j * cols + c : r * cols + j)]) - mx);
    return std::exp(double(src[size_t(i)]) - mx) / sum;
  };
  double worstS = 0, worstP = 0;
  size_t clampWrong = 0, nanWrong = 0;
  for (int i = 0; i < n; ++i) {
    if (i == 37 || i % Cn == 37 % Cn || i / Cn == 37 / Cn)
      continue;  // the NaN's row and column: softmax there is NaN in both
    double xi = x[size_t(i)];
    worstS = std::max(worstS, std::fabs(h[0][size_t(i)] - 1.0 / (1.0 + std::exp(-xi))));
    worstP = std::max(worstP, std::fabs(h[1][size_t(i)] - softmaxRef(i, 0, x, R, Cn)) /
                                  softmaxRef(i, 0, x, R, Cn));
    worstP = std::max(worstP, std::fabs(h[2][size_t(i)] - softmaxRef(i, 1, x, R, Cn)) /
                                  softmaxRef(i, 1, x, R, Cn));
    double cl = std::min(std::max(xi, -0.5), 0.75);
    clampWrong += h[4][size_t(i)] != float(cl) || h[5][size_t(i)] != float(cl);
  }
  for (int i = 0; i < Cn; ++i)
    if (i != 37)
      worstP = std::max(worstP, std::fabs(h[3][size_t(i)] - softmaxRef(i, 1, x, 1, Cn)) /
                                    softmaxRef(i, 1, x, 1, Cn));
  nanWrong += h[4][37] != -0.5f;           // NaN-ignoring maximum: min
  nanWrong += !std::isnan(h[5][37]);       // propagate_nan: NaN
  CHECK(worstS <= tol);
  CHECK(worstP <= tol);
  CHECK(clampWrong == 0);
  CHECK(nanWrong == 0);
}

} // namespace

TEST_CASE("sigmoid, softmax and clamp match fp64 (interpreter)", "[language][interp][composite]") {
  Context ctx(createInterpreterBackend());
  checkComposites(ctx, 1e-6);
}

TEST_CASE("sigmoid, softmax and clamp match fp64 (GPU)", "[language][gpu][composite]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkComposites(*ctx, 1e-5);
}

TEST_CASE("softmax and clamp: bad arguments are diagnostics", "[language][composite]") {
  auto diag = [](const std::string &body) {
    std::string src = "@kernel\ndef k(X: *f32, b: i1):\n    r = arange(0, 32)\n    x = load(X + r)\n" + body;
    CompileResult res = compileSource(src, "c.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(res.ok);
    return res.diagnostics;
  };
  CHECK(diag("    store(X + r, softmax(x, 1))\n").find("axis 1 is out of range") != std::string::npos);
  CHECK(diag("    store(X + r, clamp(x, 0.0, 1.0, propagate_nan=b))\n")
            .find("clamp() propagate_nan must be True or False") != std::string::npos);
  CHECK(diag("    store(X + r, softmax(1.0))\n").find("softmax() needs a tile") != std::string::npos);
}
