// break, continue, range() with a run-time step, max/min of run-time scalars
// and where() on a number or pointer condition: run in the CPU interpreter on
// fresh random inputs and checked against C++ references written here; each
// kernel also compiles to PTX for sm_80 and sm_90a.
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tessera;
using tessera::testing::Seeded;

namespace {

void compilesForGpu(const char *src, const std::string &kernel) {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(src, "cf.tile", kernel, o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    CHECK(r.ok);
    CHECK(r.ptx.find(".entry " + kernel) != std::string::npos);
  }
}

const char *kSearch = R"(
@kernel
def search(X: *i32, Out: *i32, n: i32, limit: i32):
    found = -1
    s = 0
    skipped = 0
    for i in range(0, n):
        v = load(X + i)
        if v % 3 == 0:
            skipped += 1
            continue
        s += v
        if s > limit:
            found = i
            break
        s += 1
    store(Out, found)
    store(Out + 1, s)
    store(Out + 2, skipped)
)";

} // namespace

TEST_CASE("break and continue in a for loop", "[language][interp][control]") {
  Seeded r;
  INFO("seed " << r.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, kSearch, "cf.tile", "search");
  for (int trial = 0; trial < 20; ++trial) {
    int n = r.range(0, 40), limit = r.range(-5, 400);
    std::vector<int32_t> x(size_t(n) + 1);
    for (auto &v : x)
      v = r.range(-10, 30);
    // Reference: the same loop in C++.
    int found = -1, s = 0, skipped = 0;
    for (int i = 0; i < n; ++i) {
      int v = x[size_t(i)];
      if (v % 3 == 0) {
        ++skipped;
        continue;
      }
      s += v;
      if (s > limit) {
        found = i;
        break;
      }
      s += 1;
    }
    auto xd = ctx.upload(x);
    auto out = ctx.alloc<int32_t>(3);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), out.ptr(), n, limit);
    auto h = out.toHost();
    INFO("n " << n << " limit " << limit);
    CHECK(h[0] == found);
    CHECK(h[1] == s);
    CHECK(h[2] == skipped);
  }
  compilesForGpu(kSearch, "search");
}

TEST_CASE("break and continue in while loops and nested loops", "[language][interp][control]") {
  const char *src = R"(
@kernel
def nested(X: *i32, Out: *i32, rows: i32, cols: i32, stop: i32):
    total = 0
    r = 0
    while r < rows:
        r += 1
        if r == stop:
            continue
        for c in range(0, cols):
            v = load(X + (r - 1) * cols + c)
            if v < 0:
                break
            total += v
        if total > 1000:
            break
    store(Out, total)
    store(Out + 1, r)
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "cf.tile", "nested");
  for (int trial = 0; trial < 20; ++trial) {
    int rows = rng.range(0, 12), cols = rng.range(1, 12), stop = rng.range(0, 12);
    std::vector<int32_t> x(size_t(rows * cols) + 1);
    for (auto &v : x)
      v = rng.range(-3, 40);
    int total = 0, r = 0;
    while (r < rows) {
      r += 1;
      if (r == stop)
        continue;
      for (int c = 0; c < cols; ++c) {
        int v = x[size_t((r - 1) * cols + c)];
        if (v < 0)
          break;
        total += v;
      }
      if (total > 1000)
        break;
    }
    auto xd = ctx.upload(x);
    auto out = ctx.alloc<int32_t>(2);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), out.ptr(), rows, cols, stop);
    auto h = out.toHost();
    INFO("rows " << rows << " cols " << cols << " stop " << stop);
    CHECK(h[0] == total);
    CHECK(h[1] == r);
  }
  compilesForGpu(src, "nested");
}

TEST_CASE("a while loop with break does not evaluate its condition again",
          "[language][interp][control]") {
  // After the break the condition would read X[n], past the buffer: the
  // interpreter checks every access, so evaluating it would fail the launch.
  const char *src = R"(
@kernel
def scan(X: *i32, Out: *i32, n: i32):
    i = 0
    while load(X + i) >= 0:
        i += 1
        if i == n:
            break
    store(Out, i)
)";
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "cf.tile", "scan");
  auto x = ctx.upload(std::vector<int32_t>{4, 5, 6, 7});
  auto out = ctx.alloc<int32_t>(1);
  k.launch(ctx.stream(), Grid{1}, x.ptr(), out.ptr(), 4);
  CHECK(out.toHost()[0] == 4);
  compilesForGpu(src, "scan");
}

TEST_CASE("break carries tiles and stops a static_range", "[language][interp][control]") {
  const char *src = R"(
@kernel
def rows_until(X: *f32, Out: *f32, n: i32, thresh: f32, B: constexpr = 16):
    cols = arange(0, B)
    acc = zeros((B,), f32)
    used = 0
    for r in range(0, n):
        row = load(X + r * B + cols)
        if max(row, 0) > thresh:
            break
        acc += row
        used += 1
    k = 0
    for j in static_range(0, 8):
        if j * 10 >= n:
            break
        k += 1
    store(Out + cols, acc)
    store(Out + B, used.to(f32))
    store(Out + B + 1, k.to(f32))
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "cf.tile", "rows_until");
  for (int trial = 0; trial < 10; ++trial) {
    int n = rng.range(0, 20);
    float thresh = 0.9f + 0.1f * float(rng.range(0, 2));
    std::vector<float> x = rng.uniform(size_t(n * 16 + 1));
    std::vector<float> acc(16, 0.0f);
    int used = 0;
    for (int r = 0; r < n; ++r) {
      float mx = *std::max_element(x.begin() + r * 16, x.begin() + r * 16 + 16);
      if (mx > thresh)
        break;
      for (int c = 0; c < 16; ++c)
        acc[size_t(c)] += x[size_t(r * 16 + c)];
      ++used;
    }
    int kk = 0;
    for (int j = 0; j < 8 && j * 10 < n; ++j)
      ++kk;
    auto xd = ctx.upload(x);
    auto out = ctx.alloc<float>(18);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), out.ptr(), n, thresh);
    auto h = out.toHost();
    INFO("n " << n);
    for (int c = 0; c < 16; ++c)
      CHECK(h[size_t(c)] == acc[size_t(c)]); // same additions in the same order
    CHECK(h[16] == float(used));
    CHECK(h[17] == float(kk));
  }
  compilesForGpu(src, "rows_until");
}

TEST_CASE("range() with a run-time step counts as Python does", "[language][interp][control]") {
  const char *src = R"(
@kernel
def steps(Out: *i32, lo: i32, hi: i32, step: i32):
    count = 0
    last = -999
    acc = 0
    for i in range(lo, hi, step):
        count += 1
        last = i
        acc = acc * 3 + i
    store(Out, count)
    store(Out + 1, last)
    store(Out + 2, acc)
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "cf.tile", "steps");
  auto out = ctx.alloc<int32_t>(3);
  for (int trial = 0; trial < 60; ++trial) {
    int lo = rng.range(-20, 20), hi = rng.range(-20, 20), step = rng.range(-7, 7);
    // Python's range; a zero step runs no iteration (Python raises instead).
    int count = 0, last = -999, acc = 0;
    for (int i = lo; step > 0 ? i < hi : step < 0 ? i > hi : false; i += step) {
      ++count;
      last = i;
      acc = acc * 3 + i;
    }
    k.launch(ctx.stream(), Grid{1}, out.ptr(), lo, hi, step);
    auto h = out.toHost();
    INFO("range(" << lo << ", " << hi << ", " << step << ")");
    CHECK(h[0] == count);
    CHECK(h[1] == last);
    CHECK(h[2] == acc);
  }
  compilesForGpu(src, "steps");
}

TEST_CASE("max/min of run-time scalars and where() on numbers and pointers",
          "[language][interp][control]") {
  const char *src = R"(
@kernel
def pick(X: *i32, P: *f32, Out: *i32, F: *f32, a: i32, b: i32, u: u8, BLOCK: constexpr = 16):
    store(Out, max(a, b))
    store(Out + 1, min(a, b))
    store(Out + 2, max(a, 3))
    store(Out + 3, min(7, b))
    store(Out + 4, max(u, 200).to(i32))
    offs = arange(0, BLOCK)
    x = load(X + offs)
    store(Out + 8 + offs, where(x, 1, 2))
    store(Out + 8 + BLOCK + offs, where(x & 1, x, -x))
    p = where(a, P, P + 1)
    store(F, load(p))
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "cf.tile", "pick");
  for (int trial = 0; trial < 10; ++trial) {
    int a = rng.range(-5, 5), b = rng.range(-5, 5);
    uint8_t u = uint8_t(rng.range(0, 255));
    std::vector<int32_t> x(16);
    for (auto &v : x)
      v = rng.range(-3, 3);
    auto xd = ctx.upload(x);
    auto pd = ctx.upload(std::vector<float>{10.5f, 20.5f});
    auto out = ctx.alloc<int32_t>(8 + 32);
    auto f = ctx.alloc<float>(1);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), pd.ptr(), out.ptr(), f.ptr(), a, b, u);
    auto h = out.toHost();
    INFO("a " << a << " b " << b << " u " << int(u));
    CHECK(h[0] == std::max(a, b));
    CHECK(h[1] == std::min(a, b));
    CHECK(h[2] == std::max(a, 3));
    CHECK(h[3] == std::min(7, b));
    CHECK(h[4] == std::max<int>(u, 200)); // unsigned compare
    for (size_t i = 0; i < 16; ++i) {
      CHECK(h[8 + i] == (x[i] != 0 ? 1 : 2));
      CHECK(h[24 + i] == ((x[i] & 1) != 0 ? x[i] : -x[i]));
    }
    CHECK(f.toHost()[0] == (a != 0 ? 10.5f : 20.5f));
  }
  compilesForGpu(src, "pick");
}

TEST_CASE("break and continue misuse is reported with the spot", "[language][control]") {
  auto errorOf = [](const char *src) {
    CompileResult r = compileSource(src, "e.tile", "", {}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(errorOf("@kernel\ndef k(X: *i32):\n    break\n") ==
        "e.tile:3:5: error: 'break' outside a loop\n"
        "        break\n"
        "        ^\n");
  CHECK(errorOf("@func\ndef h():\n    continue\n\n@kernel\ndef k(n: i32):\n"
                "    for i in range(0, n):\n        h()\n")
            .find("e.tile:3:5: error: 'continue' outside a loop (a helper cannot leave its "
                  "caller's loop)") != std::string::npos);
  CHECK(errorOf("@kernel\ndef k(n: i32):\n    for i in range(0, n, 0):\n        pass\n")
            .find("e.tile:3:26: error: range() step must not be zero") != std::string::npos);
}
