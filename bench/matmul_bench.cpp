// Times Tessera's matmul kernel (kernels_dsl/basics/matmul.tile) at the shapes
// and dtypes given on the command line and prints one JSON object per line.
// bench/peers.py runs it next to torch/cuBLAS in the same session.
//
//   matmul_bench DT M N K [DT M N K ...]     DT in f32, f16, bf16, i8
#include "tessera/tessera.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {
struct Config {
  int64_t bm, bn, bk, group;
  int warps;
};

// Median of 5 timings of `iters` back-to-back launches, in ms per launch.
double timeMs(Context &ctx, const std::function<void()> &fn, int iters) {
  fn();
  ctx.synchronize();
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    Event a = ctx.createEvent(), b = ctx.createEvent();
    a.record(ctx.stream());
    for (int i = 0; i < iters; ++i)
      fn();
    b.record(ctx.stream());
    b.synchronize();
    t.push_back(Event::elapsedMs(a, b) / iters);
  }
  std::sort(t.begin(), t.end());
  return t[2];
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 5 || (argc - 1) % 4 != 0) {
    std::cerr << "usage: matmul_bench DT M N K [DT M N K ...]\n";
    return 2;
  }
  std::string kernels = std::getenv("TESSERA_KERNELS_DIR") ? std::getenv("TESSERA_KERNELS_DIR")
                                                           : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
  try {
    Context ctx;
    // The FMA back end keeps one accumulator per owned element: small tiles
    // avoid spills. This list is the whole search space for now.
    const std::vector<Config> configs = {{64, 64, 16, 8, 4},   {64, 64, 32, 8, 8},  {128, 64, 16, 8, 8},
                                         {128, 128, 32, 8, 8}, {128, 64, 32, 8, 4}, {64, 128, 32, 8, 4}};
    std::mt19937 rng(7);
    for (int i = 1; i + 3 < argc; i += 4) {
      std::string dt = argv[i];
      int64_t M = std::stoll(argv[i + 1]), N = std::stoll(argv[i + 2]), K = std::stoll(argv[i + 3]);
      bool isInt = dt == "i8";
      size_t eb = dt == "f32" ? 4 : isInt ? 1 : 2;
      std::string out = isInt ? "i32" : "f32";
      // Random operand bytes: any bit pattern in [-1, 1] range is fine for timing.
      auto a = ctx.allocBytes(size_t(M * K) * eb), b = ctx.allocBytes(size_t(K * N) * eb);
      auto c = ctx.allocBytes(size_t(M * N) * 4);
      std::vector<uint8_t> ha(a.size()), hb(b.size());
      for (auto *h : {&ha, &hb})
        for (size_t k = 0; k < h->size(); ++k)
          (*h)[k] = uint8_t(isInt ? rng() : (k % eb == eb - 1 ? 0x3c : rng())); // keep floats small
      a.copyFromHost(ha.data(), ha.size());
      b.copyFromHost(hb.data(), hb.size());
      double best = 1e30;
      std::string bestCfg;
      for (const Config &cfg : configs) {
        JitOptions o;
        o.numWarps = cfg.warps;
        std::map<std::string, ConstexprValue> cx = {
            {"BM", cfg.bm}, {"BN", cfg.bn}, {"BK", cfg.bk}, {"GROUP", cfg.group},
            {"DT", *parseDType(dt)}, {"ACC", *parseDType(isInt ? "i32" : "f32")}, {"OUT", *parseDType(out)}};
        Kernel k = compile(ctx, kernels + "/basics/matmul.tile", "matmul", cx, o);
        Grid g = Grid::of(cdiv(M, cfg.bm) * cdiv(N, cfg.bn));
        auto launch = [&] {
          std::vector<ArgValue> args = makeArgs(
              DevicePtr<uint8_t>{a.address()}, DevicePtr<uint8_t>{b.address()}, DevicePtr<uint8_t>{c.address()},
              int32_t(M), int32_t(N), int32_t(K), int32_t(K), int32_t(1), int32_t(N), int32_t(1), int32_t(N), int32_t(1));
          // Pointer element types are checked: retag the byte pointers with the kernel's types.
          for (size_t p = 0; p < 3; ++p)
            args[p].type = k.signature().params[p].type;
          k.launchWithArgs(ctx.stream(), g, args);
        };
        double ms = timeMs(ctx, launch, 3);
        if (ms < best) {
          best = ms;
          bestCfg = "BM=" + std::to_string(cfg.bm) + ",BN=" + std::to_string(cfg.bn) + ",BK=" +
                    std::to_string(cfg.bk) + ",num_warps=" + std::to_string(cfg.warps);
        }
      }
      double tflops = 2.0 * double(M) * double(N) * double(K) / (best * 1e9);
      std::printf("{\"impl\": \"tessera\", \"dtype\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"ms\": %.4f, "
                  "\"tflops\": %.2f, \"config\": \"%s\", \"device\": \"%s\"}\n",
                  dt.c_str(), (long long)M, (long long)N, (long long)K, best, tflops, bestCfg.c_str(),
                  ctx.deviceName().c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception &e) {
    std::cerr << "matmul_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
