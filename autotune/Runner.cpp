// tune(): compile in parallel, check, time, re-time (tessera/AutotuneRunner.h).
#include "tessera/AutotuneRunner.h"

#include "tessera/Error.h"
#include "tessera/Half.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <thread>

namespace tessera {
namespace {

/// The elements of a host copy of a buffer, as doubles.
std::vector<double> toDoubles(const std::string &bytes, ScalarType t) {
  std::vector<double> v;
  auto each = [&](auto tag) {
    using T = decltype(tag);
    size_t n = bytes.size() / sizeof(T);
    v.resize(n);
    for (size_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
      v[i] = double(x);
    }
  };
  auto halves = [&](float (*toFloat)(uint16_t)) {
    size_t n = bytes.size() / 2;
    v.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      v[i] = toFloat(b);
    }
  };
  switch (t) {
  case ScalarType::i1:
  case ScalarType::u8: each(uint8_t()); break;
  case ScalarType::i8: each(int8_t()); break;
  case ScalarType::i16: each(int16_t()); break;
  case ScalarType::i32: each(int32_t()); break;
  case ScalarType::i64: each(int64_t()); break;
  case ScalarType::f16: halves(&f16::toFloat); break;
  case ScalarType::bf16: halves(&bf16::toFloat); break;
  case ScalarType::f32: each(float()); break;
  case ScalarType::f64: each(double()); break;
  }
  return v;
}

/// max|x - ref| / max|ref| (the absolute error when ref is all zeros); +inf
/// for a NaN in x where ref has none.
double relativeError(const std::vector<double> &x, const std::vector<double> &ref) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(ref[i]))
      return INFINITY;
    if (!std::isnan(x[i]))
      err = std::max(err, std::fabs(x[i] - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return scale > 0 ? err / scale : err;
}

std::string what(const std::exception_ptr &e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception &x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

/// Compiles every admitted candidate on `threads` threads; a failure leaves
/// the kernel empty and the reason in `reasons`.
void compileAll(const TuneTask &task, const std::vector<Config> &configs,
                const std::vector<bool> &admitted, unsigned threads,
                std::vector<std::optional<Kernel>> &kernels, std::vector<std::string> &reasons) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < configs.size();) {
      if (!admitted[i])
        continue;
      try {
        kernels[i] = task.compile(configs[i]);
      } catch (...) {
        reasons[i] = "compile error: " + what(std::current_exception());
      }
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(threads, unsigned(configs.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

/// Puts `reset` and `restore` buffers in their starting state (on ctx.stream()).
class Preparer {
public:
  Preparer(Context &ctx, const TuneTask &task) : ctx_(ctx), task_(task) {
    for (DeviceMemory *m : task.restore) {
      saved_.emplace_back(ctx, m->size());
      saved_.back().copyFrom(*m, m->size());
    }
  }
  void operator()() {
    for (DeviceMemory *m : task_.reset)
      m->memset(0, ctx_.stream());
    for (size_t i = 0; i < task_.restore.size(); ++i)
      task_.restore[i]->copyFrom(saved_[i], saved_[i].size(), 0, 0, ctx_.stream());
  }

private:
  Context &ctx_;
  const TuneTask &task_;
  std::vector<DeviceMemory> saved_;
};

/// Runs the candidate once; "" when its outputs match `reference` (which the
/// first candidate to run fills), else why not.
std::string runAndCheck(Context &ctx, const TuneTask &task, Preparer &prepare, Kernel &kernel,
                        const Config &config, std::vector<std::vector<double>> &reference) {
  try {
    prepare();
    task.launch(kernel, config);
    ctx.synchronize();
  } catch (...) {
    return "launch error: " + what(std::current_exception());
  }
  std::vector<std::vector<double>> outs;
  for (const TuneTask::Output &o : task.outputs) {
    std::string bytes(o.buffer->size(), '\0');
    o.buffer->copyToHost(bytes.data(), bytes.size());
    outs.push_back(toDoubles(bytes, o.type));
  }
  if (reference.empty()) {
    reference = std::move(outs);
    return "";
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    double err = relativeError(outs[k], reference[k]);
    if (!(err <= task.tolerance))
      return "wrong output: relative error " + std::to_string(err) + " on output " +
             std::to_string(k) + " against the first candidate (tolerance " +
             std::to_string(task.tolerance) + ")";
  }
  return "";
}

void setTiming(CandidateResult &c, const BenchmarkResult &b, int repeats) {
  c.timeMs = b.medianMs;
  c.spreadMs = b.maxMs - b.minMs;
  c.repeats = repeats;
}

} // namespace

TuningRecord tune(Context &ctx, const ConfigSpace &space, const TuneTask &task,
                  const TuneOptions &options, TuneStats *stats) {
  if (!task.compile || !task.launch)
    throw Error("tune: the task needs both compile and launch");
  if (std::string why = space.validate(); !why.empty())
    throw Error("tune: " + why);
  for (const TuneTask::Output &o : task.outputs)
    if (!o.buffer)
      throw Error("tune: an output has no buffer");
  const std::vector<Config> &configs = space.configs;
  size_t n = configs.size();
  std::vector<bool> admitted(n);
  std::vector<std::string> reasons(n);
  for (size_t i = 0; i < n; ++i)
    if (!(admitted[i] = space.admits(configs[i])))
      reasons[i] = "pruned";
  std::vector<std::optional<Kernel>> kernels(n);
  unsigned threads = options.compileThreads ? options.compileThreads
                                            : std::max(1u, std::thread::hardware_concurrency());
  compileAll(task, configs, admitted, threads, kernels, reasons);

  TuneStats counted;
  TuningRecord record;
  Preparer prepare(ctx, task);
  std::vector<std::vector<double>> reference;
  std::vector<size_t> timed;
  for (size_t i = 0; i < n; ++i) {
    CandidateResult c;
    c.config = configs[i];
    if (kernels[i]) {
      ++counted.compiled;
      reasons[i] = runAndCheck(ctx, task, prepare, *kernels[i], configs[i], reference);
    }
    if (reasons[i].empty()) {
      Kernel &k = *kernels[i];
      const Config &cfg = configs[i];
      try {
        setTiming(c, benchmark(ctx, [&] { prepare(), task.launch(k, cfg); }, options.timing),
                  options.timing.repeats);
        timed.push_back(i);
      } catch (...) {
        reasons[i] = "launch error: " + what(std::current_exception());
      }
    }
    c.skipReason = reasons[i];
    record.candidates.push_back(std::move(c));
  }
  if (timed.empty()) {
    std::string all;
    for (size_t i = 0; i < n; ++i)
      all += "\n  " + configs[i].str() + ": " + reasons[i];
    throw Error("tune: no candidate ran correctly:" + all);
  }
  // The best few again, with more repeats: the first pass ranks, this one decides.
  std::sort(timed.begin(), timed.end(), [&](size_t a, size_t b) {
    return *record.candidates[a].timeMs < *record.candidates[b].timeMs;
  });
  timed.resize(std::min<size_t>(timed.size(), size_t(std::max(1, options.retimeBest))));
  BenchmarkOptions again = options.timing;
  again.repeats = std::max(options.retimeRepeats, 1);
  for (size_t i : timed) {
    Kernel &k = *kernels[i];
    const Config &cfg = configs[i];
    setTiming(record.candidates[i], benchmark(ctx, [&] { prepare(), task.launch(k, cfg); }, again),
              again.repeats);
  }
  size_t best = *std::min_element(timed.begin(), timed.end(), [&](size_t a, size_t b) {
    return *record.candidates[a].timeMs < *record.candidates[b].timeMs;
  });
  record.best = configs[best];
  record.date = isoDateUtcNow();
  prepare(); // leave the buffers as the caller had them
  ctx.synchronize();
  for (const CandidateResult &c : record.candidates)
    counted.timed += !c.skipped(), counted.skipped += c.skipped();
  if (stats)
    *stats = counted;
  return record;
}

} // namespace tessera
