// GPU checks of the blocked vector width (analysis::blockedVectorWidth): a
// kernel whose data tiles are all 16-bit moves 8 elements a thread (16-byte
// vectors), bytes move 8 at a time, and a kernel that also stores f32 keeps
// 4. Each is run where the vectors are whole and aligned, where the last one
// is partly masked (N not a multiple of 8), and where rows start misaligned
// (an odd stride: the run-time guard takes the element-wise path), against
// fp64 on the CPU from the same inputs. Skips visibly without a GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/Half.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace tessera;

namespace {
// A centred, weighted row: a reduction, a broadcast back over the row, and
// 16-bit loads and stores around it. F32_OUT also stores the row in f32,
// which makes the kernel's widest data 4 bytes (vector width 4).
const char *kCentredRows = R"(
@kernel
def centred_rows(X: *DT, W: *DT, Y: *DT, Y32: *f32, stride: i32, N: i32,
                 BLOCK: constexpr = 1024, DT: constexpr = f16, F32_OUT: constexpr = False):
    row = program_id(0)
    cols = arange(0, BLOCK)
    m = cols < N
    x = load(X + row * stride + cols, mask=m, other=0).to(f32)
    mean = sum(x, axis=0) / N
    w = load(W + cols, mask=m, other=0).to(f32)
    y = where(m, (x - mean) * w, 0.0)
    store(Y + row * stride + cols, y.to(DT), mask=m)
    if F32_OUT:
        store(Y32 + row * stride + cols, y, mask=m)
)";

// Bytes: y = x + 1 (wrapping) at an element offset, so that vectors start
// misaligned when `shift` is not a multiple of 8.
const char *kBytesPlusOne = R"(
@kernel
def bytes_plus_one(X: *i8, Y: *i8, n: i32, shift: i32, BLOCK: constexpr = 2048):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    x = load(X + shift + offs, mask=m, other=0)
    store(Y + shift + offs, x + 1, mask=m)
)";

template <class H> double centredRowsError(Context &ctx, const std::string &dt, bool f32Out, int warps,
                                           int32_t rows, int32_t N, int32_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<H> hx(static_cast<size_t>(rows) * static_cast<size_t>(stride));
  std::vector<H> hw(static_cast<size_t>(N));
  for (auto &v : hx)
    v = H(u(rng));
  for (auto &v : hw)
    v = H(u(rng));
  auto dx = ctx.upload(hx), dw = ctx.upload(hw);
  auto dy = ctx.alloc<H>(hx.size());
  auto dy32 = ctx.alloc<float>(hx.size());
  dy.memsetBytes(0xFF);
  dy32.memsetBytes(0xFF);
  JitOptions o;
  o.numWarps = warps;
  Kernel k = compileString(ctx, kCentredRows, "centred_rows.tile", "centred_rows",
                           {{"DT", *parseDType(dt)}, {"F32_OUT", f32Out}, {"BLOCK", int64_t(1024)}}, o);
  k.launch(ctx.stream(), Grid{unsigned(rows)}, dx, dw, dy, dy32, stride, N);
  ctx.synchronize();
  std::vector<H> gy = dy.toHost();
  std::vector<float> gy32 = dy32.toHost();
  tessera::testing::L2Error err;
  for (int32_t r = 0; r < rows; ++r) {
    double mean = 0;
    for (int32_t c = 0; c < N; ++c)
      mean += double(float(hx[size_t(r) * stride + c]));
    mean /= N;
    for (int32_t c = 0; c < N; ++c) {
      double x = float(hx[size_t(r) * stride + c]), w = float(hw[size_t(c)]);
      err.add(float(gy[size_t(r) * stride + c]), (x - mean) * w);
      if (f32Out)
        err.add(gy32[size_t(r) * stride + c], (x - mean) * w);
    }
  }
  return err.value();
}
} // namespace

TEST_CASE("GPU: 16-bit row kernels with 16-byte vectors match fp64, whole, ragged and misaligned",
          "[gpu][vectors]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  struct Shape {
    int32_t N, stride;
  };
  // Whole vectors on and off (N a multiple of 16, below the block: the
  // predicated vector accesses); a partly masked vector (N = 1000, masks
  // element by element); rows 2 bytes off (the run-time alignment guard).
  for (Shape s : {Shape{1024, 1024}, Shape{528, 528}, Shape{528, 1040}, Shape{1000, 1000},
                  Shape{1000, 1003}}) {
    for (int warps : {4, 8}) {
      for (bool f32Out : {false, true}) {
        uint32_t seed = uint32_t(s.N * 3 + s.stride + warps);
        double e16 = centredRowsError<f16>(*ctx, "f16", f32Out, warps, 67, s.N, s.stride, seed);
        double eb16 = centredRowsError<bf16>(*ctx, "bf16", f32Out, warps, 67, s.N, s.stride, seed);
        INFO("N " << s.N << " stride " << s.stride << " warps " << warps << " f32 output " << f32Out
                  << ": f16 rel err " << e16 << ", bf16 " << eb16);
        // One rounding of the output (and of x - mean's inputs): f16 2^-11,
        // bf16 2^-8, relative.
        CHECK(e16 < 1e-3);
        CHECK(eb16 < 8e-3);
      }
    }
  }
}

TEST_CASE("GPU: byte tiles move 8 bytes a thread and match the CPU at any offset", "[gpu][vectors]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> u(-128, 127);
  for (int32_t shift : {0, 3, 8}) {
    for (int32_t n : {8192, 4112, 5001}) {
      std::vector<int8_t> hx(static_cast<size_t>(n + shift));
      for (auto &v : hx)
        v = int8_t(u(rng));
      auto dx = ctx->upload(hx);
      auto dy = ctx->alloc<int8_t>(hx.size());
      dy.memsetBytes(0x5A);
      Kernel k = compileString(*ctx, kBytesPlusOne, "bytes_plus_one.tile", "bytes_plus_one");
      k.launch(ctx->stream(), Grid{unsigned((n + 2047) / 2048)}, dx, dy, n, shift);
      ctx->synchronize();
      std::vector<int8_t> gy = dy.toHost();
      int64_t wrong = 0;
      for (int32_t i = 0; i < n; ++i)
        wrong += gy[size_t(shift + i)] != int8_t(uint8_t(hx[size_t(shift + i)]) + 1);
      for (int32_t i = 0; i < shift; ++i) // before the offset: never written
        wrong += gy[size_t(i)] != int8_t(0x5A);
      INFO("n " << n << " shift " << shift);
      CHECK(wrong == 0);
    }
  }
}
