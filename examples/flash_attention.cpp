// flash_attention: FlashAttention forward and backward from the kernel library
// (kernels_dsl/attention/flash_attn.tile), checked against attention computed in
// double precision on the CPU, on fresh random inputs, at a sequence length
// that is no multiple of the blocks.
//
//   example_flash_attention [--all]
//
// Three kernels: flash_attn_fwd (O and the row log-sum-exp), then for the
// backward flash_attn_bwd_preprocess (Delta = rowsum(O * dO)) and flash_attn_bwd
// (dQ, dK, dV), at every config of the forward's and backward's @autotune spaces
// (bench/attention_bench.cpp lets the autotuner pick among them), and on a GPU
// the first configs once more compiled without argument facts. The backward
// is checked in both forms: flash_attn_bwd (dQ in a second pass over the keys)
// and flash_attn_bwd_atomic + flash_attn_bwd_dq (dQ^T summed by atomics). On a GPU: N = 1000, head dims 64 and 128, f16 and bf16, causal
// and not (--all: also N = 2047); in the CPU interpreter (no GPU, or
// TESSERA_INTERPRET=1): N = 77 and 200 at head dim 64 (f16), N = 77 at 128 (bf16).
// Exits 1 when a check fails.
#include "AttentionReference.h"

#include <tessera/Half.h>
#include <tessera/KernelLibrary.h>
#include <tessera/TunedKernel.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {

struct Case {
  int32_t Z, H, N, D;
  bool causal;
  bool bf; // bf16, else f16
};

template <class T> bool run(Context &ctx, const Case &c, std::mt19937 &rng) {
  const int32_t Z = c.Z, H = c.H, N = c.N, D = c.D;
  const size_t n = size_t(Z) * H * N * D;
  const float scale = 1.0f / std::sqrt(float(D));
  std::uniform_real_distribution<float> u(-1, 1);
  // Inputs rounded to the element type; the reference reads the rounded values.
  auto fresh = [&](std::vector<T> &t, std::vector<double> &wide) {
    t.resize(n);
    wide.resize(n);
    for (size_t i = 0; i < n; ++i) {
      t[i] = T(u(rng));
      wide[i] = double(t[i].toFloat());
    }
  };
  std::vector<T> q, k, v, dout;
  std::vector<double> wq, wk, wv, wdo;
  fresh(q, wq);
  fresh(k, wk);
  fresh(v, wv);
  fresh(dout, wdo);

  const std::string file = kernelLibraryPath("attention/flash_attn.tile");
  const DType dt{c.bf ? ScalarType::bf16 : ScalarType::f16, 0};
  std::map<std::string, ConstexprValue> cx{{"HEAD_DIM", int64_t(D)}, {"CAUSAL", c.causal}, {"DT", dt}};
  // Every config the autotuner may pick (the kernels' @autotune spaces after
  // their prune conditions) is checked: the i-th forward config with the i-th
  // backward one, the shorter list repeated.
  std::vector<Config> fwdConfigs = TunedKernel(ctx, file, "flash_attn_fwd", cx).space().candidates();
  std::vector<Config> bwdConfigs = TunedKernel(ctx, file, "flash_attn_bwd", cx).space().candidates();
  std::vector<Config> atomicConfigs = TunedKernel(ctx, file, "flash_attn_bwd_atomic", cx).space().candidates();
  Kernel pre = compile(ctx, file, "flash_attn_bwd_preprocess", {{"HEAD_DIM", int64_t(D)}, {"DT", dt}});
  Kernel dqFromT = compile(ctx, file, "flash_attn_bwd_dq", {{"HEAD_DIM", int64_t(D)}, {"DT", dt}});
  auto dq_ = ctx.upload(q), dk_ = ctx.upload(k), dv_ = ctx.upload(v), ddo = ctx.upload(dout);
  auto o = ctx.alloc<T>(n), gq = ctx.alloc<T>(n), gk = ctx.alloc<T>(n), gv = ctx.alloc<T>(n);
  auto lse = ctx.alloc<float>(size_t(Z) * H * N), delta = ctx.alloc<float>(size_t(Z) * H * N);
  auto dqT = ctx.alloc<float>(n); // flash_attn_bwd_atomic's dQ^T partial sums
  const int32_t sz = H * N * D, sh = N * D, sn = D;
  auto compiled = [&](const char *kernel, const Config &config, bool specialize) {
    JitOptions jo;
    jo.specialize = specialize;
    std::map<std::string, ConstexprValue> constexprs = cx;
    config.applyTo(jo, constexprs);
    return compile(ctx, file, kernel, constexprs, jo);
  };
  AttentionReference r = attentionReference(c.Z * c.H, c.N, c.D, c.causal, wq, wk, wv, wdo, scale);
  auto widen = [](const std::vector<T> &t) {
    std::vector<double> w(t.size());
    for (size_t i = 0; i < t.size(); ++i)
      w[i] = double(t[i].toFloat());
    return w;
  };
  auto widenF = [](const std::vector<float> &t) { return std::vector<double>(t.begin(), t.end()); };
  // Tolerances: outputs rounded to f16 (bf16: 8 bits of mantissa) after f32 accumulation.
  double tol = c.bf ? 2e-2 : 5e-3, gtol = c.bf ? 4e-2 : 1e-2;
  bool ok = true;
  struct Check {
    const char *what;
    double err, tol;
  };
  auto report = [&](const char *backward, std::vector<Check> checks, const std::string &configs) {
    std::printf("%dx%dx%dx%d %s%s %s:", Z, H, N, D, c.bf ? "bf16" : "f16", c.causal ? " causal" : "", backward);
    for (const Check &ch : checks) {
      std::printf("  %s %.2g%s", ch.what, ch.err, ch.err <= ch.tol ? "" : " (FAILED)");
      ok = ok && ch.err <= ch.tol;
    }
    std::printf("   [%s]\n", configs.c_str());
  };
  // dQ, dK and dV against the reference, as either backward leaves them.
  auto gradients = [&] {
    return std::vector<Check>{{"dQ", relErr(widen(gq.toHost()), r.dq), gtol},
                              {"dK", relErr(widen(gk.toHost()), r.dk), gtol},
                              {"dV", relErr(widen(gv.toHost()), r.dv), gtol}};
  };
  // On a GPU, one more round of the first configs compiled without the facts
  // that launch specialization takes from the arguments (unit strides,
  // multiples of 16): the lowering must not rely on them, and every copy
  // becomes element by element (what do_not_specialize gives).
  const size_t configRounds = std::max({fwdConfigs.size(), bwdConfigs.size(), atomicConfigs.size()});
  const size_t rounds = configRounds + (ctx.isInterpreter() ? 0 : 1);
  for (size_t i = 0; i < rounds; ++i) {
    const bool specialize = i < configRounds;
    const Config &fc = fwdConfigs[i % fwdConfigs.size()], &bc = bwdConfigs[i % bwdConfigs.size()],
                 &ac = atomicConfigs[i % atomicConfigs.size()];
    const std::string facts = specialize ? "" : ", no argument facts";
    // Outputs poisoned, so that anything a config leaves unwritten fails.
    for (auto *b : {&o, &gq, &gk, &gv})
      b->memsetBytes(0xFF);
    compiled("flash_attn_fwd", fc, specialize)
        .launch(ctx.stream(), Grid{unsigned(cdiv(N, fc.get("BLOCK_M"))), unsigned(Z * H)}, dq_, dk_, dv_, o,
                lse, scale, sz, sh, sn, 1, H, N);
    pre.launch(ctx.stream(), Grid{unsigned(cdiv(N, 128)), unsigned(Z * H)}, o, ddo, delta, sz, sh, sn, 1, H, N);
    compiled("flash_attn_bwd", bc, specialize)
        .launch(ctx.stream(), Grid{unsigned(cdiv(N, bc.get("BLOCK_N1"))), 1, unsigned(Z * H)}, dq_, dk_, dv_,
                ddo, gq, gk, gv, lse, delta, scale, sz, sh, sn, 1, H, N);
    std::vector<Check> checks{{"O", relErr(widen(o.toHost()), r.o), tol},
                              {"LSE", relErr(widenF(lse.toHost()), r.lse), 1e-5}};
    for (const Check &g : gradients())
      checks.push_back(g);
    report("(dQ pass)", checks, fc.str() + " | " + bc.str() + facts);
    // The same gradients with dQ by atomics.
    for (auto *b : {&gq, &gk, &gv})
      b->memsetBytes(0xFF);
    dqT.memsetBytes(0);
    compiled("flash_attn_bwd_atomic", ac, specialize)
        .launch(ctx.stream(), Grid{unsigned(cdiv(N, ac.get("BLOCK_N1"))), 1, unsigned(Z * H)}, dq_, dk_, dv_,
                ddo, gk, gv, dqT, lse, delta, scale, sz, sh, sn, 1, H, N);
    dqFromT.launch(ctx.stream(), Grid{unsigned(cdiv(N, 128)), unsigned(Z * H)}, dqT, gq, scale, sz, sh, sn, 1,
                   H, N);
    report("(dQ atomic)", gradients(), ac.str() + facts);
  }
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  try {
    bool all = argc > 1 && std::strcmp(argv[1], "--all") == 0;
    Context ctx;
    std::printf("running on %s; relative errors (max |error| / max |reference|):\n",
                ctx.deviceName().c_str());
    std::vector<Case> cases;
    if (ctx.isInterpreter()) {
      cases = {{1, 2, 77, 64, false, false}, {1, 2, 77, 64, true, false}, {1, 1, 200, 64, true, false},
               {1, 1, 77, 128, false, true}, {1, 1, 77, 128, true, true}};
    } else {
      for (int32_t N : all ? std::vector<int32_t>{1000, 2047} : std::vector<int32_t>{1000})
        for (int32_t D : {64, 128})
          for (bool bf : {false, true})
            for (bool causal : {false, true})
              cases.push_back({2, 3, N, D, causal, bf});
    }
    std::mt19937 rng(std::random_device{}());
    bool ok = true;
    for (const Case &c : cases)
      ok = (c.bf ? run<bf16>(ctx, c, rng) : run<f16>(ctx, c, rng)) && ok;
    std::printf(ok ? "all checks passed\n" : "some checks FAILED\n");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
