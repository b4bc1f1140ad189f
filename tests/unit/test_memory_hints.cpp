// cache_modifier= and eviction_policy= on load and store: hints only, so a
// copy through every combination returns its input bit for bit, in the
// interpreter and on the GPU (where each hinted access is an inline ld/st
// with the cache operator and an L2::cache_hint; lit lowering/memory_hints.tile
// checks that PTX). Ragged lengths run both the 16-byte vector path and the
// element-wise one. GPU cases skip visibly without a GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace tessera;
using tessera::testing::Seeded;

namespace {
const char *kCopy = R"(
@kernel
def copy(X: *DT, Y: *DT, n: i32, BLOCK: constexpr = 512, DT: constexpr = f32,
         LC: constexpr = "", SC: constexpr = "", EV: constexpr = ""):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    x = load(X + offs, mask=m, other=0, cache_modifier=LC, eviction_policy=EV)
    store(Y + offs, x, mask=m, cache_modifier=SC, eviction_policy=EV)
    # A scalar access too (one thread).
    store(Y + n, load(X + n, cache_modifier=LC, eviction_policy=EV), cache_modifier=SC)
)";

void checkCopies(Context &ctx, std::mt19937 &rng) {
  struct Hints {
    const char *load, *store, *evict;
  };
  const Hints combos[] = {{".ca", ".wb", ""},          {".cg", ".cg", "evict_first"},
                          {".cv", ".cs", "evict_last"}, {"", ".wt", "evict_normal"},
                          {"", "", "evict_first"}};
  for (const char *dt : {"f32", "f16", "i8", "f64"})
    for (const Hints &h : combos)
      for (int32_t n : {1000, 4096}) {
        Kernel k = compileString(ctx, kCopy, "copy.tile", "copy",
                                 {{"DT", *parseDType(dt)}, {"LC", std::string(h.load)},
                                  {"SC", std::string(h.store)}, {"EV", std::string(h.evict)}});
        size_t eb = std::string(dt) == "f64" ? 8 : std::string(dt) == "f32" ? 4 : std::string(dt) == "i8" ? 1 : 2;
        std::vector<uint8_t> x(size_t(n + 1) * eb);
        for (auto &b : x)
          b = uint8_t(rng());
        auto xd = ctx.upload(x);
        auto yd = ctx.alloc<uint8_t>(x.size());
        std::vector<ArgValue> args =
            makeArgs(DevicePtr<uint8_t>{xd.ptr().address}, DevicePtr<uint8_t>{yd.ptr().address}, n);
        args[0].type = args[1].type = k.signature().params[0].type;
        k.launchWithArgs(ctx.stream(), Grid::of(cdiv(int64_t(n), 512)), args);
        ctx.synchronize();
        INFO(dt << " load " << h.load << " store " << h.store << " evict " << h.evict << " n " << n);
        CHECK(yd.toHost() == x);
      }
}
} // namespace

TEST_CASE("cache_modifier and eviction_policy leave a copy exact (interpreter)", "[language][interp]") {
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  checkCopies(ctx, rng.rng);
}

TEST_CASE("GPU cache_modifier and eviction_policy leave a copy exact", "[gpu][language]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  Seeded rng;
  INFO("seed " << rng.seed);
  checkCopies(*ctx, rng.rng);
}
