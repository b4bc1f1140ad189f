// Occupancy.h: blocks per SM from the block's threads, registers and shared
// memory, against values worked out by hand from the CUDA occupancy rules.
#include <catch2/catch.hpp>

#include "tessera/Occupancy.h"

using namespace tessera;

namespace {
Target target(const char *name) { return *Target::parse(name); }
} // namespace

TEST_CASE("occupancy: each limit binds where it should", "[occupancy]") {
  // 256 threads, 78 registers: 78 * 32 = 2496 -> 2560 a warp, 65536 / 2560 =
  // 25 warps, 3 blocks of 8.
  Occupancy o = occupancy(target("sm_90a"), 256, 78, 64);
  CHECK(o.blocksPerSM == 3);
  CHECK(o.warpsPerSM == 24);
  CHECK(o.maxWarpsPerSM == 64);
  CHECK(o.limitedBy == "registers");
  CHECK(o.fraction() == Approx(0.375));
  // Few registers, small blocks: 2048 / 128 = 16 blocks by threads.
  o = occupancy(target("sm_90"), 128, 16, 0);
  CHECK(o.blocksPerSM == 16);
  CHECK(o.limitedBy == "threads");
  // 32-thread blocks stop at 32 blocks an SM.
  o = occupancy(target("sm_90"), 32, 16, 0);
  CHECK(o.blocksPerSM == 32);
  CHECK(o.warpsPerSM == 32);
  CHECK(o.limitedBy == "blocks");
  // Shared memory: (100000 + 1024) rounded to 101120 a block; 233472 / 101120 = 2.
  o = occupancy(target("sm_90a"), 128, 32, 100000);
  CHECK(o.blocksPerSM == 2);
  CHECK(o.limitedBy == "shared memory");
  // The same block on sm_86 (100 KiB an SM) fits once, on sm_80 (164 KiB) once.
  CHECK(occupancy(target("sm_86"), 128, 32, 100000).blocksPerSM == 1);
  CHECK(occupancy(target("sm_80"), 128, 32, 100000).blocksPerSM == 1);
  CHECK(occupancy(target("sm_80"), 128, 32, 60000).blocksPerSM == 2);
}

TEST_CASE("occupancy: per-arch SM limits and a block that does not fit", "[occupancy]") {
  CHECK(smLimits(target("sm_86")).maxThreads == 1536);
  CHECK(smLimits(target("sm_89")).maxBlocks == 24);
  CHECK(smLimits(target("sm_75")).maxThreads == 1024);
  CHECK(smLimits(target("sm_80")).sharedBytes == 164 * 1024);
  // 1024 threads at 255 registers need 261120 registers: more than an SM has.
  Occupancy o = occupancy(target("sm_90"), 1024, 255, 0);
  CHECK(o.blocksPerSM == 0);
  CHECK(o.warpsPerSM == 0);
  CHECK(o.limitedBy == "does not fit (registers)");
  // Above the per-block limit of shared memory on the SM.
  CHECK(occupancy(target("sm_86"), 128, 32, 120 * 1024).limitedBy == "does not fit (shared memory)");
}

TEST_CASE("Target::maxSharedBytesPerBlock is each arch's opt-in limit", "[occupancy]") {
  CHECK(target("sm_90a").maxSharedBytesPerBlock() == 232448);
  CHECK(target("sm_100a").maxSharedBytesPerBlock() == 232448);
  CHECK(target("sm_80").maxSharedBytesPerBlock() == 166912);
  CHECK(target("sm_86").maxSharedBytesPerBlock() == 101376);
  CHECK(target("sm_89").maxSharedBytesPerBlock() == 101376);
  CHECK(target("sm_75").maxSharedBytesPerBlock() == 65536);
}
