// cluster_multicast: thread-block clusters and a multicast operand (sm_90a).
// A tf32 matmul C = A B whose programs go in clusters of two adjacent column
// tiles of one row tile: both need the same tiles of A, so the load of A says
// multicast=True and the compiler copies each A tile once per cluster, each
// program a half, into both programs' shared memory (JitOptions::clusterSize,
// docs/language.md §6.3). The kernel maps programs to tiles with
// cluster_size(), which is 1 without clusters and in the interpreter, so the
// same source runs either way. Checked on the CPU at sampled entries; on a
// GPU the time with and without clusters is printed.
//
//   example_cluster_multicast [M N K]    TESSERA_INTERPRET=1 forces the interpreter
#include <tessera/tessera.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {
const char *kMatmul = R"(
@kernel
def matmul(A: *f32, B: *f32, C: *f32, M: i32, N: i32, K: i32,
           BM: constexpr = 256, BN: constexpr = 128, BK: constexpr = 32):
    # A cluster takes cluster_size() adjacent column tiles of one row tile.
    cs = cluster_size()
    tiles_n = cdiv(cdiv(N, BN), cs)
    pid_m = (program_id(0) // cs) // tiles_n
    pid_n = ((program_id(0) // cs) % tiles_n) * cs + program_id(0) % cs
    rm = pid_m * BM + arange(0, BM)
    rn = pid_n * BN + arange(0, BN)
    rk = arange(0, BK)
    a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = B + rk[:, None] * N + rn[None, :]
    acc = zeros((BM, BN), f32)
    for k0 in range(0, K, BK):
        # The same A tile in every program of the cluster: copied once.
        a = load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0.0, multicast=True)
        b = load(b_ptrs, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
        acc = dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
)";
} // namespace

int main(int argc, char **argv) {
  try {
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";
    const bool small = ctx.isInterpreter();
    const int32_t M = argc > 3 ? std::atoi(argv[1]) : small ? 300 : 512;
    const int32_t N = argc > 3 ? std::atoi(argv[2]) : small ? 640 : 8192;
    const int32_t K = argc > 3 ? std::atoi(argv[3]) : small ? 96 : 8192;

    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> a(size_t(M) * K), b(size_t(K) * N);
    for (auto &v : a)
      v = u(rng);
    for (auto &v : b)
      v = u(rng);
    auto dA = ctx.upload(a), dB = ctx.upload(b);
    auto dC = ctx.alloc<float>(size_t(M) * N);

    for (int cluster : {1, 2}) {
      tessera::JitOptions o;
      o.numWarps = 8;
      o.clusterSize = cluster;
      tessera::Kernel mm = tessera::compileString(ctx, kMatmul, "matmul.tile", "matmul", {}, o);
      // Whole clusters along x: the column tiles rounded up to the cluster.
      const int64_t tilesN = tessera::cdiv(tessera::cdiv(int64_t(N), int64_t(128)), int64_t(cluster)) * cluster;
      const tessera::Grid grid = tessera::Grid::of(tessera::cdiv(int64_t(M), int64_t(256)) * tilesN);
      auto run = [&] { mm.launch(ctx.stream(), grid, dA, dB, dC, M, N, K); };
      dC.memsetBytes(0xFF);
      run();
      ctx.synchronize();
      std::vector<float> c = dC.toHost();
      // tf32 products: relative error against the exact sum at sampled entries.
      double maxRel = 0;
      for (int s = 0; s < 256; ++s) {
        size_t i = size_t(rng() % uint32_t(M)), j = size_t(rng() % uint32_t(N));
        double want = 0, scale = 0;
        for (size_t k = 0; k < size_t(K); ++k) {
          want += double(a[i * K + k]) * b[k * N + j];
          scale += std::abs(double(a[i * K + k]) * b[k * N + j]);
        }
        maxRel = std::max(maxRel, std::abs(c[i * N + j] - want) / scale);
      }
      std::cout << "cluster_size " << cluster << ": max error / sum|a b| " << maxRel;
      if (!small) {
        tessera::BenchmarkResult t = tessera::benchmark(ctx, run);
        std::cout << ", " << t.medianMs * 1000.0 << " us ("
                  << 2.0 * M * double(N) * K / (t.medianMs * 1e9) << " TFLOP/s)";
      }
      std::cout << "\n";
      if (!(maxRel < 2e-3)) {
        std::cerr << "wrong result\n";
        return 1;
      }
    }
  } catch (const tessera::Error &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
