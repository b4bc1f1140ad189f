// Times the ROAST-MM layer (tessera::roast::Linear, f32 operands on tf32
// tensor cores) at the shapes given, for RzLinear's mapping and the aligned
// one, and prints one JSON object per shape and mapping. bench/roast_peers.py
// runs it next to its peers (cuBLAS dense, a HashedNet-style torch gather) in
// one session and writes bench/results/roast.json.
//
//   roast_bench [--mem-elems H] [--train] [--reproducible] [--seed S] B K N [B K N ...]
//
// --mem-elems  the memory array's size (default K*N/10 per shape)
// --seed S     the seed of the inputs and hash parameters (default 11)
// --reproducible  layers built with LinearOptions::reproducible (the forward
//              never splits K)
// --train      also time the training step: forward + backward (dX and the
//              atomic dM), and the backward with the deterministic dM
// Every kernel's config is picked by the autotuner (the layer's TunedKernels,
// tuned afresh in every run; ROAST_REUSE_TUNING=1 reuses the tuning cache).
// Each forward and training-step timing starts from an idle GPU
// (bench::settledMs); "fwd_ms_sustained" times the forward after a second of
// back-to-back forwards (the power-capped state of a long loop).
// Before timing, Y and dX are checked against fp64 at sampled entries, from
// the layer's index map (docs/kernels/roast.md). dM is not checked here (an
// entry sums over many tiles; tests/unit/test_roast_mm.cpp checks it).
// "peak_bytes" is the device memory of the step (forward, then backward with
// the atomic dM): the memory array and its gradient, X, Y, dY, dX, and what
// the layer owns (its hash parameters; X^T lives in dX's buffer during the
// backward); the layer allocates nothing else and its kernels use no scratch.
#include "BenchTiming.h"
#include "support/Reference.h"
#include "tessera/roast/Roast.h"
#include "tessera/tessera.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace tessera;
using namespace tessera::roast;

namespace {

struct Shape {
  int64_t B, K, N;
};

/// Relative L2 error of `got` (B x N, row-major) at the sampled entries, against
/// lam * sum_k A[b, k] * M[idx(k, n)] computed in fp64.
template <class Idx>
double sampledError(const std::vector<float> &got, const std::vector<float> &A,
                    const std::vector<float> &mem, int64_t rowsOut, int64_t cols, int64_t inner,
                    double lam, const std::vector<std::pair<int64_t, int64_t>> &samples, Idx idx) {
  testing::L2Error err;
  for (auto [b, n] : samples) {
    double acc = 0;
    for (int64_t k = 0; k < inner; ++k)
      acc += double(A[size_t(b * inner + k)]) * double(mem[size_t(idx(k, n))]);
    err.add(got[size_t(b * cols + n)], acc * lam);
  }
  (void)rowsOut;
  return err.value();
}

std::vector<std::pair<int64_t, int64_t>> samplesOf(int64_t rows, int64_t cols, std::mt19937 &rng) {
  std::vector<std::pair<int64_t, int64_t>> s{{rows - 1, cols - 1}};
  std::uniform_int_distribution<int64_t> r(0, rows - 1), c(0, cols - 1);
  for (int i = 0; i < 128; ++i)
    s.push_back({r(rng), c(rng)});
  return s;
}

/// One shape and mapping: checks, times, prints a JSON line; false on a wrong result.
bool benchOne(Context &ctx, const Shape &sh, int64_t memSize, Mapping mapping, bool train,
              bool reproducible, std::mt19937 &rng) {
  const int64_t B = sh.B, K = sh.K, N = sh.N;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  MemoryArray mem(ctx, memSize, 1.0f, rng());
  LinearOptions o;
  o.mapping = mapping;
  o.reproducible = reproducible;
  TunedKernelOptions t;
  const char *reuse = std::getenv("ROAST_REUSE_TUNING");
  t.retune = !(reuse && std::string(reuse) == "1");
  t.tolerance = 3e-3;
  o.tuning = t;
  Linear fc(mem, K, N, TileHash::fromSeed(rng()), o);
  std::vector<float> x(size_t(B * K)), dy(size_t(B * N));
  for (auto &v : x)
    v = u(rng);
  for (auto &v : dy)
    v = u(rng);
  auto X = ctx.upload(x), dY = ctx.upload(dy);
  auto Y = ctx.alloc<float>(size_t(B * N)), dX = ctx.alloc<float>(size_t(B * K));
  const Stream &st = ctx.stream();
  auto idx = [&](int64_t k, int64_t n) { return fc.indexOf(k, n); };
  std::vector<float> hm = mem.values().toHost();

  fc.forward(st, X, Y, B); // tunes
  Y.memsetBytes(0xFF);
  fc.forward(st, X, Y, B);
  ctx.synchronize();
  double errY = sampledError(Y.toHost(), x, hm, B, N, K, fc.lambda(), samplesOf(B, N, rng), idx);
  nlohmann::json row = {{"impl", "tessera_roast_linear"}, {"mapping", mappingName(mapping)},
                        {"B", B}, {"K", K}, {"N", N}, {"mem_size", memSize},
                        {"device", ctx.deviceName()}, {"rel_err_y", errY}};
  bool ok = errY <= 3e-3;
  row["fwd_ms"] = bench::settledMs(ctx, [&] { fc.forward(st, X, Y, B); }, 20, 5);
  row["fwd_ms_sustained"] = bench::sustainedMs(ctx, [&] { fc.forward(st, X, Y, B); }, 20, 5);
  row["fwd_tflops"] = 2.0 * double(B * K * N) / (row["fwd_ms"].get<double>() * 1e9);
  {
    // The host's own time a forward (config lookup, memset, launch), queued
    // without waiting: above fwd_ms, the GPU waits for the host.
    ctx.synchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; ++i)
      fc.forward(st, X, Y, B);
    auto t1 = std::chrono::steady_clock::now();
    ctx.synchronize();
    row["fwd_host_us"] = std::chrono::duration<double, std::micro>(t1 - t0).count() / 50;
  }
  if (train) {
    fc.backward(st, X, dY, dX, B); // tunes dX and dM
    dX.memsetBytes(0xFF);
    fc.backward(st, X, dY, dX, B);
    ctx.synchronize();
    auto idxT = [&](int64_t n, int64_t k) { return fc.indexOf(k, n); };
    double errX = sampledError(dX.toHost(), dy, hm, B, K, N, fc.lambda(), samplesOf(B, K, rng), idxT);
    row["rel_err_dx"] = errX;
    ok = ok && errX <= 3e-3;
    row["train_ms"] = bench::settledMs(ctx, [&] {
      fc.forward(st, X, Y, B);
      fc.backward(st, X, dY, dX, B);
    }, 10, 5);
    row["dx_dm_ms"] = bench::medianMs(ctx, [&] { fc.backward(st, X, dY, dX, B); }, 10, 5);
    // The step's memory: what the layer owns after forward and backward (not
    // backwardMemory's X^T scratch or the deterministic schedule, used below).
    row["peak_bytes"] = mem.values().bytes() + mem.grad().bytes() + X.bytes() + Y.bytes() +
                        dY.bytes() + dX.bytes() + fc.deviceBytes();
    row["dm_ms"] = bench::medianMs(ctx, [&] { fc.backwardMemory(st, X, dY, B); }, 10, 5);
    fc.backwardMemory(st, X, dY, B, true); // tunes the wave kernel
    row["dm_deterministic_ms"] =
        bench::medianMs(ctx, [&] { fc.backwardMemory(st, X, dY, B, true); }, 5, 5);
    row["waves"] = fc.waves().waves();
  }
  if (!train)
    row["peak_bytes"] = mem.values().bytes() + X.bytes() + Y.bytes() + fc.deviceBytes();
  row["configs"] = fc.chosenConfigs();
  if (!ok) {
    std::cerr << "roast_bench: " << row.dump() << ": relative error exceeds 3e-3\n";
    return false;
  }
  std::printf("%s\n", row.dump().c_str());
  std::fflush(stdout);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  int64_t memElems = 0;
  bool train = false, reproducible = false;
  unsigned seed = 11;
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mem-elems") && i + 1 < argc)
      memElems = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--train"))
      train = true;
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = unsigned(std::stoul(argv[++i]));
    else if (!std::strcmp(argv[i], "--reproducible"))
      reproducible = true;
    else
      dims.push_back(std::stoll(argv[i]));
  }
  if (dims.empty() || dims.size() % 3 != 0) {
    std::cerr << "usage: roast_bench [--mem-elems H] [--train] [--reproducible] [--seed S] B K N [B K N ...]\n";
    return 2;
  }
  try {
    Context ctx;
    std::mt19937 rng(seed);
    for (size_t i = 0; i < dims.size(); i += 3) {
      Shape sh{dims[i], dims[i + 1], dims[i + 2]};
      int64_t H = memElems ? memElems : std::max<int64_t>(sh.K * sh.N / 10, 2 * 32 * 64);
      for (Mapping m : {Mapping::RzLinear, Mapping::Aligned})
        if (!benchOne(ctx, sh, H, m, train, reproducible, rng))
          return 1;
    }
  } catch (const Error &e) {
    std::cerr << "roast_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
