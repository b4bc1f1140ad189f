// tune() (tessera/AutotuneRunner.h) on the CPU interpreter: every config is
// compiled and run; a pruned, a failing and a wrong config are skipped with
// their reasons; reset and restore keep accumulating and in-place kernels
// comparable across candidates; the winner is a timed candidate.
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/AutotuneRunner.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <chrono>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

using namespace tessera;
using namespace tessera::testing;

namespace {

// Y = SCALE * X, and Z[0] += sum(X) (an accumulation), and W += X (in place).
const char *kSource = R"SRC(@kernel
def work(X: *f32, Y: *f32, Z: *f32, W: *f32, n: i32, BLOCK: constexpr = 64,
         SCALE: constexpr = 2.0):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    x = load(X + offs, mask=m, other=0.0)
    store(Y + offs, x * SCALE, mask=m)
    atomic_add(Z, sum(x, 0))
    store(W + offs, load(W + offs, mask=m, other=0.0) + x, mask=m)
)SRC";

Config block(int64_t b) { return Config{}.set("BLOCK", b); }

struct Fixture {
  Context ctx{createInterpreterBackend()};
  int n = 1000;
  DeviceBuffer<float> x = ctx.alloc<float>(size_t(n)), y = ctx.alloc<float>(size_t(n)),
                      z = ctx.alloc<float>(1), w = ctx.alloc<float>(size_t(n));
  std::atomic<int> compiles{0};
  Fixture() {
    std::vector<float> hx(static_cast<size_t>(n)), hw(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      hx[size_t(i)] = float(i % 7) - 3.0f;
      hw[size_t(i)] = float(i % 5);
    }
    x.copyFromHost(hx.data(), hx.size());
    w.copyFromHost(hw.data(), hw.size());
    z.zero();
  }
  TuneTask task(bool resetAndRestore = true) {
    TuneTask t;
    t.compile = [this](const Config &c) {
      ++compiles;
      JitOptions o;
      std::map<std::string, ConstexprValue> cx;
      c.applyTo(o, cx);
      return compileString(ctx, kSource, "work.tile", "work", cx, o);
    };
    t.launch = [this](Kernel &k, const Config &c) {
      int64_t b = std::get<int64_t>(c.constexprs.at("BLOCK"));
      k.launch(ctx.stream(), Grid::of(cdiv(int64_t(n), b)), x.ptr(), y.ptr(), z.ptr(), w.ptr(),
               int32_t(n));
    };
    t.outputs = {{&y.memory(), ScalarType::f32}, {&z.memory(), ScalarType::f32},
                 {&w.memory(), ScalarType::f32}};
    t.tolerance = 1e-5;
    if (resetAndRestore) {
      t.reset = {&z.memory()};
      t.restore = {&w.memory()};
    }
    return t;
  }
};

TuneOptions quick() {
  TuneOptions o;
  o.timing.repeats = 3;
  o.timing.flushBytes = 1 << 16;
  o.retimeBest = 2;
  o.retimeRepeats = 4;
  o.compileThreads = 2;
  return o;
}

} // namespace

TEST_CASE("autotune runner: every candidate timed or skipped with its reason", "[autotune][runner]") {
  Fixture f;
  ConfigSpace space;
  space.add(block(64)).add(block(128)).add(block(256)).add(block(1024))
      .add(block(100))                                   // not a power of two: compile error
      .add(block(128).set("SCALE", 3.0));                // compiles and runs, but wrong
  space.prune = [](const Config &c) { return std::get<int64_t>(c.constexprs.at("BLOCK")) < 1024; };
  TuneStats stats;
  TuningRecord r = tune(f.ctx, space, f.task(), quick(), &stats);
  REQUIRE(r.candidates.size() == 6);
  for (int i : {0, 1, 2}) {
    INFO(r.candidates[size_t(i)].config.str() << ": " << r.candidates[size_t(i)].skipReason);
    CHECK_FALSE(r.candidates[size_t(i)].skipped());
    CHECK(*r.candidates[size_t(i)].timeMs >= 0.0);
    CHECK(r.candidates[size_t(i)].repeats >= 3);
  }
  CHECK(r.candidates[3].skipReason == "pruned");
  CHECK_THAT(r.candidates[4].skipReason, Catch::StartsWith("compile error:"));
  CHECK_THAT(r.candidates[5].skipReason, Catch::StartsWith("wrong output:"));
  CHECK(f.compiles == 5); // the pruned config is never compiled
  CHECK(stats.compiled == 4);
  CHECK(stats.timed == 3);
  CHECK(stats.skipped == 3);
  // The winner is one of the timed candidates, and the fastest of the re-timed ones.
  const CandidateResult *best = r.bestCandidate();
  REQUIRE(best);
  CHECK_FALSE(best->skipped());
  for (const CandidateResult &c : r.candidates)
    if (!c.skipped() && c.repeats == 4)
      CHECK(*best->timeMs <= *c.timeMs);
  CHECK(r.date.size() == 20);
  // The buffers are left as they were before tuning (reset and restore).
  std::vector<float> hw(size_t(f.n));
  f.w.copyToHost(hw.data(), hw.size());
  for (int i = 0; i < f.n; ++i)
    REQUIRE(hw[size_t(i)] == float(i % 5));
}

TEST_CASE("autotune runner: without reset and restore, accumulating kernels disagree",
          "[autotune][runner]") {
  Fixture f;
  ConfigSpace space;
  space.add(block(64)).add(block(128));
  TuningRecord r = tune(f.ctx, space, f.task(/*resetAndRestore=*/false), quick());
  // The second candidate starts from what the first one's timed runs left.
  CHECK_FALSE(r.candidates[0].skipped());
  CHECK_THAT(r.candidates[1].skipReason, Catch::StartsWith("wrong output:"));
}

TEST_CASE("autotune runner: errors", "[autotune][runner]") {
  Fixture f;
  ConfigSpace space;
  space.add(block(100));
  CHECK_THROWS_WITH(tune(f.ctx, space, f.task(), quick()),
                    Catch::Contains("no candidate ran correctly") &&
                        Catch::Contains("compile error"));
  TuneTask incomplete;
  CHECK_THROWS_WITH(tune(f.ctx, space, incomplete, quick()), Catch::Contains("compile and launch"));
  ConfigSpace empty;
  CHECK_THROWS_AS(tune(f.ctx, empty, f.task(), quick()), Error);
}

TEST_CASE("GPU: tune matmul over eight configs", "[gpu][autotune][runner]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  const int64_t M = 2048, N = 2048, K = 2048;
  std::mt19937 rng{7};
  DeviceOperand a = uploadOperand(*ctx, rng, "bf16", size_t(M * K));
  DeviceOperand b = uploadOperand(*ctx, rng, "bf16", size_t(K * N));
  DeviceMemory &da = a.device, &db = b.device;
  DeviceMemory dc = ctx->allocBytes(size_t(M * N) * 4);
  ConfigSpace space;
  for (const Config &c : {tileConfig(128, 256, 64, 8, 4),
                           tileConfig(128, 256, 32, 8, 8),
                           tileConfig(128, 128, 64, 8, 4),
                           tileConfig(128, 128, 32, 4, 3),
                           tileConfig(64, 128, 64, 4, 4),
                           tileConfig(256, 128, 64, 16, 4),
                           tileConfig(128, 128, 32, 8, 1),
                           tileConfig(64, 64, 32, 4, 3)})
    space.add(c);
  std::atomic<int> compiles{0};
  TuneTask task;
  task.compile = [&](const Config &c) {
    ++compiles;
    JitOptions o;
    o.specialize = false; // compile now, on the pool, for the facts below
    o.argFacts = {{"stride_ak", ArgFact::EqualsOne}, {"stride_bn", ArgFact::EqualsOne},
                  {"stride_cn", ArgFact::EqualsOne}, {"stride_am", ArgFact::DivisibleBy16},
                  {"stride_bk", ArgFact::DivisibleBy16}, {"stride_cm", ArgFact::DivisibleBy16},
                  {"M", ArgFact::DivisibleBy16}, {"N", ArgFact::DivisibleBy16},
                  {"K", ArgFact::DivisibleBy16}};
    std::map<std::string, ConstexprValue> cx = {{"GROUP", int64_t(8)},
                                                {"DT", *parseDType("bf16")}};
    c.applyTo(o, cx);
    return compile(*ctx, std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile",
                   "matmul", cx, o);
  };
  task.launch = [&](Kernel &k, const Config &c) {
    int64_t bm = std::get<int64_t>(c.constexprs.at("BM")), bn = std::get<int64_t>(c.constexprs.at("BN"));
    std::vector<ArgValue> args =
        makeArgs(DevicePtr<uint8_t>{da.address()}, DevicePtr<uint8_t>{db.address()},
                 DevicePtr<uint8_t>{dc.address()}, int32_t(M), int32_t(N), int32_t(K), int32_t(K),
                 int32_t(1), int32_t(N), int32_t(1), int32_t(N), int32_t(1));
    for (size_t p = 0; p < 3; ++p)
      args[p].type = k.signature().params[p].type;
    k.launchWithArgs(ctx->stream(), Grid::of(cdiv(M, bm) * cdiv(N, bn)), args);
  };
  task.outputs = {{&dc, ScalarType::f32}};
  task.tolerance = 1e-3; // all configs accumulate in f32
  TuneStats stats;
  auto t0 = std::chrono::steady_clock::now();
  TuningRecord r = tune(*ctx, space, task, {}, &stats);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ostringstream table;
  for (const CandidateResult &c : r.candidates)
    table << "\n  " << c.config.str() << ": "
          << (c.skipped() ? c.skipReason : std::to_string(*c.timeMs) + " ms (spread " +
                                               std::to_string(c.spreadMs) + ", " +
                                               std::to_string(c.repeats) + " repeats)");
  WARN("tuned bf16 2048^3 in " << seconds << " s, " << std::thread::hardware_concurrency()
                               << " compile threads; best " << r.best.str() << table.str());
  CHECK(compiles == 8);
  CHECK(stats.compiled == 8);
  CHECK(stats.timed == 8); // every config is valid and agrees with the first
  const CandidateResult *best = r.bestCandidate();
  REQUIRE(best);
  for (const CandidateResult &c : r.candidates)
    if (c.repeats == best->repeats)
      CHECK(*best->timeMs <= *c.timeMs);
  // 2 * 2048^3 flops: the winner does better than 100 TFLOP/s on a Hopper GPU.
  CHECK(2.0 * M * N * K / (*best->timeMs * 1e-3) > 100e12);
}

TEST_CASE("autotune runner: 16-bit outputs are compared as numbers", "[autotune][runner]") {
  Context ctx(createInterpreterBackend());
  const char *src = R"SRC(@kernel
def cast(X: *f32, Y: *DT, n: i32, BLOCK: constexpr = 64, SCALE: constexpr = 2.0,
         DT: constexpr = bf16):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    store(Y + offs, (load(X + offs, mask=m, other=0.0) * SCALE).to(DT), mask=m)
)SRC";
  int n = 300;
  auto x = ctx.alloc<float>(size_t(n));
  std::vector<float> hx(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    hx[size_t(i)] = 0.25f * float(i % 9) - 1.0f;
  x.copyFromHost(hx.data(), hx.size());
  for (const char *dt : {"bf16", "f16"}) {
    INFO(dt);
    DeviceMemory y = ctx.allocBytes(size_t(n) * 2);
    TuneTask task;
    task.compile = [&](const Config &c) {
      JitOptions o;
      std::map<std::string, ConstexprValue> cx = {{"DT", *parseDType(dt)}};
      c.applyTo(o, cx);
      return compileString(ctx, src, "cast.tile", "cast", cx, o);
    };
    task.launch = [&](Kernel &k, const Config &c) {
      int64_t b = std::get<int64_t>(c.constexprs.at("BLOCK"));
      Grid g = Grid::of(cdiv(int64_t(n), b));
      if (std::string(dt) == "bf16")
        k.launch(ctx.stream(), g, x.ptr(), DevicePtr<bf16>{y.address()}, int32_t(n));
      else
        k.launch(ctx.stream(), g, x.ptr(), DevicePtr<f16>{y.address()}, int32_t(n));
    };
    task.outputs = {{&y, *parseScalarType(dt)}};
    task.tolerance = 1e-6;
    ConfigSpace space;
    space.add(block(64)).add(block(128)).add(block(128).set("SCALE", 2.0078125));
    TuningRecord r = tune(ctx, space, task, quick());
    CHECK_FALSE(r.candidates[0].skipped());
    CHECK_FALSE(r.candidates[1].skipped()); // the same values, another tile
    // 2.0078125 * x differs from 2 * x by 0.4%: visible in bf16 and f16, so wrong.
    CHECK_THAT(r.candidates[2].skipReason, Catch::StartsWith("wrong output:"));
  }
}

TEST_CASE("autotune runner: a compile past the timeout is skipped, the others are tuned",
          "[autotune][runner]") {
  Fixture f;
  ConfigSpace space;
  space.add(block(64)).add(block(128)).add(block(256));
  TuneTask task = f.task();
  std::function<Kernel(const Config &)> compile = task.compile;
  task.compile = [compile](const Config &c) {
    if (std::get<int64_t>(c.constexprs.at("BLOCK")) == 128) {
      // Touches nothing after the sleep: tune() has returned by then.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      throw Error("too late");
    }
    return compile(c);
  };
  TuneOptions o = quick();
  o.compileTimeoutSeconds = 0.3;
  auto t0 = std::chrono::steady_clock::now();
  TuningRecord r = tune(f.ctx, space, task, o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.candidates.size() == 3);
  CHECK_THAT(r.candidates[1].skipReason, Catch::StartsWith("compile timeout:"));
  CHECK_FALSE(r.candidates[0].skipped());
  CHECK_FALSE(r.candidates[2].skipped());
  CHECK(seconds < 1.4); // did not wait for the slow compile
  std::this_thread::sleep_for(std::chrono::milliseconds(1300)); // let it finish before exit
}

TEST_CASE("autotune runner: a spent budget skips the rest, but one candidate is always timed",
          "[autotune][runner]") {
  Fixture f;
  ConfigSpace space;
  space.add(block(64)).add(block(128)).add(block(256)).add(block(512));
  TuneOptions o = quick();
  o.compileThreads = 1;
  o.budgetSeconds = 1e-9;
  std::vector<std::string> phases;
  o.progress = [&](const char *phase, size_t done, size_t total) {
    if (done == total)
      phases.push_back(phase);
  };
  TuningRecord r = tune(f.ctx, space, f.task(), o);
  int timed = 0, over = 0;
  for (const CandidateResult &c : r.candidates) {
    timed += !c.skipped();
    over += c.skipReason == "over the tuning budget";
  }
  CHECK(timed == 1);
  CHECK(over == 3);
  CHECK_FALSE(r.bestCandidate()->skipped());
  CHECK(std::find(phases.begin(), phases.end(), "compile") != phases.end());
  CHECK(std::find(phases.begin(), phases.end(), "time") != phases.end());
}
