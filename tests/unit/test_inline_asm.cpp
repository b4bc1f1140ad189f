// inline_asm_elementwise (Triton's): the PTX once per element in the
// generated code for sm_80 and sm_90a, once per `pack` elements with narrow
// types packed into 32-bit registers; a clear error from the interpreter,
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

// pack=4: four i8 in one register, four f32 results (Triton's documented
// example); pack=2: two f16 per register, as f16x2 arithmetic.
const char *kPacked = R"(
@kernel
def asm_packed(X: *i8, F: *f32, A: *f16, B: *f16, S: *f16):
    r = arange(0, 512)
    x = load(X + r)
    f = inline_asm_elementwise("{ .reg .b8 a<4>; mov.b32 {a0, a1, a2, a3}, $4; cvt.rn.f32.s8 $0, a0; cvt.rn.f32.s8 $1, a1; cvt.rn.f32.s8 $2, a2; cvt.rn.f32.s8 $3, a3; }",
                               "=f,=f,=f,=f,r", x, f32, True, 4)
    store(F + r, f)
    s = inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", "=r,r,r", [load(A + r), load(B + r)],
                               f16, True, 2)
    store(S + r, s)
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

TEST_CASE("inline_asm_elementwise with pack: once per pack elements", "[language][asm]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    CompileResult r = compileSource(kPacked, "asm.tile", "asm_packed", o, Stage::PTX);
    INFO(arch << "\n" << r.diagnostics);
    REQUIRE(r.ok);
    // 512 elements over 128 threads: 4 a thread, one packed asm of each.
    CHECK(count(r.ptx, "cvt.rn.f32.s8") == 4);
    CHECK(count(r.ptx, "add.rn.f16x2") == 2);
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
  CHECK(diag("    y = inline_asm_elementwise(\"mov.b32 $0, $1;\", \"=r,r\", x, i32, True, 3)\n")
            .find("pack must be a power of two from 1 to 16, got 3") != std::string::npos);
  CHECK(diag("    y = inline_asm_elementwise(\"mov.b32 $0, $1;\", \"=r,r\", x.to(i8), i8, True, 2)\n")
            .find("pack=2 packs i8 elements into 32-bit registers: pack * 8 bits must be a multiple "
                  "of 32") != std::string::npos);
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

TEST_CASE("GPU inline_asm_elementwise with pack matches C++", "[gpu][language][asm]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  Seeded s;
  INFO("seed " << s.seed);
  std::vector<int8_t> x(512);
  std::vector<f16> a(512), b(512);
  for (auto &v : x)
    v = int8_t(s.rng());
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  for (size_t i = 0; i < 512; ++i) {
    a[i] = f16(u(s.rng));
    b[i] = f16(u(s.rng));
  }
  Kernel k = compileString(*ctx, kPacked, "asm.tile", "asm_packed");
  auto dx = ctx->upload(x);
  auto da = ctx->upload(a), db = ctx->upload(b);
  auto df = ctx->alloc<float>(512);
  auto ds = ctx->alloc<f16>(512);
  k.launch(ctx->stream(), Grid{1}, dx, df, da, db, ds);
  auto f = df.toHost();
  auto sum = ds.toHost();
  size_t wrong = 0;
  for (size_t i = 0; i < 512; ++i) {
    wrong += f[i] != float(x[i]);
    // f16 + f16 rounded once to f16: exactly the f32 sum rounded (it is exact in f32).
    wrong += sum[i] != f16(float(a[i]) + float(b[i]));
  }
  CHECK(wrong == 0);
}
