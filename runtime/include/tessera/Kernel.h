// Kernel: a loaded function plus its signature and launch configuration,
// with a typed, checked variadic launch:
//
//   kernel.launch(ctx.stream(), Grid::of(cdiv(n, 1024)), x, y, out, int32_t(n));
//
// Every argument is converted to an ArgValue (see LaunchArgs.h for the exact
// type mapping) and checked against the signature; a mismatch throws
// tessera::Error before anything is launched.
#ifndef TESSERA_KERNEL_H
#define TESSERA_KERNEL_H

#include "tessera/LaunchArgs.h"
#include "tessera/Memory.h"
#include "tessera/Module.h"
#include "tessera/Stream.h"
#include "tessera/Types.h"

#include <type_traits>
#include <vector>

namespace tessera {

struct LaunchConfig {
  unsigned numWarps = 4;        // block = numWarps * 32 threads
  size_t sharedMemoryBytes = 0; // dynamic shared memory per block
};

class Kernel {
public:
  Kernel() = default;
  Kernel(Function function, KernelSignature signature, LaunchConfig config = {});

  bool valid() const { return function_.valid(); }
  const KernelSignature &signature() const { return signature_; }
  const LaunchConfig &config() const { return config_; }
  const Function &function() const { return function_; }
  Block block() const { return Block{config_.numWarps * 32u, 1, 1}; }

  template <class... Args> void launch(const Stream &stream, Grid grid, const Args &...args) const {
    launchWithArgs(stream, grid, makeArgs(args...));
  }
  /// Checks `args` against the signature (checkLaunchArgs), then launches.
  void launchWithArgs(const Stream &stream, Grid grid, const std::vector<ArgValue> &args) const;

private:
  Function function_;
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
