// Specialization on integer argument facts: the compiler side
// (CompileOptions::argFacts), the runtime's variant table and cache keys, and
// on a GPU the JIT picking variants at launch.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/KernelCache.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

using namespace tessera;
using tessera::testing::errorOf;

namespace {

const char *kStrided = R"(
@kernel
def strided(X: *f32, Y: *f32, n: i32, stride: i32):
    offs = arange(0, 512)
    mask = offs < n + stride
    x = load(X + offs * stride, mask=mask)
    store(Y + offs, x, mask=mask)
)";

// A row of 256 at run-time offset row * stride: the vector loads need an
// alignment check unless stride is known to be a multiple of 16.
const char *kRows = R"(
@kernel
def rows(X: *f32, Y: *f32, stride: i32):
    row = program_id(0)
    x = load(X + row * stride + arange(0, 256))
    store(Y + row * 256 + arange(0, 256), x)

@kernel
def tile2d(A: *f32, B: *f32, stride_am: i32, stride_ak: i32):
    rm = arange(0, 32)
    rk = arange(0, 32)
    a = load(A + rm[:, None] * stride_am + rk[None, :] * stride_ak)
    store(B + rm[:, None] * 32 + rk[None, :], a)
)";

CompileResult compileWith(const char *src, const std::string &kernel,
                          std::map<std::string, ArgFact> facts, bool gpu = false) {
  CompileOptions o;
  o.argFacts = std::move(facts);
  return compileSource(src, "spec.tile", kernel, o, gpu ? Stage::GpuIR : Stage::Tile);
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size()))
    ++n;
  return n;
}

// Loads from global memory (address space 1) that produce a vector.
// Vector loads of global memory: a vector type, or the vector's bytes as one
// integer (a vector guarded by a run-time alignment test without masks loads
// so; the kernels here hold only f32 data, so an i64 or i128 is two or four).
size_t vectorGlobalLoads(const std::string &gpuIR) {
  std::regex re(R"(llvm\.load [^\n]*!llvm\.ptr<1> -> (vector<|i128|i64))");
  return size_t(std::distance(std::sregex_iterator(gpuIR.begin(), gpuIR.end(), re),
                              std::sregex_iterator()));
}

} // namespace

TEST_CASE("EqualsOne replaces the argument's uses by the constant 1", "[specialization]") {
  CompileResult plain = compileWith(kStrided, "strided", {});
  REQUIRE(plain.ok);
  CompileResult one = compileWith(kStrided, "strided", {{"stride", ArgFact::EqualsOne}});
  INFO(one.diagnostics << one.tileIR);
  REQUIRE(one.ok);
  // The parameter stays in the signature, so launch arguments do not change.
  REQUIRE(one.kernels.size() == 1);
  CHECK(one.kernels[0].params.size() == 4);
  CHECK(one.tileIR.find("%arg3: i32") != std::string::npos);
  // ... but nothing uses it: the only mention is the declaration.
  CHECK(count(one.tileIR, "%arg3") == 1);
  CHECK(count(plain.tileIR, "%arg3") > 1);
  // n + stride keeps the constant; offs * stride folded away.
  CHECK(std::regex_search(one.tileIR, std::regex(R"(arith\.constant 1 : i32)")));
  CHECK(one.tileIR.find("arith.muli") == std::string::npos);
  CHECK(plain.tileIR.find("arith.muli") != std::string::npos);
}

TEST_CASE("EqualsOne on a unit stride makes the loads vector loads", "[specialization]") {
  CompileResult plain = compileWith(kStrided, "strided", {}, true);
  CompileResult one = compileWith(kStrided, "strided", {{"stride", ArgFact::EqualsOne}}, true);
  REQUIRE(plain.ok);
  REQUIRE(one.ok);
  CHECK(vectorGlobalLoads(plain.gpuIR) == 0);
  CHECK(vectorGlobalLoads(one.gpuIR) > 0);
}

TEST_CASE("DivisibleBy16 marks the argument and proves row alignment", "[specialization]") {
  CompileResult plain = compileWith(kRows, "rows", {}, true);
  CompileResult div = compileWith(kRows, "rows", {{"stride", ArgFact::DivisibleBy16}}, true);
  INFO(div.diagnostics);
  REQUIRE(plain.ok);
  REQUIRE(div.ok);
  CompileResult tile = compileWith(kRows, "rows", {{"stride", ArgFact::DivisibleBy16}});
  REQUIRE(tile.ok);
  CHECK(tile.tileIR.find("%arg2: i32 {tile.divisibility = 16 : i64}") != std::string::npos);
  // Both vectorize; only the unproven one checks the address at run time.
  CHECK(vectorGlobalLoads(plain.gpuIR) > 0);
  CHECK(vectorGlobalLoads(div.gpuIR) > 0);
  CHECK(plain.gpuIR.find("llvm.ptrtoint") != std::string::npos);
  CHECK(div.gpuIR.find("llvm.ptrtoint") == std::string::npos);
}

TEST_CASE("DivisibleBy16 on a modulus keeps (pid * B + arange) % N contiguous", "[specialization]") {
  // A run of 256 consecutive offsets from a multiple of 256, modulo N: with
  // N % 16 == 0 it wraps only at multiples of 16, so 16-element pieces stay
  // consecutive and the load vectorizes; with N unknown it cannot.
  const char *src = R"(
@kernel
def wrap(X: *f32, Y: *f32, N: i32):
    offs = (program_id(0) * 256 + arange(0, 256)) % N
    store(Y + program_id(0) * 256 + arange(0, 256), load(X + offs))

@kernel
def wrap_signed(X: *f32, Y: *f32, N: i32, base: i32):
    offs = (base + arange(0, 256)) % N
    store(Y + arange(0, 256), load(X + offs))
)";
  CompileResult plain = compileWith(src, "wrap", {}, true);
  CompileResult div = compileWith(src, "wrap", {{"N", ArgFact::DivisibleBy16}}, true);
  REQUIRE(plain.ok);
  REQUIRE(div.ok);
  CHECK(vectorGlobalLoads(plain.gpuIR) == 0);
  CHECK(vectorGlobalLoads(div.gpuIR) > 0);
  // A dividend that may be negative wraps elsewhere (C's remainder takes its
  // sign): no vectors, even with both facts.
  CompileResult neg = compileWith(src, "wrap_signed",
                                  {{"N", ArgFact::DivisibleBy16}, {"base", ArgFact::DivisibleBy16}}, true);
  REQUIRE(neg.ok);
  CHECK(vectorGlobalLoads(neg.gpuIR) == 0);
}

TEST_CASE("A dot operand gathered because of a run-time '%' says so, with the line",
          "[specialization][remarks]") {
  // Triton's tutorial indexing: offs_bn is taken modulo N, and pid_n comes
  // through a subtraction of a run-time value, so its sign is not provable.
  // (A quotient by a run-time value counts as non-negative, as in Triton:
  // docs/performance.md, "What axis analysis assumes".)
  const char *src = R"(
@kernel
def mm(A: *f16, B: *f16, C: *f32, M: i32, N: i32, K: i32, g: i32):
    pid_n = program_id(0) - g
    offs_bn = (pid_n * 128 + arange(0, 128)) % N
    offs_am = arange(0, 128)
    rk = arange(0, 64)
    a_ptrs = A + offs_am[:, None] * K + rk[None, :]
    b_ptrs = B + rk[:, None] * N + offs_bn[None, :]
    acc = zeros((128, 128), f32)
    for k in range(0, K, 64):
        acc = dot(load(a_ptrs), load(b_ptrs), acc)
        a_ptrs += 64
        b_ptrs += 64 * N
    store(C + offs_am[:, None] * 128 + arange(0, 128)[None, :], acc)
)";
  CompileOptions o;
  o.target = *Target::parse("sm_90a");
  o.argFacts = {{"N", ArgFact::DivisibleBy16}, {"K", ArgFact::DivisibleBy16}};
  CompileResult r = compileSource(src, "mm.tile", "mm", o, Stage::GpuIR);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  REQUIRE(r.remarks.size() == 1);
  INFO(r.remarks[0]);
  // Still pipelined on the tensor cores, B copied element by element.
  CHECK(r.remarks[0].find("dot loop pipelined") != std::string::npos);
  CHECK(r.remarks[0].find("B copied element by element: a run-time '%' or '/' (mm.tile:5:46) "
                          "breaks the runs") != std::string::npos);
  // Through a division instead (Triton's grouped order divides by group_size_m):
  // the quotient counts as non-negative, the columns stay contiguous.
  std::string divided = src;
  divided.replace(divided.find("program_id(0) - g"), 17, "program_id(0) // g");
  CompileResult d = compileSource(divided, "mm.tile", "mm", o, Stage::GpuIR);
  REQUIRE(d.ok);
  REQUIRE(d.remarks.size() == 1);
  INFO(d.remarks[0]);
  CHECK(d.remarks[0].find("dot loop pipelined") != std::string::npos);
  CHECK(d.remarks[0].find("element by element") == std::string::npos);
}

TEST_CASE("2-D tile: unit column stride and row stride % 16 give aligned vector loads",
          "[specialization]") {
  CompileResult plain = compileWith(kRows, "tile2d", {}, true);
  CompileResult unit = compileWith(kRows, "tile2d", {{"stride_ak", ArgFact::EqualsOne}}, true);
  CompileResult both = compileWith(
      kRows, "tile2d",
      {{"stride_ak", ArgFact::EqualsOne}, {"stride_am", ArgFact::DivisibleBy16}}, true);
  REQUIRE(plain.ok);
  REQUIRE(unit.ok);
  REQUIRE(both.ok);
  CHECK(vectorGlobalLoads(plain.gpuIR) == 0);
  CHECK(vectorGlobalLoads(unit.gpuIR) > 0);
  CHECK(unit.gpuIR.find("llvm.ptrtoint") != std::string::npos); // row start unproven
  CHECK(vectorGlobalLoads(both.gpuIR) > 0);
  CHECK(both.gpuIR.find("llvm.ptrtoint") == std::string::npos);
  CHECK(std::regex_search(both.gpuIR, std::regex(R"(llvm\.load [^\n]*alignment = 16[^\n]*!llvm\.ptr<1> -> vector<4xf32>)")));
}

TEST_CASE("Facts on non-integer parameters and unknown names are errors", "[specialization]") {
  const char *src = R"(
@kernel
def k(X: *f32, s: f32, h: i16, n: i32, BLOCK: constexpr = 128):
    offs = arange(0, BLOCK)
    store(X + offs, load(X + offs, mask=offs < n) * s, mask=offs < n)
)";
  auto diag = [&](const char *name, ArgFact f) {
    CompileResult r = compileWith(src, "k", {{name, f}});
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  std::string d = diag("s", ArgFact::EqualsOne);
  CHECK(d.find("spec.tile:3:16: error: cannot assume 's=1': only i32 and i64 parameters can be "
               "specialized, 's' is f32") != std::string::npos);
  d = diag("X", ArgFact::DivisibleBy16);
  CHECK(d.find("cannot assume 'X%16': only i32 and i64 parameters can be specialized, 'X' is "
               "*f32") != std::string::npos);
  d = diag("h", ArgFact::EqualsOne);
  CHECK(d.find("'h' is i16") != std::string::npos);
  d = diag("nope", ArgFact::EqualsOne);
  CHECK(d.find("cannot assume 'nope=1': no parameter named 'nope' in kernel 'k'") !=
        std::string::npos);
  d = diag("BLOCK", ArgFact::DivisibleBy16);
  CHECK(d.find("'BLOCK' is a constexpr parameter") != std::string::npos);
  // i64 is allowed.
  const char *wide = R"(
@kernel
def w(X: *f32, n: i64):
    offs = arange(0, 128)
    store(X + offs * n, 1.0)
)";
  CHECK(compileWith(wide, "w", {{"n", ArgFact::EqualsOne}}).ok);
  CHECK(compileWith(wide, "w", {{"n", ArgFact::DivisibleBy16}}).ok);
}

TEST_CASE("A compile without facts is unchanged", "[specialization]") {
  for (bool gpu : {false, true}) {
    CompileResult none = compileWith(kRows, "", {}, gpu);
    CompileResult noneFacts =
        compileWith(kRows, "", {{"stride", ArgFact::None}, {"stride_am", ArgFact::None}}, gpu);
    REQUIRE(none.ok);
    REQUIRE(noneFacts.ok);
    CHECK(none.tileIR == noneFacts.tileIR);
    CHECK(none.gpuIR == noneFacts.gpuIR);
    CHECK(none.tileIR.find("tile.divisibility") == std::string::npos);
  }
}

TEST_CASE("Cache keys differ by facts; a None fact keys as no fact", "[specialization][cache]") {
  CacheKeyInputs in;
  in.sources = {{"a.tile", "text"}};
  in.kernelName = "k";
  in.compilerVersion = "v";
  in.target = "sm_90a";
  // As the JIT keys a variant: the CompileOptions' cacheFields, facts included.
  auto keyWith = [&](std::map<std::string, ArgFact> facts) {
    CompileOptions o;
    o.numStages = 3;
    o.argFacts = std::move(facts);
    CacheKeyInputs c = in;
    for (const auto &[name, value] : o.cacheFields())
      c.options[name] = value;
    c.options["emit"] = "ptx";
    return cacheKey(c);
  };
  std::string base = keyWith({});
  CHECK(keyWith({}) == base);
  CHECK(keyWith({{"s", ArgFact::None}}) == base);
  std::string one = keyWith({{"s", ArgFact::EqualsOne}});
  std::string div = keyWith({{"s", ArgFact::DivisibleBy16}});
  std::string other = keyWith({{"t", ArgFact::EqualsOne}});
  std::string two = keyWith({{"s", ArgFact::EqualsOne}, {"t", ArgFact::EqualsOne}});
  std::set<std::string> keys{base, one, div, other, two};
  CHECK(keys.size() == 5);
}

TEST_CASE("Variant table: facts from argument values, one build per fact set",
          "[specialization][runtime]") {
  KernelSignature sig;
  sig.name = "k";
  sig.params = {{"X", DType{ScalarType::f32, 1}},
                {"a", DType{ScalarType::i32, 0}},
                {"f", DType{ScalarType::f32, 0}},
                {"b", DType{ScalarType::i64, 0}},
                {"c", DType{ScalarType::i16, 0}}};
  std::vector<ArgFacts> builds;
  detail::VariantTable table(sig, [&](const ArgFacts &facts) {
    builds.push_back(facts);
    return detail::KernelVariant{Function(), builds.size()};
  });
  auto args = [](int32_t a, int64_t b) {
    return makeArgs(DevicePtr<float>{256}, a, 1.0f, b, int16_t(1));
  };
  auto factsFor = [&](int32_t a, int64_t b) { return table.factsOf(table.keyOf(args(a, b))); };
  CHECK(factsFor(1, 1) == ArgFacts{{"a", ArgFact::EqualsOne}, {"b", ArgFact::EqualsOne}});
  CHECK(factsFor(32, -48) ==
        ArgFacts{{"a", ArgFact::DivisibleBy16}, {"b", ArgFact::DivisibleBy16}});
  CHECK(factsFor(0, int64_t(1) << 40) ==
        ArgFacts{{"a", ArgFact::DivisibleBy16}, {"b", ArgFact::DivisibleBy16}});
  CHECK(factsFor(7, 17) == ArgFacts{});
  CHECK(factsFor(-1, (int64_t(1) << 32) + 1) == ArgFacts{}); // i64 read in full
  CHECK(table.keyOf(args(7, 17)) == 0);

  CHECK(table.get(table.keyOf(args(1, 5))).sharedMemoryBytes == 1);
  CHECK(table.get(table.keyOf(args(1, 9))).sharedMemoryBytes == 1); // same facts: a hit
  CHECK(table.get(table.keyOf(args(16, 9))).sharedMemoryBytes == 2);
  REQUIRE(builds.size() == 2);
  CHECK(builds[0] == ArgFacts{{"a", ArgFact::EqualsOne}});
  CHECK(builds[1] == ArgFacts{{"a", ArgFact::DivisibleBy16}});
  CHECK(table.built().size() == 2);
}

TEST_CASE("GPU: one kernel launched with unit and non-unit strides builds two variants",
          "[gpu][specialization]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  const char *src = R"(
@kernel
def scaled_copy(X: *f32, Y: *f32, M: i32, N: i32, stride_m: i32, stride_n: i32,
                BM: constexpr = 32, BN: constexpr = 64):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = load(X + rm[:, None] * stride_m + rn[None, :] * stride_n, mask=mask, other=0.0)
    store(Y + rm[:, None] * N + rn[None, :], x * 2.5 - 1.0, mask=mask)
)";
  JitOptions jo;
  jo.useCache = false; // build every variant here, not from an earlier run
  Kernel k = compileString(*ctx, src, "scaled_copy.tile", "scaled_copy", {}, jo);
  CHECK(k.specializes());
  CHECK(k.builtVariants().empty()); // lazy: nothing built before the first launch
  testing::Seeded rnd;
  INFO("seed " << rnd.seed);
  const int32_t M = 100, N = 96;
  std::vector<float> x = rnd.uniform(size_t(M) * N);
  auto X = ctx->upload(x);
  // Worst relative error of kernel `kk` reading X as an M x N view with these strides.
  auto check = [&](const Kernel &kk, int32_t sm, int32_t sn) {
    auto Y = ctx->alloc<float>(size_t(M) * N);
    kk.launch(ctx->stream(), Grid::of(cdiv(M, 32), cdiv(N, 64)), X, Y, M, N, sm, sn);
    ctx->synchronize();
    std::vector<float> y = Y.toHost();
    double worst = 0;
    for (int32_t i = 0; i < M; ++i)
      for (int32_t j = 0; j < N; ++j) {
        double want = double(x[size_t(i) * sm + size_t(j) * sn]) * 2.5 - 1.0;
        double got = y[size_t(i) * N + j];
        worst = std::max(worst, std::abs(got - want) / std::max(1e-6, std::abs(want)));
      }
    return worst;
  };
  // Row-major (stride_n == 1, stride_m == 96 % 16 == 0), then column-major
  // reading of the same buffer as an M x N view (stride_m == 1, stride_n == 100).
  CHECK(check(k, N, 1) < 1e-6);
  CHECK(check(k, 1, M) < 1e-6);
  // Same facts with other values: no new variant.
  CHECK(check(k, N - 16, 1) < 1e-6);
  std::vector<ArgFacts> built = k.builtVariants();
  CHECK(built.size() == 2);
  CHECK(std::count(built.begin(), built.end(),
                   ArgFacts{{"N", ArgFact::DivisibleBy16},
                            {"stride_m", ArgFact::DivisibleBy16},
                            {"stride_n", ArgFact::EqualsOne}}) == 1);
  CHECK(std::count(built.begin(), built.end(),
                   ArgFacts{{"N", ArgFact::DivisibleBy16}, {"stride_m", ArgFact::EqualsOne}}) ==
        1);
  // Copies share the table.
  Kernel copy = k;
  CHECK(copy.builtVariants().size() == 2);

  // specialize = false: one variant, built by compile(), same results.
  jo.specialize = false;
  Kernel plain = compileString(*ctx, src, "scaled_copy.tile", "scaled_copy", {}, jo);
  CHECK_FALSE(plain.specializes());
  CHECK(plain.builtVariants().size() == 1);
  CHECK(check(plain, N, 1) < 1e-6);
  CHECK(check(plain, 1, M) < 1e-6);
}

namespace {
// A seed that varies at random: listed in do_not_specialize, so only `n`
// gets facts.
const char *kSeeded = R"(
@kernel(do_not_specialize=["seed"])
def seeded(X: *f32, n: i32, seed: i32, BLOCK: constexpr = 256):
    offs = arange(0, BLOCK)
    store(X + offs, rand(seed, offs), mask=offs < n)
)";
} // namespace

TEST_CASE("do_not_specialize: the listed parameter gets no facts at launch",
          "[specialization][runtime]") {
  CompileOptions o;
  CompileResult r = compileSource(kSeeded, "seeded.tile", "seeded", o, Stage::Tile);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  REQUIRE(r.kernels.size() == 1);
  const KernelSignature &sig = r.kernels[0];
  REQUIRE(sig.params.size() == 3);
  CHECK(sig.params[1].specialize);
  CHECK(!sig.params[2].specialize);
  detail::VariantTable table(sig, [](const ArgFacts &) { return detail::KernelVariant{}; });
  auto factsFor = [&](int32_t n, int32_t seed) {
    return table.factsOf(table.keyOf(makeArgs(DevicePtr<float>{256}, n, seed)));
  };
  CHECK(factsFor(32, 1) == ArgFacts{{"n", ArgFact::DivisibleBy16}});
  CHECK(factsFor(7, 48) == ArgFacts{});
  CHECK(factsFor(1, 12345) == ArgFacts{{"n", ArgFact::EqualsOne}});
}

TEST_CASE("do_not_specialize: misuse is an error at its place", "[specialization][errors]") {
  auto diag = [](const std::string &decorator) {
    std::string src = decorator + "\ndef k(X: *f32, n: i32, f: f32):\n    store(X, f, mask=n > 0)\n";
    CompileOptions o;
    CompileResult r = compileSource(src, "dns.tile", "k", o, Stage::Tile);
    CHECK(!r.ok);
    return r.diagnostics;
  };
  auto has = [](const std::string &d, const std::string &what) {
    INFO(d);
    CHECK(d.find(what) != std::string::npos);
  };
  has(diag("@kernel(do_not_specialize=[\"m\"])"),
      "dns.tile:1:28: error: do_not_specialize: 'm' is not a runtime parameter of kernel 'k'");
  has(diag("@kernel(do_not_specialize=[\"n\", \"X\"])"),
      "dns.tile:1:33: error: do_not_specialize: 'X' is a *f32 parameter of kernel 'k'; only i32 "
      "and i64 parameters are specialized");
  has(diag("@kernel(do_not_specialize=[\"f\"])"), "'f' is a f32 parameter");
  has(diag("@kernel(do_not_specialize=\"n\")"),
      "dns.tile:1:27: error: do_not_specialize must be a list of parameter names");
  has(diag("@kernel(do_not_specialize=[1])"),
      "dns.tile:1:28: error: do_not_specialize lists parameter names as strings");
  has(diag("@kernel(specialize=[\"n\"])"),
      "dns.tile:1:9: error: @kernel has no argument 'specialize'");
  has(diag("@kernel([\"n\"])"), "dns.tile:1:9: error: @kernel takes only do_not_specialize=[...]");
}
