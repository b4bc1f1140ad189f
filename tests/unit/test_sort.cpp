// sort, argsort and topk: 1-D and 2-D tiles along either axis, ascending and
// descending, on f32 keys with ties and NaNs, on signed, unsigned and 16-bit
// keys. Compared exactly with C++'s std::stable_sort on fresh random inputs
// (ties keep their order, NaN above +inf), in the interpreter and, when
// there is one, on the GPU; compiles for sm_80 and sm_90a; bad arguments are
// diagnostics.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/Half.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def sorts(X: *f32, S: *f32, D: *f32, I: *i32, Rows: *f32, Cols: *i32, Top: *f32,
          U: *u32, US: *u32, H: *f16, HS: *f16, N: constexpr = 1024):
    r = arange(0, N)
    x = load(X + r)
    store(S + r, sort(x))
    store(D + r, sort(x, descending=True))
    store(I + r, argsort(x, descending=True))
    offs = arange(0, 32)[:, None] * 32 + arange(0, 32)[None, :]
    m = load(X + offs)
    store(Rows + offs, sort(m))
    store(Cols + offs, argsort(m, 0))
    store(Top + arange(0, 32)[:, None] * 8 + arange(0, 8)[None, :], topk(m, 8))
    u = load(U + arange(0, 256))
    store(US + arange(0, 256), sort(u, descending=True))
    h = load(H + arange(0, 128))
    store(HS + arange(0, 128), sort(h))
)";

// NaN above everything; ties keep their order (stable).
bool fless(float a, float b) { return a < b || (!std::isnan(a) && std::isnan(b)); }

template <class T, class Less>
std::vector<int> stableOrder(const std::vector<T> &v, size_t first, size_t n, size_t step,
                             bool descending, Less less) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](int p, int q) {
    const T &a = v[first + size_t(p) * step], &b = v[first + size_t(q) * step];
    return descending ? less(b, a) : less(a, b);
  });
  return o;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

void checkSorts(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const int N = 1024;
  std::vector<float> x = rng.uniform(size_t(N), -1.0f, 1.0f);
  for (int i = 0; i < N; i += 7)
    x[size_t(i)] = float(rng.range(-3, 3)); // many ties
  x[size_t(rng.range(0, N - 1))] = std::nanf("");
  x[size_t(rng.range(0, N - 1))] = -INFINITY;
  std::vector<uint32_t> u(256);
  for (auto &v : u)
    v = rng.rng() | (rng.rng() & 1 ? 0x80000000u : 0u);
  std::vector<f16> h(128);
  std::vector<float> hf = rng.uniform(128, -4.0f, 4.0f);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = f16(hf[i]);

  Kernel k = compileString(ctx, kSource, "sort.tile", "sorts");
  auto xd = ctx.upload(x);
  auto ud = ctx.upload(u);
  auto hd = ctx.upload(h);
  auto s = ctx.alloc<float>(N), d = ctx.alloc<float>(N), rows = ctx.alloc<float>(N);
  auto top = ctx.alloc<float>(32 * 8);
  auto idx = ctx.alloc<int32_t>(N), cols = ctx.alloc<int32_t>(N);
  auto us = ctx.alloc<uint32_t>(256);
  auto hs = ctx.alloc<f16>(128);
  k.launch(ctx.stream(), Grid{1}, xd, s, d, idx, rows, cols, top, ud, us, hd, hs);
  auto S = s.toHost(), D = d.toHost(), Rows = rows.toHost(), Top = top.toHost();
  auto I = idx.toHost(), Cols = cols.toHost();
  auto US = us.toHost();
  auto HS = hs.toHost();

  size_t wrong = 0;
  auto asc = stableOrder(x, 0, N, 1, false, fless), desc = stableOrder(x, 0, N, 1, true, fless);
  for (int i = 0; i < N; ++i) {
    wrong += !sameBits(S[size_t(i)], x[size_t(asc[size_t(i)])]);
    wrong += !sameBits(D[size_t(i)], x[size_t(desc[size_t(i)])]);
    wrong += I[size_t(i)] != desc[size_t(i)]; // argsort: stable positions
  }
  INFO("1-D wrong " << wrong);
  CHECK(wrong == 0);
  wrong = 0;
  for (int r = 0; r < 32; ++r) {
    auto o = stableOrder(x, size_t(r) * 32, 32, 1, false, fless);
    auto t = stableOrder(x, size_t(r) * 32, 32, 1, true, fless);
    for (int c = 0; c < 32; ++c)
      wrong += !sameBits(Rows[size_t(r * 32 + c)], x[size_t(r * 32 + o[size_t(c)])]);
    for (int c = 0; c < 8; ++c)
      wrong += !sameBits(Top[size_t(r * 8 + c)], x[size_t(r * 32 + t[size_t(c)])]);
  }
  for (int c = 0; c < 32; ++c) {
    auto o = stableOrder(x, size_t(c), 32, 32, false, fless);
    for (int r = 0; r < 32; ++r)
      wrong += Cols[size_t(r * 32 + c)] != o[size_t(r)];
  }
  INFO("2-D wrong " << wrong);
  CHECK(wrong == 0);
  std::vector<uint32_t> uref = u;
  std::sort(uref.begin(), uref.end(), std::greater<uint32_t>());
  CHECK(US == uref); // unsigned keys compare unsigned
  // The f16 keys are the rounded values: sort those.
  std::vector<f16> href(128);
  std::vector<float> hr(128);
  for (size_t i = 0; i < 128; ++i)
    hr[i] = h[i].toFloat();
  auto hro = stableOrder(hr, 0, 128, 1, false, fless);
  for (size_t i = 0; i < 128; ++i)
    href[i] = h[size_t(hro[i])];
  CHECK(HS == href);
}

} // namespace

TEST_CASE("sort, argsort and topk (interpreter)", "[language][interp][sort]") {
  Context ctx(createInterpreterBackend());
  checkSorts(ctx);
}

TEST_CASE("sort, argsort and topk (GPU)", "[language][gpu][sort]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkSorts(*ctx);
}

TEST_CASE("sorts compile for sm_80 and sm_90a", "[language][sort]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(kSource, "sort.tile", "sorts", o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    CHECK(r.ok);
  }
}

TEST_CASE("sort: bad arguments are diagnostics", "[language][sort]") {
  auto diag = [](const std::string &body) {
    std::string src = "@kernel\ndef k(X: *f32):\n    x = load(X + arange(0, 32))\n" + body;
    CompileResult r = compileSource(src, "s.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    store(X, topk(x, 3))\n").find("topk() k must be a power of two from 1 to 32, got 3") !=
        std::string::npos);
  CHECK(diag("    store(X, topk(x, 64))\n").find("got 64") != std::string::npos);
  CHECK(diag("    store(X + arange(0, 32), sort(x, descending=1))\n")
            .find("sort() descending must be True or False") != std::string::npos);
  CHECK(diag("    store(X + arange(0, 32), sort(x > 0))\n").find("sort() sorts numbers") !=
        std::string::npos);
  CHECK(diag("    store(X + arange(0, 32), sort(x, 1))\n").find("s.tile:4:") != std::string::npos);
}
