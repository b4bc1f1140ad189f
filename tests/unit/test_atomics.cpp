// Atomics with memory semantics (sem=, scope=): the PTX each choice becomes,
// unsigned max/min, the errors, a spin lock in the interpreter, and on the
// GPU a lock stressed over 1000 launches and vector adds (red.v4.f32)
// against a CPU sum. The GPU cases skip visibly when there is no GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <random>

using namespace tessera;
using tessera::testing::gpuOrSkip;
using tessera::testing::Seeded;

namespace {

std::string ptxFor(const char *src, const std::string &kernel, const char *arch) {
  CompileOptions o;
  o.target = *Target::parse(arch);
  CompileResult r = compileSource(src, "atomics.tile", kernel, o, Stage::PTX);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  return r.ptx;
}

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

// Programs take one lock in turn; inside it, each adds 1 to every element of
// Acc and to Count with plain loads and stores. Written as Triton users
// write it (the default sem is acq_rel).
const char *kLockSrc = R"(
@kernel
def locked_add(Lock: *i32, Count: *i32, Acc: *f32, BLOCK: constexpr = 512):
    offs = arange(0, BLOCK)
    while atomic_cas(Lock, 0, 1) == 1:
        pass
    a = load(Acc + offs)
    store(Acc + offs, a + 1.0)
    c = load(Count)
    store(Count, c + 1)
    atomic_xchg(Lock, 0)
)";

const char *kScatterSrc = R"(
@kernel
def scatter_add(P: *f32, X: *f32, n: i32, off: i32, BLOCK: constexpr = 1024):
    offs = arange(0, BLOCK)
    x = load(X + program_id(0) * BLOCK + offs)
    atomic_add(P + off + offs, x, mask=offs < n, sem="relaxed")
)";

// Rows of a tile added at hashed offsets (ROAST's dM with RzLinear's
// mapping): each row is RUNS runs of BC / RUNS contiguous elements, run j of
// row r at Loc[r] + j * 1000; any 4-byte alignment, runs of different rows
// overlapping.
const char *kRunScatterSrc = R"(
@kernel
def run_scatter(P: *f32, X: *f32, Loc: *i32, C: i32, BR: constexpr = 16, BC: constexpr = 64,
                RUNS: constexpr = 1):
    r = program_id(0) * BR + arange(0, BR)
    c = arange(0, BC)
    loc = load(Loc + r)
    x = load(X + r[:, None] * BC + c[None, :])
    run = c // (BC // RUNS)
    atomic_add(P + loc[:, None] + run[None, :] * 1000 + c[None, :], x, mask=c[None, :] < C,
               sem="relaxed")
)";

} // namespace

TEST_CASE("atomics: sem= and scope= become the PTX qualifiers", "[atomics][ptx]") {
  const char *src = R"(
@kernel
def k(P: *f32, Q: *f32, U: *u32, L: *i32, BLOCK: constexpr = 256):
    offs = arange(0, BLOCK)
    x = load(Q + offs)
    a = atomic_add(P + offs, x)
    b = atomic_add(Q + offs, x, sem="relaxed", scope="cta")
    c = atomic_max(P + offs, x, sem="release", scope="sys")
    u = atomic_max(U + offs, 3)
    v = atomic_min(U + offs, 3, sem="acquire")
    store(Q + offs, a + b + c)
    store(U + offs, u + v)
    atomic_xchg(L, 0, sem="release")
    atomic_cas(L, 0, 1, sem="relaxed")
)";
  std::string ptx = ptxFor(src, "k", "sm_90a");
  INFO(ptx);
  CHECK(count(ptx, "atom.acq_rel.gpu.global.add.f32") >= 1);
  CHECK(count(ptx, "atom.relaxed.cta.global.add.f32") >= 1);
  // PTX has no float atom.max: a CAS loop at the scope, behind a fence.
  CHECK(count(ptx, "fence.acq_rel.sys;") >= 1);
  CHECK(count(ptx, "atom.relaxed.sys.global.cas.b32") >= 1);
  CHECK(count(ptx, "atom.acq_rel.gpu.global.max.u32") >= 1); // u32 compares unsigned
  CHECK(count(ptx, "atom.acquire.gpu.global.min.u32") >= 1);
  CHECK(count(ptx, "atom.relaxed.gpu.global.cas.b32") == 1);
  // The scalar release waits for the whole block first.
  size_t xchg = ptx.find("atom.release.gpu.global.exch.b32");
  REQUIRE(xchg != std::string::npos);
  size_t bar = ptx.rfind("bar.sync", xchg);
  REQUIRE(bar != std::string::npos);
  CHECK(ptx.find("atom.", bar) == xchg); // no other atomic between them
}

TEST_CASE("atomics: a scalar atomic whose result is unused broadcasts nothing", "[atomics][ptx]") {
  // Only the barrier that an acquire needs follows it; a used result still
  // goes through shared memory.
  const char *src = R"(
@kernel
def k(L: *i32, C: *i32, Out: *i32):
    atomic_xchg(L, 0, sem="release")
    atomic_xchg(L, 1, sem="acq_rel")
    store(Out, atomic_cas(C, 0, 1, sem="acquire"))
)";
  std::string ptx = ptxFor(src, "k", "sm_90a");
  INFO(ptx);
  size_t rel = ptx.find("atom.release.gpu.global.exch.b32");
  size_t ar = ptx.find("atom.acq_rel.gpu.global.exch.b32");
  size_t cas = ptx.find("atom.acquire.gpu.global.cas.b32");
  REQUIRE(rel != std::string::npos);
  REQUIRE(ar != std::string::npos);
  REQUIRE(cas != std::string::npos);
  REQUIRE(rel < ar);
  REQUIRE(ar < cas);
  auto between = [&](size_t from, size_t to, const char *what) {
    return count(ptx.substr(from, to - from), what);
  };
  // release -> acq_rel: the acq_rel's own barrier before it, no broadcast.
  CHECK(between(rel, ar, "st.shared") == 0);
  CHECK(between(rel, ar, "bar.sync") == 1);
  // acq_rel -> cas: one barrier for its acquire; the cas's own barrier before
  // it is not needed (acquire only), so exactly one.
  CHECK(between(ar, cas, "st.shared") == 0);
  CHECK(between(ar, cas, "bar.sync") == 1);
  // The cas's result is stored: it is broadcast.
  CHECK(count(ptx.substr(cas), "st.shared") == 1);
}

TEST_CASE("atomics: an f32 add whose result is unused is a vector red on sm_90", "[atomics][ptx]") {
  std::string hopper = ptxFor(kScatterSrc, "scatter_add", "sm_90a");
  INFO(hopper);
  CHECK(count(hopper, "red.relaxed.gpu.global.add.v4.f32") >= 1);
  // Partly masked or unaligned vectors fall back to one atom per lane.
  CHECK(count(hopper, "atom.relaxed.gpu.global.add.f32") >= 4);
  std::string ampere = ptxFor(kScatterSrc, "scatter_add", "sm_80");
  CHECK(count(ampere, "red.relaxed.gpu.global.add.v") == 0);
  CHECK(count(ampere, "atom.relaxed.gpu.global.add.f32") >= 4);
}

TEST_CASE("atomics: a run of unproven alignment joins neighbouring lanes into aligned red.v4",
          "[atomics][ptx]") {
  // `off` is a run-time value: each lane's vector may be misaligned; it takes
  // the lane before's values (shfl.up) and tells the lane after (shfl.down).
  std::string unaligned = ptxFor(kScatterSrc, "scatter_add", "sm_90a");
  INFO(unaligned);
  CHECK(count(unaligned, "shfl.sync.up") >= 5);
  CHECK(count(unaligned, "shfl.sync.down") >= 1);
  CHECK(count(unaligned, "red.relaxed.gpu.global.add.v4.f32") >= 2);
  // Proven alignment (the aligned ROAST mapping's multiple_of) needs none of it.
  const char *aligned = R"(
@kernel
def aligned_add(P: *f32, X: *f32, off: i32, BLOCK: constexpr = 1024):
    offs = arange(0, BLOCK)
    atomic_add(P + multiple_of(off, 4) + offs, load(X + offs), sem="relaxed")
)";
  std::string proven = ptxFor(aligned, "aligned_add", "sm_90a");
  CHECK(count(proven, "shfl.sync") == 0);
  CHECK(count(proven, "red.relaxed.gpu.global.add.v4.f32") >= 1);
}

TEST_CASE("atomics: bad sem and scope are errors at the argument", "[atomics][errors]") {
  auto diag = [](const char *body) {
    std::string src = std::string("@kernel\ndef k(P: *i32):\n") + body + "\n";
    CompileOptions o;
    CompileResult r = compileSource(src, "bad.tile", "k", o, Stage::Tile);
    CHECK(!r.ok);
    return r.diagnostics;
  };
  std::string d = diag("    atomic_add(P, 1, sem=\"seq_cst\")");
  CHECK(d.find("bad.tile:3:22: error: atomic_add() sem must be \"relaxed\", \"acquire\", "
               "\"release\" or \"acq_rel\"") != std::string::npos);
  CHECK(d.find("^") != std::string::npos);
  d = diag("    atomic_cas(P, 0, 1, scope=\"block\")");
  CHECK(d.find("bad.tile:3:25: error: atomic_cas() scope must be \"gpu\", \"cta\" or \"sys\"") !=
        std::string::npos);
}

TEST_CASE("atomics: unsigned max and min, and a spin lock, in the interpreter", "[atomics][interp]") {
  Context ctx(createInterpreterBackend());
  const char *src = R"(
@kernel
def umaxmin(U: *u32, V: *u32, Old: *u32, BLOCK: constexpr = 64):
    offs = arange(0, BLOCK)
    v = load(V + offs)
    o = atomic_max(U + offs, v, sem="relaxed")
    store(Old + offs, o)
    atomic_min(U + BLOCK + offs, v, scope="cta")
)";
  Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<uint32_t> u(128), v(64);
  for (auto &x : u)
    x = rng.rng();
  for (auto &x : v)
    x = rng.rng();
  auto du = ctx.upload(u), dv = ctx.upload(v);
  auto dold = ctx.alloc<uint32_t>(64);
  Kernel k = compileString(ctx, src, "u.tile", "umaxmin");
  k.launch(ctx.stream(), Grid{1}, du.ptr(), dv.ptr(), dold.ptr());
  auto after = du.toHost(), old = dold.toHost();
  for (size_t i = 0; i < 64; ++i) {
    CHECK(old[i] == u[i]);
    CHECK(after[i] == std::max(u[i], v[i]));
    CHECK(after[64 + i] == std::min(u[64 + i], v[i]));
  }

  Kernel lock = compileString(ctx, kLockSrc, "lock.tile", "locked_add");
  auto dl = ctx.alloc<int32_t>(1), dc = ctx.alloc<int32_t>(1);
  auto da = ctx.alloc<float>(512);
  dl.memsetBytes(0);
  dc.memsetBytes(0);
  da.memsetBytes(0);
  const unsigned P = 64;
  lock.launch(ctx.stream(), Grid{P}, dl.ptr(), dc.ptr(), da.ptr());
  CHECK(dc.toHost()[0] == int32_t(P));
  CHECK(dl.toHost()[0] == 0);
  for (float a : da.toHost())
    CHECK(a == float(P));
}

TEST_CASE("GPU atomics: a spin lock loses no update over 1000 launches", "[gpu][atomics]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Kernel lock = compileString(*ctx, kLockSrc, "lock.tile", "locked_add");
  auto dl = ctx->alloc<int32_t>(1), dc = ctx->alloc<int32_t>(1);
  auto da = ctx->alloc<float>(512);
  const unsigned P = 264; // two programs per SM of an H100
  int lostRuns = 0;
  for (int run = 0; run < 1000; ++run) {
    dl.memsetBytes(0);
    dc.memsetBytes(0);
    da.memsetBytes(0);
    lock.launch(ctx->stream(), Grid{P}, dl.ptr(), dc.ptr(), da.ptr());
    auto a = da.toHost();
    bool ok = dc.toHost()[0] == int32_t(P) && dl.toHost()[0] == 0;
    for (float x : a)
      ok = ok && x == float(P);
    lostRuns += !ok;
  }
  CHECK(lostRuns == 0);
}

TEST_CASE("GPU atomics: vector red adds match a CPU sum, aligned or not, ragged", "[gpu][atomics]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  Kernel k = compileString(*ctx, kScatterSrc, "scatter.tile", "scatter_add");
  const int B = 1024, G = 300;
  std::vector<float> x(size_t(B) * G);
  std::uniform_int_distribution<int> small(-64, 64);
  for (auto &v : x)
    v = float(small(rng.rng)) / 8.0f; // sums stay exact in f32
  auto dx = ctx->upload(x);
  for (int off : {0, 1, 2, 3}) {
    for (int n : {1024, 1001}) {
      auto dp = ctx->alloc<float>(B + 4);
      dp.memsetBytes(0);
      k.launch(ctx->stream(), Grid{unsigned(G)}, dp.ptr(), dx.ptr(), int32_t(n), int32_t(off));
      auto p = dp.toHost();
      std::vector<double> ref(B + 4, 0.0);
      for (int g = 0; g < G; ++g)
        for (int i = 0; i < n; ++i)
          ref[size_t(off + i)] += x[size_t(g) * B + size_t(i)];
      int bad = 0;
      for (size_t i = 0; i < ref.size(); ++i)
        bad += double(p[i]) != ref[i];
      INFO("off " << off << " n " << n);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("GPU atomics: vector red adds on runs at hashed offsets match a CPU sum", "[gpu][atomics]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  const int BR = 16, BC = 64, G = 64, rows = BR * G, span = 4096;
  std::vector<float> x(size_t(rows) * BC);
  std::uniform_int_distribution<int> small(-64, 64), at(0, span - 1);
  for (auto &v : x)
    v = float(small(rng.rng)) / 8.0f; // sums stay exact in f32
  std::vector<int32_t> loc(rows);
  for (auto &l : loc)
    l = at(rng.rng); // every 4-byte alignment, overlapping runs
  auto dx = ctx->upload(x);
  auto dloc = ctx->upload(loc);
  for (int runs : {1, 2, 4}) {
    Kernel k = compileString(*ctx, kRunScatterSrc, "runs.tile", "run_scatter",
                             {{"RUNS", int64_t(runs)}});
    for (int C : {64, 61, 50}) {
      size_t n = size_t(span + BC + 1000 * runs);
      auto dp = ctx->alloc<float>(n);
      dp.memsetBytes(0);
      k.launch(ctx->stream(), Grid{unsigned(G)}, dp.ptr(), dx.ptr(), dloc.ptr(), int32_t(C));
      auto p = dp.toHost();
      std::vector<double> ref(n, 0.0);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < C; ++c)
          ref[size_t(loc[size_t(r)] + (c / (BC / runs)) * 1000 + c)] += x[size_t(r) * BC + size_t(c)];
      int bad = 0;
      for (size_t i = 0; i < n; ++i)
        bad += double(p[i]) != ref[i];
      INFO("runs " << runs << " C " << C);
      CHECK(bad == 0);
    }
  }
}
