// Timing launches on a context's stream with events: warm-up runs, then the
// median of timed repeats, optionally with the L2 cache flushed before each
// repeat so that every repeat starts cold, as a kernel in a model does. The
// autotuner times its candidates with this; the benchmarks in bench/ too.
//
//   tessera::BenchmarkResult r = tessera::benchmark(ctx, [&] { k.launch(...); });
//   std::cout << r.medianMs << " ms, spread " << r.spread() << "\n";
#ifndef TESSERA_BENCHMARK_H
#define TESSERA_BENCHMARK_H

#include "tessera/Context.h"

#include <cstddef>
#include <functional>
#include <vector>

namespace tessera {

struct BenchmarkOptions {
  /// Untimed runs first (module load, first touch of the operands).
  int warmup = 1;
  /// Timed repeats; the result is their median.
  int repeats = 10;
  /// Back-to-back launches per repeat; each sample is the mean per launch.
  int iterations = 1;
  /// Before each repeat (outside its timing), overwrite `flushBytes` of
  /// device memory so that the repeat does not find its operands in L2.
  bool flushL2 = true;
  /// More than the L2 of any supported GPU (50 MB on an H100).
  size_t flushBytes = size_t(256) << 20;
};

struct BenchmarkResult {
  /// Milliseconds per launch: one sample per repeat, in the order taken.
  std::vector<double> samplesMs;
  double medianMs = 0, minMs = 0, maxMs = 0;
  /// (max - min) / median: how far apart the repeats were.
  double spread() const { return medianMs > 0 ? (maxMs - minMs) / medianMs : 0; }
};

/// The median, minimum and maximum of `samplesMs` (not empty).
BenchmarkResult summarizeSamples(std::vector<double> samplesMs);

/// Times `launch` (which queues work on ctx.stream()) as BenchmarkOptions
/// says. Throws tessera::Error for options out of range (warmup < 0,
/// repeats < 1, iterations < 1) and whatever `launch` throws. Under the
/// interpreter the events measure host time.
BenchmarkResult benchmark(Context &ctx, const std::function<void()> &launch,
                          const BenchmarkOptions &options = {});

} // namespace tessera

#endif
