// Programmatic dependent launch: basics/fill.tile (a few programs or many) lets the next kernel start
// (launch_dependents), and a kernel launched with
// LaunchOptions::overlapPrevious reads the filled buffer after its
// grid_dependency_wait(). Each round fills with a new value, so a read that
// overtook the fill would see the round before's. On the GPU (sm_90: the
// launches overlap; skips visibly without one) and in the interpreter
// (launches in order, the wait a no-op).
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/KernelLibrary.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;

namespace {
const char *kDoubled = R"(
@kernel
def doubled(Y: *f32, Out: *f32, n: i32, BLOCK: constexpr = 1024):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    grid_dependency_wait()
    store(Out + offs, load(Y + offs, mask=offs < n) * 2.0, mask=offs < n)
)";

/// Rounds of fill(Y, r + 1) then doubled(Y -> Out) overlapping it; returns
/// the number of elements of Out that differ from 2 (r + 1), over all rounds.
size_t staleAfterFills(Context &ctx, int64_t n, int rounds) {
  Kernel fill = compile(ctx, kernelLibraryPath("basics/fill.tile"), "fill");
  Kernel doubled = compileString(ctx, kDoubled, "doubled.tile", "doubled");
  auto y = ctx.alloc<float>(size_t(n)), out = ctx.alloc<float>(size_t(n));
  LaunchOptions overlap;
  overlap.overlapPrevious = true;
  size_t stale = 0;
  for (int r = 0; r < rounds; ++r) {
    // Odd rounds fill with 4 programs (a long fill, the dependent grid on
    // the idle multiprocessors meanwhile), even ones with a program a block.
    fill.launch(ctx.stream(), Grid::of(r % 2 ? 4 : cdiv(n, 4096)), y, float(r + 1), int32_t(n));
    doubled.launchWithArgs(ctx.stream(), Grid::of(cdiv(n, 1024)),
                           makeArgs(y, out, int32_t(n)), overlap);
    for (float v : out.toHost())
      stale += v != float(2 * (r + 1));
  }
  return stale;
}
} // namespace

TEST_CASE("a launch overlapping a fill reads the filled values (interpreter)",
          "[language][interp][launch]") {
  Context ctx(createInterpreterBackend());
  CHECK(staleAfterFills(ctx, 5000, 3) == 0);
}

TEST_CASE("GPU: a launch overlapping a fill reads the filled values after its grid_dependency_wait",
          "[gpu][launch]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  // 64 MB a round: the fill runs for tens of microseconds, long enough for
  // the dependent grid to start inside it.
  CHECK(staleAfterFills(*ctx, int64_t(1) << 24, 20) == 0);
}
