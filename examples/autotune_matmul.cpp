// autotune_matmul: TunedKernel picks matmul's tile sizes per problem shape.
//
// kernels_dsl/basics/matmul.tile declares its config space with @autotune
// (tile sizes, warps, stages; keyed on M, N and K rounded up to powers of
// two). The first launch of a shape tunes it: the candidates compile in
// parallel, each runs once and is checked against the first, then they are
// timed; the winner goes to the tuning cache ($TESSERA_CACHE_DIR/tuning).
// Later launches of that shape (or of any shape in its bucket) look the
// config up in memory; another process finds it in the cache file.
//
// Runs on the GPU (tf32), or in the CPU interpreter at a small size
// (TESSERA_INTERPRET=1 or no GPU; the times are then host times).
// TESSERA_PRINT_AUTOTUNING=1 prints every decision.
//
//   example_autotune_matmul [M N K]
#include <tessera/TunedKernel.h>
#include <tessera/tessera.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  const std::string file = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile";
  try {
    tessera::Context ctx = tessera::Context::gpuOrInterpreter();
    bool gpu = !ctx.isInterpreter();
    int32_t m = gpu ? 512 : 48, n = gpu ? 2048 : 40, k = gpu ? 2048 : 72;
    if (argc > 3)
      m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> ha(size_t(m) * size_t(k)), hb(size_t(k) * size_t(n));
    for (float &x : ha)
      x = u(rng);
    for (float &x : hb)
      x = u(rng);
    auto a = ctx.upload(ha), b = ctx.upload(hb);
    auto c = ctx.alloc<float>(size_t(m) * size_t(n));

    // f32 operands (tf32 tensor cores on the GPU); the config space is the kernel's own.
    tessera::TunedKernelOptions options;
    if (!gpu) { // the interpreter is slow: fewer timed repeats
      options.tuning.timing.repeats = 2;
      options.tuning.retimeRepeats = 2;
    }
    tessera::TunedKernel matmul(ctx, file, "matmul",
                                {{"DT", tessera::DType{tessera::ScalarType::f32, 0}}}, {}, options);
    std::cout << "matmul declares " << matmul.space().configs.size() << " configs\n";

    // The grid depends on the config's tile sizes.
    auto grid = [&](const tessera::Config &cfg) {
      return tessera::Grid::of(tessera::cdiv(m, cfg.get("BM")) * tessera::cdiv(n, cfg.get("BN")));
    };
    // Row-major A (m x k), B (k x n), C (m x n): strides (k, 1), (n, 1), (n, 1).
    matmul.launch(ctx.stream(), grid, a, b, c, m, n, k, k, 1, n, 1, n, 1);
    ctx.synchronize();

    tessera::TuningDecision d = matmul.lastDecision();
    std::cout << "M=" << m << " N=" << n << " K=" << k << ": " << d.config.str() << " ("
              << d.source << ")\n";
    if (d.record)
      for (const tessera::CandidateResult &r : d.record->candidates)
        std::cout << "  " << r.config.str() << ": "
                  << (r.skipped() ? r.skipReason : std::to_string(*r.timeMs) + " ms") << "\n";

    // The launch's result against an fp64 reference on the CPU.
    std::vector<float> hc = c.toHost();
    double err = 0, scale = 0;
    for (int32_t i = 0; i < m; i += std::max(1, m / 16))
      for (int32_t j = 0; j < n; j += std::max(1, n / 16)) {
        double ref = 0;
        for (int32_t p = 0; p < k; ++p)
          ref += double(ha[size_t(i) * size_t(k) + size_t(p)]) * double(hb[size_t(p) * size_t(n) + size_t(j)]);
        err = std::max(err, std::fabs(double(hc[size_t(i) * size_t(n) + size_t(j)]) - ref));
        scale = std::max(scale, std::fabs(ref));
      }
    std::cout << "relative error against fp64: " << err / scale << "\n";

    // Same bucket (M, N, K rounded up to powers of two): no tuning, a memory hit.
    matmul.launch(ctx.stream(), grid, a, b, c, m, n, k, k, 1, n, 1, n, 1);
    ctx.synchronize();
    tessera::TunedKernelStats s = matmul.stats();
    std::cout << "launches " << s.launches << ", memory hits " << s.memoryHits << ", tunings "
              << s.tunings << ", cache hits " << s.cacheHits << "\n";
    return err / scale < (gpu ? 5e-3 : 1e-5) ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "example_autotune_matmul: " << e.what() << "\n";
    return 1;
  }
}
