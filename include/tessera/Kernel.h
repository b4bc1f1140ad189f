// Kernel: a loaded function plus its signature and launch configuration,
// with a typed, checked variadic launch:
//
//   kernel.launch(ctx.stream(), Grid::of(cdiv(n, 1024)), x, y, out, int32_t(n));
//
// Every argument is converted to an ArgValue (see LaunchArgs.h for the exact
// type mapping) and checked against the signature; a mismatch throws
// tessera::Error before anything is launched.
//
// A Kernel from tessera::compile on a GPU specializes at launch (see
// docs/api.md): the values of its i32/i64 arguments select a variant compiled
// for the facts they satisfy (== 1, multiple of 16), built on first use and
// shared between copies of the Kernel.
#ifndef TESSERA_KERNEL_H
#define TESSERA_KERNEL_H

#include "tessera/LaunchArgs.h"
#include "tessera/Memory.h"
#include "tessera/Module.h"
#include "tessera/Stream.h"
#include "tessera/Types.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace tessera {

struct LaunchConfig {
  unsigned numWarps = 4;        // block = numWarps * 32 threads
  size_t sharedMemoryBytes = 0; // dynamic shared memory per block
  /// TMA tensor maps the function takes after its arguments, built at each
  /// launch from the argument values (a kernel that does not specialize).
  std::vector<TensorMapSpec> tensorMaps;
  /// A persistent kernel (CompileResult::persistentKernels): the most blocks
  /// the device holds at once. A launch runs min(grid.x, residentBlocks /
  /// (grid.y * grid.z)) blocks along x (at least 1) and passes grid.x after
  /// the arguments. 0: not persistent.
  unsigned residentBlocks = 0;
  /// Programs per cluster along x (CompileOptions::clusterSize): a launch's
  /// grid.x must be a multiple of it.
  unsigned clusterSize = 1;
};

/// Facts about the integer arguments of one launch, by parameter name
/// (parameters without a fact are left out).
using ArgFacts = std::map<std::string, ArgFact>;

namespace detail {
/// One compiled variant of a specializing kernel.
struct KernelVariant {
  Function function;
  size_t sharedMemoryBytes = 0;
  /// Warps of the launched block when the code needs more than num_warps
  /// (a warp-specialized loop adds producer warps); 0: num_warps.
  unsigned blockWarps = 0;
  /// TMA tensor maps the kernel takes after its arguments, built at launch.
  std::vector<TensorMapSpec> tensorMaps;
  /// As LaunchConfig::residentBlocks (0: not persistent).
  unsigned residentBlocks = 0;
};

/// The blocks of `function` that `function`'s device holds at once
/// (its SMs times the blocks per SM that registers, shared memory and
/// threads allow), at least 1: the grid of a persistent launch.
unsigned residentBlocks(const Function &function, unsigned threads, size_t dynamicSharedBytes);

/// The grid a persistent launch of `grid` runs: x clamped so that all blocks
/// (x times y times z) make about one wave of `residentBlocks`, at least 1.
Grid persistentGrid(Grid grid, unsigned residentBlocks);

/// The variants of a specializing kernel, by fact set; built on a miss with
/// `build`. Thread-safe. The key is 2 bits per i32/i64 parameter (the first
/// 32 of them; later ones are never specialized), so a hit costs no allocation.
class VariantTable {
public:
  using Builder = std::function<KernelVariant(const ArgFacts &)>;
  VariantTable(const KernelSignature &signature, Builder build);
  /// The key of `args`, which checkLaunchArgs accepted.
  uint64_t keyOf(const std::vector<ArgValue> &args) const;
  ArgFacts factsOf(uint64_t key) const;
  /// The variant for `key`, built on a miss. The reference stays valid for
  /// the table's lifetime.
  const KernelVariant &get(uint64_t key);
  /// The fact sets of the variants built so far.
  std::vector<ArgFacts> built() const;

private:
  std::vector<uint32_t> params_; // indices of the specializable parameters
  std::vector<std::string> names_;
  std::vector<bool> wide_;       // i64 (else i32)
  Builder build_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, KernelVariant> variants_;
};
} // namespace detail

class Kernel {
public:
  Kernel() = default;
  Kernel(Function function, KernelSignature signature, LaunchConfig config = {});
  /// A kernel that specializes at launch: `config.sharedMemoryBytes` is
  /// ignored, every variant has its own.
  Kernel(std::shared_ptr<detail::VariantTable> variants, KernelSignature signature,
         LaunchConfig config);

  bool valid() const { return function_.valid() || variants_ != nullptr; }
  const KernelSignature &signature() const { return signature_; }
  /// For a specializing kernel sharedMemoryBytes is 0: see variantFor().
  const LaunchConfig &config() const { return config_; }
  /// The loaded function. For a specializing kernel: the variant without
  /// facts (built on first use), which is not what every launch runs; use
  /// variantFor(args) for a launch's own.
  const Function &function() const;
  Block block() const { return Block{config_.numWarps * 32u, 1, 1}; }

  /// True when launches pick a variant from the integer argument values.
  bool specializes() const { return variants_ != nullptr; }
  /// The function and shared memory a launch with `args` uses (built on a
  /// miss). Checks `args` against the signature.
  detail::KernelVariant variantFor(const std::vector<ArgValue> &args) const;
  /// The fact sets of the variants built so far (one empty set for a kernel
  /// that does not specialize).
  std::vector<ArgFacts> builtVariants() const;

  template <class... Args> void launch(const Stream &stream, Grid grid, const Args &...args) const {
    launchWithArgs(stream, grid, makeArgs(args...));
  }
  /// Checks `args` against the signature (checkLaunchArgs), picks the
  /// variant for their values when the kernel specializes, then launches.
  void launchWithArgs(const Stream &stream, Grid grid, const std::vector<ArgValue> &args,
                      const LaunchOptions &options = {}) const;

private:
  Function function_;
  std::shared_ptr<detail::VariantTable> variants_;
  KernelSignature signature_;
  LaunchConfig config_;
};

/// ceil(a / b), for grid sizes.
/// Ceiling division of positive integers of any (possibly different) types.
template <class A, class B> constexpr std::common_type_t<A, B> cdiv(A a, B b) {
  using T = std::common_type_t<A, B>;
  return (T(a) + T(b) - 1) / T(b);
}

} // namespace tessera

#endif
