// How many blocks of a kernel fit on one streaming multiprocessor at once,
// from its block size, registers and shared memory and the target's limits
// (the CUDA occupancy rules: registers are allocated per warp in units of
// 256, shared memory per block in units of 128 bytes plus the 1 KiB the
// runtime reserves per block on sm_80 and later).
//
//   tessera::Occupancy o = tessera::occupancy(*tessera::Target::parse("sm_90a"), 256, 78, 64);
//   // o.blocksPerSM == 3, o.warpsPerSM == 24, o.fraction() == 0.375, o.limitedBy == "registers"
//
// `tessera compile --emit=resources` prints it for every kernel.
#ifndef TESSERA_OCCUPANCY_H
#define TESSERA_OCCUPANCY_H

#include "tessera/CompileOptions.h"

#include <cstdint>
#include <string>

namespace tessera {

/// One SM's limits for a compute capability.
struct SMLimits {
  int64_t maxThreads = 2048;        ///< resident threads
  int64_t maxBlocks = 32;           ///< resident blocks
  int64_t registers = 65536;        ///< 32-bit registers
  int64_t sharedBytes = 233472;     ///< shared memory usable by blocks
  int64_t reservedPerBlock = 1024;  ///< shared memory the runtime takes per block
};
/// The limits of `target`'s SM (sm_70 .. sm_120; others get sm_90's).
SMLimits smLimits(const Target &target);

struct Occupancy {
  int64_t blocksPerSM = 0;
  int64_t warpsPerSM = 0;
  int64_t maxWarpsPerSM = 0;
  /// What bounds blocksPerSM: "threads", "blocks", "registers" or "shared
  /// memory" (the first of them that binds), or "does not fit" when one block
  /// exceeds a limit by itself.
  std::string limitedBy;
  double fraction() const { return maxWarpsPerSM ? double(warpsPerSM) / double(maxWarpsPerSM) : 0; }
};

/// Occupancy of blocks of `threads` threads using `registers` per thread and
/// `sharedBytes` of shared memory (static + dynamic) per block.
Occupancy occupancy(const Target &target, int64_t threads, int64_t registers, int64_t sharedBytes);

} // namespace tessera

#endif
