// Times Tessera's matmul kernel (kernels_dsl/basics/matmul.tile) at the shapes
// and dtypes given on the command line and prints one JSON object per line.
// bench/peers.py runs it next to torch/cuBLAS in the same session.
//
//   matmul_bench DT M N K [DT M N K ...]     DT in f32, f16, bf16, i8
#include "BenchTiming.h"
#include "support/Reference.h"
#include "tessera/tessera.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {
struct Config {
  int64_t bm, bn, bk, group;
  int warps, stages;
  // kernels_dsl/basics/matmul_persistent.tile, one program per SM.
  bool persistent = false;
  std::string text() const {
    return "BM=" + std::to_string(bm) + ",BN=" + std::to_string(bn) + ",BK=" + std::to_string(bk) +
           ",GROUP=" + std::to_string(group) + ",num_warps=" + std::to_string(warps) +
           ",num_stages=" + std::to_string(stages) + (persistent ? ",persistent" : "");
  }
};

// The documented search space (bench/NOTES.md): wgmma tiles on sm_90a
// (BM a multiple of 16 * num_warps, num_stages >= 3; {128,128,32,8,4,3} is
// the kernel's default tile with JitOptions' defaults), plus one tile of the
// path before it (mma.sync for 16-bit operands, FMA otherwise: num_stages = 1).
std::vector<Config> configsFor(const std::string &dt) {
  // wgmma, warp-specialized when the copies allow it (MATMUL_WS=0: not).
  if (dt == "bf16" || dt == "f16")
    return {{128, 256, 64, 8, 8, 4},       {128, 256, 32, 8, 8, 8},
            {128, 256, 32, 8, 8, 8, true}, {128, 256, 64, 8, 8, 4, true},
            {256, 128, 64, 8, 16, 4},      {128, 128, 64, 8, 8, 4},
            {128, 128, 32, 8, 4, 3},       {128, 128, 32, 8, 8, 1},
            {128, 256, 32, 16, 8, 8}};
  // tf32 wgmma as C^T = B^T A^T when BN is a multiple of 16 * warps; else B
  // staged and transposed in shared memory (>= 4 stages) or via registers (3).
  if (dt == "f32")
    return {{128, 256, 32, 8, 8, 4},       {128, 256, 16, 8, 8, 8},
            {128, 256, 16, 8, 8, 8, true}, {128, 256, 32, 8, 8, 4, true},
            {256, 128, 32, 8, 8, 4},       {128, 128, 32, 8, 4, 4},
            {256, 128, 32, 8, 16, 4},      {128, 64, 16, 8, 8, 1},
            // With A by TMA, 256 x 128 in short groups (GROUP=1: row-major
            // order) was the fastest at 4096^3 and 8192^3 on the H100.
            {256, 128, 32, 2, 8, 4},       {256, 128, 32, 1, 8, 4}};
  // i8: s8 wgmma, B staged (>= 4 stages) or via registers (3)
  return {{256, 128, 64, 8, 16, 4}, {256, 128, 64, 8, 16, 3}, {256, 128, 128, 8, 16, 4},
          {128, 256, 64, 8, 8, 4},  {128, 128, 128, 8, 8, 4}, {64, 64, 16, 8, 4, 1}};
}

// Median of 5 timings of `iters` back-to-back launches, in ms per launch.
double timeMs(Context &ctx, const std::function<void()> &fn, int iters) {
  return tessera::bench::medianMs(ctx, fn, iters, 5);
}

double toDouble(const uint8_t *p, const std::string &dt) {
  if (dt == "i8")
    return double(int8_t(*p));
  if (dt == "f32") {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  if (dt == "bf16") {
    bf16 h;
    h.bits = bits;
    return float(h);
  }
  f16 h;
  h.bits = bits;
  return float(h);
}

// Random operand bytes for values in [-1, 1] (i8: [-64, 63]).
void fillRandom(std::vector<uint8_t> &h, const std::string &dt, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  size_t eb = dt == "f32" ? 4 : dt == "i8" ? 1 : 2;
  for (size_t k = 0; k < h.size(); k += eb) {
    float x = u(rng);
    if (dt == "i8") {
      h[k] = uint8_t(int8_t(std::lround(x * 63.5f)));
    } else if (dt == "f32") {
      std::memcpy(&h[k], &x, 4);
    } else if (dt == "bf16") {
      uint16_t b = bf16(x).bits;
      std::memcpy(&h[k], &b, 2);
    } else {
      uint16_t b = f16(x).bits;
      std::memcpy(&h[k], &b, 2);
    }
  }
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 5 || (argc - 1) % 4 != 0) {
    std::cerr << "usage: matmul_bench DT M N K [DT M N K ...]\n"
                 "  env TESSERA_MATMUL_FILE: kernel file (default kernels_dsl/basics/matmul.tile)\n"
                 "  env MATMUL_CONFIGS=i,j,...: only these entries of the config list\n"
                 "  env MATMUL_EXTRA=\"BM,BN,BK,GROUP,warps,stages[,persistent];...\": more configs to try\n"
                 "  env MATMUL_ARCH=sm_NN: compile for that target instead of the device's\n"
                 "  env MATMUL_WS=0: no warp specialization (every warp copies and multiplies)\n";
    return 2;
  }
  std::string kernels = std::getenv("TESSERA_KERNELS_DIR") ? std::getenv("TESSERA_KERNELS_DIR")
                                                           : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
  std::string file = std::getenv("TESSERA_MATMUL_FILE") ? std::getenv("TESSERA_MATMUL_FILE")
                                                        : kernels + "/basics/matmul.tile";
  std::set<size_t> only;
  if (const char *e = std::getenv("MATMUL_CONFIGS")) {
    std::istringstream list(e);
    for (std::string t; std::getline(list, t, ',');)
      only.insert(std::stoul(t));
  }
  try {
    Context ctx;
    std::mt19937 rng(7);
    for (int i = 1; i + 3 < argc; i += 4) {
      std::string dt = argv[i];
      int64_t M = std::stoll(argv[i + 1]), N = std::stoll(argv[i + 2]), K = std::stoll(argv[i + 3]);
      bool isInt = dt == "i8";
      size_t eb = dt == "f32" ? 4 : isInt ? 1 : 2;
      // C in the operand type for 16-bit inputs, as cuBLAS writes it (torch's
      // bf16 matmul returns bf16): the epilogue moves the same bytes as the peer.
      std::string out = isInt ? "i32" : eb == 2 ? dt : "f32";
      size_t ob = out == "i32" || out == "f32" ? 4 : 2;
      auto a = ctx.allocBytes(size_t(M * K) * eb), b = ctx.allocBytes(size_t(K * N) * eb);
      auto c = ctx.allocBytes(size_t(M * N) * ob);
      std::vector<uint8_t> ha(a.size()), hb(b.size());
      fillRandom(ha, dt, rng);
      fillRandom(hb, dt, rng);
      a.copyFromHost(ha.data(), ha.size());
      b.copyFromHost(hb.data(), hb.size());
      // fp64 reference at sampled entries (all of C is too slow on the CPU at 8192^3).
      std::vector<std::pair<int64_t, int64_t>> samples;
      std::uniform_int_distribution<int64_t> rm(0, M - 1), rn(0, N - 1);
      samples.push_back({M - 1, N - 1});
      for (int s = 0; s < 512; ++s)
        samples.push_back({rm(rng), rn(rng)});
      std::vector<double> ref;
      for (auto [r, q] : samples) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += toDouble(&ha[size_t(r * K + k) * eb], dt) * toDouble(&hb[size_t(k * N + q) * eb], dt);
        ref.push_back(acc);
      }
      double best = 1e30;
      std::string bestCfg;
      std::string all;
      std::vector<Config> configs = configsFor(dt);
      // Extra configs to explore, "BM,BN,BK,GROUP,warps,stages;..." (appended).
      if (const char *e = std::getenv("MATMUL_EXTRA")) {
        std::istringstream list(e);
        for (std::string item; std::getline(list, item, ';');) {
          Config c{};
          int persistent = 0;
          if (std::sscanf(item.c_str(), "%lld,%lld,%lld,%lld,%d,%d,%d", (long long *)&c.bm,
                          (long long *)&c.bn, (long long *)&c.bk, (long long *)&c.group, &c.warps,
                          &c.stages, &persistent) >= 6) {
            c.persistent = persistent != 0;
            configs.push_back(c);
          }
        }
      }
      for (size_t ci = 0; ci < configs.size(); ++ci) {
        if (!only.empty() && !only.count(ci))
          continue;
        const Config &cfg = configs[ci];
        JitOptions o;
        o.numWarps = cfg.warps;
        o.numStages = cfg.stages;
        // MATMUL_WS=0: every warp copies and multiplies (no producer warpgroup).
        if (const char *w = std::getenv("MATMUL_WS"))
          o.warpSpecialize = std::string(w) != "0";
        // MATMUL_TMA=0: the producer copies with cp.async instead of TMA tensor maps.
        if (const char *t = std::getenv("MATMUL_TMA"))
          o.tma = std::string(t) != "0";
        if (const char *a = std::getenv("MATMUL_ARCH")) // e.g. sm_90: the mma.sync pipeline
          o.target = Target::parse(a);
        std::map<std::string, ConstexprValue> cx = {
            {"BM", cfg.bm}, {"BN", cfg.bn}, {"BK", cfg.bk}, {"GROUP", cfg.group},
            {"DT", *parseDType(dt)}, {"ACC", *parseDType(isInt ? "i32" : "f32")}, {"OUT", *parseDType(out)}};
        int64_t tiles = cdiv(M, cfg.bm) * cdiv(N, cfg.bn);
        Kernel k = cfg.persistent
                       ? compile(ctx, kernels + "/basics/matmul_persistent.tile", "matmul_persistent", cx, o)
                       : compile(ctx, file, "matmul", cx, o);
        // MATMUL_PROGRAMS=n: the persistent kernel's grid (default: one program per SM).
        int64_t programs = std::min<int64_t>(tiles, ctx.smCount());
        if (const char *p = std::getenv("MATMUL_PROGRAMS"))
          programs = std::atoll(p);
        Grid g = Grid::of(cfg.persistent ? programs : tiles);
        auto launch = [&] {
          std::vector<ArgValue> args = makeArgs(
              DevicePtr<uint8_t>{a.address()}, DevicePtr<uint8_t>{b.address()}, DevicePtr<uint8_t>{c.address()},
              int32_t(M), int32_t(N), int32_t(K), int32_t(K), int32_t(1), int32_t(N), int32_t(1), int32_t(N), int32_t(1));
          // Pointer element types are checked: retag the byte pointers with the kernel's types.
          for (size_t p = 0; p < 3; ++p)
            args[p].type = k.signature().params[p].type;
          k.launchWithArgs(ctx.stream(), g, args);
        };
        // Correctness first: poisoned output (NaN / 0xFFFFFFFF), one launch,
        // sampled entries against the fp64 reference.
        c.memset(0xFF);
        launch();
        ctx.synchronize();
        std::vector<uint8_t> hc(c.size());
        c.copyToHost(hc.data(), hc.size());
        testing::L2Error err;
        for (size_t s = 0; s < samples.size(); ++s) {
          auto [r, q] = samples[s];
          const uint8_t *at = &hc[size_t(r * N + q) * ob];
          double got = isInt ? double(*reinterpret_cast<const int32_t *>(at)) : toDouble(at, out);
          err.add(got, ref[s]);
        }
        double rel = err.value();
        if (!(rel <= 1e-2))
          std::cerr << "matmul_bench: WRONG RESULT " << dt << " " << M << "x" << N << "x" << K << " "
                    << cfg.text() << ": relative error " << rel << "\n";
        double ms = timeMs(ctx, launch, 3);
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s{\"config\": \"%s\", \"ms\": %.4f, \"rel_err\": %.3g}",
                      all.empty() ? "" : ", ", cfg.text().c_str(), ms, rel);
        all += buf;
        if (rel <= 1e-2 && ms < best) {
          best = ms;
          bestCfg = cfg.text();
        }
      }
      double tflops = 2.0 * double(M) * double(N) * double(K) / (best * 1e9);
      std::printf("{\"impl\": \"tessera\", \"dtype\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"ms\": %.4f, "
                  "\"tflops\": %.2f, \"config\": \"%s\", \"device\": \"%s\", \"configs\": [%s]}\n",
                  dt.c_str(), (long long)M, (long long)N, (long long)K, best, tflops, bestCfg.c_str(),
                  ctx.deviceName().c_str(), all.c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception &e) {
    std::cerr << "matmul_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
