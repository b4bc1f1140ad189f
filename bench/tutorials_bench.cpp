// Issue 15's measured kernels, through the JIT, for bench/tutorials_peers.py
// (which times the torch peers on the same device in the same run):
//   row operations on 4096 rows of 1024 f32: cumsum, sort and topk(k=8), one
//     program a row, each checked against the CPU on 64 rows first;
//   the layer norm tutorial (examples/tutorials/05_layer_norm.tile) forward
//     and backward at 4096 x 8192 f16, at the tutorial's configuration, the
//     backward including the zeroing of its locks and partial sums; and the
//     backward again with maxnreg=255 (without the compiler's 128-register
//     cap for 8-warp kernels without a dot, for comparison);
//   the low-memory dropout tutorial on 2^26 f32, and a device-to-device copy
//     of the same bytes;
//   the fused attention tutorial (06), forward and backward, causal and not;
//   the matmul tutorials (03, pointer arithmetic with no hints; 08, block
//     pointers) in f16 at 4096^3 and 8192^3.
// Prints one JSON line. Argument: num_warps for the row operations.
#include "BenchTiming.h"
#include "CublasPeer.h"

#include "tessera/Half.h"
#include "tessera/TunedKernel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>

using namespace tessera;

namespace {

const char *kSource = R"(
@kernel
def row_cumsum(X: *f32, Y: *f32, N: constexpr = 1024):
    r = program_id(0) * N + arange(0, N)
    store(Y + r, cumsum(load(X + r)))

@kernel
def row_sort(X: *f32, Y: *f32, N: constexpr = 1024):
    r = program_id(0) * N + arange(0, N)
    store(Y + r, sort(load(X + r)))

@kernel
def row_topk(X: *f32, Y: *f32, N: constexpr = 1024, K: constexpr = 8):
    r = program_id(0) * N + arange(0, N)
    store(Y + program_id(0) * K + arange(0, K), topk(load(X + r), K))
)";

// The matmul tutorials, f16 at 4096^3 and 8192^3, each tuned over its
// @autotune configs (Triton's list) by the autotuner, as the tutorials tune
// with triton.autotune: 03 indexes pointers by hand with run-time strides and
// no hints, 08 goes through block pointers. 64 entries of each product are
// checked against fp64. With TESSERA_BENCH_CUBLAS set, cuBLAS runs the same
// product in alternation with ours (rounds of 3 x 10 launches each), so that
// both see the same clocks; the ratio is the median of the rounds' ratios.
void matmulTutorials(Context &ctx, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::optional<bench::CublasPeer> cublas = bench::CublasPeer::fromEnvironment(ctx);
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/examples/tutorials/";
  const std::pair<const char *, const char *> tutorials[] = {
      {"03_matmul.tile", "matmul_kernel"}, {"08_block_pointer_matmul.tile", "matmul_kernel_with_block_pointers"}};
  for (int32_t S : {4096, 8192}) {
    std::vector<f16> ha(size_t(S) * S), hb(size_t(S) * S);
    for (auto &v : ha)
      v = f16(u(rng));
    for (auto &v : hb)
      v = f16(u(rng));
    auto a = ctx.upload(ha), b = ctx.upload(hb);
    auto c = ctx.alloc<f16>(size_t(S) * S);
    for (auto [file, kernel] : tutorials) {
      TunedKernel mm(ctx, dir + file, kernel);
      auto grid = [&](const Config &cfg) {
        return Grid::of(cdiv(S, cfg.get("BLOCK_SIZE_M")) * cdiv(S, cfg.get("BLOCK_SIZE_N")));
      };
      auto run = [&] { mm.launch(ctx.stream(), grid, a, b, c, S, S, S, S, 1, S, 1, S, 1); };
      run();
      std::vector<f16> hc = c.toHost();
      double err = 0;
      std::mt19937 pick(S);
      for (int t = 0; t < 64; ++t) {
        size_t i = pick() % size_t(S), j = pick() % size_t(S);
        double want = 0;
        for (size_t q = 0; q < size_t(S); ++q)
          want += double(ha[i * S + q].toFloat()) * double(hb[q * S + j].toFloat());
        err = std::max(err, std::fabs(hc[i * S + j].toFloat() - want) / (1 + std::fabs(want)));
      }
      std::string key = std::string(file).substr(0, 2) == "03" ? "matmul" : "block_ptr_matmul";
      key += "_" + std::to_string(S);
      std::printf(", \"%s_ms\": %.6f, \"%s_err\": %.3g, \"%s_config\": \"%s\"", key.c_str(),
                  bench::medianMs(ctx, run, 10, 5), key.c_str(), err, key.c_str(),
                  mm.lastDecision().config.str().c_str());
      if (!cublas)
        continue;
      auto peer = [&] { cublas->matmulF16(a.address(), b.address(), c.address(), S, S, S); };
      std::vector<double> ours, theirs, ratios;
      for (int round = 0; round < 7; ++round) {
        theirs.push_back(bench::medianMs(ctx, peer, 10, 3));
        ours.push_back(bench::medianMs(ctx, run, 10, 3));
        ratios.push_back(theirs.back() / ours.back());
      }
      nlohmann::json rounds = {{"tessera_ms", ours}, {"cublas_ms", theirs},
                               {"vs_cublas", summarizeSamples(ratios).medianMs}};
      std::printf(", \"%s_interleaved\": %s", key.c_str(), rounds.dump().c_str());
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  // `tutorials_bench matmul`: the matmul tutorials alone.
  if (argc > 1 && std::string(argv[1]) == "matmul") {
    Context ctx = Context::gpuOrInterpreter();
    std::mt19937 rng(7);
    std::printf("{\"mode\": \"matmul\"");
    matmulTutorials(ctx, rng);
    std::printf("}\n");
    return 0;
  }
  int warps = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rows = 4096, n = 1024, k = 8;
  Context ctx = Context::gpuOrInterpreter();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(size_t(rows) * n);
  for (float &v : x)
    v = u(rng);
  auto dx = ctx.upload(x);
  auto dy = ctx.alloc<float>(size_t(rows) * n);
  JitOptions o;
  o.numWarps = warps;
  std::printf("{\"rows\": %d, \"n\": %d, \"num_warps\": %d", rows, n, warps);
  for (const char *name : {"row_cumsum", "row_sort", "row_topk"}) {
    Kernel kern = compileString(ctx, kSource, "row_ops.tile", name, {}, o);
    auto run = [&] { kern.launch(ctx.stream(), Grid{unsigned(rows)}, dx.ptr(), dy.ptr()); };
    run();
    auto y = dy.toHost();
    // The first 64 rows against the CPU.
    double err = 0;
    for (int r = 0; r < 64; ++r) {
      std::vector<float> row(x.begin() + r * n, x.begin() + (r + 1) * n);
      std::string nm = name;
      if (nm == "row_cumsum") {
        double s = 0;
        for (int i = 0; i < n; ++i) {
          s += row[size_t(i)];
          err = std::max(err, std::fabs(y[size_t(r * n + i)] - s) / (1 + std::fabs(s)));
        }
      } else if (nm == "row_sort") {
        std::sort(row.begin(), row.end());
        for (int i = 0; i < n; ++i)
          err = std::max(err, double(y[size_t(r * n + i)] != row[size_t(i)]));
      } else {
        std::sort(row.begin(), row.end(), std::greater<float>());
        for (int i = 0; i < k; ++i)
          err = std::max(err, double(y[size_t(r * k + i)] != row[size_t(i)]));
      }
    }
    double ms = bench::medianMs(ctx, run, 20, 7);
    std::printf(", \"%s_ms\": %.6f, \"%s_err\": %.3g", name + 4, ms, name + 4, err);
  }
  // Layer norm, 4096 x 8192 f16, as the tutorial launches it.
  {
    const int32_t M = 4096, N = 8192;
    const std::string file = std::string(TESSERA_SOURCE_DIR) + "/examples/tutorials/05_layer_norm.tile";
    std::vector<f16> hx(static_cast<size_t>(M) * N), hw(static_cast<size_t>(N)), hb(static_cast<size_t>(N));
    for (auto &v : hx)
      v = f16(u(rng));
    for (auto &v : hw)
      v = f16(u(rng));
    for (auto &v : hb)
      v = f16(u(rng));
    auto lx = ctx.upload(hx), ldy = ctx.upload(hx), lw = ctx.upload(hw), lb = ctx.upload(hb);
    auto ly = ctx.alloc<f16>(hx.size()), ldx = ctx.alloc<f16>(hx.size());
    auto mean = ctx.alloc<float>(size_t(M)), rstd = ctx.alloc<float>(size_t(M));
    const int64_t group = 96, block = 8192; // the tutorial's GROUP_SIZE_M for N <= 8192
    JitOptions lo;
    lo.numWarps = 8;
    Kernel fwd = compile(ctx, file, "layer_norm_fwd", {{"BLOCK_SIZE", block}}, lo);
    Kernel bwd = compile(ctx, file, "layer_norm_bwd_dx_fused", {{"GROUP_SIZE_M", group}, {"BLOCK_SIZE_N", block}}, lo);
    // The same backward without the compiler's register cap (docs/performance.md,
    // "Registers and blocks per SM"): one block per SM instead of two.
    JitOptions uncapped = lo;
    uncapped.maxRegisters = 255;
    Kernel bwdUncapped = compile(ctx, file, "layer_norm_bwd_dx_fused",
                                 {{"GROUP_SIZE_M", group}, {"BLOCK_SIZE_N", block}}, uncapped);
    Kernel dwdb = compile(ctx, file, "layer_norm_bwd_dwdb");
    auto lock = ctx.alloc<int32_t>(size_t(2 * group));
    auto pdw = ctx.alloc<f16>(size_t(group) * N), pdb = ctx.alloc<f16>(size_t(group) * N);
    auto fdw = ctx.alloc<f16>(size_t(N)), fdb = ctx.alloc<f16>(size_t(N));
    auto runFwd = [&] {
      fwd.launch(ctx.stream(), Grid{unsigned(M)}, lx, ly, lw, lb, mean, rstd, N, N, 1e-5f);
    };
    auto backward = [&](const Kernel &dx) {
      lock.memsetBytes(0);
      pdw.memsetBytes(0);
      pdb.memsetBytes(0);
      dx.launch(ctx.stream(), Grid{unsigned(M)}, ldx, ldy, pdw, pdb, lx, lw, mean, rstd, lock, N, N);
      dwdb.launch(ctx.stream(), Grid{unsigned(N / 128)}, pdw, pdb, fdw, fdb, int32_t(group), N);
    };
    auto runBwd = [&] { backward(bwd); };
    auto runBwdUncapped = [&] { backward(bwdUncapped); };
    runFwd();
    runBwd();
    runBwdUncapped();
    std::printf(", \"layer_norm_fwd_ms\": %.6f", bench::medianMs(ctx, runFwd, 20, 7));
    std::printf(", \"layer_norm_bwd_ms\": %.6f", bench::medianMs(ctx, runBwd, 20, 7));
    std::printf(", \"layer_norm_bwd_uncapped_ms\": %.6f", bench::medianMs(ctx, runBwdUncapped, 20, 7));
  }
  // Low-memory dropout on 2^26 f32 against a copy of the same bytes.
  {
    const int32_t dn = 1 << 26;
    std::vector<float> hx(static_cast<size_t>(dn));
    for (auto &v : hx)
      v = u(rng);
    auto d_in = ctx.upload(hx);
    auto d_out = ctx.alloc<float>(size_t(dn));
    Kernel drop = compile(ctx, std::string(TESSERA_SOURCE_DIR) + "/examples/tutorials/04_low_memory_dropout.tile",
                          "seeded_dropout");
    // Beside it, the library's dropout with one Philox call per four elements.
    Kernel drop4 = compile(ctx, std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/dropout.tile", "dropout",
                           {{"RAND4X", true}});
    auto timeDropout = [&](Kernel &k) {
      return bench::medianMs(
          ctx, [&] { k.launch(ctx.stream(), Grid{unsigned(dn / 1024)}, d_in, d_out, dn, 0.5f, int32_t(123)); },
          20, 7);
    };
    auto runCopy = [&] { d_out.memory().copyFrom(d_in.memory(), d_in.bytes(), 0, 0, ctx.stream()); };
    std::printf(", \"dropout_ms\": %.6f, \"copy_ms\": %.6f, \"dropout_rand4x_ms\": %.6f", timeDropout(drop),
                bench::medianMs(ctx, runCopy, 20, 7), timeDropout(drop4));
  }
  if (warps == 8)
    matmulTutorials(ctx, rng);
  // Fused attention (the tutorial port), 4 x 32 heads, head dim 64, f16, at
  // the tutorial's blocks: forward, and backward (preprocessing + dK/dV/dQ),
  // causal and not, at N = 1024 and 4096. Once per run (with 4 warps).
  if (warps == 4) {
    const std::string file = std::string(TESSERA_SOURCE_DIR) + "/examples/tutorials/06_fused_attention.tile";
    const int32_t Z = 4, H = 32, D = 64;
    for (int32_t N : {1024, 4096}) {
      const size_t n = size_t(Z) * H * N * D;
      std::vector<f16> h(n);
      for (auto &v : h)
        v = f16(u(rng));
      auto q = ctx.upload(h), k = ctx.upload(h), v = ctx.upload(h), dout = ctx.upload(h);
      auto o = ctx.alloc<f16>(n), dq = ctx.alloc<f16>(n), dk = ctx.alloc<f16>(n), dv = ctx.alloc<f16>(n);
      auto m = ctx.alloc<float>(size_t(Z) * H * N), delta = ctx.alloc<float>(size_t(Z) * H * N);
      const int32_t sz = H * N * D, sh = N * D, sn = D;
      for (bool causal : {false, true}) {
        Kernel fwd = compile(ctx, file, "attn_fwd", {{"STAGE", int64_t(causal ? 3 : 1)}});
        Kernel pre = compile(ctx, file, "attn_bwd_preprocess");
        Kernel bwd = compile(ctx, file, "attn_bwd", {{"CAUSAL", causal}});
        auto runFwd = [&] {
          fwd.launch(ctx.stream(), Grid{unsigned(N / 128), unsigned(Z * H)}, q, k, v, 0.5f, m, o,
                     sz, sh, sn, 1, sz, sh, sn, 1, sz, sh, sn, 1, sz, sh, sn, 1, Z, H, N);
        };
        auto runBwd = [&] {
          pre.launch(ctx.stream(), Grid{unsigned(N / 128), unsigned(Z * H)}, o, dout, delta, Z, H, N);
          bwd.launch(ctx.stream(), Grid{unsigned(N / 128), 1, unsigned(Z * H)}, q, k, v, 0.5f, dout,
                     dq, dk, dv, m, delta, sz, sh, sn, 1, H, N);
        };
        runFwd();
        runBwd();
        std::string key = "attn_" + std::to_string(N) + (causal ? "_causal" : "");
        std::printf(", \"%s_fwd_ms\": %.6f", key.c_str(), bench::medianMs(ctx, runFwd, 10, 5));
        std::printf(", \"%s_bwd_ms\": %.6f", key.c_str(), bench::medianMs(ctx, runBwd, 5, 5));
      }
    }
  }
  std::printf("}\n");
  return 0;
}
