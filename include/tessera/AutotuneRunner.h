// The autotuner's runner: tunes one key of a ConfigSpace (tessera/Autotune.h)
// on a context. It compiles the configs the space admits on a thread pool,
// runs each candidate once and checks its outputs against the first
// candidate that ran, times the ones that agree (tessera/Benchmark.h), times
// the best few again with more repeats, and returns the TuningRecord for
// TuningCache::store. A candidate that fails (pruned, compile error, launch
// error, wrong output) is recorded with its reason; it never stops the tuning.
//
//   TuneTask task;
//   task.compile = [&](const Config &c) { ... return tessera::compile(ctx, path, name, cx, o); };
//   task.launch = [&](Kernel &k, const Config &c) { k.launch(ctx.stream(), grid(c), ...); };
//   task.outputs = {{&c.memory(), ScalarType::f32}};
//   TuningRecord r = tune(ctx, space, task);
#ifndef TESSERA_AUTOTUNERUNNER_H
#define TESSERA_AUTOTUNERUNNER_H

#include "tessera/Autotune.h"
#include "tessera/Benchmark.h"
#include "tessera/Context.h"
#include "tessera/Kernel.h"
#include "tessera/Memory.h"

#include <functional>
#include <vector>

namespace tessera {

/// What tune() needs to build and run a candidate.
struct TuneTask {
  /// Compiles the kernel for a config. Called on several threads at once;
  /// throws (tessera::Error) when the config cannot be compiled.
  std::function<Kernel(const Config &)> compile;
  /// Optional, called (on a compile thread) before compile: why the config
  /// is skipped without compiling (a static_assert of the kernel fails for
  /// it), or "" to compile it.
  std::function<std::string(const Config &)> admit;
  /// Optional, called on the compile thread right after compile: builds what
  /// the launch needs (a specializing kernel's variant for the launch's
  /// arguments) and returns why the config is skipped (it spills, it needs
  /// more shared memory than the device has), or "" to keep it.
  std::function<std::string(Kernel &, const Config &)> afterCompile;
  /// Queues one launch of the kernel compiled for `config` on ctx.stream().
  std::function<void(Kernel &, const Config &)> launch;
  /// A buffer the kernel writes, compared between candidates; it gets its
  /// contents back when tuning ends.
  struct Output {
    DeviceMemory *buffer = nullptr;
    ScalarType type = ScalarType::f32;
    /// Fill it with 0xFF bytes (NaN for floats) before each candidate's
    /// checked run, so that elements a candidate fails to write differ from
    /// the reference instead of showing what an earlier candidate wrote. For
    /// buffers the kernel only writes: one it also reads (an accumulator)
    /// must be declared reset or restore instead.
    bool poison = false;
  };
  std::vector<Output> outputs;
  /// Largest max|x - ref| / max|ref| allowed against the reference candidate
  /// (the first that ran), per output. Configs that sum in another order
  /// differ in rounding; a wrong config differs by far more.
  double tolerance = 1e-2;
  /// Zeroed before every launch: buffers the kernel accumulates into. Given
  /// back their contents when tuning ends.
  std::vector<DeviceMemory *> reset;
  /// Put back to their contents at the start of tuning before every launch,
  /// and when tuning ends: buffers the kernel updates in place.
  std::vector<DeviceMemory *> restore;
};

struct TuneOptions {
  /// How every candidate is timed (warm-up, repeats, L2 flushed).
  BenchmarkOptions timing;
  /// The best few are timed again, with `retimeRepeats` repeats, and the
  /// winner is the fastest of those.
  int retimeBest = 3;
  int retimeRepeats = 30;
  /// Threads compiling candidates; 0: the hardware's.
  unsigned compileThreads = 0;
  /// A config whose compile (admit, compile, afterCompile) takes longer is
  /// skipped ("compile timeout"); its thread is left to finish the call it is
  /// in, in the background, and its result is dropped; it calls nothing of
  /// the task after that. That call's captures must outlive it (what
  /// TunedKernel's compile captures lives as long as the TunedKernel). 0: no
  /// limit.
  double compileTimeoutSeconds = 0;
  /// Wall-clock cap on the whole tuning, compiles included: once spent, the
  /// candidates not yet timed are skipped ("over the tuning budget"), except
  /// that at least one candidate is always timed. 0: no cap.
  double budgetSeconds = 0;
  /// Called as the tuning advances: `phase` is "compile" or "time", with the
  /// candidates done of `total` in that phase (for a progress bar).
  std::function<void(const char *phase, size_t done, size_t total)> progress;
};

/// What the tuning did, for a caller that counts (tests, `tessera autotune`).
struct TuneStats {
  int compiled = 0, timed = 0, skipped = 0;
};

/// Tunes one key; see the file comment. The record's candidates are in the
/// space's order, each with its median time and spread (the re-timed ones
/// with their second timing) or its skip reason; `best` is the winner and
/// `date` now. Throws tessera::Error when the task is incomplete or when no
/// candidate runs correctly (the message lists every reason).
TuningRecord tune(Context &ctx, const ConfigSpace &space, const TuneTask &task,
                  const TuneOptions &options = {}, TuneStats *stats = nullptr);

} // namespace tessera

#endif
