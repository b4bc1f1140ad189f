// Times Tessera's matmul kernel (kernels_dsl/basics/matmul.tile) at the shapes
// and dtypes given on the command line and prints one JSON object per line.
// The config of each shape is picked by the autotuner (TunedKernel, over the
// kernel's @autotune space), tuned afresh in every run; the line lists every
// candidate's tuning time or skip reason. bench/peers.py runs it next to
// torch/cuBLAS in the same session.
//
//   matmul_bench [--iters N] [--also DT:M:N:K=CONFIG ...] DT M N K [DT M N K ...]
//     DT in f32, f16, bf16, i8, f8e4m3, f8e5m2; a ":col" suffix (i8:col) stores
//     B column-major (N x K, K contiguous: the K-major form 8-bit tensor cores
//     read); ":ta" stores A transposed (K x M, M contiguous: A.T @ B, whose
//     rows the kernel copies element by element). The 8-bit floats run kernels_dsl/basics/scaled_matmul.tile (B
//     column-major, unit scales, C bf16). Each time is the median of 5 means of N
//     back-to-back launches (default 3). --also times CONFIG too at that shape
//     (a hand-picked config, say), the same way, in the same process.
#include "BenchTiming.h"
#include "TuningReport.h"
#include "support/Reference.h"
#include "tessera/TunedKernel.h"
#include "tessera/tessera.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {

// Median of 5 timings of `iters` back-to-back launches, in ms per launch.
double timeMs(Context &ctx, const std::function<void()> &fn, int iters) {
  return tessera::bench::medianMs(ctx, fn, iters, 5);
}

double toDouble(const uint8_t *p, const std::string &dt) {
  if (dt == "i8")
    return double(int8_t(*p));
  if (dt == "f8e4m3")
    return f8e4m3::toFloat(*p);
  if (dt == "f8e5m2")
    return f8e5m2::toFloat(*p);
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
  size_t eb = dt == "f32" ? 4 : dt == "i8" || dt.rfind("f8", 0) == 0 ? 1 : 2;
  for (size_t k = 0; k < h.size(); k += eb) {
    float x = u(rng);
    if (dt == "f8e4m3" || dt == "f8e5m2") {
      h[k] = dt == "f8e4m3" ? f8e4m3::fromFloat(x * 4) : f8e5m2::fromFloat(x * 4);
    } else if (dt == "i8") {
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
  int iters = 3;
  std::map<std::string, std::string> also; // "DT:M:N:K" -> config text
  int first = 1;
  for (; first + 1 < argc && std::strncmp(argv[first], "--", 2) == 0; first += 2) {
    std::string flag = argv[first], value = argv[first + 1];
    if (flag == "--iters") {
      iters = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--also" && value.find('=') != std::string::npos) {
      also[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    } else {
      std::cerr << "matmul_bench: bad option " << flag << " " << value << "\n";
      return 2;
    }
  }
  if (argc - first < 4 || (argc - first) % 4 != 0) {
    std::cerr << "usage: matmul_bench [--iters N] [--also DT:M:N:K=CONFIG ...] DT M N K [DT M N K ...]\n"
                 "  env TESSERA_MATMUL_FILE: kernel file (default kernels_dsl/basics/matmul.tile)\n"
                 "  env MATMUL_ARCH=sm_NN: compile for that target instead of the device's\n"
                 "  env MATMUL_WS=0: no warp specialization (every warp copies and multiplies)\n"
                 "  env MATMUL_TMA=0: the producer copies with cp.async instead of TMA\n"
                 "  env MATMUL_REUSE_TUNING=1: use the tuning cache's entries instead of retuning\n";
    return 2;
  }
  std::string kernels = std::getenv("TESSERA_KERNELS_DIR") ? std::getenv("TESSERA_KERNELS_DIR")
                                                           : std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl";
  std::string file = std::getenv("TESSERA_MATMUL_FILE") ? std::getenv("TESSERA_MATMUL_FILE")
                                                        : kernels + "/basics/matmul.tile";
  try {
    Context ctx;
    std::mt19937 rng(7);
    for (int i = first; i + 3 < argc; i += 4) {
      std::string token = argv[i];
      std::string dt = token.substr(0, token.find(':'));
      int64_t M = std::stoll(argv[i + 1]), N = std::stoll(argv[i + 2]), K = std::stoll(argv[i + 3]);
      bool isInt = dt == "i8", isF8 = dt == "f8e4m3" || dt == "f8e5m2";
      bool colB = isF8 || token.find(":col") != std::string::npos;
      bool transA = token.find(":ta") != std::string::npos;
      size_t eb = dt == "f32" ? 4 : isInt || isF8 ? 1 : 2;
      // C in the operand type for 16-bit inputs, as cuBLAS writes it (torch's
      // bf16 matmul returns bf16): the epilogue moves the same bytes as the peer.
      // 8-bit floats write bf16, as torch._scaled_mm is asked to.
      std::string out = isInt ? "i32" : isF8 ? "bf16" : eb == 2 ? dt : "f32";
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
          acc += toDouble(&ha[size_t(transA ? k * M + r : r * K + k) * eb], dt) *
                 toDouble(&hb[size_t(colB ? q * K + k : k * N + q) * eb], dt);
        ref.push_back(acc);
      }
      // Every switch a config does not set comes from here.
      JitOptions o;
      if (const char *w = std::getenv("MATMUL_WS")) // 0: every warp copies and multiplies
        o.warpSpecialize = std::string(w) != "0";
      if (const char *t = std::getenv("MATMUL_TMA")) // 0: cp.async instead of TMA tensor maps
        o.tma = std::string(t) != "0";
      if (const char *a = std::getenv("MATMUL_ARCH")) // e.g. sm_90: the mma.sync pipeline
        o.target = Target::parse(a);
      TunedKernelOptions tuning;
      const char *reuse = std::getenv("MATMUL_REUSE_TUNING");
      tuning.retune = !(reuse && std::string(reuse) == "1");
      tuning.tolerance = 1e-2;
      // Candidates are timed the way the result below is (the mean of
      // `iters` back-to-back launches, L2 warm), so the winner is the fastest by the
      // measure that is reported.
      tuning.tuning.timing.iterations = iters;
      tuning.tuning.timing.flushL2 = false;
      std::map<std::string, ConstexprValue> cx = {
          {"DT", *parseDType(dt)}, {"ACC", *parseDType(isInt ? "i32" : "f32")}, {"OUT", *parseDType(out)}};
      std::string kfile = file, kname = "matmul";
      if (isF8) {
        kfile = kernels + "/basics/scaled_matmul.tile";
        kname = "scaled_matmul";
        cx = {{"DA", *parseDType(dt)}, {"DB", *parseDType(dt)}, {"OUT", *parseDType(out)}};
      }
      TunedKernel mm(ctx, kfile, kname, cx, o, tuning);
      // B's strides: (N, 1) row-major, (1, K) column-major.
      int32_t sbk = colB ? 1 : int32_t(N), sbn = colB ? int32_t(K) : 1;
      // A's strides: (K, 1) row-major, (1, M) transposed.
      int32_t sam = transA ? 1 : int32_t(K), sak = transA ? int32_t(M) : 1;
      auto scales = ctx.upload(std::vector<float>{1.0f, 1.0f});
      std::vector<ArgValue> args =
          isF8 ? makeArgs(DevicePtr<uint8_t>{a.address()}, DevicePtr<uint8_t>{b.address()},
                          DevicePtr<uint8_t>{c.address()}, scales.ptr(), scales.ptr() + 1, int32_t(M),
                          int32_t(N), int32_t(K), sam, sak, sbk, sbn, int32_t(N), int32_t(1))
               : makeArgs(DevicePtr<uint8_t>{a.address()}, DevicePtr<uint8_t>{b.address()},
                          DevicePtr<uint8_t>{c.address()}, int32_t(M), int32_t(N), int32_t(K), sam,
                          sak, sbk, sbn, int32_t(N), int32_t(1));
      // Pointer element types are checked: retag the byte pointers with the kernel's types.
      for (size_t p = 0; p < 3; ++p)
        args[p].type = mm.signature().params[p].type;
      std::vector<const DeviceMemory *> buffers(args.size(), nullptr);
      buffers[0] = &a, buffers[1] = &b, buffers[2] = &c;
      auto grid = [&](const tessera::Config &cfg) {
        return Grid::of(cdiv(M, cfg.get("BM")) * cdiv(N, cfg.get("BN")));
      };
      // Tuning (on the first launch), then correctness of the chosen config:
      // poisoned output (NaN / 0xFFFFFFFF), one launch, sampled entries
      // against the fp64 reference.
      mm.configForArgs(grid, args, buffers);
      c.memset(0xFF);
      mm.launchWithArgs(ctx.stream(), grid, args);
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
      TuningDecision d = mm.lastDecision();
      if (!(rel <= 1e-2))
        std::cerr << "matmul_bench: WRONG RESULT " << dt << " " << M << "x" << N << "x" << K << " "
                  << d.config.str() << ": relative error " << rel << "\n";
      double ms = timeMs(ctx, [&] { mm.launchWithArgs(ctx.stream(), grid, args); }, iters);
      std::string alsoJson;
      std::string shapeKey = token + ":" + argv[i + 1] + ":" + argv[i + 2] + ":" + argv[i + 3];
      std::optional<tessera::Config> cfg;
      if (auto it = also.find(shapeKey); it != also.end()) {
        std::string perr;
        cfg = tessera::Config::parse(it->second, &perr);
        if (!cfg)
          std::cerr << "matmul_bench: --also " << shapeKey << ": " << perr << " (not timed)\n";
      }
      if (cfg) {
        // The other config, compiled and timed exactly as the tuned one.
        auto cx2 = cx;
        JitOptions o2 = o;
        cfg->applyTo(o2, cx2);
        Kernel other = compile(ctx, kfile, kname, cx2, o2);
        Grid g = grid(*cfg);
        other.launchWithArgs(ctx.stream(), g, args);
        // Interleaved, each kept at its best of two: tuned, other, tuned, other.
        auto timeOther = [&] { return timeMs(ctx, [&] { other.launchWithArgs(ctx.stream(), g, args); }, iters); };
        double otherMs = timeOther();
        ms = std::min(ms, timeMs(ctx, [&] { mm.launchWithArgs(ctx.stream(), grid, args); }, iters));
        otherMs = std::min(otherMs, timeOther());
        alsoJson = ", \"also_config\": \"" + cfg->str() + "\", \"also_ms\": " + std::to_string(otherMs);
      }
      std::string all = d.record ? bench::candidatesJson(*d.record).dump() : "[]";
      double tflops = 2.0 * double(M) * double(N) * double(K) / (ms * 1e9);
      std::printf("{\"impl\": \"tessera\", \"dtype\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"ms\": %.4f, "
                  "\"tflops\": %.2f, \"rel_err\": %.3g, \"config\": \"%s\", \"tuning\": \"%s\", \"device\": \"%s\", "
                  "\"iters\": %d%s, \"configs\": %s}\n",
                  token.c_str(), (long long)M, (long long)N, (long long)K, ms, tflops, rel,
                  d.config.str().c_str(), d.source.c_str(), ctx.deviceName().c_str(), iters,
                  alsoJson.c_str(), all.c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception &e) {
    std::cerr << "matmul_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
