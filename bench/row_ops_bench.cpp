// Row operations of issue 15 on 4096 rows of 1024 f32: cumsum, sort and
// topk(k=8), one program a row, through the JIT; prints one JSON line for
// bench/row_ops_peers.py, which times torch's cumsum, sort and topk in the
// same process order on the same device. Each result is checked against a
// CPU computation of the same rows first.
#include "BenchTiming.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

using namespace tessera;

namespace {

const char *kSource = R"(
@kernel
def row_cumsum(X: *f32, Y: *f32, N: constexpr = 1024):
    r = program_id(0) * N + arange(0, N)
    store(Y + r, cumsum(load(X + r)))

@kernel
def row_sort(X: *f32, Y: *f32, N: constexpr = 1024):
    r = program_id(0) * N + arange(0, N)
    store(Y + r, sort(load(X + r)))

@kernel
def row_topk(X: *f32, Y: *f32, N: constexpr = 1024, K: constexpr = 8):
    r = program_id(0) * N + arange(0, N)
    store(Y + program_id(0) * K + arange(0, K), topk(load(X + r), K))
)";

} // namespace

int main(int argc, char **argv) {
  int warps = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rows = 4096, n = 1024, k = 8;
  Context ctx = Context::gpuOrInterpreter();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(size_t(rows) * n);
  for (float &v : x)
    v = u(rng);
  auto dx = ctx.upload(x);
  auto dy = ctx.alloc<float>(size_t(rows) * n);
  JitOptions o;
  o.numWarps = warps;
  std::printf("{\"rows\": %d, \"n\": %d, \"num_warps\": %d", rows, n, warps);
  for (const char *name : {"row_cumsum", "row_sort", "row_topk"}) {
    Kernel kern = compileString(ctx, kSource, "row_ops.tile", name, {}, o);
    auto run = [&] { kern.launch(ctx.stream(), Grid{unsigned(rows)}, dx.ptr(), dy.ptr()); };
    run();
    auto y = dy.toHost();
    // The first 64 rows against the CPU.
    double err = 0;
    for (int r = 0; r < 64; ++r) {
      std::vector<float> row(x.begin() + r * n, x.begin() + (r + 1) * n);
      std::string nm = name;
      if (nm == "row_cumsum") {
        double s = 0;
        for (int i = 0; i < n; ++i) {
          s += row[size_t(i)];
          err = std::max(err, std::fabs(y[size_t(r * n + i)] - s) / (1 + std::fabs(s)));
        }
      } else if (nm == "row_sort") {
        std::sort(row.begin(), row.end());
        for (int i = 0; i < n; ++i)
          err = std::max(err, double(y[size_t(r * n + i)] != row[size_t(i)]));
      } else {
        std::sort(row.begin(), row.end(), std::greater<float>());
        for (int i = 0; i < k; ++i)
          err = std::max(err, double(y[size_t(r * k + i)] != row[size_t(i)]));
      }
    }
    double ms = bench::medianMs(ctx, run, 20, 7);
    std::printf(", \"%s_ms\": %.6f, \"%s_err\": %.3g", name + 4, ms, name + 4, err);
  }
  std::printf("}\n");
  return 0;
}
