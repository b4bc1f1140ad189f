// Event timing shared by the benchmarks.
#ifndef TESSERA_BENCH_BENCHTIMING_H
#define TESSERA_BENCH_BENCHTIMING_H

#include "tessera/tessera.h"

#include <chrono>
#include <functional>
#include <thread>

namespace tessera::bench {

/// Median over `reps` of the mean time of `iters` back-to-back runs of `fn`,
/// in ms, after one warm-up run (module load, first touch); L2 stays warm
/// between repeats, as the recorded results were measured.
inline double medianMs(Context &ctx, const std::function<void()> &fn, int iters, int reps) {
  BenchmarkOptions o;
  o.warmup = 1;
  o.repeats = reps;
  o.iterations = iters;
  o.flushL2 = false;
  return benchmark(ctx, fn, o).medianMs;
}

/// medianMs from an idle GPU: one second without work first. A tf32 kernel
/// that keeps the tensor cores busy brings an H200 to its power cap within a
/// fraction of a second, and its clock drops (bench/results/logs/
/// roast_20480_power_session33.log); without the pause, what ran before
/// (tuning, another shape) would slow the measurement.
inline double settledMs(Context &ctx, const std::function<void()> &fn, int iters, int reps) {
  ctx.synchronize();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return medianMs(ctx, fn, iters, reps);
}

/// medianMs after a second of back-to-back runs: the power-capped state of a
/// long loop.
inline double sustainedMs(Context &ctx, const std::function<void()> &fn, int iters, int reps) {
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
    for (int i = 0; i < 10; ++i)
      fn();
    ctx.synchronize();
  }
  return medianMs(ctx, fn, iters, reps);
}

} // namespace tessera::bench

#endif
