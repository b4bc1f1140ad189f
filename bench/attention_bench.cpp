// attention_bench: kernels_dsl/attention/flash_attn.tile, forward and forward +
// backward, timed on the GPU for issue 16's cases; bench/attention_peers.py runs
// torch SDPA's flash backend on the same cases in the same session and writes
// bench/results/fast_by_default.json. The forward and backward configs are the
// autotuner's (the kernels' @autotune spaces, tuned afresh for every case).
// Prints one JSON object:
//   {"fwd_ms": {CASE: ms}, "bwd_ms": {CASE: ms}, "bwd_atomic_ms": {CASE: ms},
//    "fwd_config": {CASE: config}, "bwd_config": ..., "bwd_atomic_config": ...}
// with CASE = "<dtype>_d<D>_n<N>[_causal]" and batch x heads as in the peer script.
// bwd: preprocessing + flash_attn_bwd (dQ in a second pass); bwd_atomic: zeroing
// dQ^T, preprocessing, flash_attn_bwd_atomic and flash_attn_bwd_dq.
//
//   attention_bench [--quick] [--dtype f16|bf16] [--head-dim 64|128]   (--quick: N = 1024 only)
// Correctness is examples/flash_attention.cpp's job; this only times.
#include "BenchTiming.h"

#include "tessera/Half.h"
#include "tessera/KernelLibrary.h"
#include "tessera/TunedKernel.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using namespace tessera;

namespace {

// Batch x heads at sequence length n (issue 16: 128 at 1024, 32 at 16384).
int32_t headsAt(int32_t n) { return n <= 1024 ? 128 : n <= 4096 ? 64 : 32; }

template <class T> void time(Context &ctx, int32_t N, int32_t D, bool causal, const std::string &key, nlohmann::json &out) {
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
  std::map<std::string, ConstexprValue> cx{{"HEAD_DIM", int64_t(D)}, {"CAUSAL", causal}, {"DT", dt}};
  TunedKernelOptions tuning;
  tuning.retune = true;       // every run tunes afresh, in the same session as the peers
  tuning.keepSpilling = true; // time decides (head-dim-128 8-warp backward configs spill)
  tuning.tolerance = 2e-2;    // f16 outputs of differently ordered sums
  // Fewer timed runs than the defaults (10 each, the best 3 again 30 times):
  // the 24 cases x 3 kernels must fit one 10-minute session on the lent GPU.
  tuning.tuning.timing.repeats = 5;
  tuning.tuning.retimeBest = 2;
  tuning.tuning.retimeRepeats = 10;
  TunedKernel fwd(ctx, file, "flash_attn_fwd", cx, {}, tuning);
  TunedKernel bwd(ctx, file, "flash_attn_bwd", cx, {}, tuning);
  TunedKernel bwdAtomic(ctx, file, "flash_attn_bwd_atomic", cx, {}, tuning);
  Kernel pre = compile(ctx, file, "flash_attn_bwd_preprocess", {{"HEAD_DIM", int64_t(D)}, {"DT", dt}});
  Kernel dqFromT = compile(ctx, file, "flash_attn_bwd_dq", {{"HEAD_DIM", int64_t(D)}, {"DT", dt}});
  auto dqT = ctx.alloc<float>(n);
  const int32_t sz = H * N * D, sh = N * D, sn = D;
  const float scale = 1.0f / std::sqrt(float(D));
  auto fwdGrid = [&](const Config &c) { return Grid{unsigned(cdiv(N, c.get("BLOCK_M"))), unsigned(Z * H)}; };
  auto bwdGrid = [&](const Config &c) { return Grid{unsigned(cdiv(N, c.get("BLOCK_N1"))), 1, unsigned(Z * H)}; };
  const Grid rowGrid{unsigned(cdiv(N, 128)), unsigned(Z * H)}; // preprocessing, the dQ pass
  auto runFwd = [&] { fwd.launch(ctx.stream(), fwdGrid, q, k, v, o, lse, scale, sz, sh, sn, 1, H, N); };
  auto runBwd = [&] {
    pre.launch(ctx.stream(), rowGrid, o, dout, delta, sz, sh, sn, 1, H, N);
    bwd.launch(ctx.stream(), bwdGrid, q, k, v, dout, dq, dk, dv, lse, delta, scale, sz, sh, sn, 1, H, N);
  };
  // The backward with dQ by atomics: zeroing dQ^T and the final dQ pass included.
  auto runBwdAtomic = [&] {
    dqT.memsetBytes(0, ctx.stream());
    pre.launch(ctx.stream(), rowGrid, o, dout, delta, sz, sh, sn, 1, H, N);
    bwdAtomic.launch(ctx.stream(), bwdGrid, q, k, v, dout, dk, dv, dqT, lse, delta, scale, sz, sh, sn, 1, H, N);
    dqFromT.launch(ctx.stream(), rowGrid, dqT, dq, scale, sz, sh, sn, 1, H, N);
  };
  // The first run of each tunes it (the backwards on the forward's O and LSE);
  // then each is timed.
  const int iters = N >= 16384 ? 3 : 10;
  auto tuneAndTime = [&](const char *name, TunedKernel &tuned, const std::function<void()> &run) {
    run();
    out[std::string(name) + "_config"][key] = tuned.lastDecision().config.str();
    out[std::string(name) + "_ms"][key] = bench::medianMs(ctx, run, iters, 5);
  };
  tuneAndTime("fwd", fwd, runFwd);
  tuneAndTime("bwd", bwd, runBwd);
  tuneAndTime("bwd_atomic", bwdAtomic, runBwdAtomic);
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  std::string only; // --dtype f16|bf16: that half of the cases
  int32_t onlyD = 0;  // --head-dim 64|128: that half
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--dtype") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (std::strcmp(argv[i], "--head-dim") == 0 && i + 1 < argc &&
             (std::strcmp(argv[i + 1], "64") == 0 || std::strcmp(argv[i + 1], "128") == 0))
      onlyD = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: attention_bench [--quick] [--dtype f16|bf16] [--head-dim 64|128]\n");
      return 2;
    }
  }
  std::string noGpu;
  Context ctx = Context::gpuOrInterpreter(&noGpu);
  if (ctx.isInterpreter()) {
    std::fprintf(stderr, "attention_bench: needs a GPU (%s)\n", noGpu.c_str());
    return 1;
  }
  nlohmann::json out = nlohmann::json::object();
  for (bool bf : {false, true}) {
    if (!only.empty() && only != (bf ? "bf16" : "f16"))
      continue;
    for (int32_t D : {64, 128}) {
      if (onlyD != 0 && onlyD != D)
        continue;
      for (int32_t N : quick ? std::vector<int32_t>{1024} : std::vector<int32_t>{1024, 4096, 16384})
        for (bool causal : {false, true}) {
          std::string key = std::string(bf ? "bf16" : "f16") + "_d" + std::to_string(D) + "_n" +
                            std::to_string(N) + (causal ? "_causal" : "");
          if (bf)
            time<bf16>(ctx, N, D, causal, key, out);
          else
            time<f16>(ctx, N, D, causal, key, out);
        }
    }
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
