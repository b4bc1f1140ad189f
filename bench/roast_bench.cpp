// Times ROAST-MM forward (kernels_dsl/roast/roast_mm.tile, f32 operands on
// tf32 tensor cores) at the shapes given, for RzLinear's mapping and the
// aligned one, and prints one JSON object per line. bench/roast_peers.py runs
// it next to cuBLAS's dense matmul of the same shape (the cost ROAST's
// compressed weight should match) in one session.
//
//   roast_bench B K N [B K N ...]
// The config of each shape and mapping is picked by the autotuner
// (TunedKernel over the kernel's @autotune space, tuned afresh in every run;
// ROAST_REUSE_TUNING=1 reuses the tuning cache). The chosen config is
// checked against an fp64 reference at sampled entries, computed from the
// hash mapping on the CPU (docs/kernels/roast.md), before it is timed.
#include "BenchTiming.h"
#include "TuningReport.h"
#include "support/Reference.h"
#include "tessera/TunedKernel.h"
#include "tessera/tessera.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {
constexpr int64_t kP = 45007, kHK = 32, kHN = 64; // RzLinear's P and the kernel's default hash tile
} // namespace

int main(int argc, char **argv) {
  if (argc < 4 || (argc - 1) % 3 != 0) {
    std::cerr << "usage: roast_bench B K N [B K N ...]\n";
    return 2;
  }
  std::string kernels = std::getenv("TESSERA_KERNELS_DIR") ? std::getenv("TESSERA_KERNELS_DIR")
                                                           : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
  try {
    Context ctx;
    std::mt19937 rng(11);
    for (int i = 1; i + 2 < argc; i += 3) {
      int64_t Bn = std::stoll(argv[i]), K = std::stoll(argv[i + 1]), N = std::stoll(argv[i + 2]);
      // The compressed weight: a tenth of K x N, as in the paper's inference runs.
      int64_t memSize = std::max<int64_t>(K * N / 10, 2 * kHK * kHN);
      const float lam = 0.5f;
      std::vector<int32_t> R(8);
      for (auto &r : R)
        r = int32_t(1 + rng() % (kP - 1));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> x(static_cast<size_t>(Bn * K)), mem(static_cast<size_t>(memSize));
      for (auto &v : x)
        v = u(rng);
      for (auto &v : mem)
        v = u(rng);
      auto dx = ctx.upload(x), dm = ctx.upload(mem);
      auto dr = ctx.upload(R);
      auto dy = ctx.alloc<float>(size_t(Bn * N));
      std::vector<std::pair<int64_t, int64_t>> samples{{Bn - 1, N - 1}};
      std::uniform_int_distribution<int64_t> rb(0, Bn - 1), rn(0, N - 1);
      for (int s = 0; s < 256; ++s)
        samples.push_back({rb(rng), rn(rng)});
      for (bool aligned : {false, true}) {
        auto loc = [&](int64_t kb, int64_t nb) {
          int64_t hi = (kb * R[3] + nb * R[2] + R[1]) % kP, lo = (kb * R[7] + nb * R[5] + R[4]) % kP;
          int64_t l = (hi * kP + lo) % (memSize - kHK * kHN);
          return aligned ? l - l % 4 : l;
        };
        std::vector<double> ref;
        for (auto [b, n] : samples) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += double(x[size_t(b * K + k)]) *
                   double(mem[size_t(loc(k / kHK, n / kHN) + (k % kHK) * kHN + n % kHN)]);
          ref.push_back(acc * lam);
        }
        TunedKernelOptions tuning;
        const char *reuse = std::getenv("ROAST_REUSE_TUNING");
        tuning.retune = !(reuse && std::string(reuse) == "1");
        tuning.tolerance = 3e-3;
        TunedKernel roast(ctx, kernels + "/roast/roast_mm.tile", "roast_mm_fwd",
                          {{"ALIGNED", aligned}}, {}, tuning);
        auto grid = [&](const tessera::Config &c) {
          return Grid::of(cdiv(Bn, c.get("BM")) * cdiv(N, c.get("BN")));
        };
        auto launch = [&] {
          roast.launch(ctx.stream(), grid, dx, dm, dy, dr, int32_t(Bn), int32_t(K), int32_t(N),
                       int32_t(memSize), lam, int32_t(K), int32_t(1), int32_t(N), int32_t(1));
        };
        launch(); // tunes
        dy.memory().memset(0xFF);
        launch();
        ctx.synchronize();
        std::vector<float> y = dy.toHost();
        testing::L2Error err;
        for (size_t s = 0; s < samples.size(); ++s)
          err.add(y[size_t(samples[s].first * N + samples[s].second)], ref[s]);
        double rel = err.value();
        TuningDecision d = roast.lastDecision();
        if (!(rel <= 3e-3)) { // tf32 operands; an unwritten entry (NaN) is an infinite error
          std::cerr << "roast_bench: " << d.config.str() << " aligned=" << aligned
                    << " relative error " << rel << " exceeds 3e-3\n";
          return 1;
        }
        double best = bench::medianMs(ctx, launch, 20, 5);
        std::string bestCfg = d.config.str();
        std::string all = d.record ? bench::candidatesJson(*d.record).dump() : "[]";
        std::printf("{\"impl\": \"tessera_roast_mm_fwd\", \"mapping\": \"%s\", \"B\": %lld, \"K\": %lld, "
                    "\"N\": %lld, \"mem_size\": %lld, \"ms\": %.4f, \"tflops\": %.2f, \"config\": \"%s\", "
                    "\"rel_err\": %.3g, \"device\": \"%s\", \"configs\": %s}\n",
                    aligned ? "aligned" : "rzlinear", (long long)Bn, (long long)K, (long long)N,
                    (long long)memSize, best, 2.0 * Bn * K * N / (best * 1e9), bestCfg.c_str(), rel,
                    ctx.deviceName().c_str(), all.c_str());
        std::fflush(stdout);
      }
    }
  } catch (const Error &e) {
    std::cerr << "roast_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
