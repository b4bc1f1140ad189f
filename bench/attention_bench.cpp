// attention_bench: kernels_dsl/attention/flash_attn.tile, forward and forward +
// backward, timed on the GPU for issue 16's cases; bench/attention_peers.py runs
// torch SDPA's flash backend on the same cases in the same session and writes
// bench/results/fast_by_default.json. Prints one JSON object:
//   {"fwd_ms": {CASE: ms}, "bwd_ms": {CASE: ms}}   (bwd: preprocessing + backward)
// with CASE = "<dtype>_d<D>_n<N>[_causal]" and batch x heads as in the peer script.
//
//   attention_bench [--quick]     (--quick: N = 1024 only)
// Correctness is examples/flash_attention.cpp's job; this only times.
#include "BenchTiming.h"

#include "tessera/Half.h"
#include "tessera/KernelLibrary.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {

// Batch x heads at sequence length n (issue 16: 128 at 1024, 32 at 16384).
int32_t headsAt(int32_t n) { return n <= 1024 ? 128 : n <= 4096 ? 64 : 32; }

template <class T>
void time(Context &ctx, int32_t N, int32_t D, bool causal, const std::string &key, std::string &fwdOut,
          std::string &bwdOut) {
  const int32_t Z = 1, H = headsAt(N);
  const size_t n = size_t(Z) * H * N * D;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<T> h(n);
  for (auto &v : h)
    v = T(u(rng));
  auto q = ctx.upload(h), k = ctx.upload(h), v = ctx.upload(h), dout = ctx.upload(h);
  auto o = ctx.alloc<T>(n), dq = ctx.alloc<T>(n), dk = ctx.alloc<T>(n), dv = ctx.alloc<T>(n);
  auto lse = ctx.alloc<float>(size_t(Z) * H * N), delta = ctx.alloc<float>(size_t(Z) * H * N);
  const std::string file = kernelLibraryPath("attention/flash_attn.tile");
  DType dt{std::is_same_v<T, bf16> ? ScalarType::bf16 : ScalarType::f16, 0};
  JitOptions jo; // 4 warps at head dim 64, 8 at 128 (the accumulators' registers)
  jo.numWarps = D > 64 ? 8 : 4;
  Kernel fwd = compile(ctx, file, "flash_attn_fwd", {{"HEAD_DIM", int64_t(D)}, {"CAUSAL", causal}, {"DT", dt}}, jo);
  Kernel pre = compile(ctx, file, "flash_attn_bwd_preprocess", {{"HEAD_DIM", int64_t(D)}, {"DT", dt}});
  Kernel bwd = compile(ctx, file, "flash_attn_bwd", {{"HEAD_DIM", int64_t(D)}, {"CAUSAL", causal}, {"DT", dt}}, jo);
  const int32_t sz = H * N * D, sh = N * D, sn = D;
  const unsigned blocks = unsigned((N + 127) / 128);
  const float scale = 1.0f / std::sqrt(float(D));
  auto runFwd = [&] {
    fwd.launch(ctx.stream(), Grid{blocks, unsigned(Z * H)}, q, k, v, o, lse, scale, sz, sh, sn, 1, H, N);
  };
  auto runBwd = [&] {
    pre.launch(ctx.stream(), Grid{blocks, unsigned(Z * H)}, o, dout, delta, sz, sh, sn, 1, H, N);
    bwd.launch(ctx.stream(), Grid{blocks, 1, unsigned(Z * H)}, q, k, v, dout, dq, dk, dv, lse, delta,
               scale, sz, sh, sn, 1, H, N);
  };
  runFwd();
  runBwd();
  int iters = N >= 16384 ? 3 : 10;
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s\"%s\": %.6f", fwdOut.empty() ? "" : ", ", key.c_str(),
                bench::medianMs(ctx, runFwd, iters, 5));
  fwdOut += buf;
  std::snprintf(buf, sizeof buf, "%s\"%s\": %.6f", bwdOut.empty() ? "" : ", ", key.c_str(),
                bench::medianMs(ctx, runBwd, iters, 5));
  bwdOut += buf;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  Context ctx;
  if (ctx.isInterpreter()) {
    std::fprintf(stderr, "attention_bench: needs a GPU\n");
    return 1;
  }
  std::string fwdOut, bwdOut;
  for (bool bf : {false, true})
    for (int32_t D : {64, 128})
      for (int32_t N : quick ? std::vector<int32_t>{1024} : std::vector<int32_t>{1024, 4096, 16384})
        for (bool causal : {false, true}) {
          std::string key = std::string(bf ? "bf16" : "f16") + "_d" + std::to_string(D) + "_n" +
                            std::to_string(N) + (causal ? "_causal" : "");
          if (bf)
            time<bf16>(ctx, N, D, causal, key, fwdOut, bwdOut);
          else
            time<f16>(ctx, N, D, causal, key, fwdOut, bwdOut);
        }
  std::printf("{\"fwd_ms\": {%s}, \"bwd_ms\": {%s}}\n", fwdOut.c_str(), bwdOut.c_str());
  return 0;
}
