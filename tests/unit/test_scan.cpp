// Scans (Triton's tl.cumsum, tl.cumprod, tl.associative_scan): running sums
// and products along each axis of 1-D and 2-D tiles, forward and reversed,
// narrow types accumulating in 32 bits, and a non-commutative combine over a
// pair of tiles (the first-order recurrence h = a * h + x, whose order
// matters), inside a loop too. Checked against C++ in double precision on
// fresh random inputs, in the interpreter and, when there is one, on the GPU;
// the kernels compile for sm_80 and sm_90a; bad arguments are diagnostics.
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
def affine(a1, b1, a2, b2):
    # (a1, b1) then (a2, b2): h -> a2 * (a1 * h + b1) + b2
    return a1 * a2, b1 * a2 + b2

@kernel
def scans(X: *f32, A: *f32, Sums: *f32, Rows: *f32, Cols: *f32, Prod: *f32, Rec: *f32,
          Bytes: *i32, N: constexpr = 512):
    r = arange(0, N)
    x = load(X + r)
    store(Sums + r, cumsum(x))
    store(Sums + N + r, cumsum(x, reverse=True))
    m = load(X + arange(0, 16)[:, None] * 32 + arange(0, 32)[None, :])
    offs = arange(0, 16)[:, None] * 32 + arange(0, 32)[None, :]
    store(Rows + offs, cumsum(m, axis=1))
    store(Cols + offs, cumsum(m, axis=0, reverse=True))
    store(Prod + offs, cumprod(1.0 + 0.1 * m, axis=1))
    a = load(A + r)
    ha, hb = associative_scan((a, x), 0, affine)
    store(Rec + r, hb)
    ra, rb = associative_scan((a, x), 0, affine, reverse=True)
    store(Rec + N + r, rb)
    store(Bytes + r, cumsum((x > 0).to(i8)))

@kernel
def chunks(X: *f32, A: *f32, H: *f32, n: i32, BLOCK: constexpr = 128):
    # The recurrence over n elements in chunks: each chunk's scan starts
    # from the carried state (the last h of the previous chunk).
    h = 0.0
    for start in range(0, n, BLOCK):
        r = start + arange(0, BLOCK)
        a = load(A + r, mask=r < n, other=1.0)
        x = load(X + r, mask=r < n, other=0.0)
        pa, pb = associative_scan((a, x), 0, affine)
        hs = pa * h + pb
        store(H + r, hs, mask=r < n)
        h = sum(where(arange(0, BLOCK) == BLOCK - 1, hs, 0.0))
)";

void checkScans(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const int N = 512, R = 16, C = 32;
  std::vector<float> x = rng.uniform(size_t(N), -1.0f, 1.0f);
  std::vector<float> a = rng.uniform(size_t(N), -1.0f, 1.0f);
  Kernel k = compileString(ctx, kSource, "scan.tile", "scans");
  auto xd = ctx.upload(x), ad = ctx.upload(a);
  auto sums = ctx.alloc<float>(2 * N), rows = ctx.alloc<float>(R * C), cols = ctx.alloc<float>(R * C);
  auto prod = ctx.alloc<float>(R * C), rec = ctx.alloc<float>(2 * N);
  auto bytes = ctx.alloc<int32_t>(N);
  k.launch(ctx.stream(), Grid{1}, xd, ad, sums, rows, cols, prod, rec, bytes);
  auto hs = sums.toHost(), hr = rows.toHost(), hc = cols.toHost(), hp = prod.toHost();
  auto hrec = rec.toHost();
  auto hb = bytes.toHost();
  // Relative errors against double-precision references.
  double errSum = 0, errRows = 0, errCols = 0, errProd = 0, errRec = 0;
  auto rel = [](double got, double want, double scale) { return std::fabs(got - want) / scale; };
  double s = 0, t = 0;
  for (int i = 0; i < N; ++i) {
    s += x[size_t(i)];
    t += x[size_t(N - 1 - i)];
    errSum = std::max(errSum, rel(hs[size_t(i)], s, 1.0 + std::fabs(s)));
    errSum = std::max(errSum, rel(hs[size_t(N + N - 1 - i)], t, 1.0 + std::fabs(t)));
  }
  for (int r = 0; r < R; ++r) {
    double acc = 0, p = 1;
    for (int c = 0; c < C; ++c) {
      acc += x[size_t(r * C + c)];
      p *= 1.0 + 0.1 * double(x[size_t(r * C + c)]);
      errRows = std::max(errRows, rel(hr[size_t(r * C + c)], acc, 1.0 + std::fabs(acc)));
      errProd = std::max(errProd, rel(hp[size_t(r * C + c)], p, std::fabs(p)));
    }
  }
  for (int c = 0; c < C; ++c) {
    double acc = 0;
    for (int r = R - 1; r >= 0; --r) {
      acc += x[size_t(r * C + c)];
      errCols = std::max(errCols, rel(hc[size_t(r * C + c)], acc, 1.0 + std::fabs(acc)));
    }
  }
  // h_j = a_j * h_{j-1} + x_j from h = 0; reversed: from the end.
  double h = 0, g = 0;
  for (int i = 0; i < N; ++i) {
    h = a[size_t(i)] * h + x[size_t(i)];
    errRec = std::max(errRec, rel(hrec[size_t(i)], h, 1.0 + std::fabs(h)));
    int j = N - 1 - i;
    g = a[size_t(j)] * g + x[size_t(j)];
    errRec = std::max(errRec, rel(hrec[size_t(N + j)], g, 1.0 + std::fabs(g)));
  }
  int32_t positives = 0;
  size_t wrongBytes = 0;
  for (int i = 0; i < N; ++i) {
    positives += x[size_t(i)] > 0;
    wrongBytes += hb[size_t(i)] != positives;
  }
  INFO("relative errors: cumsum " << errSum << ", rows " << errRows << ", cols " << errCols
                                  << ", cumprod " << errProd << ", recurrence " << errRec);
  CHECK(errSum < 1e-5);
  CHECK(errRows < 1e-5);
  CHECK(errCols < 1e-5);
  CHECK(errProd < 1e-5);
  CHECK(errRec < 1e-5);
  CHECK(wrongBytes == 0); // i8 counts accumulate in i32, exactly

  // The chunked recurrence, with a ragged last chunk.
  const int n = 1000;
  std::vector<float> xs = rng.uniform(size_t(n), -1.0f, 1.0f), as = rng.uniform(size_t(n), -0.9f, 0.9f);
  Kernel ck = compileString(ctx, kSource, "scan.tile", "chunks");
  auto xsd = ctx.upload(xs), asd = ctx.upload(as);
  auto hd = ctx.alloc<float>(n);
  ck.launch(ctx.stream(), Grid{1}, xsd, asd, hd, int32_t(n));
  auto hh = hd.toHost();
  double hc2 = 0, errChunks = 0;
  for (int i = 0; i < n; ++i) {
    hc2 = as[size_t(i)] * hc2 + xs[size_t(i)];
    errChunks = std::max(errChunks, rel(hh[size_t(i)], hc2, 1.0 + std::fabs(hc2)));
  }
  INFO("chunked recurrence relative error " << errChunks);
  CHECK(errChunks < 1e-5);
}

} // namespace

TEST_CASE("scans: cumsum, cumprod and associative_scan (interpreter)", "[language][interp][scan]") {
  Context ctx(createInterpreterBackend());
  checkScans(ctx);
}

TEST_CASE("scans: cumsum, cumprod and associative_scan (GPU)", "[language][gpu][scan]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkScans(*ctx);
}

TEST_CASE("scans compile for sm_80 and sm_90a", "[language][scan]") {
  for (const char *arch : {"sm_80", "sm_90a"})
    for (const char *kernel : {"scans", "chunks"}) {
      CompileOptions o;
      o.target = *Target::parse(arch);
      CompileResult r = compileSource(kSource, "scan.tile", kernel, o, Stage::PTX);
      INFO(arch << " " << kernel << "\n" << r.diagnostics);
      CHECK(r.ok);
    }
}

TEST_CASE("scans: bad arguments are diagnostics", "[language][scan]") {
  auto diag = [](const std::string &body) {
    std::string src = "@func\ndef two(a, b):\n    return a, b\n\n@kernel\ndef k(X: *f32):\n"
                      "    x = load(X + arange(0, 32))\n" + body;
    CompileResult r = compileSource(src, "s.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    store(X, associative_scan(x, 0, 3))\n").find("combine_fn must be a @func") !=
        std::string::npos);
  CHECK(diag("    store(X, associative_scan(x, 0, two))\n")
            .find("associative_scan() combine_fn must return 1 value, got 2") != std::string::npos);
  CHECK(diag("    store(X, cumsum(x, reverse=1))\n").find("cumsum() reverse must be True or False") !=
        std::string::npos);
  CHECK(diag("    store(X, cumsum(x, axis=1))\n").find("s.tile:8:") != std::string::npos);
  CHECK(diag("    store(X + arange(0, 32), cumsum(X))\n").find("s.tile:8:") != std::string::npos);
}
