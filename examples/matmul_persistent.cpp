// matmul_persistent: the persistent bf16 matmul (kernels_dsl/basics/
// matmul_persistent.tile). Each program walks over output tiles
// (program_id(0), program_id(0) + num_programs(0), ...), so the grid is one
// program per SM rather than one per tile. With M, N, K multiples of 16 and
// unit inner strides, on sm_90a the tile loop is warp-specialized as a whole:
// a producer warpgroup copies the next tile's operands while the consumer
// warps store the last one (the JIT launches the block with the extra warps).
// Checked against an fp64 CPU product of the same bf16 values.
//
//   example_matmul_persistent [M N K]      TESSERA_INTERPRET=1 forces the interpreter
#include <tessera/tessera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  // Not multiples of the tile, but of 16 (whole 16-byte copies); several tiles.
  // The fp64 check below runs on one CPU core: keep M * N * K modest.
  const int32_t M = argc > 3 ? std::atoi(argv[1]) : 272;
  const int32_t N = argc > 3 ? std::atoi(argv[2]) : 528;
  const int32_t K = argc > 3 ? std::atoi(argv[3]) : 144;
  const int64_t BM = 128, BN = 256, BK = 32;
  try {
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";

    const char *dir = std::getenv("TESSERA_KERNELS_DIR");
    std::string kernels = dir ? dir : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
    tessera::JitOptions opt;
    opt.numWarps = 8;  // two consumer warpgroups; the producer warpgroup is added
    opt.numStages = 4; // a power of two when warp-specialized
    tessera::DType bf16{tessera::ScalarType::bf16};
    tessera::Kernel mm = tessera::compile(
        ctx, kernels + "/basics/matmul_persistent.tile", "matmul_persistent",
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

    // One program per SM (the interpreter's "SMs" are its worker threads),
    // never more programs than tiles.
    int64_t tiles = tessera::cdiv<int64_t>(M, BM) * tessera::cdiv<int64_t>(N, BN);
    int64_t programs = std::min<int64_t>(tiles, ctx.smCount());
    mm.launch(ctx.stream(), tessera::Grid::of(programs), da, db, dc, M, N, K, K, 1, N, 1, N, 1);
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
    std::printf("persistent matmul bf16 %dx%dx%d (%lld tiles on %lld programs): relative error "
                "%.3g\n",
                M, N, K, (long long)tiles, (long long)programs, relErr);
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
