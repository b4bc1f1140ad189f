// The ping-pong staged dot loop's TMA copies (StagedDotLoopTma.cpp) on the
// GPU: flash_attn_fwd's K and V come through 4-D tensor maps whose batch and
// head coordinates (off_hz // H, off_hz % H) are not negative only if H is
// not. The runtime checks that at launch, before anything runs; the context
// stays usable. (Correctness at ragged lengths, every config, both head dims:
// examples/flash_attention.cpp.) Skips visibly without a GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;

TEST_CASE("GPU flash attention with TMA rejects a negative head count with a clear error",
          "[gpu][tma][attention]") {
  std::unique_ptr<Context> ctx = tessera::testing::gpuOrSkip();
  if (!ctx)
    return;
  JitOptions o;
  o.numWarps = 8;
  o.numStages = 4;
  std::map<std::string, ConstexprValue> cx = {
      {"HEAD_DIM", int64_t(64)}, {"BLOCK_M", int64_t(128)}, {"BLOCK_N", int64_t(64)},
      {"DT", *parseDType("f16")}};
  Kernel k = compile(*ctx, std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/attention/flash_attn.tile",
                     "flash_attn_fwd", cx, o);
  const int32_t H = 2, N = 256, D = 64;
  const size_t elems = size_t(H) * N * D;
  DeviceMemory q = ctx->allocBytes(elems * 2), kv = ctx->allocBytes(elems * 2), out = ctx->allocBytes(elems * 2);
  DeviceMemory lse = ctx->allocBytes(size_t(H) * N * 4);
  q.memset(0);
  kv.memset(0);
  auto args = [&](int32_t heads) {
    std::vector<ArgValue> v = makeArgs(
        DevicePtr<uint8_t>{q.address()}, DevicePtr<uint8_t>{kv.address()}, DevicePtr<uint8_t>{kv.address()},
        DevicePtr<uint8_t>{out.address()}, DevicePtr<uint8_t>{lse.address()}, 0.125f, int32_t(elems),
        N * D, D, int32_t(1), heads, N);
    for (size_t p = 0; p < 5; ++p)
      v[p].type = k.signature().params[p].type;
    return v;
  };
  CHECK_THROWS_WITH(k.launchWithArgs(ctx->stream(), Grid::of(N / 128, H), args(-H)),
                    Catch::Contains("argument 10 is -2; the kernel's TMA copies assume it is not negative"));
  k.launchWithArgs(ctx->stream(), Grid::of(N / 128, H), args(H));
  ctx->synchronize();
  // Zero inputs: uniform attention over zero values, and LSE = ln(N).
  std::vector<float> l(size_t(H) * N);
  lse.copyToHost(l.data(), l.size() * 4);
  for (float x : l)
    CHECK(x == Approx(std::log(double(N))).epsilon(1e-5));
}
