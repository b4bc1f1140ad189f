// matmul_bf16: C = A @ B with bf16 operands and a bf16 result, row-major, the
// fast path on Hopper. With unit inner strides (specialized at launch),
// kernels_dsl/basics/matmul.tile becomes a cp.async + wgmma pipeline on sm_90a
// (mma.sync + ldmatrix on sm_80..sm_90); JitOptions picks the warps and the
// pipeline depth. See docs/performance.md for the configs measured on an H200.
// Checked against an fp64 CPU product of the same bf16 values.
//
//   example_matmul_bf16 [M N K]      TESSERA_INTERPRET=1 forces the interpreter
#include <tessera/tessera.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  // Ragged on purpose. Larger sizes work too, but the fp64 check below runs
  // on one CPU core (M * N * K multiply-adds: minutes at 4096^3).
  const int32_t M = argc > 3 ? std::atoi(argv[1]) : 200;
  const int32_t N = argc > 3 ? std::atoi(argv[2]) : 264;
  const int32_t K = argc > 3 ? std::atoi(argv[3]) : 136;
  // One of the best H200 configs: a 128x256x64 tile, two warpgroups, four
  // shared-memory stages (192 KiB). num_stages is an upper bound: a smaller
  // GPU gets as many stages as fit.
  const int64_t BM = 128, BN = 256, BK = 64;
  try {
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";

    const char *dir = std::getenv("TESSERA_KERNELS_DIR");
    std::string kernels = dir ? dir : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
    tessera::JitOptions opt;
    opt.numWarps = 8;  // BM must be a multiple of 16 * numWarps (64 rows per warpgroup)
    opt.numStages = 4; // copies of two K-steps in flight while one computes
    tessera::DType bf16{tessera::ScalarType::bf16};
    tessera::Kernel mm = tessera::compile(
        ctx, kernels + "/basics/matmul.tile", "matmul",
        {{"BM", BM}, {"BN", BN}, {"BK", BK}, {"DT", bf16}, {"OUT", bf16}}, opt);

    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<tessera::bf16> a(size_t(M) * K), b(size_t(K) * N);
    for (auto &v : a)
      v = tessera::bf16(dist(rng));
    for (auto &v : b)
      v = tessera::bf16(dist(rng));
    auto da = ctx.upload(a), db = ctx.upload(b);
    auto dc = ctx.alloc<tessera::bf16>(size_t(M) * N);

    // Row-major A, B and C: the inner strides are 1, which launch-time
    // specialization turns into contiguous rows the copies can use.
    int64_t tiles = tessera::cdiv<int64_t>(M, BM) * tessera::cdiv<int64_t>(N, BN);
    mm.launch(ctx.stream(), tessera::Grid::of(tiles), da, db, dc, M, N, K, K, 1, N, 1, N, 1);
    std::vector<tessera::bf16> c = dc.toHost();

    double errSq = 0, refSq = 0;
    for (int32_t i = 0; i < M; ++i)
      for (int32_t j = 0; j < N; ++j) {
        double ref = 0;
        for (int32_t k = 0; k < K; ++k)
          ref += double(float(a[size_t(i) * K + k])) * double(float(b[size_t(k) * N + j]));
        double d = double(float(c[size_t(i) * N + j])) - ref;
        errSq += d * d;
        refSq += ref * ref;
      }
    double relErr = std::sqrt(errSq / refSq);
    // Exact products, f32 accumulation, one bf16 rounding of C (8-bit mantissa).
    std::printf("matmul bf16 %dx%dx%d (BM=%lld BN=%lld BK=%lld, %d warps, %d stages): relative "
                "error %.3g\n",
                M, N, K, (long long)BM, (long long)BN, (long long)BK, opt.numWarps, opt.numStages,
                relErr);
    if (!(relErr < 1e-2)) {
      std::printf("FAILED (tolerance 1e-2)\n");
      return 1;
    }
  } catch (const tessera::Error &e) {
    std::cerr << "tessera error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
