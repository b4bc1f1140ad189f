#include "tessera/Benchmark.h"

#include "tessera/Error.h"
#include "tessera/Memory.h"

#include <algorithm>
#include <string>

namespace tessera {

BenchmarkResult summarizeSamples(std::vector<double> samplesMs) {
  if (samplesMs.empty())
    throw Error("benchmark: no samples to summarize");
  BenchmarkResult r;
  r.samplesMs = samplesMs;
  std::sort(samplesMs.begin(), samplesMs.end());
  size_t n = samplesMs.size();
  r.medianMs = n % 2 ? samplesMs[n / 2] : (samplesMs[n / 2 - 1] + samplesMs[n / 2]) / 2;
  r.minMs = samplesMs.front();
  r.maxMs = samplesMs.back();
  return r;
}

BenchmarkResult benchmark(Context &ctx, const std::function<void()> &launch,
                          const BenchmarkOptions &options) {
  if (options.warmup < 0 || options.repeats < 1 || options.iterations < 1)
    throw Error("benchmark: warmup must be >= 0 and repeats and iterations >= 1, got warmup " +
                std::to_string(options.warmup) + ", repeats " + std::to_string(options.repeats) +
                ", iterations " + std::to_string(options.iterations));
  for (int i = 0; i < options.warmup; ++i)
    launch();
  ctx.synchronize();
  // The flush buffer is written on the same stream before the start event,
  // so its time is not counted but its effect on L2 is.
  DeviceMemory flush;
  if (options.flushL2 && options.flushBytes)
    flush = ctx.allocBytes(options.flushBytes);
  std::vector<double> samples;
  samples.reserve(size_t(options.repeats));
  Event start = ctx.createEvent(), end = ctx.createEvent();
  for (int r = 0; r < options.repeats; ++r) {
    if (flush.size())
      flush.memset(uint8_t(r), ctx.stream());
    start.record(ctx.stream());
    for (int i = 0; i < options.iterations; ++i)
      launch();
    end.record(ctx.stream());
    end.synchronize();
    samples.push_back(double(Event::elapsedMs(start, end)) / options.iterations);
  }
  return summarizeSamples(std::move(samples));
}

} // namespace tessera
