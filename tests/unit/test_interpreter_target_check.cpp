// The interpreter rejects what the GPU would reject (issue 15, item 5): with
// JitOptions::checkTargetResources (the default) compile() on the interpreter
// first lowers the kernel for the target, so a kernel that needs more shared
// memory than one block of the target may use fails there, with the GPU's
// message, instead of running in the interpreter only. Turned off, the same
// kernel runs, and its result is checked against std::sort.
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tessera;
using namespace tessera::testing;

namespace {

// Sorting 2^16 f32 keys stages them (and their positions) in shared memory:
// far over any target's per-block limit.
const char *kSource = R"(
@kernel
def big_sort(X: *f32, Y: *f32, N: constexpr = 65536):
    r = arange(0, N)
    store(Y + r, sort(load(X + r)))

@kernel
def small_sort(X: *f32, Y: *f32, N: constexpr = 1024):
    r = arange(0, N)
    store(Y + r, sort(load(X + r)))
)";

} // namespace

TEST_CASE("interpreter: a kernel the GPU would reject is rejected", "[interp][target-check]") {
  Context ctx(createInterpreterBackend());
  std::string err = errorOf([&] { compileString(ctx, kSource, "check.tile", "big_sort"); });
  INFO(err);
  CHECK(err.find("kernel 'big_sort' would not run on the GPU (sm_90)") != std::string::npos);
  CHECK(err.find("bytes of shared memory; the limit on sm_90 is 232448") != std::string::npos);
  CHECK(err.find("check.tile:") != std::string::npos);
  // The limit is the target's: sm_86 allows less.
  JitOptions sm86;
  sm86.target = Target::parse("sm_86");
  std::string err86 = errorOf([&] { compileString(ctx, kSource, "check.tile", "big_sort", {}, sm86); });
  CHECK(err86.find("the limit on sm_86 is 101376") != std::string::npos);
  // A kernel within the limits compiles as before.
  std::string small = errorOf([&] { compileString(ctx, kSource, "check.tile", "small_sort"); });
  CHECK(small == "<no tessera::Error thrown>");
}

TEST_CASE("interpreter: checkTargetResources off runs the kernel", "[interp][target-check]") {
  Context ctx(createInterpreterBackend());
  JitOptions off;
  off.checkTargetResources = false;
  Kernel k = compileString(ctx, kSource, "check.tile", "big_sort", {}, off);
  Seeded s;
  INFO("seed " << s.seed);
  std::vector<float> x = s.uniform(65536);
  auto dx = ctx.upload(x);
  auto dy = ctx.alloc<float>(x.size());
  k.launch(ctx.stream(), Grid{1}, dx, dy);
  std::vector<float> want = x;
  std::sort(want.begin(), want.end());
  CHECK(dy.toHost() == want);
}
