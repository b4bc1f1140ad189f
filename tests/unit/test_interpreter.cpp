// The CPU interpreter: DSL kernels (inline and from kernels_dsl/) against
// independent fp64 references on fresh random inputs at ragged shapes, the
// bounds report, atomics under threads, exact integer and small-float
// numerics, control flow, and speed.
#include "tessera/Half.h"
#include "tessera/Interpreter.h"

#include <catch2/catch.hpp>

#include "TestSupport.h"
#include "support/Reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

using tessera::InterpArg;
using tessera::InterpOptions;
using tessera::InterpProgram;

using tessera::testing::Seeded;
using tessera::testing::layerNormRef;
using tessera::testing::matmulRef;
using tessera::testing::relErrL2;
using tessera::testing::softmaxRef;

namespace {

const std::string kDslDir = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";

std::shared_ptr<InterpProgram> prepSource(const std::string &src, const std::string &kernel,
                                          const tessera::CompileOptions &opt = {},
                                          const std::string &path = "interp_test.tile") {
  std::string diag;
  auto p = tessera::prepareInterpreterSource(src, path, kernel, opt, diag);
  INFO(diag);
  REQUIRE(p);
  return p;
}

std::shared_ptr<InterpProgram> prepFile(const std::string &rel, const std::string &kernel,
                                        const tessera::CompileOptions &opt = {}) {
  std::string diag;
  auto p = tessera::prepareInterpreter(kDslDir + "/" + rel, kernel, opt, diag);
  INFO(diag);
  REQUIRE(p);
  return p;
}

bool dslPresent(const std::string &rel) {
  std::ifstream f(kDslDir + "/" + rel);
  if (!f)
    WARN("kernels_dsl/" << rel << " is missing: skipped");
  return bool(f);
}

template <class T> std::pair<uintptr_t, size_t> buf(const std::vector<T> &v) {
  return {uintptr_t(v.data()), v.size() * sizeof(T)};
}
template <class T> InterpArg ptr(const std::vector<T> &v) { return InterpArg::ptr(v.data()); }


unsigned cdiv(unsigned a, unsigned b) { return (a + b - 1) / b; }

std::string run(InterpProgram &p, unsigned gx, unsigned gy, unsigned gz,
                const std::vector<InterpArg> &args, InterpOptions opt = {}) {
  return tessera::runInterpreter(p, gx, gy, gz, args, opt);
}

const char *kMatmul = R"(
@kernel
def mm(A: *f32, B: *f32, C: *f32, M: i32, N: i32, K: i32,
       BM: constexpr = 32, BN: constexpr = 32, BK: constexpr = 16):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    acc = zeros((BM, BN), f32)
    for kb in range(0, cdiv(K, BK)):
        k = kb * BK + rk
        a = load(A + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        b = load(B + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = dot(a, b, acc)
    store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

} // namespace

TEST_CASE("interpreter: inline vector add at a ragged size", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def vadd(X: *f32, Y: *f32, Z: *f32, N: i32, B: constexpr = 128):
    offs = program_id(0) * B + arange(0, B)
    m = offs < N
    store(Z + offs, load(X + offs, mask=m) + load(Y + offs, mask=m), mask=m)
)";
  auto p = prepSource(src, "vadd");
  int n = 1000 + s.range(0, 200);
  auto x = s.uniform(static_cast<size_t>(n)), y = s.uniform(static_cast<size_t>(n));
  std::vector<float> z(size_t(n), -7.0f);
  InterpOptions opt;
  opt.buffers = {buf(x), buf(y), buf(z)};
  REQUIRE(run(*p, cdiv(unsigned(n), 128), 1, 1, {ptr(x), ptr(y), ptr(z), InterpArg::i32(n)}, opt) == "");
  for (int i = 0; i < n; ++i)
    REQUIRE(z[size_t(i)] == x[size_t(i)] + y[size_t(i)]); // one f32 rounding, as on the GPU
}

TEST_CASE("interpreter: matmul at ragged shapes matches fp64", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  auto p = prepSource(kMatmul, "mm");
  int M = 70 + s.range(0, 40), N = 50 + s.range(0, 40), K = 40 + s.range(0, 60);
  INFO("M " << M << " N " << N << " K " << K);
  auto A = s.uniform(size_t(M) * K), B = s.uniform(size_t(K) * N);
  std::vector<float> C(size_t(M) * N);
  InterpOptions opt;
  opt.buffers = {buf(A), buf(B), buf(C)};
  REQUIRE(run(*p, cdiv(unsigned(M), 32), cdiv(unsigned(N), 32), 1,
              {ptr(A), ptr(B), ptr(C), InterpArg::i32(M), InterpArg::i32(N), InterpArg::i32(K)},
              opt) == "");
  CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) < 1e-5);
}

TEST_CASE("interpreter: tf32 emulation rounds f32 dot operands", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  auto p = prepSource(kMatmul, "mm");
  int M = 64, N = 48, K = 80;
  auto A = s.uniform(size_t(M) * K), B = s.uniform(size_t(K) * N);
  std::vector<float> C(size_t(M) * N);
  InterpOptions opt;
  opt.tf32 = true;
  opt.buffers = {buf(A), buf(B), buf(C)};
  REQUIRE(run(*p, 2, 2, 1,
              {ptr(A), ptr(B), ptr(C), InterpArg::i32(M), InterpArg::i32(N), InterpArg::i32(K)},
              opt) == "");
  auto tf32 = [](float f) { // round to nearest, ties away, 10 mantissa bits
    uint32_t x;
    std::memcpy(&x, &f, 4);
    x = (x + 0x1000u) & ~0x1fffu;
    std::memcpy(&f, &x, 4);
    return f;
  };
  std::vector<float> At(A), Bt(B);
  for (auto &v : At) v = tf32(v);
  for (auto &v : Bt) v = tf32(v);
  CHECK(relErrL2(C, matmulRef(At, Bt, M, N, K)) < 1e-6);
  CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) > 1e-6); // the rounding really happened
}

TEST_CASE("interpreter: softmax with masked columns", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def smax(X: *f32, Y: *f32, N: i32, BN: constexpr = 128):
    row = program_id(0)
    cols = arange(0, BN)
    m = cols < N
    x = load(X + row * N + cols, mask=m, other=-3.0e38)
    e = exp(x - max(x, axis=0))
    store(Y + row * N + cols, e / sum(e, axis=0), mask=m)
)";
  auto p = prepSource(src, "smax");
  int rows = 37, N = 100;
  auto X = s.uniform(size_t(rows) * N, -5, 5);
  std::vector<float> Y(X.size());
  InterpOptions opt;
  opt.buffers = {buf(X), buf(Y)};
  REQUIRE(run(*p, unsigned(rows), 1, 1, {ptr(X), ptr(Y), InterpArg::i32(N)}, opt) == "");
  CHECK(relErrL2(Y, softmaxRef(X, size_t(rows), size_t(N))) < 1e-5);
}

TEST_CASE("interpreter: an out-of-bounds load is reported with its source line", "[interp]") {
  // Line 5 masks with <= instead of <: the last program reads X[N].
  const char *src = "@kernel\n"
                    "def oob(X: *f32, Y: *f32, N: i32, B: constexpr = 128):\n"
                    "    offs = program_id(0) * B + arange(0, B)\n"
                    "    ok = offs < N\n"
                    "    x = load(X + offs, mask=offs <= N)\n"
                    "    store(Y + offs, x, mask=ok)\n";
  auto p = prepSource(src, "oob", {}, "bugs/oob.tile");
  std::vector<float> x(1000, 1.0f), y(1000, 0.0f);
  InterpOptions opt;
  opt.threads = 1;
  opt.buffers = {buf(x), buf(y)};
  std::string err = run(*p, 8, 1, 1, {ptr(x), ptr(y), InterpArg::i32(1000)}, opt);
  INFO(err);
  CHECK(err.find("out-of-bounds load in kernel 'oob' at bugs/oob.tile:5:") == 0);
  CHECK(err.find("program (7, 0, 0)") != std::string::npos);
  CHECK(err.find("element offset 1000 is outside the buffer of 1000 elements") != std::string::npos);
  CHECK(err.find("at tile element [104] of 128") != std::string::npos);
  CHECK(err.find("\n        x = load(X + offs, mask=offs <= N)\n            ^") != std::string::npos);

  // The same access from several threads is still reported (by some program).
  opt.threads = 4;
  err = run(*p, 8, 1, 1, {ptr(x), ptr(y), InterpArg::i32(1000)}, opt);
  CHECK(err.find("out-of-bounds load in kernel 'oob' at bugs/oob.tile:5:") == 0);
}

TEST_CASE("interpreter: an out-of-bounds store and far-away addresses", "[interp]") {
  const char *src = "@kernel\n"
                    "def st(Y: *i32, N: i32, OFF: i32):\n"
                    "    offs = program_id(0) * 64 + arange(0, 64)\n"
                    "    store(Y + offs + OFF, offs, mask=offs < N)\n";
  auto p = prepSource(src, "st", {}, "st.tile");
  std::vector<int32_t> y(100);
  InterpOptions opt;
  opt.threads = 1;
  opt.buffers = {buf(y)};
  std::string err = run(*p, 2, 1, 1, {ptr(y), InterpArg::i32(100), InterpArg::i32(-3)}, opt);
  INFO(err);
  CHECK(err.find("out-of-bounds store in kernel 'st' at st.tile:4:") == 0);
  CHECK(err.find("program (0, 0, 0)") != std::string::npos);
  CHECK(err.find("element offset -3 is outside the buffer of 100 elements") != std::string::npos);
  CHECK(y[0] == 0); // nothing written before the bad lane... and nothing after it
  err = run(*p, 2, 1, 1, {ptr(y), InterpArg::i32(100), InterpArg::i32(1 << 28)}, opt);
  CHECK(err.find("is not inside any of the 1 buffers") != std::string::npos);
}

TEST_CASE("interpreter: masked-off out-of-bounds lanes are not reported", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def scale(X: *f32, Y: *f32, N: i32, B: constexpr = 256):
    offs = program_id(0) * B + arange(0, B)
    m = offs < N
    x = load(X + offs - 5, mask=m & (offs >= 5), other=0.0)
    store(Y + offs, x * 2.0, mask=m)
)";
  auto p = prepSource(src, "scale");
  int n = 1001;
  auto x = s.uniform(static_cast<size_t>(n));
  std::vector<float> y(static_cast<size_t>(n));
  InterpOptions opt;
  opt.buffers = {buf(x), buf(y)};
  REQUIRE(run(*p, cdiv(unsigned(n), 256), 1, 1, {ptr(x), ptr(y), InterpArg::i32(n)}, opt) == "");
  for (int i = 0; i < n; ++i)
    REQUIRE(y[size_t(i)] == (i >= 5 ? x[size_t(i - 5)] * 2.0f : 0.0f));
}

TEST_CASE("interpreter: atomics are exact across threads", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def hist(X: *i32, H: *i32, Ticket: *i32, Old: *i32, First: *i32, Seen: *i32, Mx: *i32,
         n: i32, NB: i32, B: constexpr = 128):
    pid = program_id(0)
    offs = pid * B + arange(0, B)
    m = offs < n
    x = load(X + offs, mask=m, other=0)
    atomic_add(H + x % NB, 1, mask=m)
    t = atomic_add(Ticket, 1)
    store(Old + pid, t)
    seen = atomic_cas(First, 0, pid + 1)
    store(Seen + pid, seen)
    atomic_max(Mx, max(where(m, x, 0), axis=0))
)";
  auto p = prepSource(src, "hist");
  int n = 60000 + s.range(0, 5000), NB = 37;
  std::vector<int32_t> X(static_cast<size_t>(n));
  for (auto &v : X)
    v = s.range(0, 1 << 20);
  unsigned progs = cdiv(unsigned(n), 128);
  std::vector<int32_t> H(static_cast<size_t>(NB)), ticket(1), old(progs), first(1), seen(progs), mx(1);
  InterpOptions opt;
  opt.threads = 8;
  opt.buffers = {buf(X), buf(H), buf(ticket), buf(old), buf(first), buf(seen), buf(mx)};
  REQUIRE(run(*p, progs, 1, 1,
              {ptr(X), ptr(H), ptr(ticket), ptr(old), ptr(first), ptr(seen), ptr(mx),
               InterpArg::i32(n), InterpArg::i32(NB)},
              opt) == "");
  std::vector<int32_t> ref(static_cast<size_t>(NB));
  for (int v : X)
    ref[size_t(v % NB)]++;
  CHECK(H == ref);
  CHECK(ticket[0] == int32_t(progs));
  std::vector<int32_t> sorted(old);
  std::sort(sorted.begin(), sorted.end());
  for (unsigned i = 0; i < progs; ++i)
    REQUIRE(sorted[i] == int32_t(i)); // every ticket handed out exactly once
  int zeros = 0;
  for (unsigned i = 0; i < progs; ++i) {
    if (seen[i] == 0) {
      ++zeros;
      CHECK(first[0] == int32_t(i + 1)); // the winner's value stayed
    } else {
      CHECK(seen[i] == first[0]);
    }
  }
  CHECK(zeros == 1);
  CHECK(mx[0] == *std::max_element(X.begin(), X.end()));
}

TEST_CASE("interpreter: float atomic add under threads", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def fsum(X: *f32, S: *f32, n: i32, B: constexpr = 64):
    offs = program_id(0) * B + arange(0, B)
    x = load(X + offs, mask=offs < n, other=0.0)
    atomic_add(S + program_id(0) % 3, sum(x, axis=0))
)";
  auto p = prepSource(src, "fsum");
  int n = 20000;
  auto X = s.uniform(size_t(n), 0, 1);
  std::vector<float> S(3);
  InterpOptions opt;
  opt.threads = 6;
  opt.buffers = {buf(X), buf(S)};
  REQUIRE(run(*p, cdiv(unsigned(n), 64), 1, 1, {ptr(X), ptr(S), InterpArg::i32(n)}, opt) == "");
  std::vector<double> ref(3);
  for (int i = 0; i < n; ++i)
    ref[size_t((i / 64) % 3)] += X[size_t(i)];
  CHECK(relErrL2(S, ref) < 1e-5);
}

TEST_CASE("interpreter: i8 dot accumulates exactly in i32", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def idot(A: *i8, B: *i8, C: *i32, M: i32, N: i32, K: i32,
         BM: constexpr = 32, BN: constexpr = 32, BK: constexpr = 32):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    acc = zeros((BM, BN), i32)
    for k0 in range(0, K, BK):
        k = k0 + rk
        a = load(A + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0)
        b = load(B + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0)
        acc = dot(a, b, acc)
    store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";
  auto p = prepSource(src, "idot");
  int M = 45, N = 70, K = 100;
  std::vector<int8_t> A(size_t(M) * K), B(size_t(K) * N);
  for (auto &v : A) v = int8_t(s.range(-128, 127));
  for (auto &v : B) v = int8_t(s.range(-128, 127));
  std::vector<int32_t> C(size_t(M) * N);
  InterpOptions opt;
  opt.buffers = {buf(A), buf(B), buf(C)};
  REQUIRE(run(*p, 2, 3, 1,
              {ptr(A), ptr(B), ptr(C), InterpArg::i32(M), InterpArg::i32(N), InterpArg::i32(K)},
              opt) == "");
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int32_t r = 0;
      for (int k = 0; k < K; ++k)
        r += int32_t(A[size_t(m * K + k)]) * int32_t(B[size_t(k * N + n)]);
      REQUIRE(C[size_t(m * N + n)] == r);
    }
}

TEST_CASE("interpreter: reductions along both axes, argmax/argmin ties", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def red(X: *f32, RS: *f32, CS: *f32, RM: *f32, CM: *f32, AM: *i32, AN: *i32, IS: *i32,
        M: i32, N: i32, BM: constexpr = 16, BN: constexpr = 64):
    rm = arange(0, BM)
    rn = arange(0, BN)
    msk = (rm[:, None] < M) & (rn[None, :] < N)
    p = X + rm[:, None] * N + rn[None, :]
    xz = load(p, mask=msk, other=0.0)
    xl = load(p, mask=msk, other=-1.0e30)
    xh = load(p, mask=msk, other=1.0e30)
    store(RS + rm, sum(xz, axis=1), mask=rm < M)
    store(CS + rn, sum(xz, axis=0), mask=rn < N)
    store(RM + rm, max(xl, axis=1), mask=rm < M)
    store(CM + rn, min(xh, axis=0), mask=rn < N)
    store(AM + rm, argmax(xl, axis=1), mask=rm < M)
    store(AN + rn, argmin(xh, axis=0), mask=rn < N)
    store(IS + rm, sum(xz.to(i32), axis=1), mask=rm < M)
)";
  auto p = prepSource(src, "red");
  int M = 13, N = 50;
  std::vector<float> X(size_t(M) * N);
  for (auto &v : X)
    v = float(s.range(0, 3)); // few distinct values: many ties
  std::vector<float> RS(static_cast<size_t>(M)), CS(static_cast<size_t>(N)), RM(static_cast<size_t>(M)), CM(static_cast<size_t>(N));
  std::vector<int32_t> AM(static_cast<size_t>(M)), AN(static_cast<size_t>(N)), IS(static_cast<size_t>(M));
  InterpOptions opt;
  opt.buffers = {buf(X), buf(RS), buf(CS), buf(RM), buf(CM), buf(AM), buf(AN), buf(IS)};
  REQUIRE(run(*p, 1, 1, 1,
              {ptr(X), ptr(RS), ptr(CS), ptr(RM), ptr(CM), ptr(AM), ptr(AN), ptr(IS),
               InterpArg::i32(M), InterpArg::i32(N)},
              opt) == "");
  for (int m = 0; m < M; ++m) {
    float sum = 0, mx = -1;
    int arg = -1;
    for (int n = 0; n < N; ++n) {
      float v = X[size_t(m * N + n)];
      sum += v;
      if (v > mx) {
        mx = v;
        arg = n; // first index of the maximum
      }
    }
    CHECK(RS[size_t(m)] == sum);
    CHECK(RM[size_t(m)] == mx);
    CHECK(AM[size_t(m)] == arg);
    CHECK(IS[size_t(m)] == int32_t(sum));
  }
  for (int n = 0; n < N; ++n) {
    float sum = 0, mn = 99;
    int arg = -1;
    for (int m = 0; m < M; ++m) {
      float v = X[size_t(m * N + n)];
      sum += v;
      if (v < mn) {
        mn = v;
        arg = m;
      }
    }
    CHECK(CS[size_t(n)] == sum);
    CHECK(CM[size_t(n)] == mn);
    CHECK(AN[size_t(n)] == arg);
  }
}

TEST_CASE("interpreter: scf.while, scf.if and loop-carried swaps", "[interp]") {
  const char *src = R"(
@kernel
def ctl(Steps: *i32, Fib: *i32, K: i32):
    pid = program_id(0)
    x = pid + 1
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps = steps + 1
    store(Steps + pid, steps)
    a = 0
    b = 1
    for i in range(0, K + pid):
        a, b = b, a + b
    store(Fib + pid, a)
)";
  auto p = prepSource(src, "ctl");
  unsigned n = 300;
  int K = 40;
  std::vector<int32_t> steps(n), fib(n);
  InterpOptions opt;
  opt.buffers = {buf(steps), buf(fib)};
  REQUIRE(run(*p, n, 1, 1, {ptr(steps), ptr(fib), InterpArg::i32(K)}, opt) == "");
  for (unsigned i = 0; i < n; ++i) {
    int64_t x = i + 1;
    int st = 0;
    while (x != 1) {
      x = x % 2 == 0 ? x / 2 : 3 * x + 1;
      ++st;
    }
    REQUIRE(steps[i] == st);
    uint32_t a = 0, b = 1; // i32 arithmetic wraps
    for (unsigned k = 0; k < unsigned(K) + i; ++k) {
      uint32_t t = a + b;
      a = b;
      b = t;
    }
    REQUIRE(fib[i] == int32_t(a));
  }
}

TEST_CASE("interpreter: casts, u8 arithmetic, f16 and bf16 rounding", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def casts(U: *u8, F: *f32, I: *i32, O8: *u8, H: *f16, Bf: *bf16, Back: *f32, n: i32,
          B: constexpr = 256):
    offs = arange(0, B)
    m = offs < n
    u = load(U + offs, mask=m, other=0)
    f = load(F + offs, mask=m, other=0.0)
    store(I + offs, (u // 3).to(i32) + (u > 200).to(i32) * 1000 + (u >> 4).to(i32) * 10000, mask=m)
    store(O8 + offs, (f * 100.0).to(u8) + u, mask=m)
    h = f.to(f16)
    store(H + offs, h, mask=m)
    store(Bf + offs, f.to(bf16), mask=m)
    store(Back + offs, (h * h).to(f32) + bitcast(h, i16).to(f32), mask=m)
)";
  auto p = prepSource(src, "casts");
  int n = 200 + s.range(0, 56);
  std::vector<uint8_t> U(static_cast<size_t>(n)), O8(static_cast<size_t>(n));
  for (auto &v : U)
    v = uint8_t(s.range(0, 255));
  auto F = s.uniform(size_t(n), 0, 2.55f);
  std::vector<int32_t> I(static_cast<size_t>(n));
  std::vector<tessera::f16> H(static_cast<size_t>(n));
  std::vector<tessera::bf16> Bf(static_cast<size_t>(n));
  std::vector<float> Back(static_cast<size_t>(n));
  InterpOptions opt;
  opt.buffers = {buf(U), buf(F), buf(I), buf(O8), buf(H), buf(Bf), buf(Back)};
  REQUIRE(run(*p, 1, 1, 1,
              {ptr(U), ptr(F), ptr(I), ptr(O8), ptr(H), ptr(Bf), ptr(Back), InterpArg::i32(n)},
              opt) == "");
  for (int i = 0; i < n; ++i) {
    unsigned u = U[size_t(i)];
    float f = F[size_t(i)];
    INFO("i " << i << " u " << u << " f " << f);
    REQUIRE(I[size_t(i)] == int32_t(u / 3 + (u > 200 ? 1000 : 0) + (u >> 4) * 10000));
    REQUIRE(O8[size_t(i)] == uint8_t(unsigned(float(f * 100.0f)) + u));
    tessera::f16 h(f);
    REQUIRE(H[size_t(i)].bits == h.bits);
    REQUIRE(Bf[size_t(i)].bits == tessera::bf16(f).bits);
    float hh = tessera::f16(h.toFloat() * h.toFloat()).toFloat(); // f16 multiply, rounded once
    REQUIRE(Back[size_t(i)] == hh + float(int16_t(h.bits)));
  }
}

TEST_CASE("interpreter: f16 and bf16 dot accumulate in f32", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  for (const char *dt : {"f16", "bf16"}) {
    std::string src = std::string(kMatmul);
    for (size_t at; (at = src.find("*f32, B: *f32")) != std::string::npos;)
      src.replace(at, 13, std::string("*") + dt + ", B: *" + dt);
    auto p = prepSource(src, "mm");
    int M = 40, N = 33, K = 77;
    auto A = s.uniform(size_t(M) * K), B = s.uniform(size_t(K) * N);
    std::vector<uint16_t> A16(A.size()), B16(B.size());
    bool isHalf = std::string(dt) == "f16";
    for (size_t i = 0; i < A.size(); ++i) {
      A16[i] = isHalf ? tessera::f16(A[i]).bits : tessera::bf16(A[i]).bits;
      A[i] = isHalf ? tessera::f16::toFloat(A16[i]) : tessera::bf16::toFloat(A16[i]);
    }
    for (size_t i = 0; i < B.size(); ++i) {
      B16[i] = isHalf ? tessera::f16(B[i]).bits : tessera::bf16(B[i]).bits;
      B[i] = isHalf ? tessera::f16::toFloat(B16[i]) : tessera::bf16::toFloat(B16[i]);
    }
    std::vector<float> C(size_t(M) * N);
    InterpOptions opt;
    opt.buffers = {buf(A16), buf(B16), buf(C)};
    REQUIRE(run(*p, 2, 2, 1,
                {ptr(A16), ptr(B16), ptr(C), InterpArg::i32(M), InterpArg::i32(N),
                 InterpArg::i32(K)},
                opt) == "");
    INFO(dt);
    CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) < 1e-5);
  }
}

TEST_CASE("interpreter: trans, reshape and broadcast_to", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const char *src = R"(
@kernel
def shapes(X: *f32, Y: *f32, Z: *f32, W: *f32, BM: constexpr = 8, BN: constexpr = 16):
    rm = arange(0, BM)
    rn = arange(0, BN)
    x = load(X + rm[:, None] * BN + rn[None, :])
    store(Y + rn[:, None] * BM + rm[None, :], trans(x))
    r = reshape(x, (4, 32))
    store(Z + arange(0, 4)[:, None] * 32 + arange(0, 32)[None, :], r * 2.0)
    col = load(X + rm * BN)
    store(W + rm[:, None] * BN + rn[None, :], broadcast_to(col[:, None], (BM, BN)))
)";
  auto p = prepSource(src, "shapes");
  auto X = s.uniform(128);
  std::vector<float> Y(128), Z(128), W(128);
  InterpOptions opt;
  opt.buffers = {buf(X), buf(Y), buf(Z), buf(W)};
  REQUIRE(run(*p, 1, 1, 1, {ptr(X), ptr(Y), ptr(Z), ptr(W)}, opt) == "");
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) {
      REQUIRE(Y[size_t(j * 8 + i)] == X[size_t(i * 16 + j)]);
      REQUIRE(W[size_t(i * 16 + j)] == X[size_t(i * 16)]);
    }
  for (int i = 0; i < 128; ++i)
    REQUIRE(Z[size_t(i)] == X[size_t(i)] * 2.0f);
}

TEST_CASE("interpreter: device_print and argument checks", "[interp]") {
  const char *src = R"(
@kernel
def pr(X: *i32, n: i32):
    device_print("n", n)
    device_print("r ", arange(0, 4) + n)
    store(X + program_id(0), n)
)";
  auto p = prepSource(src, "pr");
  std::vector<int32_t> x(2);
  std::vector<std::string> lines;
  InterpOptions opt;
  opt.printSink = [&](const std::string &l) { lines.push_back(l); };
  opt.threads = 1;
  REQUIRE(run(*p, 2, 1, 1, {ptr(x), InterpArg::i32(5)}, opt) == "");
  REQUIRE(lines.size() == 10);
  CHECK(lines[0] == "pid (0, 0, 0) n 5");
  CHECK(lines[1] == "pid (0, 0, 0) idx (0) r  5");
  CHECK(lines[4] == "pid (0, 0, 0) idx (3) r  8");
  CHECK(lines[5] == "pid (1, 0, 0) n 5");

  CHECK(run(*p, 1, 1, 1, {ptr(x)}) == "kernel 'pr' expects 2 arguments, got 1");
  CHECK(run(*p, 1, 1, 1, {InterpArg::i32(1), InterpArg::i32(5)}) ==
        "argument 1 ('X') of kernel 'pr' must be a pointer (*i32), got a scalar");
  CHECK(run(*p, 1, 1, 1, {ptr(x), ptr(x)}) ==
        "argument 2 ('n') of kernel 'pr' must be a scalar i32, got a pointer");
  CHECK(run(*p, 1, 1, 1, {ptr(x), InterpArg::i64(int64_t(1) << 40)}).find("bits set above") !=
        std::string::npos);
  const auto &sig = tessera::interpreterSignature(*p);
  CHECK(sig.params.size() == 2);
  CHECK(sig.params[1].name == "n");
}

TEST_CASE("interpreter: runs textual tile IR", "[interp]") {
  const char *src = R"(
@kernel
def axpy(X: *f32, Y: *f32, a: f32, n: i32, B: constexpr = 64):
    offs = program_id(0) * B + arange(0, B)
    m = offs < n
    store(Y + offs, a * load(X + offs, mask=m) + load(Y + offs, mask=m), mask=m)
)";
  auto cr = tessera::compileSource(src, "axpy.tile", "axpy");
  INFO(cr.diagnostics);
  REQUIRE(cr.ok);
  std::string diag;
  auto p = tessera::prepareInterpreterIR(cr.tileIR, "axpy", diag);
  INFO(diag);
  REQUIRE(p);
  std::vector<float> x(100), y(100);
  for (int i = 0; i < 100; ++i) {
    x[size_t(i)] = float(i);
    y[size_t(i)] = 1.0f;
  }
  REQUIRE(run(*p, 2, 1, 1, {ptr(x), ptr(y), InterpArg::f32(0.5f), InterpArg::i32(100)}) == "");
  for (int i = 0; i < 100; ++i)
    REQUIRE(y[size_t(i)] == 0.5f * float(i) + 1.0f);
  CHECK(!tessera::interpreterListing(*p).empty());
}

TEST_CASE("interpreter: 256x512x384 f32 matmul is fast", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  const int M = 256, N = 512, K = 384;
  tessera::CompileOptions co;
  co.constexprs = {{"BM", int64_t(64)}, {"BN", int64_t(64)}, {"BK", int64_t(32)}};
  auto p = prepSource(kMatmul, "mm", co);
  auto A = s.uniform(size_t(M) * K), B = s.uniform(size_t(K) * N);
  std::vector<float> C(size_t(M) * N);
  InterpOptions opt;
  opt.buffers = {buf(A), buf(B), buf(C)};
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(run(*p, M / 64, N / 64, 1,
              {ptr(A), ptr(B), ptr(C), InterpArg::i32(M), InterpArg::i32(N), InterpArg::i32(K)},
              opt) == "");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("interpreter: 256x512x384 f32 matmul (64x64x32 tiles) took " << secs * 1e3 << " ms");
  CHECK(secs < 10.0);
  CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) < 1e-5);
}

//===----------------------------------------------------------------------===//
// The kernels in kernels_dsl/ (launch grids from their file headers).
//===----------------------------------------------------------------------===//

TEST_CASE("interpreter: kernels_dsl vector_add", "[interp][dsl]") {
  if (!dslPresent("basics/vector_add.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  auto p = prepFile("basics/vector_add.tile", "vector_add");
  int n = 5000 + s.range(1, 1000);
  auto x = s.uniform(static_cast<size_t>(n)), y = s.uniform(static_cast<size_t>(n));
  std::vector<float> z(static_cast<size_t>(n));
  InterpOptions opt;
  opt.buffers = {buf(x), buf(y), buf(z)};
  REQUIRE(run(*p, cdiv(unsigned(n), 1024), 1, 1, {ptr(x), ptr(y), ptr(z), InterpArg::i32(n)}, opt) == "");
  std::vector<double> ref(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    ref[size_t(i)] = double(x[size_t(i)]) + y[size_t(i)];
  CHECK(relErrL2(z, ref) < 1e-7);
}

TEST_CASE("interpreter: kernels_dsl softmax and softmax_online", "[interp][dsl]") {
  if (!dslPresent("basics/softmax.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  int rows = 19, cols = 700 + s.range(0, 300), stride = cols + 3;
  auto X = s.uniform(size_t(rows) * size_t(stride), -8, 8);
  std::vector<double> ref = softmaxRef(X, size_t(rows), size_t(cols), size_t(stride));
  for (const char *kernel : {"softmax", "softmax_online"}) {
    INFO(kernel);
    tessera::CompileOptions co;
    if (std::string(kernel) == "softmax_online")
      co.constexprs = {{"BLOCK", int64_t(256)}}; // several chunks per row
    auto p = prepFile("basics/softmax.tile", kernel, co);
    std::vector<float> Y(X.size(), 0.0f);
    InterpOptions opt;
    opt.buffers = {buf(X), buf(Y)};
    REQUIRE(run(*p, unsigned(rows), 1, 1,
                {ptr(X), ptr(Y), InterpArg::i32(stride), InterpArg::i32(stride), InterpArg::i32(cols)},
                opt) == "");
    CHECK(relErrL2(Y, ref) < 1e-5);
  }
}

TEST_CASE("interpreter: kernels_dsl layer_norm_fwd", "[interp][dsl]") {
  if (!dslPresent("basics/layer_norm.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  int rows = 11, N = 1500 + s.range(0, 400), stride = N + 5;
  float eps = 1e-5f;
  auto X = s.uniform(size_t(rows) * size_t(stride), -3, 3);
  auto W = s.uniform(size_t(N), 0.5f, 1.5f), Bv = s.uniform(static_cast<size_t>(N));
  std::vector<float> Y(X.size()), Mean(static_cast<size_t>(rows)), Rstd(static_cast<size_t>(rows));
  tessera::CompileOptions co;
  co.constexprs = {{"BLOCK", int64_t(512)}};
  auto p = prepFile("basics/layer_norm.tile", "layer_norm_fwd", co);
  InterpOptions opt;
  opt.buffers = {buf(X), buf(Y), buf(W), buf(Bv), buf(Mean), buf(Rstd)};
  REQUIRE(run(*p, unsigned(rows), 1, 1,
              {ptr(X), ptr(Y), ptr(W), ptr(Bv), ptr(Mean), ptr(Rstd), InterpArg::i32(stride),
               InterpArg::i32(N), InterpArg::f32(eps)},
              opt) == "");
  auto ref = layerNormRef(X, W, Bv, size_t(rows), size_t(N), double(eps), size_t(stride));
  // Mean is near zero, so compare it in absolute terms.
  for (int r = 0; r < rows; ++r)
    CHECK(std::fabs(Mean[size_t(r)] - ref.mean[size_t(r)]) < 1e-5);
  CHECK(relErrL2(Rstd, ref.rstd) < 1e-5);
  CHECK(relErrL2(Y, ref.y) < 1e-5);
}

TEST_CASE("interpreter: kernels_dsl matmul (f32, f16, i8) with strides", "[interp][dsl]") {
  if (!dslPresent("basics/matmul.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  int M = 100 + s.range(0, 50), N = 90 + s.range(0, 50), K = 70 + s.range(0, 60);
  INFO("M " << M << " N " << N << " K " << K);
  auto cfg = [](const char *dt, const char *acc, const char *out) {
    tessera::CompileOptions co;
    co.constexprs = {{"BM", int64_t(64)}, {"BN", int64_t(32)}, {"BK", int64_t(32)},
                     {"GROUP", int64_t(2)}, {"DT", *tessera::parseDType(dt)},
                     {"ACC", *tessera::parseDType(acc)}, {"OUT", *tessera::parseDType(out)}};
    return co;
  };
  unsigned grid = cdiv(unsigned(M), 64) * cdiv(unsigned(N), 32);
  // B is given transposed (column-major) to exercise the strides.
  auto args = [&](const void *A, const void *B, const void *C) {
    return std::vector<InterpArg>{InterpArg::ptr(A), InterpArg::ptr(B), InterpArg::ptr(C),
                                  InterpArg::i32(M), InterpArg::i32(N), InterpArg::i32(K),
                                  InterpArg::i32(K), InterpArg::i32(1), InterpArg::i32(1),
                                  InterpArg::i32(K), InterpArg::i32(N), InterpArg::i32(1)};
  };
  SECTION("f32") {
    auto A = s.uniform(size_t(M) * K), Bt = s.uniform(size_t(N) * K);
    std::vector<float> B(size_t(K) * N), C(size_t(M) * N);
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n)
        B[size_t(k * N + n)] = Bt[size_t(n * K + k)];
    auto p = prepFile("basics/matmul.tile", "matmul", cfg("f32", "f32", "f32"));
    InterpOptions opt;
    opt.buffers = {buf(A), buf(Bt), buf(C)};
    REQUIRE(run(*p, grid, 1, 1, args(A.data(), Bt.data(), C.data()), opt) == "");
    CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) < 1e-5);
  }
  SECTION("f16 in, f32 accumulate, f16 out") {
    auto A = s.uniform(size_t(M) * K), Bt = s.uniform(size_t(N) * K);
    std::vector<tessera::f16> A16(A.size()), Bt16(Bt.size()), C16(size_t(M) * N);
    std::vector<float> B(size_t(K) * N);
    for (size_t i = 0; i < A.size(); ++i) {
      A16[i] = tessera::f16(A[i]);
      A[i] = A16[i].toFloat();
    }
    for (size_t i = 0; i < Bt.size(); ++i)
      Bt16[i] = tessera::f16(Bt[i]);
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n)
        B[size_t(k * N + n)] = Bt16[size_t(n * K + k)].toFloat();
    auto p = prepFile("basics/matmul.tile", "matmul", cfg("f16", "f32", "f16"));
    InterpOptions opt;
    opt.buffers = {buf(A16), buf(Bt16), buf(C16)};
    REQUIRE(run(*p, grid, 1, 1, args(A16.data(), Bt16.data(), C16.data()), opt) == "");
    std::vector<float> C(C16.size());
    for (size_t i = 0; i < C.size(); ++i)
      C[i] = C16[i].toFloat();
    CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) < 1e-3); // f16 output rounding
  }
  SECTION("i8 in, i32 accumulate") {
    std::vector<int8_t> A(size_t(M) * K), Bt(size_t(N) * K);
    for (auto &v : A) v = int8_t(s.range(-128, 127));
    for (auto &v : Bt) v = int8_t(s.range(-128, 127));
    std::vector<int32_t> C(size_t(M) * N);
    auto p = prepFile("basics/matmul.tile", "matmul", cfg("i8", "i32", "i32"));
    InterpOptions opt;
    opt.buffers = {buf(A), buf(Bt), buf(C)};
    REQUIRE(run(*p, grid, 1, 1, args(A.data(), Bt.data(), C.data()), opt) == "");
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        int32_t r = 0;
        for (int k = 0; k < K; ++k)
          r += int32_t(A[size_t(m * K + k)]) * int32_t(Bt[size_t(n * K + k)]);
        REQUIRE(C[size_t(m * N + n)] == r);
      }
  }
}

TEST_CASE("interpreter: kernels_dsl infcl_lse_fwd", "[interp][dsl]") {
  if (!dslPresent("infcl/lse_fwd.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  int ni = 70 + s.range(0, 30), nt = 90 + s.range(0, 30), D = 40 + s.range(0, 30);
  int si = D + 2, st = D + 1;
  INFO("n_i " << ni << " n_t " << nt << " D " << D);
  auto I = s.uniform(size_t(ni) * size_t(si)), T = s.uniform(size_t(nt) * size_t(st));
  std::vector<float> L(static_cast<size_t>(ni));
  tessera::CompileOptions co;
  co.constexprs = {{"BM", int64_t(32)}, {"BN", int64_t(32)}, {"BD", int64_t(16)}};
  auto p = prepFile("infcl/lse_fwd.tile", "infcl_lse_fwd", co);
  InterpOptions opt;
  opt.buffers = {buf(I), buf(T), buf(L)};
  REQUIRE(run(*p, cdiv(unsigned(ni), 32), 1, 1,
              {ptr(I), ptr(T), ptr(L), InterpArg::i32(ni), InterpArg::i32(nt), InterpArg::i32(D),
               InterpArg::i32(si), InterpArg::i32(st)},
              opt) == "");
  std::vector<double> ref(static_cast<size_t>(ni));
  for (int i = 0; i < ni; ++i) {
    std::vector<double> x(static_cast<size_t>(nt));
    double mx = -1e300, sum = 0;
    for (int j = 0; j < nt; ++j) {
      double d = 0;
      for (int k = 0; k < D; ++k)
        d += double(I[size_t(i * si + k)]) * double(T[size_t(j * st + k)]);
      x[size_t(j)] = d;
      mx = std::max(mx, d);
    }
    for (double v : x)
      sum += std::exp(v - mx);
    ref[size_t(i)] = mx + std::log(sum);
  }
  CHECK(relErrL2(L, ref) < 1e-5);
}

TEST_CASE("interpreter: kernels_dsl blockwise quantize / dequantize", "[interp][dsl]") {
  if (!dslPresent("quant/blockwise_quant.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  // A sorted signed code book with code[0] = -1, code[127] = 0, code[255] = 1.
  std::vector<float> code = s.uniform(127, -1, 0), pos = s.uniform(128, 0, 1);
  std::sort(code.begin(), code.end());
  std::sort(pos.begin(), pos.end());
  code[0] = -1;
  code.push_back(0);
  code.insert(code.end(), pos.begin(), pos.end());
  code[255] = 1;
  REQUIRE(code.size() == 256);
  REQUIRE(std::is_sorted(code.begin(), code.end()));
  for (int64_t bs : {int64_t(256), int64_t(4096)}) {
    INFO("BLOCKSIZE " << bs);
    int n = int(bs) * 3 + s.range(1, int(bs) - 1); // a partial last block
    auto X = s.uniform(static_cast<size_t>(n), -3, 3);
    unsigned blocks = cdiv(unsigned(n), unsigned(bs));
    std::vector<uint8_t> Q(static_cast<size_t>(n));
    std::vector<float> absmax(blocks), Y(static_cast<size_t>(n));
    tessera::CompileOptions co;
    co.constexprs = {{"BLOCKSIZE", bs}, {"TILE", int64_t(1024)}};
    auto q = prepFile("quant/blockwise_quant.tile", "quantize_blockwise", co);
    auto dq = prepFile("quant/blockwise_quant.tile", "dequantize_blockwise", co);
    // Bucket tables flagged as not holding: every step takes the binary search.
    std::vector<uint8_t> buckets(8192);
    std::vector<int32_t> bad(32, 1);
    InterpOptions opt;
    opt.buffers = {buf(X), buf(code), buf(Q), buf(absmax), buf(Y), buf(buckets), buf(bad)};
    REQUIRE(run(*q, blocks, 1, 1,
                {ptr(X), ptr(code), ptr(Q), ptr(absmax), ptr(buckets), ptr(bad), InterpArg::i32(n)},
                opt) == "");
    REQUIRE(run(*dq, cdiv(unsigned(n), 1024), 1, 1,
                {ptr(Q), ptr(code), ptr(absmax), ptr(Y), InterpArg::i32(n)}, opt) == "");
    int mismatches = 0;
    for (unsigned b = 0; b < blocks; ++b) {
      float amax = 0;
      for (int i = int(b * bs); i < std::min(n, int((b + 1) * bs)); ++i)
        amax = std::max(amax, std::fabs(X[size_t(i)]));
      REQUIRE(absmax[b] == amax);
      float scale = 1.0f / amax;
      for (int i = int(b * bs); i < std::min(n, int((b + 1) * bs)); ++i) {
        float xn = X[size_t(i)] * scale;
        int best = 0; // nearest code by exhaustive search
        for (int c = 1; c < 256; ++c)
          if (std::fabs(double(code[size_t(c)]) - xn) < std::fabs(double(code[size_t(best)]) - xn))
            best = c;
        if (Q[size_t(i)] != best) {
          // Only a near-tie may go either way: the kernel compares with an f32 midpoint.
          double dq = std::fabs(double(code[Q[size_t(i)]]) - xn);
          double db = std::fabs(double(code[size_t(best)]) - xn);
          INFO("x " << xn << " got code " << int(Q[size_t(i)]) << " best " << best);
          CHECK(dq - db < 1e-6);
          mismatches += dq - db >= 1e-6;
        }
        REQUIRE(Y[size_t(i)] == code[Q[size_t(i)]] * amax);
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("interpreter: kernels_dsl roast_mm_fwd", "[interp][dsl]") {
  if (!dslPresent("roast/roast_mm.tile"))
    return;
  Seeded s;
  INFO("seed " << s.seed);
  const int HK = 32, HN = 64, P = 45007;
  int Bn = 50 + s.range(0, 40), K = 70 + s.range(0, 40), N = 100 + s.range(0, 60);
  int memSize = 5000 + s.range(0, 3000);
  float lam = 0.75f;
  INFO("B " << Bn << " K " << K << " N " << N << " H " << memSize);
  std::vector<int32_t> R(8);
  for (auto &r : R)
    r = s.range(1, P - 1);
  auto X = s.uniform(size_t(Bn) * size_t(K)), Mem = s.uniform(static_cast<size_t>(memSize));
  auto loc = [&](int64_t kb, int64_t nb) {
    int64_t hi = (kb * R[3] + nb * R[2] + R[1]) % P, lo = (kb * R[7] + nb * R[5] + R[4]) % P;
    return (hi * P + lo) % (memSize - HK * HN);
  };
  std::vector<double> ref(size_t(Bn) * size_t(N), 0.0);
  for (int b = 0; b < Bn; ++b)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n)
        ref[size_t(b * N + n)] += double(X[size_t(b * K + k)]) *
                                  Mem[size_t(loc(k / HK, n / HN) + (k % HK) * HN + n % HN)];
  for (auto &v : ref)
    v *= lam;
  for (int64_t bn : {int64_t(32), int64_t(128)}) { // one hash per K-step, or per column
    INFO("BN " << bn);
    tessera::CompileOptions co;
    co.constexprs = {{"BM", int64_t(32)}, {"BN", bn}, {"BK", int64_t(16)}, {"GROUP", int64_t(2)}};
    auto p = prepFile("roast/roast_mm.tile", "roast_mm_fwd", co);
    std::vector<float> Y(size_t(Bn) * size_t(N));
    InterpOptions opt;
    opt.buffers = {buf(X), buf(Mem), buf(Y)};
    REQUIRE(run(*p, cdiv(unsigned(Bn), 32) * cdiv(unsigned(N), unsigned(bn)), 1, 1,
                {ptr(X), ptr(Mem), ptr(Y), InterpArg::i32(R[1]), InterpArg::i32(R[2]),
                 InterpArg::i32(R[3]), InterpArg::i32(R[4]), InterpArg::i32(R[5]),
                 InterpArg::i32(R[7]), InterpArg::i32(Bn), InterpArg::i32(K),
                 InterpArg::i32(N), InterpArg::i32(memSize), InterpArg::f32(lam),
                 InterpArg::i32(K), InterpArg::i32(1), InterpArg::i32(N), InterpArg::i32(1)},
                opt) == "");
    CHECK(relErrL2(Y, ref) < 1e-5);
  }
}

TEST_CASE("interpreter: integer and cast edge cases follow the GPU", "[interp]") {
  // Hand-written IR: ops whose C++ meaning is undefined get PTX's results.
  const char *ir = R"(
func.func @edge(%out: !tile.ptr<i32>, %a: i32) attributes {tile.kernel, tile.signature = ["Out:*i32", "a:i32"]} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c7 = arith.constant 7 : i32
  %cm7 = arith.constant -7 : i32
  %c40 = arith.constant 40 : i32
  %min = arith.constant -2147483648 : i32
  %m1 = arith.constant -1 : i32
  %r0 = arith.divsi %a, %c0 : i32
  %r1 = arith.divui %a, %c0 : i32
  %r2 = arith.remsi %a, %c0 : i32
  %r3 = arith.divsi %min, %m1 : i32
  %r4 = arith.shli %a, %c40 : i32
  %r5 = arith.shrsi %min, %c40 : i32
  %r6 = arith.floordivsi %cm7, %c2 : i32
  %r7 = arith.ceildivsi %c7, %c2 : i32
  %big = arith.constant 3.0e10 : f32
  %r8 = arith.fptosi %big : f32 to i32
  %nan = arith.constant 0x7FC00000 : f32
  %r9 = arith.fptosi %nan : f32 to i32
  %t = arith.constant true
  %r10 = arith.extsi %t : i1 to i32
  %r11 = arith.extui %t : i1 to i32
  %tf = arith.sitofp %t : i1 to f32
  %r12 = arith.fptosi %tf : f32 to i32
  %u = arith.constant -56 : i8
  %uf = arith.uitofp %u : i8 to f32
  %r13 = arith.fptosi %uf : f32 to i32
  %c100 = arith.constant 100 : i8
  %gt = arith.cmpi ugt, %u, %c100 : i8
  %r14 = arith.extui %gt : i1 to i32
  %mx = arith.maxui %u, %c100 : i8
  %r15 = arith.extui %mx : i8 to i32
  %c16 = arith.constant 16 : i8
  %sq = arith.muli %c16, %c16 : i8
  %r16 = arith.extsi %sq : i8 to i32
  %neg = arith.constant -2.5 : f32
  %r17 = arith.fptoui %neg : f32 to i32
  %h = arith.constant 65520.0 : f32
  %hh = arith.truncf %h : f32 to f16
  %hb = arith.bitcast %hh : f16 to i16
  %r18 = arith.extui %hb : i16 to i32
  %rs = arith.remsi %cm7, %c2 : i32
  %vals = tile.make_range 0, 32 : tensor<32xi32>
  %ptrs = tile.splat %out : !tile.ptr<i32> -> tensor<32x!tile.ptr<i32>>
  %p = tile.addptr %ptrs, %vals : tensor<32x!tile.ptr<i32>>, tensor<32xi32>
  %z = arith.constant dense<0> : tensor<32xi32>
  tile.store %p, %z : tensor<32x!tile.ptr<i32>>, tensor<32xi32>
  %o0 = tile.addptr %out, %c0 : !tile.ptr<i32>, i32
  tile.store %o0, %r0 : !tile.ptr<i32>, i32
  %i1 = arith.constant 1 : i32
  %o1 = tile.addptr %out, %i1 : !tile.ptr<i32>, i32
  tile.store %o1, %r1 : !tile.ptr<i32>, i32
  %o2 = tile.addptr %out, %c2 : !tile.ptr<i32>, i32
  tile.store %o2, %r2 : !tile.ptr<i32>, i32
  %i3 = arith.constant 3 : i32
  %o3 = tile.addptr %out, %i3 : !tile.ptr<i32>, i32
  tile.store %o3, %r3 : !tile.ptr<i32>, i32
  %i4 = arith.constant 4 : i32
  %o4 = tile.addptr %out, %i4 : !tile.ptr<i32>, i32
  tile.store %o4, %r4 : !tile.ptr<i32>, i32
  %i5 = arith.constant 5 : i32
  %o5 = tile.addptr %out, %i5 : !tile.ptr<i32>, i32
  tile.store %o5, %r5 : !tile.ptr<i32>, i32
  %i6 = arith.constant 6 : i32
  %o6 = tile.addptr %out, %i6 : !tile.ptr<i32>, i32
  tile.store %o6, %r6 : !tile.ptr<i32>, i32
  %o7 = tile.addptr %out, %c7 : !tile.ptr<i32>, i32
  tile.store %o7, %r7 : !tile.ptr<i32>, i32
  %i8 = arith.constant 8 : i32
  %o8 = tile.addptr %out, %i8 : !tile.ptr<i32>, i32
  tile.store %o8, %r8 : !tile.ptr<i32>, i32
  %i9 = arith.constant 9 : i32
  %o9 = tile.addptr %out, %i9 : !tile.ptr<i32>, i32
  tile.store %o9, %r9 : !tile.ptr<i32>, i32
  %i10 = arith.constant 10 : i32
  %o10 = tile.addptr %out, %i10 : !tile.ptr<i32>, i32
  tile.store %o10, %r10 : !tile.ptr<i32>, i32
  %i11 = arith.constant 11 : i32
  %o11 = tile.addptr %out, %i11 : !tile.ptr<i32>, i32
  tile.store %o11, %r11 : !tile.ptr<i32>, i32
  %i12 = arith.constant 12 : i32
  %o12 = tile.addptr %out, %i12 : !tile.ptr<i32>, i32
  tile.store %o12, %r12 : !tile.ptr<i32>, i32
  %i13 = arith.constant 13 : i32
  %o13 = tile.addptr %out, %i13 : !tile.ptr<i32>, i32
  tile.store %o13, %r13 : !tile.ptr<i32>, i32
  %i14 = arith.constant 14 : i32
  %o14 = tile.addptr %out, %i14 : !tile.ptr<i32>, i32
  tile.store %o14, %r14 : !tile.ptr<i32>, i32
  %i15 = arith.constant 15 : i32
  %o15 = tile.addptr %out, %i15 : !tile.ptr<i32>, i32
  tile.store %o15, %r15 : !tile.ptr<i32>, i32
  %i16 = arith.constant 16 : i32
  %o16 = tile.addptr %out, %i16 : !tile.ptr<i32>, i32
  tile.store %o16, %r16 : !tile.ptr<i32>, i32
  %i17 = arith.constant 17 : i32
  %o17 = tile.addptr %out, %i17 : !tile.ptr<i32>, i32
  tile.store %o17, %r17 : !tile.ptr<i32>, i32
  %i18 = arith.constant 18 : i32
  %o18 = tile.addptr %out, %i18 : !tile.ptr<i32>, i32
  tile.store %o18, %r18 : !tile.ptr<i32>, i32
  %i19 = arith.constant 19 : i32
  %o19 = tile.addptr %out, %i19 : !tile.ptr<i32>, i32
  tile.store %o19, %rs : !tile.ptr<i32>, i32
  %bad = arith.constant 40 : i32
  %ob = tile.addptr %out, %bad : !tile.ptr<i32>, i32
  %cond = arith.cmpi sgt, %a, %bad : i32
  scf.if %cond {
    tile.store %ob, %a : !tile.ptr<i32>, i32
  }
  return
}
)";
  std::string diag;
  auto p = tessera::prepareInterpreterIR(ir, "edge", diag);
  INFO(diag);
  REQUIRE(p);
  std::vector<int32_t> out(32, 99);
  InterpOptions opt;
  opt.buffers = {buf(out)};
  REQUIRE(run(*p, 1, 1, 1, {ptr(out), InterpArg::i32(5)}, opt) == "");
  std::vector<int32_t> expect = {-1, -1, 5, INT32_MIN, 0, -1, -4, 4, INT32_MAX, 0,
                                 -1, 1, -1, 200, 1, 200, 0, 0, 0x7c00, -1};
  for (size_t i = 0; i < expect.size(); ++i) {
    INFO("result " << i);
    CHECK(out[i] == expect[i]);
  }
  // Without debug locations the report points into the IR text.
  std::string err = run(*p, 1, 1, 1, {ptr(out), InterpArg::i32(50)}, opt);
  INFO(err);
  CHECK(err.find("out-of-bounds store in kernel 'edge' at tile-ir:") == 0);
  CHECK(err.find("element offset 40 is outside the buffer of 32 elements") != std::string::npos);
}

TEST_CASE("interpreter: f16-accumulator and f64 dots, unoptimized IR", "[interp]") {
  Seeded s;
  INFO("seed " << s.seed);
  int M = 40, N = 33, K = 77;
  auto A = s.uniform(size_t(M) * size_t(K)), B = s.uniform(size_t(K) * size_t(N));
  SECTION("f16 x f16 -> f16") {
    std::string src = kMatmul;
    auto rep = [&](const std::string &from, const std::string &to) {
      for (size_t at; (at = src.find(from)) != std::string::npos;)
        src.replace(at, from.size(), to);
    };
    rep("A: *f32, B: *f32, C: *f32", "A: *f16, B: *f16, C: *f16");
    rep("zeros((BM, BN), f32)", "zeros((BM, BN), f16)");
    auto p = prepSource(src, "mm");
    std::vector<tessera::f16> A16(A.size()), B16(B.size()), C16(size_t(M) * size_t(N));
    for (size_t i = 0; i < A.size(); ++i) {
      A16[i] = tessera::f16(A[i]);
      A[i] = A16[i].toFloat();
    }
    for (size_t i = 0; i < B.size(); ++i) {
      B16[i] = tessera::f16(B[i]);
      B[i] = B16[i].toFloat();
    }
    InterpOptions opt;
    opt.buffers = {buf(A16), buf(B16), buf(C16)};
    REQUIRE(run(*p, 2, 2, 1,
                {ptr(A16), ptr(B16), ptr(C16), InterpArg::i32(M), InterpArg::i32(N),
                 InterpArg::i32(K)},
                opt) == "");
    std::vector<float> C(C16.size());
    for (size_t i = 0; i < C.size(); ++i)
      C[i] = C16[i].toFloat();
    double err = relErrL2(C, matmulRef(A, B, M, N, K));
    CHECK(err < 3e-3); // f16 accumulation
    CHECK(err > 1e-6); // ... which really rounds
  }
  SECTION("f64, with optimization off") {
    std::string src = kMatmul;
    for (size_t at; (at = src.find("f32")) != std::string::npos;)
      src.replace(at, 3, "f64");
    tessera::CompileOptions co;
    co.optimize = false;
    auto p = prepSource(src, "mm", co);
    std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), C(size_t(M) * size_t(N));
    InterpOptions opt;
    opt.buffers = {buf(Ad), buf(Bd), buf(C)};
    REQUIRE(run(*p, 2, 2, 1,
                {ptr(Ad), ptr(Bd), ptr(C), InterpArg::i32(M), InterpArg::i32(N), InterpArg::i32(K)},
                opt) == "");
    CHECK(relErrL2(C, matmulRef(A, B, M, N, K)) < 1e-13);
  }
}

TEST_CASE("interpreter: 16- and 64-bit atomics", "[interp]") {
  const char *src = R"(
@kernel
def at(H: *f16, D: *f64, L: *i64, S: *i16):
    atomic_add(H, full((64,), 0.5, f16) + arange(0, 64).to(f16) * 0.0)
    atomic_add(D + arange(0, 64) % 2, full((64,), 0.25, f64))
    atomic_max(L, program_id(0).to(i64) * 1000000000 * 10)
    atomic_xor(S, (program_id(0) + 1).to(i16))
)";
  auto p = prepSource(src, "at");
  std::vector<tessera::f16> H(1, tessera::f16(0.0f));
  std::vector<double> D(2);
  std::vector<int64_t> L(1);
  std::vector<int16_t> S(1);
  InterpOptions opt;
  opt.threads = 4;
  opt.buffers = {buf(H), buf(D), buf(L), buf(S)};
  REQUIRE(run(*p, 16, 1, 1, {ptr(H), ptr(D), ptr(L), ptr(S)}, opt) == "");
  CHECK(H[0].toFloat() == 512.0f); // 16 * 64 * 0.5, exact in f16
  CHECK(D[0] == 16 * 32 * 0.25);
  CHECK(D[1] == 16 * 32 * 0.25);
  CHECK(L[0] == int64_t(15) * 1000000000 * 10);
  int16_t x = 0;
  for (int i = 1; i <= 16; ++i)
    x = int16_t(x ^ i);
  CHECK(S[0] == x);
}

TEST_CASE("interpreter: reduce combiners may capture outer scalars", "[interp]") {
  const char *ir = R"(
func.func @cap(%out: !tile.ptr<i32>, %a: i32) attributes {tile.kernel} {
  %c1 = arith.constant 1 : i32
  %r = tile.make_range 0, 8 : tensor<8xi32>
  %s = tile.reduce(%r) {axis = 0 : i32} : (tensor<8xi32>) -> i32 {
  ^bb0(%x: i32, %y: i32):
    %t = arith.addi %x, %y : i32
    %u = arith.addi %t, %a : i32
    tile.reduce.return %u : i32
  }
  tile.store %out, %s : !tile.ptr<i32>, i32
  %e = tile.expand_dims %r {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>
  %b = tile.broadcast %e : tensor<1x8xi32> -> tensor<4x8xi32>
  %cols = tile.reduce(%b) {axis = 0 : i32} : (tensor<4x8xi32>) -> tensor<8xi32> {
  ^bb0(%x: i32, %y: i32):
    %t = arith.addi %x, %y : i32
    %u = arith.subi %t, %c1 : i32
    tile.reduce.return %u : i32
  }
  %p = tile.addptr %out, %c1 : !tile.ptr<i32>, i32
  %ps = tile.splat %p : !tile.ptr<i32> -> tensor<8x!tile.ptr<i32>>
  %pr = tile.addptr %ps, %r : tensor<8x!tile.ptr<i32>>, tensor<8xi32>
  tile.store %pr, %cols : tensor<8x!tile.ptr<i32>>, tensor<8xi32>
  return
}
)";
  std::string diag;
  auto p = tessera::prepareInterpreterIR(ir, "cap", diag);
  INFO(diag);
  REQUIRE(p);
  std::vector<int32_t> out(9);
  InterpOptions opt;
  opt.buffers = {buf(out)};
  REQUIRE(run(*p, 1, 1, 1, {ptr(out), InterpArg::i32(5)}, opt) == "");
  CHECK(out[0] == 28 + 7 * 5);
  for (int j = 0; j < 8; ++j)
    CHECK(out[size_t(1 + j)] == 4 * j - 3);
}

TEST_CASE("interpreter: preparation errors", "[interp]") {
  std::string diag;
  const char *ir = R"(
func.func @k(%x: f32, %n: i32) attributes {tile.kernel} {
  %y = math.fpowi %x, %n : f32, i32
  return
}
)";
  CHECK_FALSE(tessera::prepareInterpreterIR(ir, "k", diag));
  CHECK(diag.find("tile-ir:3:8: error: the interpreter does not support 'math.fpowi'") == 0);
  CHECK_FALSE(tessera::prepareInterpreterIR(ir, "nope", diag));
  CHECK(diag.find("no kernel named 'nope'") != std::string::npos);
  CHECK_FALSE(tessera::prepareInterpreterIR("func.func @k(", "k", diag));
  CHECK(diag.find("error") != std::string::npos);
  const char *two = "@kernel\ndef a(X: *f32):\n    store(X, 1.0)\n\n"
                    "@kernel\ndef b(X: *f32):\n    store(X, 2.0)\n";
  CHECK_FALSE(tessera::prepareInterpreterSource(two, "two.tile", "", {}, diag));
  CHECK(diag.find("name the one to interpret") != std::string::npos);
  auto b = tessera::prepareInterpreterSource(two, "two.tile", "b", {}, diag);
  REQUIRE(b);
  float x = 0;
  CHECK(tessera::runInterpreter(*b, 1, 1, 1, {InterpArg::ptr(&x)}) == "");
  CHECK(x == 2.0f);
  CHECK_FALSE(tessera::prepareInterpreterSource("@kernel\ndef c(X: *f32):\n    store(X, y)\n",
                                                "bad.tile", "c", {}, diag));
  CHECK(diag.find("bad.tile:3:14: error: unknown name 'y'") == 0);
}
