// dependent_launch: a kernel that starts before the kernel ahead of it on the
// stream has finished (CUDA's programmatic dependent launch, sm_90 and newer).
// basics/fill.tile fills Y and lets the next kernel start at once
// (launch_dependents); `shifted` then reads X, which the fill does not write,
// waits for the fill with grid_dependency_wait(), and adds Y. Launched with
// LaunchOptions::overlapPrevious, its first part runs beside the fill. The
// result is checked on the CPU; the time of both launches is printed with and
// without the overlap. On other GPUs and in the interpreter the launches
// follow one another and the wait returns at once: the same result.
//
//   example_dependent_launch [n]    TESSERA_INTERPRET=1 forces the interpreter
#include <tessera/tessera.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {
std::string kernelsDir() {
  const char *d = std::getenv("TESSERA_KERNELS_DIR");
  return d ? d : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
}

const char *kShifted = R"(
@kernel
def shifted(X: *f32, Y: *f32, Out: *f32, n: i32, BLOCK: constexpr = 1024):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    mask = offs < n
    x = load(X + offs, mask=mask)
    s = sqrt(x * x + 1.0)
    # Nothing above reads Y, which the kernel before (the fill) writes.
    grid_dependency_wait()
    store(Out + offs, s + load(Y + offs, mask=mask), mask=mask)
)";
} // namespace

int main(int argc, char **argv) {
  const int32_t n = argc > 1 ? std::atoi(argv[1]) : (1 << 22) + 7;
  try {
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";
    tessera::Kernel fill = tessera::compile(ctx, kernelsDir() + "/basics/fill.tile", "fill");
    tessera::Kernel shifted = tessera::compileString(ctx, kShifted, "shifted.tile", "shifted");

    std::vector<float> x(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i)
      x[size_t(i)] = float(i % 1000) / 100.0f;
    auto dx = ctx.upload(x);
    auto dy = ctx.alloc<float>(size_t(n)), out = ctx.alloc<float>(size_t(n));
    const tessera::Grid fillGrid = tessera::Grid::of(tessera::cdiv(n, 4096));
    const tessera::Grid grid = tessera::Grid::of(tessera::cdiv(n, 1024));

    auto both = [&](bool overlap, float value) {
      fill.launch(ctx.stream(), fillGrid, dy, value, n);
      tessera::LaunchOptions o;
      o.overlapPrevious = overlap;
      shifted.launchWithArgs(ctx.stream(), grid, tessera::makeArgs(dx, dy, out, n), o);
    };
    const int rounds = ctx.isInterpreter() ? 1 : 200;
    for (bool overlap : {false, true}) {
      both(overlap, 0.0f); // warm-up
      tessera::Event start = ctx.createEvent(), stop = ctx.createEvent();
      start.record(ctx.stream());
      for (int r = 0; r < rounds; ++r)
        both(overlap, float(r));
      stop.record(ctx.stream());
      stop.synchronize();
      // The last round filled Y with rounds - 1.
      std::vector<float> got = out.toHost();
      double maxRel = 0;
      for (int32_t i = 0; i < n; ++i) {
        double want = std::sqrt(double(x[size_t(i)]) * x[size_t(i)] + 1.0) + double(rounds - 1);
        maxRel = std::max(maxRel, std::abs(got[size_t(i)] - want) / std::abs(want));
      }
      std::cout << (overlap ? "overlapping the fill:    " : "after the fill (usual): ")
                << tessera::Event::elapsedMs(start, stop) * 1000.0 / rounds
                << " us for fill + shifted; max rel err " << maxRel << "\n";
      if (maxRel > 1e-6) {
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
