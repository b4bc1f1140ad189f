// gather(src, index, axis): a 1-D table read by indices of any shape (u8
// indices past 127 included), Triton's same-rank form along either axis, and
// a table staged once before a persistent loop; against C++ indexing the same
// fresh random inputs, in the interpreter and, when there is one, on the GPU.
// An index outside src is the interpreter's error; bad calls are diagnostics.
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
def table(T: *f32, I: *u8, Y: *f32, n: i32):
    # 256 entries staged once; each program takes every num_programs-th step.
    t = load(T + arange(0, 256))
    for s in range(program_id(0), n, num_programs(0)):
        r = s * 16 + arange(0, 16)
        offs = r[:, None] * 32 + arange(0, 32)[None, :]
        store(Y + offs, gather(t, load(I + offs)))

@kernel
def rows(S: *f32, I: *i32, Y: *f32):
    # Triton's form: src (16, 32), index (8, 32) along axis 0.
    src = load(S + arange(0, 16)[:, None] * 32 + arange(0, 32)[None, :])
    offs = arange(0, 8)[:, None] * 32 + arange(0, 32)[None, :]
    store(Y + offs, gather(src, load(I + offs), 0))

@kernel
def cols(S: *f32, I: *i64, Y: *f32):
    # Along axis 1: src (16, 32), index (16, 8).
    src = load(S + arange(0, 16)[:, None] * 32 + arange(0, 32)[None, :])
    offs = arange(0, 16)[:, None] * 8 + arange(0, 8)[None, :]
    store(Y + offs, gather(src, load(I + offs), axis=1))
)";

void checkGathers(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  {
    const int steps = 7;
    std::vector<float> t = rng.uniform(256, -5.0f, 5.0f);
    std::vector<uint8_t> idx(size_t(steps) * 512);
    for (uint8_t &v : idx)
      v = uint8_t(rng.rng() & 255);
    Kernel k = compileString(ctx, kSource, "g.tile", "table");
    auto td = ctx.upload(t);
    auto id = ctx.upload(idx);
    auto y = ctx.alloc<float>(idx.size());
    k.launch(ctx.stream(), Grid{3}, td, id, y, int32_t(steps));
    std::vector<float> h = y.toHost();
    size_t wrong = 0;
    for (size_t i = 0; i < idx.size(); ++i)
      wrong += h[i] != t[idx[i]];
    CHECK(wrong == 0);
  }
  std::vector<float> src = rng.uniform(16 * 32, -1.0f, 1.0f);
  auto sd = ctx.upload(src);
  {
    std::vector<int32_t> idx(8 * 32);
    for (int32_t &v : idx)
      v = int32_t(rng.rng() % 16);
    Kernel k = compileString(ctx, kSource, "g.tile", "rows");
    auto id = ctx.upload(idx);
    auto y = ctx.alloc<float>(idx.size());
    k.launch(ctx.stream(), Grid{1}, sd, id, y);
    std::vector<float> h = y.toHost();
    size_t wrong = 0;
    for (size_t r = 0; r < 8; ++r)
      for (size_t c = 0; c < 32; ++c)
        wrong += h[r * 32 + c] != src[size_t(idx[r * 32 + c]) * 32 + c];
    CHECK(wrong == 0);
  }
  {
    std::vector<int64_t> idx(16 * 8);
    for (int64_t &v : idx)
      v = int64_t(rng.rng() % 32);
    Kernel k = compileString(ctx, kSource, "g.tile", "cols");
    auto id = ctx.upload(idx);
    auto y = ctx.alloc<float>(idx.size());
    k.launch(ctx.stream(), Grid{1}, sd, id, y);
    std::vector<float> h = y.toHost();
    size_t wrong = 0;
    for (size_t r = 0; r < 16; ++r)
      for (size_t c = 0; c < 8; ++c)
        wrong += h[r * 8 + c] != src[r * 32 + size_t(idx[r * 8 + c])];
    CHECK(wrong == 0);
  }
}

} // namespace

TEST_CASE("gather reads tables and tiles at run-time indices (interpreter)", "[language][interp][gather]") {
  Context ctx(createInterpreterBackend());
  checkGathers(ctx);
}

TEST_CASE("gather reads tables and tiles at run-time indices (GPU)", "[language][gpu][gather]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkGathers(*ctx);
}

TEST_CASE("gather: an index outside src is an interpreter error", "[language][interp][gather]") {
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, kSource, "g.tile", "rows");
  std::vector<int32_t> idx(8 * 32, 3);
  idx[37] = 16;  // row 1, column 5: one past the 16 rows
  auto sd = ctx.alloc<float>(16 * 32);
  auto id = ctx.upload(idx);
  auto y = ctx.alloc<float>(idx.size());
  std::string err = errorOf([&] {
    k.launch(ctx.stream(), Grid{1}, sd, id, y);
    ctx.synchronize();
  });
  CHECK(err.find("gather index out of range") != std::string::npos);
  CHECK(err.find("index 16 at (1, 5) is outside [0, 16)") != std::string::npos);
}

TEST_CASE("gather: bad calls are diagnostics", "[language][gather]") {
  auto diag = [](const std::string &body) {
    std::string src = "@kernel\ndef k(S: *f32, Y: *f32):\n    s = load(S + arange(0, 16)[:, None] * 16 + arange(0, 16)[None, :])\n" + body;
    CompileResult r = compileSource(src, "g.tile", "k", CompileOptions{}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(diag("    store(Y + arange(0, 16), gather(s, arange(0, 16)))\n")
            .find("gather() of a rank-2 tile needs indices of the same rank") != std::string::npos);
  CHECK(diag("    store(Y + arange(0, 16), gather(arange(0, 16), arange(0, 16).to(f32)))\n")
            .find("gather() indices must be integers") != std::string::npos);
  CHECK(diag("    i = zeros((4, 8), i32)\n    store(Y + arange(0, 32), reshape(gather(s, i), (32,)))\n")
            .find("differ in dimension 1, which is not the axis") != std::string::npos);
  CHECK(diag("    i = zeros((4, 16), i32)\n    store(Y + arange(0, 64), reshape(gather(s, i, 2), (64,)))\n")
            .find("axis 2 is out of range") != std::string::npos);
}
