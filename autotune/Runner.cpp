// tune(): compile in parallel, check, time, re-time (tessera/AutotuneRunner.h).
#include "tessera/AutotuneRunner.h"

#include "tessera/Error.h"
#include "tessera/Float8.h"
#include "tessera/Half.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
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
  case ScalarType::u16: each(uint16_t()); break;
  case ScalarType::u32: each(uint32_t()); break;
  case ScalarType::u64: each(uint64_t()); break;
  case ScalarType::i32: each(int32_t()); break;
  case ScalarType::i64: each(int64_t()); break;
  case ScalarType::f16: halves(&f16::toFloat); break;
  case ScalarType::bf16: halves(&bf16::toFloat); break;
  case ScalarType::f32: each(float()); break;
  case ScalarType::f64: each(double()); break;
  case ScalarType::f8e4m3:
    for (uint8_t b : bytes)
      v.push_back(f8e4m3::toFloat(b));
    break;
  case ScalarType::f8e5m2:
    for (uint8_t b : bytes)
      v.push_back(f8e5m2::toFloat(b));
    break;
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

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The compile phase, shared with its threads: a thread stuck in a compile
/// past the timeout is left behind (there is no safe way to stop it) and
/// outlives tune(), so everything it touches lives here.
struct CompileJobs {
  enum class State { Pending, Running, Done, Abandoned };
  std::function<std::string(const Config &)> admit;
  std::function<Kernel(const Config &)> compile;
  std::function<std::string(Kernel &, const Config &)> afterCompile;
  std::vector<Config> configs;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<State> state;
  std::vector<Clock::time_point> started;
  std::vector<std::optional<Kernel>> kernels;
  std::vector<std::string> reasons;
  size_t next = 0;
  bool stop = false; // no new compiles (timeout or budget)

  /// Runs jobs until none is left; returns when this thread may no longer
  /// take one (its job was abandoned, or `stop`).
  void work() {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mutex);
        while (next < configs.size() && state[next] != State::Pending)
          ++next;
        if (stop || next >= configs.size())
          return;
        i = next++;
        state[i] = State::Running;
        started[i] = Clock::now();
      }
      std::optional<Kernel> kernel;
      std::string reason = run(i, kernel);
      std::lock_guard<std::mutex> lock(mutex);
      if (state[i] == State::Abandoned)
        return; // the main thread gave up on it and started another thread
      state[i] = State::Done;
      reasons[i] = std::move(reason);
      kernels[i] = std::move(kernel);
      changed.notify_all();
    }
  }

  bool abandoned(size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    return state[i] == State::Abandoned;
  }

  std::string run(size_t i, std::optional<Kernel> &kernel) {
    try {
      if (admit)
        if (std::string why = admit(configs[i]); !why.empty())
          return why;
      if (abandoned(i))
        return "";
      kernel = compile(configs[i]);
      if (abandoned(i))
        return ""; // tune() may have returned: the task's captures may be gone
      if (afterCompile)
        if (std::string why = afterCompile(*kernel, configs[i]); !why.empty())
          return kernel.reset(), why;
      return "";
    } catch (...) {
      kernel.reset();
      return "compile error: " + what(std::current_exception());
    }
  }
};

/// Compiles every admitted candidate on `threads` threads; a failure leaves
/// the kernel empty and the reason in `reasons`. A compile that runs past
/// the timeout is skipped and its thread replaced; once the budget is spent
/// (and some candidate compiled), the configs not yet started are skipped.
void compileAll(const TuneTask &task, const std::vector<Config> &configs,
                const std::vector<bool> &admitted, const TuneOptions &options,
                Clock::time_point begin, std::vector<std::optional<Kernel>> &kernels,
                std::vector<std::string> &reasons) {
  auto jobs = std::make_shared<CompileJobs>();
  jobs->admit = task.admit;
  jobs->compile = task.compile;
  jobs->afterCompile = task.afterCompile;
  jobs->configs = configs;
  size_t n = configs.size(), total = 0;
  jobs->state.assign(n, CompileJobs::State::Pending);
  jobs->started.resize(n);
  jobs->kernels.resize(n);
  jobs->reasons = reasons;
  for (size_t i = 0; i < n; ++i)
    if (!admitted[i])
      jobs->state[i] = CompileJobs::State::Done;
    else
      ++total;
  unsigned threads = options.compileThreads ? options.compileThreads
                                            : std::max(1u, std::thread::hardware_concurrency());
  auto spawn = [&] { std::thread([jobs] { jobs->work(); }).detach(); };
  for (unsigned t = 0; t < std::max<size_t>(1, std::min<size_t>(threads, total)); ++t)
    spawn();

  std::unique_lock<std::mutex> lock(jobs->mutex);
  for (;;) {
    size_t settled = 0, compiledOk = 0;
    bool pending = false;
    for (size_t i = 0; i < n; ++i) {
      CompileJobs::State &st = jobs->state[i];
      if (st == CompileJobs::State::Running && options.compileTimeoutSeconds > 0 &&
          secondsSince(jobs->started[i]) > options.compileTimeoutSeconds) {
        st = CompileJobs::State::Abandoned;
        char buf[96];
        std::snprintf(buf, sizeof buf, "compile timeout: still compiling after %.3g s",
                      options.compileTimeoutSeconds);
        jobs->reasons[i] = buf;
        spawn(); // replaces the thread left behind
      }
      if (st == CompileJobs::State::Pending)
        pending = true;
      if (admitted[i] && (st == CompileJobs::State::Done || st == CompileJobs::State::Abandoned))
        ++settled;
      compiledOk += jobs->kernels[i].has_value();
    }
    if (options.progress) {
      lock.unlock();
      options.progress("compile", settled, total);
      lock.lock();
    }
    if (settled == total)
      break;
    if (pending && options.budgetSeconds > 0 && compiledOk > 0 &&
        secondsSince(begin) > options.budgetSeconds) {
      jobs->stop = true;
      for (size_t i = 0; i < n; ++i)
        if (jobs->state[i] == CompileJobs::State::Pending) {
          jobs->state[i] = CompileJobs::State::Done;
          jobs->reasons[i] = "over the tuning budget";
        }
      continue;
    }
    jobs->changed.wait_for(lock, std::chrono::milliseconds(20));
  }
  jobs->stop = true;
  for (size_t i = 0; i < n; ++i) {
    reasons[i] = jobs->reasons[i];
    if (jobs->state[i] == CompileJobs::State::Done)
      kernels[i] = std::move(jobs->kernels[i]);
  }
}

/// The buffers tuning writes to, and what it must do with them: `reset`
/// buffers are zeroed and `restore` buffers put back to their starting
/// contents before every launch; outputs that ask for it are poisoned before
/// a candidate's checked run, so that what an earlier candidate wrote cannot stand in for
/// what this one failed to write. At the end every one of them gets its
/// contents back, so that the caller's own launch after tuning sees what it
/// would have seen. All on ctx.stream().
class Preparer {
public:
  Preparer(Context &ctx, const TuneTask &task) : ctx_(ctx), task_(task) {
    for (DeviceMemory *m : task.reset)
      save(m);
    for (DeviceMemory *m : task.restore)
      save(m);
    for (const TuneTask::Output &o : task.outputs)
      save(o.buffer);
  }
  /// Before every launch.
  void operator()() {
    for (DeviceMemory *m : task_.reset)
      m->memset(0, ctx_.stream());
    for (DeviceMemory *m : task_.restore)
      m->copyFrom(*savedOf(m), m->size(), 0, 0, ctx_.stream());
  }
  /// Before a checked run (then operator()): all bytes 0xFF (NaN for floats).
  void poisonOutputs() {
    for (const TuneTask::Output &o : task_.outputs)
      if (o.poison)
        o.buffer->memset(0xFF, ctx_.stream());
  }
  /// Every buffer as it was before tuning.
  void giveBack() {
    for (auto &[m, start] : saved_)
      m->copyFrom(start, start.size(), 0, 0, ctx_.stream());
  }

private:
  void save(DeviceMemory *m) {
    if (savedOf(m))
      return; // an output that is also reset or restored
    saved_.emplace_back(m, DeviceMemory(ctx_, m->size()));
    saved_.back().second.copyFrom(*m, m->size());
  }
  const DeviceMemory *savedOf(const DeviceMemory *m) const {
    for (const auto &[buffer, start] : saved_)
      if (buffer == m)
        return &start;
    return nullptr;
  }

  Context &ctx_;
  const TuneTask &task_;
  std::vector<std::pair<DeviceMemory *, DeviceMemory>> saved_;
};

/// Runs the candidate once; "" when its outputs match `reference` (which the
/// first candidate to run fills), else why not.
std::string runAndCheck(Context &ctx, const TuneTask &task, Preparer &prepare, Kernel &kernel,
                        const Config &config, std::vector<std::vector<double>> &reference) {
  try {
    prepare.poisonOutputs();
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
      reasons[i] = space.pruneExpression.empty() ? "pruned"
                                                 : "pruned: not " + space.pruneExpression;
  std::vector<std::optional<Kernel>> kernels(n);
  Clock::time_point begin = Clock::now();
  compileAll(task, configs, admitted, options, begin, kernels, reasons);

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
    if (reasons[i].empty() && !timed.empty() && options.budgetSeconds > 0 &&
        secondsSince(begin) > options.budgetSeconds)
      reasons[i] = "over the tuning budget";
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
    if (options.progress)
      options.progress("time", i + 1, n);
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
  prepare.giveBack(); // leave the buffers as the caller had them
  ctx.synchronize();
  for (const CandidateResult &c : record.candidates)
    counted.timed += !c.skipped(), counted.skipped += c.skipped();
  if (stats)
    *stats = counted;
  return record;
}

} // namespace tessera
