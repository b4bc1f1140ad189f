// Compiles a kernel from a string, runs it (GPU, or the CPU interpreter with
// TESSERA_INTERPRET=1 or without a GPU) and checks it on the CPU.
#include <tessera/tessera.h>

#include <cstdio>
#include <vector>

static const char *kSource = R"(
@kernel
def axpy(X: *f32, Y: *f32, n: i32, a: f32, BLOCK: constexpr):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    mask = offs < n
    store(Y + offs, a * load(X + offs, mask=mask) + load(Y + offs, mask=mask), mask=mask)
)";

int main() try {
  tessera::Context ctx = tessera::Context::gpuOrInterpreter();
  tessera::Kernel axpy = tessera::compileString(ctx, kSource, "axpy.tile", "axpy", {{"BLOCK", int64_t(256)}});
  const int32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (int32_t i = 0; i < n; ++i) x[i] = float(i), y[i] = float(n - i);
  tessera::DeviceBuffer<float> dx = ctx.upload(x), dy = ctx.upload(y);
  axpy.launch(ctx.stream(), tessera::Grid::of(tessera::cdiv(n, 256)), dx, dy, n, 2.0f);
  std::vector<float> out = dy.toHost();
  for (int32_t i = 0; i < n; ++i)
    if (out[i] != 2.0f * x[i] + y[i]) return std::printf("FAILED at %d: %g\n", i, out[i]), 1;
  std::printf("consumer: axpy of %d floats on %s: ok\n", n, ctx.deviceName().c_str());
  return 0;
} catch (const tessera::Error &e) {
  std::fprintf(stderr, "tessera error: %s\n", e.what());
  return 1;
}
