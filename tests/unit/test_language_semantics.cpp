// Language features checked by running them in the CPU interpreter.
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tessera;

TEST_CASE("range() counts down with a negative step", "[language][interp]") {
  Context ctx(createInterpreterBackend());
  const char *src = R"(
@kernel
def down(X: *i32, n: i32):
    acc = 0
    for i in range(n, 0, -3):
        acc = acc * 10 + i
    store(X, acc)
    k = 0
    for j in range(2, 5, -1):
        k = k + 1
    store(X + 1, k)
)";
  Kernel k = compileString(ctx, src, "down.tile", "down");
  auto x = ctx.alloc<int32_t>(2);
  for (auto [n, expect] : std::vector<std::pair<int32_t, int32_t>>{{10, 10741}, {3, 3}, {1, 1}, {0, 0}, {-4, 0}}) {
    k.launch(ctx.stream(), Grid{1}, x.ptr(), n);
    auto h = x.toHost();
    CHECK(h[0] == expect);
    CHECK(h[1] == 0); // an empty count-down range runs no iteration
  }
}

TEST_CASE("float() and int() convert compile-time values", "[language][interp]") {
  Context ctx(createInterpreterBackend());
  const char *src = R"(
NEG_INF = float("-inf")

@kernel
def conv(X: *f32, I: *i32):
    r = arange(0, 16)
    x = load(X + r, mask=r < 10, other=NEG_INF)
    store(X + 16, max(x, 0))
    store(I, int(2.9) + int(-2.9))
    store(X + 17, float(3))
)";
  Kernel k = compileString(ctx, src, "conv.tile", "conv");
  std::vector<float> h(18, 0.0f);
  for (int i = 0; i < 10; ++i)
    h[size_t(i)] = -100.0f - float(i);
  auto x = ctx.upload(h);
  auto iv = ctx.alloc<int32_t>(1);
  k.launch(ctx.stream(), Grid{1}, x.ptr(), iv.ptr());
  auto out = x.toHost();
  CHECK(out[16] == -100.0f); // masked lanes are -inf and never win
  CHECK(out[17] == 3.0f);
  CHECK(iv.toHost()[0] == 0); // int() truncates toward zero: 2 + -2
}
