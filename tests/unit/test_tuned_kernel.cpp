// TunedKernel (tessera/TunedKernel.h) on the CPU interpreter: a launch tunes
// its key once, later launches of the same bucket are memory hits, a second
// object (a "second process") finds the tuning in the cache without
// compiling or timing a candidate; reset/restore keep an accumulating and an
// in-place kernel correct through tuning; static_assert prunes before
// compiling; the miss policies; the errors.
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/KernelCache.h"
#include "tessera/TunedKernel.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <random>
#include <vector>

using namespace tessera;
using namespace tessera::testing;

namespace {

// Y += 2 * X (accumulates), P = 0.5 * P + X (in place), over n elements.
const char *kSource = R"SRC(@kernel
def step(X: *f32, Y: *f32, P: *f32, n: i32, BLOCK: constexpr = 64):
    static_assert(BLOCK <= 256, "BLOCK must be at most 256")
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    x = load(X + offs, mask=m, other=0.0)
    store(Y + offs, load(Y + offs, mask=m, other=0.0) + 2.0 * x, mask=m)
    store(P + offs, 0.5 * load(P + offs, mask=m, other=0.0) + x, mask=m)
)SRC";

Config block(int64_t b) { return Config{}.set("BLOCK", b); }

ConfigSpace stepSpace() {
  ConfigSpace s;
  s.add(block(32)).add(block(64)).add(block(128)).add(block(512));
  s.key("n", Bucketing::pow2());
  s.reset = {"Y"};
  s.restore = {"P"};
  return s;
}

TunedKernelOptions quick(TuningCache &cache) {
  TunedKernelOptions o;
  o.cache = &cache;
  o.tolerance = 1e-6;
  o.tuning.timing.repeats = 2;
  o.tuning.timing.flushBytes = 1 << 12;
  o.tuning.retimeBest = 1;
  o.tuning.retimeRepeats = 2;
  o.tuning.compileThreads = 2;
  return o;
}

struct Data {
  std::vector<float> x, y, p;
  explicit Data(int n, uint32_t seed) : x(size_t(n)), y(size_t(n)), p(size_t(n)) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < n; ++i)
      x[size_t(i)] = u(rng), y[size_t(i)] = u(rng), p[size_t(i)] = u(rng);
  }
};

Grid gridFor(int n, const Config &c) { return Grid::of(cdiv(int64_t(n), c.get("BLOCK"))); }

/// The step kernel in a file of a fresh directory, an interpreter context,
/// and a tuning cache in that directory.
struct StepFixture {
  TempDir dir{"tessera-tuned"};
  std::string path = dir.path + "/step.tile";
  Context ctx{createInterpreterBackend()};
  TuningCache cache{dir.path + "/tuning"};
  StepFixture() { writeFile(path, kSource); }
};

} // namespace

TEST_CASE_METHOD(StepFixture, "tuned kernel: tunes once per bucket, reset and restore keep one launch's result",
          "[autotune][tuned]") {
  TunedKernel k(ctx, path, "step", stepSpace(), {}, {}, quick(cache));

  // The front end's analysis: Y and P are written, X is not; all three are read.
  REQUIRE(k.signature().params.size() == 4);
  CHECK_FALSE(k.signature().params[0].written);
  CHECK(k.signature().params[1].written);
  CHECK(k.signature().params[2].written);
  for (int i : {0, 1, 2})
    CHECK(k.signature().params[size_t(i)].read);

  const int n = 1000;
  Data d(n, 7);
  auto x = ctx.upload(d.x), y = ctx.upload(d.y), p = ctx.upload(d.p);
  auto grid = [&](const Config &c) { return gridFor(n, c); };
  k.launch(ctx.stream(), grid, x, y, p, int32_t(n));
  ctx.synchronize();

  // One launch's effect, although every candidate ran several times.
  std::vector<float> hy = y.toHost(), hp = p.toHost();
  for (size_t i = 0; i < size_t(n); ++i) {
    CHECK(hy[i] == Approx(double(d.y[i]) + 2.0 * double(d.x[i])).margin(1e-6));
    CHECK(hp[i] == Approx(0.5 * double(d.p[i]) + double(d.x[i])).margin(1e-6));
  }
  TunedKernelStats s = k.stats();
  CHECK(s.tunings == 1);
  CHECK(s.timedRuns == 3);
  // Three candidates and the chosen config; BLOCK=512 fails its static_assert
  // and is never compiled.
  CHECK(s.compiles == 4);
  TuningDecision dec = k.lastDecision();
  CHECK(dec.source == "tuned");
  REQUIRE(dec.record);
  REQUIRE(dec.record->candidates.size() == 4);
  CHECK(dec.record->candidates[3].skipReason ==
        "static_assert: static assertion failed: BLOCK must be at most 256");
  CHECK(dec.key == KeyValues{{"n", 1024}});

  // n = 1000 and n = 1024 share a bucket: a memory hit, no tuning.
  auto y2 = ctx.alloc<float>(1024), p2 = ctx.alloc<float>(1024), x2 = ctx.alloc<float>(1024);
  k.launch(ctx.stream(), [&](const Config &c) { return gridFor(1024, c); }, x2, y2, p2,
           int32_t(1024));
  s = k.stats();
  CHECK(s.memoryHits == 1);
  CHECK(s.tunings == 1);

  // A second object with a fresh cache object on the same directory (what a
  // second process sees): the tuning comes from the file; no candidate is
  // compiled or timed, only the chosen config.
  TuningCache cache2(dir.path + "/tuning");
  TunedKernel again(ctx, path, "step", stepSpace(), {}, {}, quick(cache2));
  Config chosen = again.configFor(grid, x, y, p, int32_t(n));
  CHECK(chosen == dec.config);
  s = again.stats();
  CHECK(s.cacheHits == 1);
  CHECK(s.tunings == 0);
  CHECK(s.timedRuns == 0);
  CHECK(s.compiles == 1);
  CHECK(again.lastDecision().source == "cache");
}

TEST_CASE_METHOD(StepFixture, "tuned kernel: without reset the accumulated output differs and candidates are rejected",
          "[autotune][tuned]") {
  ConfigSpace space = stepSpace();
  space.reset.clear();
  space.restore.clear();
  TunedKernel k(ctx, path, "step", space, {}, {}, quick(cache));
  const int n = 300;
  Data d(n, 11);
  auto x = ctx.upload(d.x), y = ctx.upload(d.y), p = ctx.upload(d.p);
  k.configFor([&](const Config &c) { return gridFor(n, c); }, x, y, p, int32_t(n));
  TuningDecision dec = k.lastDecision();
  REQUIRE(dec.record);
  int wrong = 0;
  for (const CandidateResult &c : dec.record->candidates)
    wrong += c.skipReason.rfind("wrong output:", 0) == 0;
  CHECK(wrong == 2); // the second and third candidate saw the first one's result
}

TEST_CASE_METHOD(StepFixture, "tuned kernel: miss policies first and nearest", "[autotune][tuned]") {
  auto x = ctx.alloc<float>(4096), y = ctx.alloc<float>(4096), p = ctx.alloc<float>(4096);
  auto grid = [&](const Config &c) { return gridFor(100, c); };

  TunedKernelOptions first = quick(cache);
  first.onMiss = MissPolicy::FirstConfig;
  TunedKernel a(ctx, path, "step", stepSpace(), {}, {}, first);
  CHECK(a.configFor(grid, x, y, p, int32_t(100)) == block(32));
  CHECK(a.lastDecision().source == "first");
  CHECK(a.stats().tunings == 0);

  // Tune n = 4096, then ask for n = 2000 (bucket 2048) with the nearest policy.
  TunedKernel tuner(ctx, path, "step", stepSpace(), {}, {}, quick(cache));
  Config tuned = tuner.configFor([&](const Config &c) { return gridFor(4096, c); }, x, y, p,
                                 int32_t(4096));
  TunedKernelOptions nearest = quick(cache);
  nearest.onMiss = MissPolicy::Nearest;
  TunedKernel b(ctx, path, "step", stepSpace(), {}, {}, nearest);
  CHECK(b.configFor(grid, x, y, p, int32_t(2000)) == tuned);
  CHECK(b.lastDecision().source == "nearest");

  // The environment variable overrides the option.
  ::setenv("TESSERA_AUTOTUNE_MISS", "first", 1);
  TunedKernel c(ctx, path, "step", stepSpace(), {}, {}, quick(cache));
  Config got = c.configFor(grid, x, y, p, int32_t(8));
  ::unsetenv("TESSERA_AUTOTUNE_MISS");
  CHECK(got == block(32));
  CHECK(c.stats().tunings == 0);
}

TEST_CASE_METHOD(StepFixture, "tuned kernel: errors", "[autotune][tuned]") {
  // No decorator and no space.
  CHECK_THROWS_WITH(TunedKernel(ctx, path, "step", {}, {}, quick(cache)),
                    Catch::Contains("has no @autotune decorator"));
  // A key that is not an integer parameter.
  ConfigSpace badKey = stepSpace();
  badKey.key("X");
  CHECK_THROWS_WITH(TunedKernel(ctx, path, "step", badKey, {}, {}, quick(cache)),
                    Catch::Contains("autotune key 'X' of kernel 'step' is not an integer parameter"));
  // reset of a scalar.
  ConfigSpace badReset = stepSpace();
  badReset.reset = {"n"};
  CHECK_THROWS_WITH(TunedKernel(ctx, path, "step", badReset, {}, {}, quick(cache)),
                    Catch::Contains("autotune reset 'n' is not a pointer parameter"));
  // A reset buffer passed as a bare pointer cannot be zeroed.
  TunedKernel k(ctx, path, "step", stepSpace(), {}, {}, quick(cache));
  auto x = ctx.alloc<float>(64), y = ctx.alloc<float>(64), p = ctx.alloc<float>(64);
  auto grid = [&](const Config &c) { return gridFor(64, c); };
  CHECK_THROWS_WITH(k.launch(ctx.stream(), grid, x, y.ptr(), p, int32_t(64)),
                    Catch::Contains("autotune reset 'Y' of kernel 'step' must be passed as a "
                                    "DeviceBuffer"));
  // Wrong arguments are the launch's usual errors, before any tuning.
  CHECK_THROWS_WITH(k.launch(ctx.stream(), grid, x, y, p, 64.0f),
                    Catch::Contains("argument 4 ('n') of kernel 'step' must be i32"));
  CHECK(k.stats().tunings == 0);
}

TEST_CASE_METHOD(StepFixture, "tuned kernel: records its sources, so pruneStale drops a tuning of an edited kernel",
          "[autotune][tuned]") {
  TunedKernel k(ctx, path, "step", stepSpace(), {}, {}, quick(cache));
  auto x = ctx.alloc<float>(64), y = ctx.alloc<float>(64), p = ctx.alloc<float>(64);
  k.configFor([&](const Config &c) { return gridFor(64, c); }, x, y, p, int32_t(64));
  REQUIRE(k.lastDecision().record);
  CHECK(k.lastDecision().record->sourcePaths == std::vector<std::string>{path});
  CHECK(cache.pruneStale(compilerVersion()) == 0);
  writeFile(path, std::string(kSource) + "# edited\n");
  CHECK(cache.pruneStale(compilerVersion()) == 1);
  CHECK(cache.entries().empty());
}

TEST_CASE("GPU: tuned tf32 matmul through TunedKernel, then a cache hit without compiling",
          "[gpu][autotune][tuned]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  const int64_t M = 512, N = 1024, K = 1024;
  std::mt19937 rng{3};
  DeviceOperand a = uploadOperand(*ctx, rng, "f32", size_t(M * K));
  DeviceOperand b = uploadOperand(*ctx, rng, "f32", size_t(K * N));
  DeviceMemory &da = a.device, &db = b.device;
  DeviceMemory dc = ctx->allocBytes(size_t(M * N) * 4);
  ConfigSpace space;
  for (const Config &c : {tileConfig(128, 256, 32, 8, 4),
                           tileConfig(256, 128, 32, 8, 4),
                           tileConfig(128, 128, 32, 4, 4),
                           tileConfig(64, 64, 32, 4, 3)})
    space.add(c);
  space.key("M", Bucketing::pow2()).key("N", Bucketing::pow2()).key("K", Bucketing::pow2());
  TempDir dir("tessera-tuned-gpu");
  TuningCache cache(dir.path);
  TunedKernelOptions opts;
  opts.cache = &cache;
  opts.tolerance = 1e-3;
  std::string path = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile";
  std::map<std::string, ConstexprValue> f32 = {{"DT", *parseDType("f32")}};
  std::vector<ArgValue> args = makeArgs(
      DevicePtr<float>{da.address()}, DevicePtr<float>{db.address()}, DevicePtr<float>{dc.address()},
      int32_t(M), int32_t(N), int32_t(K), int32_t(K), int32_t(1), int32_t(N), int32_t(1),
      int32_t(N), int32_t(1));
  std::vector<const DeviceMemory *> buffers(args.size(), nullptr);
  buffers[0] = &da, buffers[1] = &db, buffers[2] = &dc;
  auto grid = [&](const Config &c) { return Grid::of(cdiv(M, c.get("BM")) * cdiv(N, c.get("BN"))); };

  TunedKernel mm(*ctx, path, "matmul", space, f32, {}, opts);
  dc.memset(0);
  mm.launchWithArgs(ctx->stream(), grid, args, buffers);
  ctx->synchronize();
  TuningDecision d = mm.lastDecision();
  REQUIRE(d.record);
  std::ostringstream table;
  for (const CandidateResult &c : d.record->candidates)
    table << "\n  " << c.config.str() << ": "
          << (c.skipped() ? c.skipReason : std::to_string(*c.timeMs) + " ms");
  WARN("tf32 512x1024x1024 tuned: " << d.config.str() << table.str());
  CHECK(mm.stats().tunings == 1);
  CHECK(mm.stats().timedRuns >= 3);

  // The result of the launch after tuning, against fp64 at sampled entries.
  std::vector<uint8_t> hc(dc.size());
  dc.copyToHost(hc.data(), hc.size());
  double err = 0, scale = 0;
  std::uniform_int_distribution<int64_t> rm(0, M - 1), rn(0, N - 1);
  for (int s = 0; s < 256; ++s) {
    int64_t r = rm(rng), q = rn(rng);
    double ref = 0;
    for (int64_t k = 0; k < K; ++k)
      ref += a.host.vals[size_t(r * K + k)] * b.host.vals[size_t(k * N + q)];
    err = std::max(err, std::fabs(resultAt(hc, size_t(r * N + q), false) - ref));
    scale = std::max(scale, std::fabs(ref));
  }
  INFO("relative error " << err / scale);
  CHECK(err / scale < 5e-3); // tf32 operands

  // A second object on the same tuning cache: no tuning and no compilation.
  KernelCacheStats before = KernelCache::global().stats();
  TunedKernel again(*ctx, path, "matmul", space, f32, {}, opts);
  again.launchWithArgs(ctx->stream(), grid, args, buffers);
  ctx->synchronize();
  CHECK(again.lastDecision().source == "cache");
  CHECK(again.lastDecision().config == d.config);
  CHECK(again.stats().tunings == 0);
  CHECK(again.stats().timedRuns == 0);
  CHECK(KernelCache::global().stats().builds == before.builds);
}

TEST_CASE("tuned kernel: a candidate that leaves outputs unwritten is wrong, whatever an earlier "
          "candidate left there",
          "[autotune][tuned]") {
  // One program copies the first BLOCK elements: BLOCK=256 leaves 744 of 1000 unwritten.
  const char *partial = R"SRC(@kernel
def head_copy(X: *f32, Y: *f32, n: i32, BLOCK: constexpr = 1024):
    offs = arange(0, BLOCK)
    store(Y + offs, load(X + offs, mask=offs < n), mask=offs < n)
)SRC";
  TempDir dir("tessera-tuned");
  std::string path = dir.path + "/head_copy.tile";
  writeFile(path, partial);
  Context ctx{createInterpreterBackend()};
  TuningCache cache(dir.path + "/tuning");
  ConfigSpace space;
  space.add(Config{}.set("BLOCK", int64_t(1024))).add(Config{}.set("BLOCK", int64_t(256)));
  TunedKernel k(ctx, path, "head_copy", space, {}, {}, quick(cache));
  CHECK(k.signature().params[1].written);
  CHECK_FALSE(k.signature().params[1].read); // so it is poisoned before each checked run
  const int n = 1000;
  Data d(n, 5);
  auto x = ctx.upload(d.x), y = ctx.upload(d.y);
  k.configFor([](const Config &) { return Grid::of(1); }, x, y, int32_t(n));
  TuningDecision dec = k.lastDecision();
  REQUIRE(dec.record);
  CHECK_FALSE(dec.record->candidates[0].skipped());
  CHECK_THAT(dec.record->candidates[1].skipReason, Catch::StartsWith("wrong output:"));
  // And the output is given back as it was.
  CHECK(y.toHost() == d.y);
}
