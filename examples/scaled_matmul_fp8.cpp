// scaled_matmul_fp8: the per-tensor-scaled FP8 GEMM of FP8 training and
// inference, C = (scale_a * scale_b) * (A @ B) with A and B in f8e4m3 and C
// in bf16 (kernels_dsl/basics/scaled_matmul.tile). The host quantizes f32
// data with tessera::f8e4m3 (round to nearest even, saturating at 448) after
// scaling each tensor so that its largest magnitude maps to 448; the scales'
// inverses go to the kernel, which applies them once in the epilogue.
// B is column-major (N x K, each column's K values contiguous), the form
// Hopper's 8-bit tensor cores read, as a linear layer stores its weight.
// Checked against the fp64 product of the quantized values, and the
// quantization error against the unquantized product is reported.
//
//   example_scaled_matmul_fp8 [M N K]   TESSERA_INTERPRET=1 forces the interpreter
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

namespace {
// Quantizes x with one scale: x / scale in f8e4m3, scale = amax / 448.
std::vector<tessera::f8e4m3> quantize(const std::vector<float> &x, float &scale) {
  float amax = 0;
  for (float v : x)
    amax = std::max(amax, std::fabs(v));
  scale = amax > 0 ? amax / tessera::f8e4m3::kMax : 1.0f;
  std::vector<tessera::f8e4m3> q(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    q[i] = tessera::f8e4m3(x[i] / scale);
  return q;
}
} // namespace

int main(int argc, char **argv) {
  const int32_t M = argc > 3 ? std::atoi(argv[1]) : 200;
  const int32_t N = argc > 3 ? std::atoi(argv[2]) : 264;
  const int32_t K = argc > 3 ? std::atoi(argv[3]) : 160;
  const int64_t BM = 128, BN = 256, BK = 128;
  try {
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";

    const char *dir = std::getenv("TESSERA_KERNELS_DIR");
    std::string kernels = dir ? dir : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
    tessera::JitOptions opt;
    opt.numWarps = 8;
    opt.numStages = 4;
    tessera::Kernel mm = tessera::compile(ctx, kernels + "/basics/scaled_matmul.tile",
                                          "scaled_matmul", {{"BM", BM}, {"BN", BN}, {"BK", BK}}, opt);

    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> a(size_t(M) * K), bt(size_t(N) * K); // bt: B column-major (row n = column n)
    for (auto &v : a)
      v = dist(rng) * 3.0f;
    for (auto &v : bt)
      v = dist(rng) * 0.05f;
    float sa = 0, sb = 0;
    std::vector<tessera::f8e4m3> qa = quantize(a, sa), qb = quantize(bt, sb);
    auto da = ctx.upload(qa), db = ctx.upload(qb);
    auto scales = ctx.upload(std::vector<float>{sa, sb});
    auto dc = ctx.alloc<tessera::bf16>(size_t(M) * N);

    int64_t tiles = tessera::cdiv<int64_t>(M, BM) * tessera::cdiv<int64_t>(N, BN);
    // Strides: A (K, 1); B column-major (1, K); C (N, 1).
    mm.launch(ctx.stream(), tessera::Grid::of(tiles), da, db, dc, scales.ptr(), scales.ptr() + 1, M,
              N, K, K, 1, 1, K, N, 1);
    std::vector<tessera::bf16> c = dc.toHost();

    double errSq = 0, refSq = 0, qErrSq = 0, exactSq = 0;
    for (int32_t i = 0; i < M; ++i)
      for (int32_t j = 0; j < N; ++j) {
        double ref = 0, exact = 0;
        for (int32_t k = 0; k < K; ++k) {
          size_t ia = size_t(i) * K + k, ib = size_t(j) * K + k;
          ref += double(float(qa[ia])) * double(float(qb[ib]));
          exact += double(a[ia]) * double(bt[ib]);
        }
        ref *= double(sa) * double(sb);
        double got = double(float(c[size_t(i) * N + j]));
        errSq += (got - ref) * (got - ref);
        refSq += ref * ref;
        qErrSq += (got - exact) * (got - exact);
        exactSq += exact * exact;
      }
    double relErr = std::sqrt(errSq / refSq), quantErr = std::sqrt(qErrSq / exactSq);
    // Exact products of the 8-bit values, f32 (or the tensor cores' narrower)
    // accumulation, one bf16 rounding of C.
    std::printf("scaled fp8 matmul %dx%dx%d: relative error %.3g against the quantized operands' "
                "product, %.3g against the f32 data's (the quantization's)\n",
                M, N, K, relErr, quantErr);
    if (!(relErr < 1e-2)) {
      std::printf("FAILED (tolerance 1e-2)\n");
      return 1;
    }
    std::printf("OK\n");
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
