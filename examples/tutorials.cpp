// tutorials: runs the ports of Triton's tutorials in examples/tutorials/
// (written as a Triton user writes them, with no Tessera hints) and checks
// each against a double-precision CPU reference on fresh random inputs.
//
//   example_tutorials [NAME...]     vector_add fused_softmax matmul dropout layer_norm
//                                   fused_attention fused_attention_causal
//                                   block_pointer_matmul
//
// On a GPU the tutorials' own sizes and configurations; in the CPU
// interpreter (no GPU, or TESSERA_INTERPRET=1) smaller sizes. Exits 1 when a
// check fails.
#include "AttentionReference.h"

#include <tessera/Half.h>
#include <tessera/tessera.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {

std::string tutorial(const std::string &file) {
  return std::string(TESSERA_SOURCE_DIR) + "/examples/tutorials/" + file;
}

int64_t nextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

struct Report {
  bool ok = true;
  void check(const std::string &what, double err, double tol) {
    bool pass = err <= tol;
    std::printf("  %-34s error %.3g (tolerance %.3g) %s\n", what.c_str(), err, tol,
                pass ? "ok" : "FAILED");
    ok = ok && pass;
  }
};


template <class T> std::vector<double> widen(const std::vector<T> &v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    d[i] = double(static_cast<float>(v[i]));
  return d;
}

std::vector<float> uniform(std::mt19937 &rng, size_t n, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

std::vector<f16> toHalf(const std::vector<float> &v) {
  std::vector<f16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    h[i] = f16(v[i]);
  return h;
}

// Philox-4x32-10, first output, for the dropout reference.
uint32_t philox(uint32_t c0, uint32_t k0, uint32_t k1) {
  uint32_t c[4] = {c0, 0, 0, 0};
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    uint32_t n0 = uint32_t(p1 >> 32) ^ c[1] ^ k0, n2 = uint32_t(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = uint32_t(p1);
    c[2] = n2;
    c[3] = uint32_t(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c[0];
}

bool vectorAdd(Context &ctx, std::mt19937 &rng) {
  Report rep;
  int32_t n = ctx.isInterpreter() ? 10007 : 98432;
  auto x = uniform(rng, size_t(n)), y = uniform(rng, size_t(n));
  Kernel k = compile(ctx, tutorial("01_vector_add.tile"), "add_kernel");
  auto dx = ctx.upload(x), dy = ctx.upload(y);
  auto out = ctx.alloc<float>(size_t(n));
  k.launch(ctx.stream(), Grid{unsigned((n + 1023) / 1024)}, dx, dy, out, n);
  std::vector<double> want(static_cast<size_t>(n));
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = double(x[i]) + double(y[i]);
  rep.check("x + y, n = " + std::to_string(n), relErr(widen(out.toHost()), want), 1e-7);
  return rep.ok;
}

bool fusedSoftmax(Context &ctx, std::mt19937 &rng) {
  Report rep;
  int32_t rows = ctx.isInterpreter() ? 64 : 1823, cols = 781;
  auto x = uniform(rng, size_t(rows) * cols, -10, 10);
  int64_t block = nextPow2(cols);
  JitOptions o;
  o.numWarps = block >= 2048 ? 8 : 4;
  Kernel k = compile(ctx, tutorial("02_fused_softmax.tile"), "softmax_kernel",
                     {{"BLOCK_SIZE", block}}, o);
  auto dx = ctx.upload(x);
  auto dy = ctx.alloc<float>(x.size());
  // Fewer programs than rows: each walks rows with the grid's stride.
  unsigned programs = unsigned(std::min<int32_t>(rows, ctx.isInterpreter() ? 16 : 264));
  k.launch(ctx.stream(), Grid{programs}, dy, dx, cols, cols, rows, cols);
  std::vector<double> want(x.size());
  for (int32_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int32_t c = 0; c < cols; ++c)
      m = std::max(m, double(x[size_t(r) * cols + c]));
    for (int32_t c = 0; c < cols; ++c)
      s += std::exp(double(x[size_t(r) * cols + c]) - m);
    for (int32_t c = 0; c < cols; ++c)
      want[size_t(r) * cols + c] = std::exp(double(x[size_t(r) * cols + c]) - m) / s;
  }
  rep.check("softmax " + std::to_string(rows) + " x " + std::to_string(cols),
            relErr(widen(dy.toHost()), want), 1e-5);
  return rep.ok;
}

// A matmul tutorial (03 or 08; row-major f16 operands and result) at a
// ragged M x N x K against fp64, with `activation` applied to the reference.
// The grid is the tutorials' default 128 x 128 tiles.
bool matmulTutorial(Context &ctx, std::mt19937 &rng, const std::string &file,
                    const std::string &kernel, std::map<std::string, ConstexprValue> constexprs,
                    int32_t M, int32_t N, int32_t K, const std::string &what,
                    double (*activation)(double)) {
  Report rep;
  auto a = toHalf(uniform(rng, size_t(M) * K)), b = toHalf(uniform(rng, size_t(K) * N));
  Kernel k = compile(ctx, tutorial(file), kernel, constexprs);
  auto da = ctx.upload(a), db = ctx.upload(b);
  auto dc = ctx.alloc<f16>(size_t(M) * N);
  unsigned grid = unsigned(((M + 127) / 128) * ((N + 127) / 128));
  k.launch(ctx.stream(), Grid{grid}, da, db, dc, M, N, K, K, 1, N, 1, N, 1);
  std::vector<double> want(size_t(M) * N);
  for (int32_t i = 0; i < M; ++i)
    for (int32_t j = 0; j < N; ++j) {
      double s = 0;
      for (int32_t kk = 0; kk < K; ++kk)
        s += double(a[size_t(i) * K + kk].toFloat()) * double(b[size_t(kk) * N + j].toFloat());
      want[size_t(i) * N + j] = activation(s);
    }
  rep.check(what + " f16 " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K),
            relErr(widen(dc.toHost()), want), 2e-3);
  return rep.ok;
}

// Tutorial 03, ragged on the GPU: the last tiles wrap (rows % M, columns % N).
bool matmul(Context &ctx, std::mt19937 &rng) {
  bool interp = ctx.isInterpreter();
  return matmulTutorial(ctx, rng, "03_matmul.tile", "matmul_kernel",
                        {{"ACTIVATION", std::string("leaky_relu")}}, interp ? 192 : 1000,
                        interp ? 192 : 1040, interp ? 192 : 520, "leaky_relu(A @ B)",
                        [](double s) { return s >= 0 ? s : 0.01 * s; });
}

// Tutorial 08 at a ragged size: the block pointers' boundary checks pad the
// edges that no tile size divides.
bool blockPointerMatmul(Context &ctx, std::mt19937 &rng) {
  bool interp = ctx.isInterpreter();
  return matmulTutorial(ctx, rng, "08_block_pointer_matmul.tile",
                        "matmul_kernel_with_block_pointers", {}, interp ? 150 : 1000,
                        interp ? 130 : 1100, interp ? 100 : 1030, "A @ B",
                        [](double s) { return s; });
}

bool dropout(Context &ctx, std::mt19937 &rng) {
  Report rep;
  int32_t n = ctx.isInterpreter() ? 10007 : (1 << 20);
  const float p = 0.5f;
  const int32_t seed = 123;
  auto x = uniform(rng, size_t(n));
  Kernel k = compile(ctx, tutorial("04_low_memory_dropout.tile"), "seeded_dropout");
  auto dx = ctx.upload(x);
  auto out = ctx.alloc<float>(size_t(n));
  k.launch(ctx.stream(), Grid{unsigned((n + 1023) / 1024)}, dx, out, n, p, seed);
  auto got = out.toHost();
  // The keep mask from Philox: rand = (u32 as i32, negatives folded) * 2^-31.
  std::vector<double> want(static_cast<size_t>(n));
  size_t kept = 0;
  for (int32_t i = 0; i < n; ++i) {
    int32_t r = int32_t(philox(uint32_t(i), uint32_t(seed), 0));
    float u = float(r < 0 ? -r - 1 : r) * 4.6566127342e-10f;
    bool keep = u > p;
    kept += keep;
    want[size_t(i)] = keep ? double(x[size_t(i)] / (1 - p)) : 0.0;
  }
  rep.check("dropout p = 0.5, n = " + std::to_string(n), relErr(widen(got), want), 0);
  double frac = double(kept) / n;
  std::printf("  kept %.4f of the elements\n", frac);
  rep.check("kept fraction vs 1 - p", std::fabs(frac - 0.5), 0.02);
  return rep.ok;
}

bool layerNorm(Context &ctx, std::mt19937 &rng) {
  Report rep;
  int32_t M = ctx.isInterpreter() ? 67 : 1151, N = ctx.isInterpreter() ? 1000 : 8192;
  const float eps = 1e-5f;
  auto x = toHalf(uniform(rng, size_t(M) * N, -2.5f, 2.5f));
  auto w = toHalf(uniform(rng, size_t(N), 0.0f, 1.0f)), b = toHalf(uniform(rng, size_t(N)));
  auto dy = toHalf(uniform(rng, size_t(M) * N, -0.1f, 0.1f));
  int64_t block = std::min<int64_t>(65536 / 2, nextPow2(N));
  JitOptions o;
  o.numWarps = int(std::min<int64_t>(std::max<int64_t>(block / 256, 1), 8));
  Kernel fwd = compile(ctx, tutorial("05_layer_norm.tile"), "layer_norm_fwd", {{"BLOCK_SIZE", block}}, o);
  int64_t group = N <= 1024 ? 128 : N <= 4096 ? 96 : 64;
  Kernel bwd = compile(ctx, tutorial("05_layer_norm.tile"), "layer_norm_bwd_dx_fused",
                       {{"GROUP_SIZE_M", group}, {"BLOCK_SIZE_N", block}}, o);
  Kernel dwdb = compile(ctx, tutorial("05_layer_norm.tile"), "layer_norm_bwd_dwdb");
  auto dx_ = ctx.upload(x), dw_ = ctx.upload(w), db_ = ctx.upload(b), ddy = ctx.upload(dy);
  auto y = ctx.alloc<f16>(x.size()), dxo = ctx.alloc<f16>(x.size());
  auto mean = ctx.alloc<float>(size_t(M)), rstd = ctx.alloc<float>(size_t(M));
  auto lock = ctx.alloc<int32_t>(size_t(2 * group));
  auto pdw = ctx.alloc<f16>(size_t(group) * N), pdb = ctx.alloc<f16>(size_t(group) * N);
  auto fdw = ctx.alloc<f16>(size_t(N)), fdb = ctx.alloc<f16>(size_t(N));
  lock.memsetBytes(0);
  pdw.memsetBytes(0);
  pdb.memsetBytes(0);
  fwd.launch(ctx.stream(), Grid{unsigned(M)}, dx_, y, dw_, db_, mean, rstd, N, N, eps);
  bwd.launch(ctx.stream(), Grid{unsigned(M)}, dxo, ddy, pdw, pdb, dx_, dw_, mean, rstd, lock, N, N);
  dwdb.launch(ctx.stream(), Grid{unsigned((N + 127) / 128)}, pdw, pdb, fdw, fdb, int32_t(group), N);
  // References in double from the f16 inputs.
  std::vector<double> wy(x.size()), wdx(x.size()), wdw(size_t(N), 0.0), wdb(size_t(N), 0.0);
  for (int32_t r = 0; r < M; ++r) {
    const f16 *xr = &x[size_t(r) * N];
    double mu = 0, var = 0;
    for (int32_t c = 0; c < N; ++c)
      mu += xr[c].toFloat();
    mu /= N;
    for (int32_t c = 0; c < N; ++c)
      var += (xr[c].toFloat() - mu) * (xr[c].toFloat() - mu);
    var /= N;
    double rs = 1 / std::sqrt(var + eps), c1 = 0, c2 = 0;
    std::vector<double> xhat(static_cast<size_t>(N)), wdyv(static_cast<size_t>(N));
    for (int32_t c = 0; c < N; ++c) {
      xhat[size_t(c)] = (xr[c].toFloat() - mu) * rs;
      wy[size_t(r) * N + c] = xhat[size_t(c)] * w[size_t(c)].toFloat() + b[size_t(c)].toFloat();
      double g = dy[size_t(r) * N + c].toFloat();
      wdyv[size_t(c)] = w[size_t(c)].toFloat() * g;
      c1 += xhat[size_t(c)] * wdyv[size_t(c)];
      c2 += wdyv[size_t(c)];
      wdw[size_t(c)] += g * xhat[size_t(c)];
      wdb[size_t(c)] += g;
    }
    c1 /= N;
    c2 /= N;
    for (int32_t c = 0; c < N; ++c)
      wdx[size_t(r) * N + c] = (wdyv[size_t(c)] - (xhat[size_t(c)] * c1 + c2)) * rs;
  }
  std::string shape = std::to_string(M) + " x " + std::to_string(N) + " f16";
  rep.check("forward y " + shape, relErr(widen(y.toHost()), wy), 5e-3);
  rep.check("backward dx", relErr(widen(dxo.toHost()), wdx), 5e-3);
  // dW and dB add f16 partials of up to M / GROUP rows each, in f16.
  rep.check("backward dw", relErr(widen(fdw.toHost()), wdw), 2e-2);
  rep.check("backward db", relErr(widen(fdb.toHost()), wdb), 2e-2);
  return rep.ok;
}


// Tutorial 06: attention forward (O and the base-2 row LSE M) and backward
// (dQ, dK, dV) on [Z, H, N, D] f16 tensors, against double-precision
// attention computed from the same f16 inputs.
bool fusedAttention(Context &ctx, std::mt19937 &rng, bool causal) {
  Report rep;
  const int32_t Z = 1, H = 2, D = 64, N = ctx.isInterpreter() ? 256 : 1024;
  const float smScale = 0.5f;
  const size_t n = size_t(Z) * H * N * D;
  auto q = toHalf(uniform(rng, n)), k = toHalf(uniform(rng, n)), v = toHalf(uniform(rng, n));
  auto dout = toHalf(uniform(rng, n));
  const std::string file = tutorial("06_fused_attention.tile");
  Kernel fwd = compile(ctx, file, "attn_fwd", {{"STAGE", int64_t(causal ? 3 : 1)}});
  Kernel pre = compile(ctx, file, "attn_bwd_preprocess");
  Kernel bwd = compile(ctx, file, "attn_bwd", {{"CAUSAL", causal}});
  auto dq_ = ctx.upload(q), dk_ = ctx.upload(k), dv_ = ctx.upload(v), ddo = ctx.upload(dout);
  auto o = ctx.alloc<f16>(n), gq = ctx.alloc<f16>(n), gk = ctx.alloc<f16>(n), gv = ctx.alloc<f16>(n);
  auto m = ctx.alloc<float>(size_t(Z) * H * N), delta = ctx.alloc<float>(size_t(Z) * H * N);
  const int32_t sz = H * N * D, sh = N * D, sn = D;
  fwd.launch(ctx.stream(), Grid{unsigned(N / 128), unsigned(Z * H)}, dq_, dk_, dv_, smScale, m, o,
             sz, sh, sn, 1, sz, sh, sn, 1, sz, sh, sn, 1, sz, sh, sn, 1, Z, H, N);
  // The backward pass takes K scaled by sm_scale / ln(2), as the tutorial's host code does.
  std::vector<f16> kScaled(n);
  for (size_t i = 0; i < n; ++i)
    kScaled[i] = f16(k[i].toFloat() * (smScale * 1.4426950408889634f));
  auto dks = ctx.upload(kScaled);
  pre.launch(ctx.stream(), Grid{unsigned(N / 128), unsigned(Z * H)}, o, ddo, delta, Z, H, N);
  bwd.launch(ctx.stream(), Grid{unsigned(N / 128), 1, unsigned(Z * H)}, dq_, dks, dv_, smScale,
             ddo, gq, gk, gv, m, delta, sz, sh, sn, 1, H, N);

  AttentionReference r = attentionReference(Z * H, N, D, causal, widen(q), widen(k), widen(v),
                                            widen(dout), smScale);
  std::vector<double> wm(r.lse.size()); // the tutorial's M: the LSE in base 2
  for (size_t i = 0; i < wm.size(); ++i)
    wm[i] = r.lse[i] / std::log(2.0);
  std::string shape = std::string(causal ? "causal " : "") + std::to_string(Z * H) + "x" +
                      std::to_string(N) + "x" + std::to_string(D);
  rep.check("forward O " + shape, relErr(widen(o.toHost()), r.o), 5e-3);
  rep.check("forward M (log2 of row sums)", relErr(widen(m.toHost()), wm), 1e-5);
  rep.check("backward dQ", relErr(widen(gq.toHost()), r.dq), 1e-2);
  rep.check("backward dK", relErr(widen(gk.toHost()), r.dk), 1e-2);
  rep.check("backward dV", relErr(widen(gv.toHost()), r.dv), 1e-2);
  return rep.ok;
}

} // namespace

int main(int argc, char **argv) {
  std::map<std::string, std::function<bool(Context &, std::mt19937 &)>> all = {
      {"vector_add", vectorAdd}, {"fused_softmax", fusedSoftmax}, {"matmul", matmul},
      {"dropout", dropout},      {"layer_norm", layerNorm},
      {"fused_attention", [](Context &c, std::mt19937 &r) { return fusedAttention(c, r, false); }},
      {"fused_attention_causal", [](Context &c, std::mt19937 &r) { return fusedAttention(c, r, true); }},
      {"block_pointer_matmul", blockPointerMatmul}};
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i)
    names.push_back(argv[i]);
  if (names.empty())
    names = {"vector_add", "fused_softmax", "matmul", "dropout", "layer_norm", "fused_attention",
             "fused_attention_causal", "block_pointer_matmul"};
  try {
    std::string why;
    Context ctx = Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n";
    std::random_device seedSource;
    unsigned seed = seedSource();
    std::cout << "seed " << seed << "\n";
    std::mt19937 rng(seed);
    bool ok = true;
    for (const std::string &n : names) {
      auto it = all.find(n);
      if (it == all.end()) {
        std::cerr << "unknown tutorial '" << n << "'\n";
        return 2;
      }
      std::cout << n << ":\n";
      ok = it->second(ctx, rng) && ok;
    }
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
