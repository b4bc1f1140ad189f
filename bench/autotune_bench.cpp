// The autotuner's acceptance on the GPU (issue 14), one JSON object per line.
// bench/autotune_peers.py runs it next to cuBLAS and writes
// bench/results/autotune.json.
//
//   autotune_bench acceptance   with TESSERA_CACHE_DIR empty (a cold kernel cache):
//     1. tunes kernels_dsl/basics/matmul.tile (its @autotune space) in tf32 for
//        batch 512 x square weights 512 .. 20480 through one TunedKernel; the
//        wall-clock time of each shape's first launch (the tuning) is summed;
//     2. starts itself again ("second") as a second process, which launches
//        the same shapes and reports its counters: tunings, timed candidates,
//        kernel compilations (KernelCache builds);
//     3. times every config that tuned correctly, and the tuned one, again
//        in one pass per shape (the exhaustive search over the same space).
//   autotune_bench second       step 2 (run by step 1)
// (matmul through TunedKernel against cuBLAS is bench/matmul_bench.cpp.)
#include "TuningReport.h"
#include "tessera/KernelCache.h"
#include "tessera/TunedKernel.h"
#include "tessera/tessera.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

using namespace tessera;
using json = nlohmann::json;

namespace {

const std::string kMatmul = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile";
const std::vector<int64_t> kWeights = {512, 1024, 2048, 4096, 8192, 16384, 20480};
const int64_t kBatch = 512;

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The constexprs a caller fixes: the operand type, an f32 accumulator, C
/// in the operand type.
std::map<std::string, ConstexprValue> matmulConstexprs(const std::string &dt) {
  DType t = *parseDType(dt);
  return {{"DT", t}, {"ACC", DType{ScalarType::f32, 0}}, {"OUT", t}};
}

/// C = A @ B with row-major operands of `dt`, C in the operand type for
/// 16-bit inputs (as cuBLAS writes it), else f32.
struct Matmul {
  std::string dt;
  int64_t m, n, k;
  DeviceMemory a, b, c;
  Matmul(Context &ctx, std::string type, int64_t m_, int64_t n_, int64_t k_)
      : dt(std::move(type)), m(m_), n(n_), k(k_), a(ctx, bytes(m * k)), b(ctx, bytes(k * n)),
        c(ctx, bytes(m * n)) {
    // Values in [-1, 1) from a counter hash: fast enough for 1.6 GB of operands.
    uint64_t state = 7;
    for (DeviceMemory *x : {&a, &b}) {
      std::vector<uint8_t> h(x->size());
      for (size_t i = 0; i < h.size(); i += elem()) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        float v = float(int32_t(state >> 32)) * (1.0f / 2147483648.0f);
        if (dt == "f32")
          std::memcpy(&h[i], &v, 4);
        else {
          uint16_t bits = dt == "bf16" ? bf16(v).bits : f16(v).bits;
          std::memcpy(&h[i], &bits, 2);
        }
      }
      x->copyFromHost(h.data(), h.size());
    }
  }
  size_t elem() const { return dt == "f32" ? 4 : 2; }
  size_t bytes(int64_t count) const { return size_t(count) * elem(); }
  std::map<std::string, ConstexprValue> constexprs() const { return matmulConstexprs(dt); }
  ScalarType scalar() const { return parseDType(dt)->scalar; }
  TunedKernel::GridFn grid() const {
    return [m = m, n = n](const Config &c) {
      return Grid::of(cdiv(m, c.get("BM")) * cdiv(n, c.get("BN")));
    };
  }
  std::vector<ArgValue> args() const {
    ScalarType s = scalar();
    auto i = [](int64_t v) { return ArgValue::scalar(int32_t(v)); };
    return {ArgValue::pointer(s, a.address()), ArgValue::pointer(s, b.address()),
            ArgValue::pointer(s, c.address()), i(m), i(n), i(k), i(k), i(1), i(n), i(1), i(n),
            i(1)};
  }
  std::vector<const DeviceMemory *> buffers() const {
    std::vector<const DeviceMemory *> v(12, nullptr);
    v[0] = &a, v[1] = &b, v[2] = &c;
    return v;
  }
  double tflops(double ms) const { return 2.0 * double(m) * double(n) * double(k) / (ms * 1e9); }
};

TunedKernelOptions tunedOptions() {
  TunedKernelOptions o;
  o.print = true; // the decisions go to stderr
  return o;
}

json statsJson(const TunedKernelStats &s) {
  KernelCacheStats k = KernelCache::global().stats();
  return {{"launches", s.launches},       {"memory_hits", s.memoryHits},
          {"cache_hits", s.cacheHits},    {"tunings", s.tunings},
          {"timed_runs", s.timedRuns},    {"candidate_and_chosen_compiles", s.compiles},
          {"kernel_cache_builds", k.builds}, {"kernel_cache_disk_hits", k.diskHits},
          {"kernel_cache_memory_hits", k.memoryHits}};
}

int second(Context &ctx) {
  TunedKernel mm(ctx, kMatmul, "matmul", matmulConstexprs("f32"), {},
                 tunedOptions());
  json configs = json::array();
  for (int64_t w : kWeights) {
    Matmul p(ctx, "f32", kBatch, w, w);
    mm.launchWithArgs(ctx.stream(), p.grid(), p.args(), p.buffers());
    ctx.synchronize();
    configs.push_back(mm.lastDecision().config.str());
  }
  std::cout << json{{"phase", "second_process"}, {"stats", statsJson(mm.stats())},
                    {"configs", configs}}.dump()
            << std::endl;
  return 0;
}

int acceptance(Context &ctx, const char *self) {
  TunedKernel mm(ctx, kMatmul, "matmul", matmulConstexprs("f32"), {},
                 tunedOptions());
  std::cout << json{{"phase", "space"}, {"configs", mm.space().configs.size()},
                    {"space_hash", mm.space().hash()}}.dump()
            << std::endl;
  // 1. Tune every shape, cold. The clock runs around the first launch of
  // each shape (the tuning), not around making its operands.
  std::vector<Config> tuned;
  json shapes = json::array();
  double wall = 0;
  for (int64_t w : kWeights) {
    Matmul p(ctx, "f32", kBatch, w, w);
    auto t = std::chrono::steady_clock::now();
    mm.launchWithArgs(ctx.stream(), p.grid(), p.args(), p.buffers());
    ctx.synchronize();
    double seconds = secondsSince(t);
    wall += seconds;
    TuningDecision d = mm.lastDecision();
    tuned.push_back(d.config);
    shapes.push_back({{"M", kBatch}, {"N", w}, {"K", w}, {"seconds", seconds},
                      {"source", d.source},
                      {"record", d.record ? json{{"best", d.record->best.str()},
                                                     {"candidates", bench::candidatesJson(*d.record)}}
                                              : json()}});
  }
  std::cout << json{{"phase", "tune"}, {"wall_seconds", wall}, {"shapes", shapes},
                    {"stats", statsJson(mm.stats())}}.dump()
            << std::endl;

  // 2. A second process on the same caches.
  std::string cmd = std::string(self) + " second";
  FILE *child = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (child && std::fgets(buf, sizeof buf, child))
    out += buf;
  int status = child ? ::pclose(child) : -1;
  std::cout << (status == 0 ? out : json{{"phase", "second_process"}, {"error", status}}.dump() + "\n")
            << std::flush;

  // 3. Exhaustive: every config that ran correctly, timed again in one pass.
  for (size_t s = 0; s < kWeights.size(); ++s) {
    Matmul p(ctx, "f32", kBatch, kWeights[s], kWeights[s]);
    const json &cands = shapes[s]["record"]["candidates"];
    json times = json::array();
    double best = 1e30, tunedMs = 0;
    std::string bestConfig;
    for (const json &c : cands) {
      if (c.contains("skip"))
        continue;
      Config cfg = *Config::parse(c["config"].get<std::string>());
      JitOptions o;
      std::map<std::string, ConstexprValue> cx = p.constexprs();
      cfg.applyTo(o, cx);
      Kernel k = compile(ctx, kMatmul, "matmul", cx, o);
      Grid g = p.grid()(cfg);
      std::vector<ArgValue> args = p.args();
      BenchmarkOptions bo;
      bo.repeats = 30;
      double ms = benchmark(ctx, [&] { k.launchWithArgs(ctx.stream(), g, args); }, bo).medianMs;
      times.push_back({{"config", cfg.str()}, {"ms", ms}});
      if (ms < best)
        best = ms, bestConfig = cfg.str();
      if (cfg == tuned[s])
        tunedMs = ms;
    }
    std::cout << json{{"phase", "exhaustive"}, {"M", kBatch}, {"N", kWeights[s]}, {"K", kWeights[s]},
                      {"tuned", tuned[s].str()}, {"tuned_ms", tunedMs}, {"best", bestConfig},
                      {"best_ms", best}, {"tuned_over_best", tunedMs / best}, {"times", times}}
                     .dump()
              << std::endl;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    Context ctx;
    if (mode == "acceptance")
      return acceptance(ctx, argv[0]);
    if (mode == "second")
      return second(ctx);
  } catch (const std::exception &e) {
    std::cerr << "autotune_bench: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: autotune_bench acceptance | second\n";
  return 2;
}
