// dot's input_precision="tf32x3" and out_dtype: in the interpreter with the
// tensor cores' tf32 rounding emulated (InterpOptions::tf32), a plain tf32
// matmul is off by about 1e-3 of an fp64 reference, and the 3xTF32 split
// (lo*hi + hi*lo + hi*hi) is back near fp32; out_dtype rounds the result to
// bf16 and f16 (f16 operands then accumulate in f16). Fresh random inputs.
// The kernels compile for sm_80 and sm_90a.
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/Half.h"
#include "tessera/Interpreter.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tessera;
using tessera::testing::Seeded;

namespace {

const char *kSource = R"(
@kernel
def mm(A: *f32, B: *f32, C: *f32, M: constexpr = 64, N: constexpr = 64, K: constexpr = 128,
       PREC: constexpr = "tf32"):
    rm = arange(0, M)
    rn = arange(0, N)
    acc = zeros((M, N), f32)
    for k0 in range(0, K, 32):
        rk = k0 + arange(0, 32)
        a = load(A + rm[:, None] * K + rk[None, :])
        b = load(B + rk[:, None] * N + rn[None, :])
        acc = dot(a, b, acc, input_precision=PREC)
    store(C + rm[:, None] * N + rn[None, :], acc)

@kernel
def mm_out(A: *f32, B: *f32, C: *bf16, H: *f16, M: constexpr = 64, N: constexpr = 64,
           K: constexpr = 128):
    rm = arange(0, M)
    rn = arange(0, N)
    a = load(A + rm[:, None] * K + arange(0, K)[None, :])
    b = load(B + arange(0, K)[:, None] * N + rn[None, :])
    store(C + rm[:, None] * N + rn[None, :], dot(a.to(bf16), b.to(bf16), out_dtype=bf16))
    h = dot(a.to(f16), b.to(f16), out_dtype=f16)
    store(H + rm[:, None] * N + rn[None, :], h)
)";

constexpr int M = 64, N = 64, K = 128;

std::vector<double> reference(const std::vector<float> &a, const std::vector<float> &b) {
  std::vector<double> c(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j)
        c[size_t(i) * N + j] += double(a[size_t(i) * K + k]) * double(b[size_t(k) * N + j]);
  return c;
}

template <class T> double relErr(const std::vector<T> &got, const std::vector<double> &want) {
  double e = 0, m = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    e = std::max(e, std::fabs(double(static_cast<float>(got[i])) - want[i]));
    m = std::max(m, std::fabs(want[i]));
  }
  return e / m;
}

double runMm(const std::string &prec, const std::vector<float> &a, const std::vector<float> &b,
             const std::vector<double> &ref) {
  CompileOptions o;
  o.constexprs["PREC"] = prec;
  std::string diag;
  auto p = prepareInterpreterSource(kSource, "prec.tile", "mm", o, diag);
  INFO(diag);
  REQUIRE(p);
  std::vector<float> c(size_t(M) * N);
  InterpOptions io;
  io.tf32 = true; // as the tensor cores round
  REQUIRE(runInterpreter(*p, 1, 1, 1,
                         {InterpArg::ptr(a.data()), InterpArg::ptr(b.data()), InterpArg::ptr(c.data())},
                         io) == "");
  return relErr(c, ref);
}

} // namespace

TEST_CASE("dot: tf32x3 recovers fp32 accuracy from tf32 tensor cores", "[interp][dot][precision]") {
  Seeded s;
  INFO("seed " << s.seed);
  auto a = s.uniform(size_t(M) * K), b = s.uniform(size_t(K) * N);
  auto ref = reference(a, b);
  double tf32 = runMm("tf32", a, b, ref), x3 = runMm("tf32x3", a, b, ref), ieee = runMm("ieee", a, b, ref);
  INFO("relative errors: tf32 " << tf32 << ", tf32x3 " << x3 << ", ieee " << ieee);
  CHECK(tf32 > 1e-4);  // tf32 rounding is visible
  CHECK(x3 < 1e-5);    // the split recovers it
  CHECK(x3 < tf32 / 30);
  CHECK(ieee < 1e-5);
}

TEST_CASE("dot: out_dtype rounds to bf16 and accumulates f16 in f16", "[interp][dot][precision]") {
  Seeded s;
  INFO("seed " << s.seed);
  auto a = s.uniform(size_t(M) * K), b = s.uniform(size_t(K) * N);
  // The reference of the rounded operands.
  auto round = [](std::vector<float> v, bool half) {
    for (auto &x : v)
      x = half ? f16(x).toFloat() : bf16(x).toFloat();
    return v;
  };
  auto refB = reference(round(a, false), round(b, false));
  auto refH = reference(round(a, true), round(b, true));
  std::string diag;
  auto p = prepareInterpreterSource(kSource, "prec.tile", "mm_out", CompileOptions{}, diag);
  INFO(diag);
  REQUIRE(p);
  std::vector<bf16> c(size_t(M) * N);
  std::vector<f16> h(size_t(M) * N);
  REQUIRE(runInterpreter(*p, 1, 1, 1,
                         {InterpArg::ptr(a.data()), InterpArg::ptr(b.data()), InterpArg::ptr(c.data()),
                          InterpArg::ptr(h.data())},
                         InterpOptions{}) == "");
  double eb = relErr(c, refB), eh = relErr(h, refH);
  INFO("relative errors: bf16 out " << eb << ", f16 out " << eh);
  CHECK(eb < 8e-3);  // one bf16 rounding of the f32 sum
  CHECK(eh < 4e-3);  // f16 accumulation over K = 128
  CHECK(eb > 0);
}

TEST_CASE("dot: tf32x3 and out_dtype compile for sm_80 and sm_90a", "[dot][precision]") {
  for (const char *arch : {"sm_80", "sm_90a"})
    for (const char *kernel : {"mm", "mm_out"}) {
      CompileOptions o;
      o.target = *Target::parse(arch);
      if (std::string(kernel) == "mm")
        o.constexprs["PREC"] = std::string("tf32x3");
      CompileResult r = compileSource(kSource, "prec.tile", kernel, o, Stage::PTX);
      INFO(arch << " " << kernel << "\n" << r.diagnostics);
      CHECK(r.ok);
    }
}
