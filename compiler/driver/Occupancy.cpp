// The occupancy rules (include/tessera/Occupancy.h).
#include "tessera/Occupancy.h"

#include <algorithm>

namespace tessera {

SMLimits smLimits(const Target &t) {
  SMLimits l; // sm_90, sm_100: 2048 threads, 32 blocks, 228 KiB
  switch (t.sm) {
  case 70: case 72: l = {2048, 32, 65536, 96 * 1024, 0}; break;
  case 75: l = {1024, 16, 65536, 64 * 1024, 0}; break;
  case 80: case 87: l = {2048, 32, 65536, 164 * 1024, 1024}; break;
  case 86: l = {1536, 16, 65536, 100 * 1024, 1024}; break;
  case 89: l = {1536, 24, 65536, 100 * 1024, 1024}; break;
  case 120: case 121: l = {1536, 32, 65536, 100 * 1024, 1024}; break;
  default: break;
  }
  return l;
}

Occupancy occupancy(const Target &target, int64_t threads, int64_t registers, int64_t sharedBytes) {
  const SMLimits l = smLimits(target);
  Occupancy o;
  o.maxWarpsPerSM = l.maxThreads / 32;
  const int64_t warps = (std::max<int64_t>(threads, 1) + 31) / 32;
  // Registers go to warps in units of 256; shared memory to blocks in units of 128.
  const int64_t regsPerWarp = (std::max<int64_t>(registers, 1) * 32 + 255) / 256 * 256;
  const int64_t smemPerBlock = (sharedBytes + l.reservedPerBlock + 127) / 128 * 128;
  struct Bound {
    const char *what;
    int64_t blocks;
  };
  const Bound bounds[] = {
      {"threads", o.maxWarpsPerSM / warps},
      {"blocks", l.maxBlocks},
      {"registers", (l.registers / regsPerWarp) / warps},
      {"shared memory", smemPerBlock > 0 ? l.sharedBytes / smemPerBlock : l.maxBlocks},
  };
  o.blocksPerSM = l.maxBlocks;
  o.limitedBy = "blocks";
  for (const Bound &b : bounds)
    if (b.blocks < o.blocksPerSM) {
      o.blocksPerSM = b.blocks;
      o.limitedBy = b.what;
    }
  if (o.blocksPerSM == 0)
    o.limitedBy = "does not fit (" + o.limitedBy + ")";
  o.warpsPerSM = o.blocksPerSM * warps;
  return o;
}

} // namespace tessera
