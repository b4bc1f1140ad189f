// Ping-pong of a staged dot loop's two consumer warpgroups (FA3's order):
// see StagedDotLoopEmitter::pingPong and docs/architecture.md section 7;
// lit lowering/staged_dot_loop_ping_pong.tile.
#include "StagedDotLoop.h"

namespace tessera::lowering::detail {

bool StagedDotLoopEmitter::initPingPong() {
  if (!tma.empty() && !addTensorMaps())
    return false;
  wg = arith::DivUIOp::create(b_, loc, kl_.tid(), c32(128));
  ownTurn = add(wg, c32(2));
  otherTurn = arith::SubIOp::create(b_, loc, c32(3), wg);
  inIf(eq(kl_.tid(), 0), [&] {
    for (int64_t q = 0; q < S; ++q) {
      // Every thread's cp.async arrives on `full`; with TMA, thread 0's
      // expect_tx alone.
      kl_.mbarrierInit(mbar(0, c32(q)), tma.empty() ? kl_.threads() : 1, loc);
      kl_.mbarrierInit(mbar(1, c32(q)), opts_.numWarps, loc);
    }
  });
  kl_.barrier(loc);
  return true;
}

void StagedDotLoopEmitter::waitStageFull(Value it) {
  kl_.mbarrierWait(mbar(0, slotIndex(it)), parity(it, 0), loc);
  if (tma.empty()) // cp.async writes through the generic proxy
    asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
}

void StagedDotLoopEmitter::startPingPong() {
  asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
  kl_.barrier(loc);
  inIf(eq(wg, 1), [&] { asmCall({}, {}, "bar.arrive 2, 256;", "~{memory}"); });
}

void StagedDotLoopEmitter::releaseStage(Value it) {
  Value after0 = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ugt, it, c32(0));
  inIf(arith::AndIOp::create(b_, loc, eq(kl_.laneId(loc), 0), after0), [&] {
    kl_.mbarrierArrive(mbar(1, slotIndex(arith::SubIOp::create(b_, loc, it, c32(1)))), loc);
  });
}

void StagedDotLoopEmitter::finishPingPong() {
  // Warpgroup 1 arrived once more than warpgroup 0 waited.
  inIf(eq(wg, 0), [&] { asmCall({}, {}, "bar.sync 2, 256;", "~{memory}"); });
  kl_.barrier(loc);
  inIf(eq(kl_.tid(), 0), [&] {
    for (int64_t q = 0; q < 2 * S; ++q)
      asmCall({}, {add(base, c32(barsAt + 8 * q))}, "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}");
  });
}

} // namespace tessera::lowering::detail
