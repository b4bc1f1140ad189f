// Unsigned integers (u16, u32, u64) and umulhi: C semantics in the CPU
// interpreter on fresh random inputs, checked against C++ computing the same
// expressions on uint16_t/uint32_t/uint64_t; the kernels also compile to PTX
// for sm_80 and sm_90a.
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tessera;
using tessera::testing::Seeded;

namespace {

void compilesForGpu(const char *src, const std::string &kernel,
                    const std::map<std::string, ConstexprValue> &constexprs = {}) {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    o.constexprs = constexprs;
    CompileResult r = compileSource(src, "u.tile", kernel, o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    CHECK(r.ok);
  }
}

uint64_t bits64(std::mt19937 &rng) { return (uint64_t(rng()) << 32) | rng(); }

} // namespace

TEST_CASE("u32 arithmetic, shifts, division and comparisons are unsigned", "[language][interp][unsigned]") {
  const char *src = R"(
@kernel
def ops(X: *u32, Y: *u32, Out: *u32, Cmp: *i32, s: u32, BLOCK: constexpr = 64):
    r = arange(0, BLOCK)
    x = load(X + r)
    y = load(Y + r)
    store(Out + 0 * BLOCK + r, x // y)
    store(Out + 1 * BLOCK + r, x % y)
    store(Out + 2 * BLOCK + r, x >> 7)
    store(Out + 3 * BLOCK + r, x * y + s)
    store(Out + 4 * BLOCK + r, x - y)
    store(Out + 5 * BLOCK + r, maximum(x, y))
    store(Out + 6 * BLOCK + r, umulhi(x, y))
    store(Out + 7 * BLOCK + r, -x)
    store(Cmp + r, (x < y).to(i32) + 2 * (x >= s).to(i32))
    store(Cmp + BLOCK + r, (x > 4000000000).to(i32))
    store(Out + 8 * BLOCK, max(x, 0))
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "u.tile", "ops");
  const int B = 64;
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<uint32_t> x(B), y(B);
    for (int i = 0; i < B; ++i) {
      x[size_t(i)] = rng.rng();
      y[size_t(i)] = i % 4 == 0 ? rng.rng() % 100 + 1 : rng.rng() | 1; // small and huge divisors
    }
    uint32_t s = rng.rng();
    auto xd = ctx.upload(x), yd = ctx.upload(y);
    auto out = ctx.alloc<uint32_t>(8 * B + 1);
    auto cmp = ctx.alloc<int32_t>(2 * B);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), yd.ptr(), out.ptr(), cmp.ptr(), s);
    auto h = out.toHost();
    auto c = cmp.toHost();
    uint32_t mx = 0;
    for (size_t i = 0; i < size_t(B); ++i) {
      uint32_t a = x[i], b = y[i];
      INFO("a " << a << " b " << b << " s " << s);
      CHECK(h[0 * B + i] == a / b);
      CHECK(h[1 * B + i] == a % b);
      CHECK(h[2 * B + i] == a >> 7);
      CHECK(h[3 * B + i] == uint32_t(a * b + s));
      CHECK(h[4 * B + i] == uint32_t(a - b));
      CHECK(h[5 * B + i] == std::max(a, b));
      CHECK(h[6 * B + i] == uint32_t((uint64_t(a) * b) >> 32));
      CHECK(h[7 * B + i] == uint32_t(0u - a));
      CHECK(c[i] == int(a < b) + 2 * int(a >= s));
      CHECK(c[B + i] == int(a > 4000000000u));
      mx = std::max(mx, a);
    }
    CHECK(h[8 * B] == mx); // unsigned max reduction
  }
  compilesForGpu(src, "ops");
}

TEST_CASE("u16 and u64 arithmetic and umulhi on every integer type", "[language][interp][unsigned]") {
  const char *src = R"(
@kernel
def wide(A: *u64, B: *u64, H: *u16, G: *u16, I: *i32, J: *i32, O64: *u64, O16: *u16, OI: *i32, BLOCK: constexpr = 32):
    r = arange(0, BLOCK)
    a = load(A + r)
    b = load(B + r)
    store(O64 + 0 * BLOCK + r, umulhi(a, b))
    store(O64 + 1 * BLOCK + r, a // b)
    store(O64 + 2 * BLOCK + r, a % b)
    store(O64 + 3 * BLOCK + r, a >> 33)
    store(O64 + 4 * BLOCK + r, (a < b).to(u64))
    h = load(H + r)
    g = load(G + r)
    store(O16 + 0 * BLOCK + r, umulhi(h, g))
    store(O16 + 1 * BLOCK + r, h // g)
    store(O16 + 2 * BLOCK + r, h >> 3)
    store(O16 + 3 * BLOCK + r, h + g)
    i = load(I + r)
    j = load(J + r)
    store(OI + r, umulhi(i, j))
    store(OI + BLOCK + r, h.to(i32) - g.to(i32))
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "u.tile", "wide");
  const int B = 32;
  std::vector<uint64_t> a(B), b(B);
  std::vector<uint16_t> h(B), g(B);
  std::vector<int32_t> i32a(B), i32b(B);
  for (size_t i = 0; i < size_t(B); ++i) {
    a[i] = bits64(rng.rng);
    b[i] = i % 3 == 0 ? bits64(rng.rng) >> (rng.rng() % 64) | 1 : bits64(rng.rng) | 1;
    h[i] = uint16_t(rng.rng());
    g[i] = uint16_t(rng.rng() | 1);
    i32a[i] = int32_t(rng.rng());
    i32b[i] = int32_t(rng.rng());
  }
  auto ad = ctx.upload(a), bd = ctx.upload(b);
  auto hd = ctx.upload(h), gd = ctx.upload(g);
  auto id = ctx.upload(i32a), jd = ctx.upload(i32b);
  auto o64 = ctx.alloc<uint64_t>(5 * B);
  auto o16 = ctx.alloc<uint16_t>(4 * B);
  auto oi = ctx.alloc<int32_t>(2 * B);
  k.launch(ctx.stream(), Grid{1}, ad.ptr(), bd.ptr(), hd.ptr(), gd.ptr(), id.ptr(), jd.ptr(),
           o64.ptr(), o16.ptr(), oi.ptr());
  auto r64 = o64.toHost();
  auto r16 = o16.toHost();
  auto ri = oi.toHost();
  for (size_t i = 0; i < size_t(B); ++i) {
    INFO("a " << a[i] << " b " << b[i] << " h " << h[i] << " g " << g[i]);
    CHECK(r64[0 * B + i] == uint64_t((unsigned __int128)a[i] * b[i] >> 64));
    CHECK(r64[1 * B + i] == a[i] / b[i]);
    CHECK(r64[2 * B + i] == a[i] % b[i]);
    CHECK(r64[3 * B + i] == a[i] >> 33);
    CHECK(r64[4 * B + i] == uint64_t(a[i] < b[i]));
    CHECK(r16[0 * B + i] == uint16_t((uint32_t(h[i]) * g[i]) >> 16));
    CHECK(r16[1 * B + i] == uint16_t(h[i] / g[i]));
    CHECK(r16[2 * B + i] == uint16_t(h[i] >> 3));
    CHECK(r16[3 * B + i] == uint16_t(h[i] + g[i]));
    // umulhi on i32 reads the bits as unsigned, as Triton's does
    CHECK(uint32_t(ri[i]) == uint32_t((uint64_t(uint32_t(i32a[i])) * uint32_t(i32b[i])) >> 32));
    CHECK(ri[B + i] == int32_t(h[i]) - int32_t(g[i])); // u16 zero-extends
  }
  compilesForGpu(src, "wide");
}

TEST_CASE("conversions between signed, unsigned and float follow C", "[language][interp][unsigned]") {
  const char *src = R"(
@kernel
def conv(X: *u32, S: *i8, F: *f32, OF: *f32, OU: *u32, O64: *i64, O8: *u8, BLOCK: constexpr = 32):
    r = arange(0, BLOCK)
    x = load(X + r)
    s = load(S + r)
    f = load(F + r)
    store(OF + r, x.to(f32))
    store(OU + r, f.to(u32))
    store(OU + BLOCK + r, s.to(u32))
    store(OU + 2 * BLOCK + r, bitcast(x.to(i32) >> 1, u32))
    store(O64 + r, x.to(i64))
    store(O64 + BLOCK + r, x.to(u64).to(i64) * 2)
    store(O8 + r, x.to(u8))
    store(OF + BLOCK + r, (x + 1 > x).to(f32))
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "u.tile", "conv");
  const int B = 32;
  std::vector<uint32_t> x(B);
  std::vector<int8_t> s(B);
  std::vector<float> f(B);
  for (size_t i = 0; i < size_t(B); ++i) {
    x[i] = rng.rng();
    s[i] = int8_t(rng.rng());
    f[i] = float(rng.rng() % 4000000000u) + 0.75f; // in range: C's conversion truncates
  }
  x[0] = 0xffffffffu;
  auto xd = ctx.upload(x);
  auto sd = ctx.upload(s);
  auto fd = ctx.upload(f);
  auto of = ctx.alloc<float>(2 * B);
  auto ou = ctx.alloc<uint32_t>(3 * B);
  auto o64 = ctx.alloc<int64_t>(2 * B);
  auto o8 = ctx.alloc<uint8_t>(B);
  k.launch(ctx.stream(), Grid{1}, xd.ptr(), sd.ptr(), fd.ptr(), of.ptr(), ou.ptr(), o64.ptr(), o8.ptr());
  auto rf = of.toHost();
  auto ru = ou.toHost();
  auto r64 = o64.toHost();
  auto r8 = o8.toHost();
  for (size_t i = 0; i < size_t(B); ++i) {
    INFO("x " << x[i] << " s " << int(s[i]) << " f " << f[i]);
    CHECK(rf[i] == float(x[i]));
    CHECK(ru[i] == uint32_t(f[i]));
    CHECK(ru[B + i] == uint32_t(int32_t(s[i]))); // sign-extends, then reinterprets
    CHECK(ru[2 * B + i] == uint32_t(int32_t(x[i]) >> 1)); // arithmetic shift on i32
    CHECK(r64[i] == int64_t(x[i]));                         // zero-extends
    CHECK(r64[B + i] == int64_t(x[i]) * 2);
    CHECK(r8[i] == uint8_t(x[i]));
    CHECK(rf[B + i] == float(uint32_t(x[i] + 1) > x[i])); // wraps at 2^32
  }
}

TEST_CASE("u32 kernel parameters, type constexprs and pointer offsets", "[language][interp][unsigned]") {
  const char *src = R"(
@kernel
def param(X: *T, Out: *T, off: u32, scale: T, T: constexpr = u32, BLOCK: constexpr = 16):
    r = arange(0, BLOCK).to(T)
    x = load(X + off + r)
    store(Out + r, x * scale + off)
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, src, "u.tile", "param", {{"T", DType{ScalarType::u32, 0}}});
  std::vector<uint32_t> x(40);
  for (auto &v : x)
    v = rng.rng();
  uint32_t off = rng.rng() % 24, scale = rng.rng() | 0x80000000u;
  auto xd = ctx.upload(x);
  auto out = ctx.alloc<uint32_t>(16);
  k.launch(ctx.stream(), Grid{1}, xd.ptr(), out.ptr(), off, scale);
  auto h = out.toHost();
  for (size_t i = 0; i < 16; ++i)
    CHECK(h[i] == uint32_t(x[off + i] * scale + off));
  compilesForGpu(src, "param", {{"T", DType{ScalarType::u32, 0}}});
  compilesForGpu(src, "param", {{"T", DType{ScalarType::u16, 0}}});

  // A u32 offset is widened to i64 with a zero extension: offsets past 2^31 stay positive.
  CompileResult r = compileSource(src, "u.tile", "param", {}, Stage::Tile);
  REQUIRE(r.ok);
  CHECK(r.tileIR.find("arith.extui") != std::string::npos);
  CHECK(r.tileIR.find("to i64") != std::string::npos);
  CHECK(parseDType("u32") == DType{ScalarType::u32, 0});
  CHECK(parseDType("*u64") == DType{ScalarType::u64, 1});
  CHECK(parseConstexpr("u16") == ConstexprValue(DType{ScalarType::u16, 0}));
}

TEST_CASE("unsigned misuse is reported", "[language][unsigned]") {
  auto errorOf = [](const char *src) {
    CompileResult r = compileSource(src, "e.tile", "", {}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(errorOf("@kernel\ndef k(X: *u32, n: u32):\n    store(X, n + -1)\n")
            .find("e.tile:3:18: error: integer -1 does not fit in u32") != std::string::npos);
  CHECK(errorOf("@kernel\ndef k(X: *f32, n: f32):\n    store(X, umulhi(n, n))\n")
            .find("e.tile:3:14: error: umulhi() needs integer operands, got f32") !=
        std::string::npos);
}
