// TunedKernel: a kernel whose config (tile sizes, warps, stages, switches) is
// chosen per problem shape at launch time by the autotuner.
//
//   tessera::TunedKernel mm(ctx, "kernels_dsl/basics/matmul.tile", "matmul",
//                           {{"DT", tessera::DType{tessera::ScalarType::f32, 0}}});
//   auto grid = [&](const tessera::Config &c) {
//     return tessera::Grid::of(tessera::cdiv(m, c.get("BM")) * tessera::cdiv(n, c.get("BN")));
//   };
//   mm.launch(ctx.stream(), grid, a, b, c, m, n, k, k, 1, n, 1, n, 1);
//
// The config space is the kernel's @autotune decorator, or one given in C++.
// A launch reads the key arguments' values (M, N, K), buckets them, and looks
// the config up: in this object's memory first (a hash lookup), then in the
// tuning cache (TuningCache, on disk), and on a miss it does what the miss
// policy says: tune now with the launch's own arguments (the default), use the
// nearest tuned shape, or use the first config. Buffers passed as
// DeviceBuffer<T> are known by size, so tuning can check the written ones
// between candidates and reset/restore the ones the space names; pass
// DeviceBuffers (not DevicePtrs) for those.
//
// TESSERA_PRINT_AUTOTUNING=1 prints every decision on stderr.
#ifndef TESSERA_TUNEDKERNEL_H
#define TESSERA_TUNEDKERNEL_H

#include "tessera/Autotune.h"
#include "tessera/AutotuneRunner.h"
#include "tessera/Context.h"
#include "tessera/JIT.h"
#include "tessera/Kernel.h"
#include "tessera/Memory.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

struct TunedKernelOptions {
  /// What a launch does when the tuning cache has no entry for its key;
  /// TESSERA_AUTOTUNE_MISS (tune, nearest, first) overrides it.
  MissPolicy onMiss = MissPolicy::TuneNow;
  /// How candidates are compiled and timed.
  TuneOptions tuning;
  /// Output check between candidates (TuneTask::tolerance).
  double tolerance = 1e-2;
  /// Also tune configs whose kernel spills registers to local memory or needs
  /// more shared memory than the device allows (skipped by default).
  bool keepSpilling = false;
  /// The tuning cache; null: TuningCache::global().
  TuningCache *cache = nullptr;
  /// Print each decision on stderr (as TESSERA_PRINT_AUTOTUNING=1 does).
  bool print = false;
  /// Tune every key this object meets, even one the cache holds, and store
  /// the new result (`tessera autotune --force`).
  bool retune = false;
};

/// Counters since construction.
struct TunedKernelStats {
  uint64_t launches = 0;
  uint64_t memoryHits = 0;  ///< launches whose key this object had resolved before
  uint64_t cacheHits = 0;   ///< keys found in the tuning cache
  uint64_t tunings = 0;     ///< keys tuned by this object
  uint64_t fallbacks = 0;   ///< keys resolved by the miss policy without tuning
  uint64_t compiles = 0;    ///< kernels compiled (tuning candidates and chosen configs)
  uint64_t timedRuns = 0;   ///< candidates timed while tuning
};

/// How a key was resolved (TunedKernel::lastDecision, the print-out).
struct TuningDecision {
  KeyValues key;
  Config config;
  /// "tuned", "cache", "nearest", "first".
  std::string source;
  /// For "tuned": the record, with every candidate's time or skip reason.
  std::shared_ptr<const TuningRecord> record;
  /// For "tuned": wall time of the tuning, seconds.
  double seconds = 0;
};

/// Why a buffer argument is known: DeviceBuffer<T> gives its memory, any
/// other argument nothing.
template <class T> const DeviceMemory *bufferOf(const T &) { return nullptr; }
template <class T> const DeviceMemory *bufferOf(const DeviceBuffer<T> &b) { return &b.memory(); }
inline const DeviceMemory *bufferOf(const DeviceMemory &m) { return &m; }

class TunedKernel {
public:
  /// The config space of the kernel's @autotune decorator. `constexprs` fixes
  /// constexprs no config sets (a dtype); `options` is what every config is
  /// applied to. Throws tessera::Error with the diagnostics when the source
  /// has errors, or when the kernel has no @autotune decorator.
  TunedKernel(Context &ctx, const std::string &path, const std::string &kernel,
              std::map<std::string, ConstexprValue> constexprs = {}, JitOptions options = {},
              TunedKernelOptions tuning = {});
  /// An explicit space (a kernel without the decorator, or another space).
  TunedKernel(Context &ctx, const std::string &path, const std::string &kernel, ConfigSpace space,
              std::map<std::string, ConstexprValue> constexprs = {}, JitOptions options = {},
              TunedKernelOptions tuning = {});
  ~TunedKernel();
  TunedKernel(TunedKernel &&) noexcept;
  TunedKernel &operator=(TunedKernel &&) noexcept;

  /// The grid of a launch, which usually depends on the config's tile sizes.
  using GridFn = std::function<Grid(const Config &)>;

  /// Picks the config for the arguments' key values (tuning on a miss, with
  /// these arguments) and launches the kernel compiled for it.
  template <class... Args>
  void launch(const Stream &stream, const GridFn &grid, const Args &...args) {
    launchWithArgs(stream, grid, makeArgs(args...), {bufferOf(args)...});
  }
  /// `buffers`: per argument, its memory when known (else null); may be empty.
  void launchWithArgs(const Stream &stream, const GridFn &grid, const std::vector<ArgValue> &args,
                      const std::vector<const DeviceMemory *> &buffers = {},
                      const LaunchOptions &options = {});

  /// The config a launch with these arguments uses (tuning on a miss).
  template <class... Args> Config configFor(const GridFn &grid, const Args &...args) {
    return configForArgs(grid, makeArgs(args...), {bufferOf(args)...});
  }
  Config configForArgs(const GridFn &grid, const std::vector<ArgValue> &args,
                       const std::vector<const DeviceMemory *> &buffers = {});

  /// The tuning key of a launch with these arguments.
  TuningKey keyFor(const std::vector<ArgValue> &args) const;
  const ConfigSpace &space() const;
  /// The kernel's signature (with KernelParam::written from the front end).
  const KernelSignature &signature() const;
  TunedKernelStats stats() const;
  /// How the last key this object resolved was resolved.
  TuningDecision lastDecision() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace tessera

#endif
