// Event timing shared by the benchmarks.
#ifndef TESSERA_BENCH_BENCHTIMING_H
#define TESSERA_BENCH_BENCHTIMING_H

#include "tessera/tessera.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace tessera::bench {

/// Median over `reps` of the mean time of `iters` back-to-back runs of `fn`,
/// in ms, after one warm-up run (module load, first touch).
inline double medianMs(Context &ctx, const std::function<void()> &fn, int iters, int reps) {
  fn();
  ctx.synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    Event a = ctx.createEvent(), b = ctx.createEvent();
    a.record(ctx.stream());
    for (int i = 0; i < iters; ++i)
      fn();
    b.record(ctx.stream());
    b.synchronize();
    t.push_back(Event::elapsedMs(a, b) / iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace tessera::bench

#endif
