// softmax: row softmax of a (rows x cols) matrix with the `softmax` kernel of
// kernels_dsl/basics/softmax.tile, checked against a double-precision CPU loop.
//
//   example_softmax [rows cols]     TESSERA_INTERPRET=1 forces the interpreter
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
std::string kernelsDir() {
  const char *d = std::getenv("TESSERA_KERNELS_DIR");
  return d ? d : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
}


int64_t nextPowerOfTwo(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}
} // namespace

int main(int argc, char **argv) {
  const int32_t rows = argc > 2 ? std::atoi(argv[1]) : 37;
  const int32_t cols = argc > 2 ? std::atoi(argv[2]) : 1000;
  try {
    // The GPU when there is one, else the CPU interpreter (TESSERA_INTERPRET=1 forces it).
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";

    // `softmax` holds a whole row in one tile, so BLOCK is a compile-time
    // power of two >= cols: each row length class is its own specialization.
    // More warps per program help long rows on a GPU; the interpreter ignores it.
    tessera::JitOptions options;
    options.numWarps = 8;
    tessera::Kernel softmax =
        tessera::compile(ctx, kernelsDir() + "/basics/softmax.tile", "softmax",
                         {{"BLOCK", nextPowerOfTwo(cols)}}, options);

    std::mt19937 rng(7);
    // Large magnitudes: without the max subtraction exp() would overflow.
    std::uniform_real_distribution<float> dist(-50.0f, 50.0f);
    std::vector<float> x(size_t(rows) * cols);
    for (float &v : x)
      v = dist(rng);
    auto dx = ctx.upload(x);
    auto dy = ctx.alloc<float>(x.size());

    // One program per row. The row strides let the kernel read a slice of a
    // wider matrix; here rows are packed, so both strides are cols.
    softmax.launch(ctx.stream(), tessera::Grid{unsigned(rows)}, dx, dy, cols, cols, cols);
    std::vector<float> y = dy.toHost();

    double maxErr = 0;
    for (int32_t r = 0; r < rows; ++r) {
      const float *xr = &x[size_t(r) * cols];
      double m = *std::max_element(xr, xr + cols), s = 0;
      for (int32_t c = 0; c < cols; ++c)
        s += std::exp(double(xr[c]) - m);
      for (int32_t c = 0; c < cols; ++c) {
        double ref = std::exp(double(xr[c]) - m) / s;
        maxErr = std::max(maxErr, std::fabs(double(y[size_t(r) * cols + c]) - ref));
      }
    }
    std::printf("softmax %dx%d: max error %.3g\n", rows, cols, maxErr);
    if (!(maxErr < 1e-6)) { // probabilities in [0, 1]: f32 rounding is ~1e-7
      std::printf("FAILED\n");
      return 1;
    }
  } catch (const tessera::Error &e) {
    std::cerr << "tessera error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
