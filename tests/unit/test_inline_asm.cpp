// inline_asm_elementwise (Triton's, pack=1): the PTX once per element in the
// generated code for sm_80 and sm_90a; a clear error from the interpreter,
// which cannot run PTX; diagnostics for bad arguments; and on the GPU (skipped
// visibly without one) the results against C++.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {

const char *kSource = R"(
@kernel
def asm_ops(X: *i32, Y: *i32, Z: *f32, n: i32):
    r = arange(0, 256)
    x = load(X + r)
    # rotate left by n, and an int -> float conversion, as PTX
    y = inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $1, $2;", "=r,r,r", [x, n], dtype=i32,
                               is_pure=True, pack=1)
    store(Y + r, y)
    f = inline_asm_elementwise("cvt.rn.f32.s32 $0, $1;", "=f,r", x, f32, True, 1)
    store(Z + r, f)
)";

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("inline_asm_elementwise: the PTX once per element", "[language][asm]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(kSource, "asm.tile", "asm_ops", o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    REQUIRE(r.ok);
    // 256 elements over 128 threads: two of each a thread.
    CHECK(count(r.ptx, "shf.l.wrap.b32") == 2);
    CHECK(count(r.ptx, "cvt.rn.f32.s32") == 2);
  }
}

TEST_CASE("inline_asm_elementwise: the interpreter says it cannot run PTX", "[language][asm][interp]") {
  Context ctx(createInterpreterBackend());
  try {
    Kernel k = compileString(ctx, kSource, "asm.tile", "asm_ops");
    auto x = ctx.alloc<int32_t>(256), y = ctx.alloc<int32_t>(256);
    auto z = ctx.alloc<float>(256);
    k.launch(ctx.stream(), Grid{1}, x, y, z, int32_t(3));
    FAIL("the interpreter ran inline PTX");
  } catch (const std::exception &e) {
    CHECK(std::string(e.what()).find("asm.tile:7:9: error: the interpreter does not run "
                                     "inline_asm_elementwise: its PTX runs only on the GPU") !=
          std::string::npos);
  }
}

TEST_CASE("inline_asm_elementwise: bad arguments are diagnostics", "[language][asm]") {
  auto diag = [](const std::string &body) {
    std::string src = "@kernel\ndef k(X: *i32):\n    x = load(X + arange(0, 32))\n" + body;
    CompileResult r = compileSource(src, "s.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    y = inline_asm_elementwise(\"mov.b32 $0, $1;\", \"=r,r\", x, i32, True, 4)\n")
            .find("supports pack=1 only (one element per asm), got 4") != std::string::npos);
  CHECK(diag("    y = inline_asm_elementwise(3, \"=r,r\", x, i32)\n").find("asm must be a string") !=
        std::string::npos);
}

TEST_CASE("GPU inline_asm_elementwise matches C++", "[gpu][language][asm]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Seeded s;
  INFO("seed " << s.seed);
  std::vector<int32_t> x(256);
  for (auto &v : x)
    v = int32_t(s.rng());
  Kernel k = compileString(*ctx, kSource, "asm.tile", "asm_ops");
  auto dx = ctx->upload(x);
  auto dy = ctx->alloc<int32_t>(256);
  auto dz = ctx->alloc<float>(256);
  k.launch(ctx->stream(), Grid{1}, dx, dy, dz, int32_t(5));
  auto y = dy.toHost();
  auto z = dz.toHost();
  size_t wrong = 0;
  for (size_t i = 0; i < 256; ++i) {
    uint32_t u = uint32_t(x[i]);
    wrong += uint32_t(y[i]) != ((u << 5) | (u >> 27));
    wrong += z[i] != float(x[i]);
  }
  CHECK(wrong == 0);
}
