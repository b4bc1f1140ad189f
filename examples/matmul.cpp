// matmul: C = A @ W^T in f32, the shape of a linear layer whose weight W is
// stored (N x K), row-major, with kernels_dsl/basics/matmul.tile. The kernel
// takes every operand's strides, so the transpose costs nothing: W is read
// through swapped strides instead of being copied. Checked against a CPU loop.
//
//   example_matmul [M N K]          TESSERA_INTERPRET=1 forces the interpreter
#include <tessera/tessera.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {
std::string kernelsDir() {
  const char *d = std::getenv("TESSERA_KERNELS_DIR");
  return d ? d : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
}


std::vector<float> randomMatrix(size_t rows, size_t cols, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> m(rows * cols);
  for (float &v : m)
    v = dist(rng);
  return m;
}
} // namespace

int main(int argc, char **argv) {
  // Deliberately not multiples of the tiles: the kernel masks the edges.
  const int32_t M = argc > 3 ? std::atoi(argv[1]) : 200;
  const int32_t N = argc > 3 ? std::atoi(argv[2]) : 150;
  const int32_t K = argc > 3 ? std::atoi(argv[3]) : 100;
  // Tile sizes are constexprs: each choice compiles to its own kernel, and
  // the grid below must use the same BM and BN.
  const int64_t BM = 64, BN = 64, BK = 32, GROUP = 4;
  try {
    // The GPU when there is one, else the CPU interpreter (TESSERA_INTERPRET=1 forces it).
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";

    // DT, ACC and OUT keep their f32 defaults; {"DT", tessera::DType{tessera::ScalarType::f16}}
    // would specialize for f16 operands instead.
    tessera::Kernel matmul = tessera::compile(
        ctx, kernelsDir() + "/basics/matmul.tile", "matmul",
        {{"BM", BM}, {"BN", BN}, {"BK", BK}, {"GROUP", GROUP}});

    std::mt19937 rng(1);
    std::vector<float> a = randomMatrix(M, K, rng); // A: M x K, row-major
    std::vector<float> w = randomMatrix(N, K, rng); // W: N x K, row-major
    auto da = ctx.upload(a), dw = ctx.upload(w);
    auto dc = ctx.alloc<float>(size_t(M) * N);

    // B = W^T is K x N: element (k, n) lives at w[n * K + k], so
    // stride_bk = 1 and stride_bn = K.
    const int32_t strideAm = K, strideAk = 1;
    const int32_t strideBk = 1, strideBn = K;
    const int32_t strideCm = N, strideCn = 1;
    // One program per BM x BN tile of C, on a 1-D grid (the kernel orders
    // the tiles itself, GROUP tile-rows at a time).
    int64_t tiles = tessera::cdiv<int64_t>(M, BM) * tessera::cdiv<int64_t>(N, BN);
    matmul.launch(ctx.stream(), tessera::Grid{unsigned(tiles)}, da, dw, dc, M, N, K,
                  strideAm, strideAk, strideBk, strideBn, strideCm, strideCn);
    std::vector<float> c = dc.toHost();

    double errSq = 0, refSq = 0;
    for (int32_t i = 0; i < M; ++i)
      for (int32_t j = 0; j < N; ++j) {
        double ref = 0;
        for (int32_t k = 0; k < K; ++k)
          ref += double(a[size_t(i) * K + k]) * double(w[size_t(j) * K + k]);
        double d = double(c[size_t(i) * N + j]) - ref;
        errSq += d * d;
        refSq += ref * ref;
      }
    double relErr = std::sqrt(errSq / refSq);
    // f32 dot() defaults to tf32 precision (10-bit mantissas) and a GPU may
    // run it on tensor cores; the interpreter computes it in full fp32.
    double tolerance = ctx.isInterpreter() ? 1e-5 : 2e-3;
    std::printf("matmul %dx%dx%d (BM=%lld BN=%lld BK=%lld GROUP=%lld): relative error %.3g\n", M,
                N, K, (long long)BM, (long long)BN, (long long)BK, (long long)GROUP, relErr);
    if (!(relErr < tolerance)) {
      std::printf("FAILED (tolerance %g)\n", tolerance);
      return 1;
    }
  } catch (const tessera::Error &e) {
    std::cerr << "tessera error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
