// 8-bit floats (f8e4m3, f8e5m2): the host conversions of tessera/Float8.h
// against a brute-force nearest-value search; conversions, arithmetic (in
// f32) and dot in the CPU interpreter; on the GPU, the cvt conversions bit
// for bit against the host's and the fp8 tensor-core matmul
// (kernels_dsl/basics/scaled_matmul.tile) against fp64, at ragged and
// aligned shapes, e4m3 and e5m2 mixed. GPU cases skip visibly without one.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "support/Reference.h"
#include "tessera/Compiler.h"
#include "tessera/Float8.h"
#include "tessera/JIT.h"
#include "tessera/KernelLibrary.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace tessera;
using tessera::testing::Seeded;

namespace {

struct Format {
  const char *name;
  int mbits, ebits;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
  bool hasInf; // e5m2; e4m3 has no infinities, only 0x7F/0xFF as NaN
};
const Format kE4M3{"f8e4m3", 3, 4, &f8e4m3::fromFloat, &f8e4m3::toFloat, false};
const Format kE5M2{"f8e5m2", 2, 5, &f8e5m2::fromFloat, &f8e5m2::toFloat, true};

// The value of code c, from the definition (sign, biased exponent, mantissa).
double referenceValue(const Format &f, uint8_t c) {
  int bias = (1 << (f.ebits - 1)) - 1;
  int e = (c >> f.mbits) & ((1 << f.ebits) - 1), m = c & ((1 << f.mbits) - 1);
  double s = (c & 0x80) ? -1.0 : 1.0;
  int emax = (1 << f.ebits) - 1;
  if (f.hasInf && e == emax)
    return m ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
  if (!f.hasInf && e == emax && m == (1 << f.mbits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  if (e == 0)
    return s * m * std::pow(2.0, 1 - bias - f.mbits);
  return s * (1.0 + m / double(1 << f.mbits)) * std::pow(2.0, e - bias);
}

// Round to nearest even over every finite code, saturating: the expected
// encoding of x (a finite float or infinity).
uint8_t nearestCode(const Format &f, float x) {
  if (std::isnan(x))
    return 0x7f;
  double best = INFINITY;
  int pick = -1;
  double maxFinite = 0;
  for (int c = 0; c < 256; ++c) {
    double v = referenceValue(f, uint8_t(c));
    if (!std::isfinite(v))
      continue;
    maxFinite = std::max(maxFinite, v);
    double d = std::fabs(v - double(x));
    // Ties go to the even mantissa; +0 and -0 tie at zero: keep x's sign.
    bool better = d < best || (d == best && (c & 1) == 0 && (pick & 1) == 1) ||
                  (d == best && v == 0 && std::signbit(x) == bool(c & 0x80));
    if (better) {
      best = d;
      pick = c;
    }
  }
  if (std::fabs(double(x)) > maxFinite) // satfinite: beyond the largest finite value
    return uint8_t((std::signbit(x) ? 0x80 : 0) | f.encode(float(maxFinite)));
  return uint8_t(pick);
}

// Floats of every magnitude that matters: around each code and its midpoints,
// random bit patterns in the formats' range, and the special values.
std::vector<float> conversionInputs(const Format &f, std::mt19937 &rng, size_t randomCount) {
  std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN(),
                           1e30f, -1e30f, 1e-30f, -1e-30f};
  for (int c = 0; c < 256; ++c) {
    double v = referenceValue(f, uint8_t(c));
    if (!std::isfinite(v))
      continue;
    xs.push_back(float(v));
    double next = referenceValue(f, uint8_t(c + 1));
    if (std::isfinite(next) && (c & 0x7f) != 0x7f) {
      double mid = (v + next) / 2;
      xs.push_back(float(mid));
      xs.push_back(std::nextafter(float(mid), float(v)));
      xs.push_back(std::nextafter(float(mid), float(next)));
    }
  }
  std::uniform_int_distribution<int> ex(-30, 20);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (size_t i = 0; i < randomCount; ++i)
    xs.push_back(std::ldexp(u(rng), ex(rng)));
  return xs;
}

const char *kConvert = R"(
@kernel
def convert(X: *f32, Y: *F8, Z: *f32, W: *f32, V: *f32, n: i32, BLOCK: constexpr = 256,
            F8: constexpr = f8e4m3):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    x = load(X + offs, mask=m, other=0.0)
    y = x.to(F8)
    # From f16: rounded to f16 first, then (exactly through f32) to 8 bits.
    store(V + offs, x.to(f16).to(F8).to(f32), mask=m)
    store(Y + offs, y, mask=m)
    store(Z + offs, y.to(f32), mask=m)
    # Arithmetic on 8-bit floats runs in f32 and rounds back: 3y, then max(3y, y).
    store(W + offs, maximum(y * 3, y).to(f32), mask=m)
)";

// Runs `convert` on xs and checks the encodings, their values and the
// arithmetic against the host. Returns the number of mismatches.
void checkConversions(Context &ctx, const Format &f, const std::vector<float> &xs) {
  Kernel k = compileString(ctx, kConvert, "convert.tile", "convert",
                           {{"F8", *parseDType(f.name)}});
  auto xd = ctx.upload(xs);
  auto yd = ctx.alloc<uint8_t>(xs.size());
  auto zd = ctx.alloc<float>(xs.size()), wd = ctx.alloc<float>(xs.size());
  auto vd = ctx.alloc<float>(xs.size());
  std::vector<ArgValue> args = makeArgs(xd.ptr(), DevicePtr<uint8_t>{yd.ptr().address}, zd.ptr(),
                                        wd.ptr(), vd.ptr(), int32_t(xs.size()));
  args[1].type = k.signature().params[1].type;
  k.launchWithArgs(ctx.stream(), Grid::of(cdiv(int64_t(xs.size()), 256)), args);
  ctx.synchronize();
  auto y = yd.toHost();
  auto z = zd.toHost();
  auto w = wd.toHost();
  auto v = vd.toHost();
  size_t bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    uint8_t want = f.encode(xs[i]);
    float back = f.decode(want);
    float tripled = f.decode(f.encode(back * 3.0f));
    float mx = std::isnan(tripled) ? back : std::max(tripled, back);
    float viaHalf = f.decode(f.encode(float(f16(xs[i]))));
    auto same = [](float got, float ref) { return std::isnan(ref) ? std::isnan(got) : got == ref; };
    bool ok = y[i] == want && same(z[i], back) && same(w[i], mx) && same(v[i], viaHalf);
    if (!ok && ++bad <= 5)
      UNSCOPED_INFO(f.name << " x=" << xs[i] << ": code " << int(y[i]) << " (want " << int(want)
                           << "), value " << z[i] << " (want " << back << "), max(3y, y) " << w[i]
                           << " (want " << mx << "), via f16 " << v[i] << " (want " << viaHalf << ")");
  }
  CHECK(bad == 0);
}

} // namespace

TEST_CASE("8-bit float host conversions: exact decoding, nearest-even saturating encoding",
          "[float8]") {
  Seeded rng;
  INFO("seed " << rng.seed);
  for (const Format *f : {&kE4M3, &kE5M2}) {
    INFO(f->name);
    for (int c = 0; c < 256; ++c) {
      double want = referenceValue(*f, uint8_t(c));
      float got = f->decode(uint8_t(c));
      INFO("code " << c);
      if (std::isnan(want))
        CHECK(std::isnan(got));
      else
        CHECK(double(got) == want);
    }
    size_t bad = 0;
    for (float x : conversionInputs(*f, rng.rng, 200000)) {
      uint8_t got = f->encode(x), want = nearestCode(*f, x);
      if (got != want && ++bad <= 5)
        UNSCOPED_INFO(f->name << " x=" << x << ": " << int(got) << " want " << int(want));
    }
    CHECK(bad == 0);
  }
  CHECK(f8e4m3::fromFloat(448.0f) == 0x7e);
  CHECK(f8e4m3::fromFloat(1e9f) == 0x7e);     // saturates
  CHECK(f8e5m2::fromFloat(-INFINITY) == 0xfb); // -57344
}

TEST_CASE("8-bit floats in the interpreter: conversions and arithmetic in f32", "[float8][interp]") {
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  for (const Format *f : {&kE4M3, &kE5M2})
    checkConversions(ctx, *f, conversionInputs(*f, rng.rng, 4000));
}

TEST_CASE("8-bit float errors: scalar parameters and targets without cvt", "[float8]") {
  CompileOptions o;
  CompileResult r = compileSource("@kernel\ndef k(X: *f32, s: f8e4m3):\n    store(X, s.to(f32))\n",
                                  "s.tile", "k", o, Stage::Tile);
  CHECK(!r.ok);
  CHECK(r.diagnostics.find("s.tile:2:19") != std::string::npos);
  CHECK(r.diagnostics.find("storage type for buffers") != std::string::npos);
  o.target = *Target::parse("sm_80");
  o.constexprs = {{"F8", *parseDType("f8e4m3")}};
  r = compileSource(kConvert, "convert.tile", "convert", o, Stage::PTX);
  CHECK(!r.ok);
  CHECK(r.diagnostics.find("need sm_89 or later") != std::string::npos);
  o.target = *Target::parse("sm_90a");
  r = compileSource(kConvert, "convert.tile", "convert", o, Stage::PTX);
  INFO(r.diagnostics);
  CHECK(r.ok);
}

namespace {
// C = sa * sb * A @ B through kernels_dsl/basics/scaled_matmul.tile, B
// column-major; returns ||C - ref|| / ||ref|| with ref in fp64 from the
// 8-bit values (C f32 here, so only the accumulation is measured). `step`:
// the operands' elements are `step` bytes apart along K (2: every other
// byte, so that no 16-byte chunk is contiguous and both are gathered).
double scaledMatmulError(Context &ctx, const Format &fa, const Format &fb, int64_t M, int64_t N,
                         int64_t K, std::mt19937 &rng, const std::map<std::string, ConstexprValue> &cfg,
                         const JitOptions &jo, bool rowMajorB = false, int64_t step = 1) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint8_t> a(size_t(M * K)), b(size_t(N * K)); // b: column n is K contiguous bytes
  for (auto &x : a)
    x = fa.encode(nd(rng) * 8);
  for (auto &x : b)
    x = fb.encode(nd(rng) * 8);
  float sa = 0.37f, sb = 1.9f;
  std::map<std::string, ConstexprValue> cx = cfg;
  cx["DA"] = *parseDType(fa.name);
  cx["DB"] = *parseDType(fb.name);
  cx["OUT"] = *parseDType("f32");
  Kernel k = compile(ctx, kernelLibraryPath("basics/scaled_matmul.tile"), "scaled_matmul", cx, jo);
  // Row-major B (K x N, N contiguous): the same values stored transposed.
  std::vector<uint8_t> stored = b;
  if (rowMajorB)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t q = 0; q < K; ++q)
        stored[size_t(q * N + n)] = b[size_t(n * K + q)];
  // Spread along K: element q of a row (A) or column (B) at byte q * step.
  auto spread = [&](const std::vector<uint8_t> &v) {
    std::vector<uint8_t> w(v.size() * size_t(step), 0x7F);
    for (size_t i = 0; i < v.size(); ++i)
      w[i * size_t(step)] = v[i];
    return w;
  };
  if (step != 1)
    stored = spread(stored);
  auto ad = ctx.upload(step != 1 ? spread(a) : a), bd = ctx.upload(stored);
  auto cd = ctx.alloc<float>(size_t(M * N));
  auto sad = ctx.upload(std::vector<float>{sa}), sbd = ctx.upload(std::vector<float>{sb});
  std::vector<ArgValue> args = makeArgs(
      DevicePtr<uint8_t>{ad.ptr().address}, DevicePtr<uint8_t>{bd.ptr().address}, cd.ptr(),
      sad.ptr(), sbd.ptr(), int32_t(M), int32_t(N), int32_t(K), int32_t(K * step), int32_t(step),
      rowMajorB ? int32_t(N) : int32_t(step), rowMajorB ? int32_t(1) : int32_t(K * step), int32_t(N),
      int32_t(1));
  args[0].type = k.signature().params[0].type;
  args[1].type = k.signature().params[1].type;
  int64_t bm = std::get<int64_t>(cx.at("BM")), bn = std::get<int64_t>(cx.at("BN"));
  k.launchWithArgs(ctx.stream(), Grid::of(cdiv(M, bm) * cdiv(N, bn)), args);
  ctx.synchronize();
  auto c = cd.toHost();
  std::vector<double> av(a.size()), bv(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    av[i] = fa.decode(a[i]);
  for (size_t i = 0; i < b.size(); ++i)
    bv[i] = fb.decode(b[i]);
  auto ref = [&](int64_t i, int64_t j) {
    double r = 0;
    const double *x = &av[size_t(i * K)], *y = &bv[size_t(j * K)];
    for (int64_t q = 0; q < K; ++q)
      r += x[q] * y[q];
    return r * double(sa) * double(sb);
  };
  return tessera::testing::relErrL2(M, N, ref, [&](int64_t i, int64_t j) { return double(c[size_t(i * N + j)]); });
}
} // namespace

TEST_CASE("8-bit float dot in the interpreter matches fp64", "[float8][interp]") {
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  std::map<std::string, ConstexprValue> cfg = {{"BM", int64_t(32)}, {"BN", int64_t(32)}, {"BK", int64_t(32)}};
  for (auto [fa, fb] : {std::pair{&kE4M3, &kE4M3}, {&kE5M2, &kE4M3}}) {
    double err = scaledMatmulError(ctx, *fa, *fb, 45, 70, 77, rng.rng, cfg, {});
    INFO(fa->name << " x " << fb->name << ": rel err " << err);
    CHECK(err < 1e-6); // products exact, f32 accumulation
  }
}

TEST_CASE("GPU 8-bit float conversions match the host bit for bit", "[gpu][float8]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  for (const Format *f : {&kE4M3, &kE5M2})
    checkConversions(*ctx, *f, conversionInputs(*f, rng.rng, 1 << 20));
}

TEST_CASE("GPU fp8 tensor-core matmul (scaled_matmul) matches fp64", "[gpu][float8]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  struct Case {
    int64_t M, N, K, bm, bn, bk;
    int warps;
  };
  for (Case c : {Case{300, 200, 190, 128, 128, 128, 8}, Case{256, 512, 1024, 128, 256, 128, 8},
                 Case{129, 136, 96, 64, 64, 128, 4}, Case{512, 768, 2048, 128, 256, 128, 8}})
    for (auto [fa, fb] : {std::pair{&kE4M3, &kE4M3}, {&kE5M2, &kE4M3}, {&kE5M2, &kE5M2}}) {
      JitOptions jo;
      jo.numWarps = c.warps;
      jo.numStages = 4;
      std::map<std::string, ConstexprValue> cfg = {{"BM", c.bm}, {"BN", c.bn}, {"BK", c.bk}};
      for (bool rowMajorB : {false, true}) { // B K-major as copied, or transposed through registers
        double err = scaledMatmulError(*ctx, *fa, *fb, c.M, c.N, c.K, rng.rng, cfg, jo, rowMajorB);
        INFO(fa->name << " x " << fb->name << " " << c.M << "x" << c.N << "x" << c.K
                      << (rowMajorB ? " B row-major" : " B column-major") << ": rel err " << err);
        // Products are exact; Hopper's fp8 wgmma accumulates with fewer bits than f32.
        CHECK(err < 1e-3);
      }
    }
}

TEST_CASE("GPU fp8 matmul with strided operands (gathered copies) matches fp64",
          "[gpu][float8][gathered]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  // Every other byte along K, and (no facts) contiguous operands the
  // compiler was not told about: both copied byte by byte, then e4m3 wgmma.
  for (auto [step, specialize] : {std::pair{int64_t(2), true}, {int64_t(1), false}}) {
    JitOptions jo;
    jo.numWarps = 4;
    jo.numStages = 4;
    jo.specialize = specialize;
    std::map<std::string, ConstexprValue> cfg = {{"BM", int64_t(128)}, {"BN", int64_t(128)},
                                                 {"BK", int64_t(128)}};
    double err = scaledMatmulError(*ctx, kE4M3, kE4M3, 300, 200, 190, rng.rng, cfg, jo, false, step);
    INFO("step " << step << (specialize ? "" : ", no facts") << ": rel err " << err);
    CHECK(err < 1e-3);
  }
}

namespace {
const char *kOrdered = R"(
@kernel
def ordered(X: *F8, S: *F8, M: *F8, A: *i32, C: *f32, BLOCK: constexpr = 64,
            F8: constexpr = f8e4m3):
    r = arange(0, BLOCK)
    x = load(X + r)
    store(S + r, sort(x, descending=True))
    store(M, max(x, 0))
    store(M + 1, min(x, 0))
    store(A, argmax(x, 0))
    store(C + r, cumsum(x, 0))
)";

// sort, max, min, argmax and cumsum of 64 random finite 8-bit values (they
// run in f32: exact for all but cumsum's sums) against the host.
void checkOrdered(Context &ctx, const Format &f, std::mt19937 &rng) {
  Kernel k = compileString(ctx, kOrdered, "ordered.tile", "ordered", {{"F8", *parseDType(f.name)}});
  std::vector<uint8_t> x;
  while (x.size() < 64) {
    uint8_t c = uint8_t(rng());
    if (std::isfinite(f.decode(c)))
      x.push_back(c);
  }
  auto xd = ctx.upload(x);
  auto sd = ctx.alloc<uint8_t>(64), md = ctx.alloc<uint8_t>(2);
  auto ad = ctx.alloc<int32_t>(1);
  auto cd = ctx.alloc<float>(64);
  std::vector<ArgValue> args = makeArgs(xd.ptr(), sd.ptr(), md.ptr(), ad.ptr(), cd.ptr());
  for (size_t p : {0, 1, 2})
    args[p].type = k.signature().params[p].type;
  k.launchWithArgs(ctx.stream(), Grid{1}, args);
  ctx.synchronize();
  auto s = sd.toHost();
  auto m = md.toHost();
  auto c = cd.toHost();
  std::vector<float> v;
  for (uint8_t b : x)
    v.push_back(f.decode(b));
  std::vector<float> sorted = v;
  std::stable_sort(sorted.begin(), sorted.end(), [](float p, float q) { return p > q; });
  INFO(f.name);
  for (size_t i = 0; i < 64; ++i)
    CHECK(f.decode(s[i]) == sorted[i]);
  CHECK(f.decode(m[0]) == sorted.front());
  CHECK(f.decode(m[1]) == sorted.back());
  CHECK(v[size_t(ad.toHost()[0])] == sorted.front());
  CHECK(size_t(ad.toHost()[0]) == size_t(std::find(v.begin(), v.end(), sorted.front()) - v.begin()));
  double run = 0, scale = 0, err = 0;
  for (size_t i = 0; i < 64; ++i) {
    run += v[i];
    scale = std::max(scale, std::fabs(run));
    err = std::max(err, std::fabs(double(c[i]) - run));
  }
  CHECK(err <= 1e-6 * scale);
}
} // namespace

TEST_CASE("8-bit float sort, max, min, argmax and cumsum (in f32)", "[float8][interp]") {
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  for (const Format *f : {&kE4M3, &kE5M2})
    checkOrdered(ctx, *f, rng.rng);
}

TEST_CASE("GPU 8-bit float sort, max, min, argmax and cumsum", "[gpu][float8]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  for (const Format *f : {&kE4M3, &kE5M2})
    checkOrdered(*ctx, *f, rng.rng);
}
