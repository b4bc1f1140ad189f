// Event timing shared by the benchmarks.
#ifndef TESSERA_BENCH_BENCHTIMING_H
#define TESSERA_BENCH_BENCHTIMING_H

#include "tessera/tessera.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

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

/// The median of `v` (the upper one of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// `v` as a JSON list of numbers.
inline std::string jsonList(const std::vector<double> &v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6f", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + "]";
}

} // namespace tessera::bench

#endif
