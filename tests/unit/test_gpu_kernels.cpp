// GPU-only checks of the back end's atomics and device_print through the JIT.
// They skip visibly when there is no GPU.
#include "GpuTestSupport.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace tessera;

using tessera::testing::gpuOrSkip;

TEST_CASE("GPU atomics: histogram, float sum, max, tickets, CAS", "[gpu][backend]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  const char *src = R"(
@kernel
def histogram(V: *i32, H: *i32, S: *f32, M: *i32, n: i32, BLOCK: constexpr = 256):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    mask = offs < n
    v = load(V + offs, mask=mask, other=0)
    atomic_add(H + v, 1, mask=mask)
    atomic_add(S + v * 0, 1.0, mask=mask)
    atomic_max(M + v * 0, v * 7 + 3, mask=mask)

@kernel
def tickets(C: *i32, T: *i32, W: *i32):
    pid = program_id(0)
    t = atomic_add(C, 1)
    store(T + pid, t)
    old = atomic_cas(W, 0, pid + 1)
)";
  std::mt19937 rng(12345);
  const int n = 100003;
  std::vector<int32_t> v(n);
  std::vector<int32_t> expect(64, 0);
  int32_t vmax = 0;
  for (int32_t &x : v) {
    x = int32_t(rng() % 64);
    expect[size_t(x)]++;
    vmax = std::max(vmax, x);
  }
  Kernel hist = compileString(*ctx, src, "atomics.tile", "histogram");
  auto dv = ctx->upload(v);
  auto dh = ctx->alloc<int32_t>(64), dm = ctx->alloc<int32_t>(1);
  auto ds = ctx->alloc<float>(1);
  dh.memsetBytes(0);
  dm.memsetBytes(0);
  ds.memsetBytes(0);
  hist.launch(ctx->stream(), Grid{unsigned((n + 255) / 256)}, dv.ptr(), dh.ptr(), ds.ptr(), dm.ptr(), int32_t(n));
  CHECK(dh.toHost() == expect);
  CHECK(ds.toHost()[0] == float(n)); // exact: n < 2^24
  CHECK(dm.toHost()[0] == vmax * 7 + 3);

  const unsigned P = 777;
  Kernel tk = compileString(*ctx, src, "atomics.tile", "tickets");
  auto dc = ctx->alloc<int32_t>(1), dt = ctx->alloc<int32_t>(P), dw = ctx->alloc<int32_t>(1);
  dc.memsetBytes(0);
  dw.memsetBytes(0);
  tk.launch(ctx->stream(), Grid{P}, dc.ptr(), dt.ptr(), dw.ptr());
  auto t = dt.toHost();
  std::set<int32_t> unique(t.begin(), t.end());
  CHECK(unique.size() == P); // every program got its own ticket
  CHECK(*unique.begin() == 0);
  CHECK(*unique.rbegin() == int32_t(P) - 1);
  CHECK(dc.toHost()[0] == int32_t(P));
  int32_t winner = dw.toHost()[0];
  CHECK(winner >= 1);
  CHECK(winner <= int32_t(P)); // exactly one CAS from 0 succeeded
}

TEST_CASE("GPU device_print prints scalars and every tile element once", "[gpu][backend]") {
  auto ctx = gpuOrSkip();
  if (!ctx)
    return;
  const char *src = R"(
@kernel
def show(X: *f32):
    r = arange(0, 4)
    x = load(X + r)
    device_print("x =", x)
    device_print("n =", program_id(0) + 40)
)";
  Kernel k = compileString(*ctx, src, "print.tile", "show");
  auto dx = ctx->upload(std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f});
  // Device printf goes to this process's stdout: capture it in a file.
  std::fflush(stdout);
  char path[] = "/tmp/tessera_print_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(1);
  dup2(fd, 1);
  k.launch(ctx->stream(), Grid{2}, dx.ptr());
  ctx->synchronize();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path);
  std::string out = ss.str();
  INFO(out);
  CHECK(out.find("pid (0, 0, 0) idx (2): x = 2.500000") != std::string::npos);
  CHECK(out.find("pid (1, 0, 0) idx (3): x = 3.500000") != std::string::npos);
  CHECK(out.find("pid (1, 0, 0): n = 41") != std::string::npos);
  size_t lines = 0;
  for (char c : out)
    lines += c == '\n';
  CHECK(lines == 2 * (4 + 1)); // 4 elements and one scalar line per program
}
