// Checks the basic kernels against fp64 CPU references, on the GPU and in the CPU
// interpreter (and the two against each other), and measures
// vector add and row softmax against the device-to-device copy bandwidth of
// the same run. Writes bench/results/basics.json (or the path in argv[1]).
//
//   basics_bench [out.json] [commit]
#include "BenchTiming.h"
#include "support/Reference.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"
#include "tessera/TunedKernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera;

namespace {
std::string kernelsDir() {
  const char *d = std::getenv("TESSERA_KERNELS_DIR");
  return d ? d : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
}

std::vector<float> randomVector(size_t n, std::mt19937 &rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

double timeMs(Context &ctx, const std::function<void()> &fn, int iters = 20, int reps = 7) {
  return tessera::bench::medianMs(ctx, fn, iters, reps);
}

struct Check {
  std::string name;
  std::string shape;
  double relErr;
  bool pass;
};
} // namespace

int main(int argc, char **argv) {
  std::string outPath = argc > 1 ? argv[1] : std::string(TESSERA_SOURCE_DIR) + "/bench/results/basics.json";
  std::string commit = argc > 2 ? argv[2] : "unknown";
  std::random_device rd;
  unsigned seed = rd();
  std::mt19937 rng(seed);
  std::vector<Check> checks;
  bool allPass = true;
  try {
    Context ctx;
    std::cout << "device: " << ctx.deviceName() << " (" << ctx.target() << "), seed " << seed << "\n";
    const std::string kd = kernelsDir() + "/basics/";
    auto record = [&](const std::string &name, const std::string &shape, double err, double tol) {
      bool pass = err < tol;
      allPass &= pass;
      checks.push_back({name, shape, err, pass});
      std::printf("%-12s %-28s rel err %.3e %s\n", name.c_str(), shape.c_str(), err, pass ? "ok" : "FAIL");
    };

    // ---- correctness at ragged shapes: GPU and CPU interpreter vs fp64, and vs each other ----
    Context interp(createInterpreterBackend());
    auto compare = [&](const std::string &name, const std::string &shape,
                       const std::function<std::vector<float>(Context &)> &run, const std::vector<double> &ref) {
      std::vector<float> gpu = run(ctx), cpu = run(interp);
      record(name, shape + " gpu", testing::relErrL2(gpu, ref), 1e-5);
      record(name, shape + " interp", testing::relErrL2(cpu, ref), 1e-5);
      std::vector<double> cpuD(cpu.begin(), cpu.end());
      record(name, shape + " gpu~interp", testing::relErrL2(gpu, cpuD), 1e-5);
    };
    for (int n : {1, 1000, 4099, 1 << 20, (1 << 20) + 3}) {
      auto x = randomVector(n, rng), y = randomVector(n, rng);
      std::vector<double> ref(n);
      for (int i = 0; i < n; ++i)
        ref[i] = double(x[i]) + double(y[i]);
      compare("vector_add", std::to_string(n), [&](Context &c) {
        Kernel vadd = compile(c, kd + "vector_add.tile", "vector_add", {{"BLOCK", int64_t(1024)}});
        auto dx = c.upload(x), dy = c.upload(y);
        auto dz = c.alloc<float>(n);
        dz.memsetBytes(0xff); // poison: NaN everywhere
        vadd.launch(c.stream(), Grid{unsigned(cdiv(n, 1024))}, dx.ptr(), dy.ptr(), dz.ptr(), int32_t(n));
        return dz.toHost();
      }, ref);
    }

    JitOptions w8;
    w8.numWarps = 8;
    for (auto [rows, cols, block] : std::vector<std::tuple<int, int, int>>{{7, 1000, 1024}, {64, 4096, 4096}, {33, 77, 128}}) {
      auto x = randomVector(size_t(rows) * cols, rng, -5, 5);
      std::vector<double> ref = testing::softmaxRef(x, size_t(rows), size_t(cols));
      compare("softmax", std::to_string(rows) + "x" + std::to_string(cols), [&](Context &c) {
        Kernel sm = compile(c, kd + "softmax.tile", "softmax", {{"BLOCK", int64_t(block)}}, w8);
        auto dx = c.upload(x);
        auto dy = c.alloc<float>(size_t(rows) * cols);
        dy.memsetBytes(0xff);
        sm.launch(c.stream(), Grid{unsigned(rows)}, dx.ptr(), dy.ptr(), int32_t(cols), int32_t(cols), int32_t(cols));
        return dy.toHost();
      }, ref);
    }

    for (auto [rows, cols] : std::vector<std::pair<int, int>>{{5, 1000}, {16, 4096}, {3, 3000}}) {
      size_t n = size_t(rows) * cols;
      auto x = randomVector(n, rng, -3, 3), w = randomVector(cols, rng), b = randomVector(cols, rng);
      float eps = 1e-5f;
      std::vector<double> ref = testing::layerNormRef(x, w, b, size_t(rows), size_t(cols), eps).y;
      compare("layer_norm", std::to_string(rows) + "x" + std::to_string(cols), [&](Context &c) {
        Kernel ln = compile(c, kd + "layer_norm.tile", "layer_norm_fwd", {{"BLOCK", int64_t(1024)}});
        auto dx = c.upload(x), dw = c.upload(w), db = c.upload(b);
        auto dy = c.alloc<float>(n), dm = c.alloc<float>(rows), dr = c.alloc<float>(rows);
        dy.memsetBytes(0xff);
        ln.launch(c.stream(), Grid{unsigned(rows)}, dx.ptr(), dy.ptr(), dw.ptr(), db.ptr(), dm.ptr(), dr.ptr(),
                  int32_t(cols), int32_t(cols), eps);
        return dy.toHost();
      }, ref);
    }

    for (auto [M, N, K] : std::vector<std::tuple<int, int, int>>{{64, 64, 16}, {100, 70, 33}, {257, 129, 200}}) {
      auto a = randomVector(size_t(M) * K, rng), bm = randomVector(size_t(K) * N, rng);
      std::vector<double> ref = testing::matmulRef(a, bm, size_t(M), size_t(N), size_t(K));
      compare("matmul_fma", std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K), [&](Context &c) {
        Kernel mm = compile(c, kd + "matmul.tile", "matmul",
                            {{"BM", int64_t(64)}, {"BN", int64_t(64)}, {"BK", int64_t(16)}, {"GROUP", int64_t(4)}});
        auto da = c.upload(a), dbm = c.upload(bm);
        auto dc = c.alloc<float>(size_t(M) * N);
        dc.memsetBytes(0xff);
        mm.launch(c.stream(), Grid{unsigned(cdiv(M, 64) * cdiv(N, 64))}, da.ptr(), dbm.ptr(), dc.ptr(), int32_t(M),
                  int32_t(N), int32_t(K), int32_t(K), int32_t(1), int32_t(N), int32_t(1), int32_t(N), int32_t(1));
        return dc.toHost();
      }, ref);
    }

    // ---- bandwidth ----
    const size_t N = size_t(256) << 20; // 256M fp32
    auto src = ctx.alloc<float>(N), dst = ctx.alloc<float>(N), third = ctx.alloc<float>(N);
    src.memory().memset32(0x3f800000u, 0, N); // 1.0f
    dst.memory().memset32(0x40000000u, 0, N); // 2.0f
    double copyMs = timeMs(ctx, [&] { dst.memory().copyFrom(src.memory(), N * 4, 0, 0, ctx.stream()); });
    double copyGBs = 2.0 * N * 4 / (copyMs * 1e6);
    // The configs come from the kernels' @autotune spaces, tuned afresh (the
    // tuner's times have L2 flushed; the figures below are back to back).
    TunedKernelOptions fresh;
    fresh.retune = true;
    auto tunedReport = [](const char *what, const TuningDecision &d) {
      for (const CandidateResult &c : d.record->candidates)
        std::printf("%s %s: %s\n", what, c.config.str().c_str(),
                    c.skipped() ? c.skipReason.c_str() : (std::to_string(*c.timeMs) + " ms").c_str());
      return d.config.str();
    };
    TunedKernel vadd(ctx, kd + "vector_add.tile", "vector_add", {}, {}, fresh);
    auto vaddGrid = [&](const tessera::Config &c) { return Grid::of(cdiv<int64_t>(N, c.get("BLOCK"))); };
    auto vaddLaunch = [&] { vadd.launch(ctx.stream(), vaddGrid, src, dst, third, int32_t(N)); };
    vaddLaunch(); // tunes
    std::string bestVaddCfg = tunedReport("vector_add", vadd.lastDecision());
    double bestVaddMs = timeMs(ctx, vaddLaunch);
    double vaddGBs = 3.0 * N * 4 / (bestVaddMs * 1e6);

    const int rows = 32768, cols = 4096;
    TunedKernel softmax(ctx, kd + "softmax.tile", "softmax", {}, {}, fresh);
    auto smLaunch = [&] {
      softmax.launch(ctx.stream(), [&](const tessera::Config &) { return Grid::of(rows); }, src, dst,
                     int32_t(cols), int32_t(cols), int32_t(cols));
    };
    smLaunch(); // tunes
    std::string bestSmCfg = tunedReport("softmax 32768x4096", softmax.lastDecision());
    double bestSmMs = timeMs(ctx, smLaunch);
    double smGBs = 2.0 * rows * cols * 4 / (bestSmMs * 1e6);

    std::printf("\ncopy  %.0f GB/s | vector_add %.0f GB/s = %.1f%% of copy (%s) | softmax %.0f GB/s = %.1f%% of copy (%s)\n",
                copyGBs, vaddGBs, 100 * vaddGBs / copyGBs, bestVaddCfg.c_str(), smGBs, 100 * smGBs / copyGBs,
                bestSmCfg.c_str());

    std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::ostringstream js;
    js << "{\n  \"benchmark\": \"basics\",\n  \"device\": \"" << ctx.deviceName() << "\",\n  \"target\": \""
       << ctx.target() << "\",\n  \"date\": \"" << date << "\",\n  \"commit\": \"" << commit
       << "\",\n  \"seed\": " << seed << ",\n  \"correctness\": [\n";
    for (size_t i = 0; i < checks.size(); ++i)
      js << "    {\"kernel\": \"" << checks[i].name << "\", \"shape\": \"" << checks[i].shape
         << "\", \"rel_error\": " << checks[i].relErr << ", \"pass\": " << (checks[i].pass ? "true" : "false")
         << "}" << (i + 1 < checks.size() ? "," : "") << "\n";
    js << "  ],\n  \"bandwidth\": {\n"
       << "    \"copy_d2d_GBps\": " << copyGBs << ",\n    \"copy_ms\": " << copyMs << ",\n"
       << "    \"vector_add_elements\": " << N << ",\n    \"vector_add_ms\": " << bestVaddMs
       << ",\n    \"vector_add_GBps\": " << vaddGBs << ",\n    \"vector_add_vs_copy\": " << vaddGBs / copyGBs
       << ",\n    \"vector_add_config\": \"" << bestVaddCfg << "\",\n"
       << "    \"softmax_shape\": \"32768x4096\",\n    \"softmax_ms\": " << bestSmMs << ",\n    \"softmax_GBps\": "
       << smGBs << ",\n    \"softmax_vs_copy\": " << smGBs / copyGBs << ",\n    \"softmax_config\": \"" << bestSmCfg
       << "\"\n  }\n}\n";
    std::ofstream(outPath) << js.str();
    std::cout << "wrote " << outPath << "\n";
  } catch (const std::exception &e) {
    std::cerr << "basics_bench: " << e.what() << "\n";
    return 2;
  }
  return allPass ? 0 : 1;
}
