// vector_add: the smallest complete Tessera program. Compiles
// kernels_dsl/basics/vector_add.tile, adds two random vectors on the GPU (or
// in the CPU interpreter when there is none), and checks the result on the CPU.
//
//   example_vector_add [n]          TESSERA_INTERPRET=1 forces the interpreter
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
// Kernels ship with the source tree; TESSERA_KERNELS_DIR points elsewhere
// (an installed copy, or your own kernels).
std::string kernelsDir() {
  const char *d = std::getenv("TESSERA_KERNELS_DIR");
  return d ? d : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
}

} // namespace

int main(int argc, char **argv) {
  // Not a multiple of BLOCK, so the last program exercises the tail mask.
  const int32_t n = argc > 1 ? std::atoi(argv[1]) : 100003;
  const int64_t block = 1024;
  try {
    // The GPU when there is one, else the CPU interpreter (TESSERA_INTERPRET=1 forces it).
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";

    // One specialization per set of constexprs; later calls with the same
    // values come from the kernel cache instead of recompiling.
    tessera::Kernel add = tessera::compile(ctx, kernelsDir() + "/basics/vector_add.tile",
                                           "vector_add", {{"BLOCK", block}});

    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(n), y(n);
    for (int32_t i = 0; i < n; ++i) {
      x[i] = dist(rng);
      y[i] = dist(rng);
    }
    tessera::DeviceBuffer<float> dx = ctx.upload(x), dy = ctx.upload(y);
    tessera::DeviceBuffer<float> dz = ctx.alloc<float>(n);

    // Grid is unsigned: compute the program count in the wider type, then cast.
    tessera::Grid grid{unsigned(tessera::cdiv<int64_t>(n, block))};
    // Arguments are checked against the kernel's signature
    // (X: *f32, Y: *f32, Z: *f32, n: i32): n must be an int32_t.
    add.launch(ctx.stream(), grid, dx, dy, dz, n);
    std::vector<float> z = dz.toHost(); // synchronous: waits for the kernel

    double maxErr = 0;
    for (int32_t i = 0; i < n; ++i)
      maxErr = std::max(maxErr, double(std::fabs(z[i] - (x[i] + y[i]))));
    std::printf("vector_add n=%d: max error %g\n", n, maxErr);
    if (maxErr != 0) { // one correctly rounded add per element: exact
      std::printf("FAILED\n");
      return 1;
    }

    // A mistake on purpose: a size_t count would not even compile, and an
    // int64_t one is refused at launch, before anything reaches the device.
    try {
      add.launch(ctx.stream(), grid, dx, dy, dz, int64_t(n));
    } catch (const tessera::Error &e) {
      std::printf("a wrong launch is reported, not run: %s\n", e.what());
    }
  } catch (const tessera::Error &e) {
    // Every runtime and JIT failure is a tessera::Error: compile diagnostics,
    // CUDA driver errors (e.cuResultName(), e.jitLog()), interpreter reports.
    std::cerr << "tessera error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
