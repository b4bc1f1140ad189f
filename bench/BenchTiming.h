// Event timing shared by the benchmarks.
#ifndef TESSERA_BENCH_BENCHTIMING_H
#define TESSERA_BENCH_BENCHTIMING_H

#include "tessera/tessera.h"

#include <functional>

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

} // namespace tessera::bench

#endif
