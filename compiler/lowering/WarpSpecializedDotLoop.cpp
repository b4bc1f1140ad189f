// Warp specialization of pipelined dot loops (DotLoopEmitter's ws pieces);
// see docs/performance.md section 4. PersistentTileLoop.cpp drives the same
// pieces across the tiles of a persistent loop.
#include "DotLoopEmitter.h"

namespace tessera::lowering::detail {

bool DotLoopEmitter::emitWarpSpecialized(ValueRange acc0, SmallVector<Value> &accs) {
  wsSetup();
  {
    scf::IfOp role = kl_.makeIf(isProducer(), false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(role.thenBlock());
    producerRegs();
    if (anyCpAsync()) {
      if (!wsProducer(c32(0)))
        return false;
    } else {
      // Only TMA copies: one thread issues them, the rest of the warpgroup exits.
      scf::IfOp one = kl_.makeIf(
          arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, kl_.tid(), c32(kl_.threads())),
          false, loc);
      OpBuilder::InsertionGuard g1(b_);
      b_.setInsertionPointToStart(one.thenBlock());
      if (!wsProducer(c32(0)))
        return false;
    }
    asmCall({}, {}, "exit;", "~{memory}");
  }
  consumerRegs();
  return wsConsumer(acc0, accs, c32(0), /*releaseLast=*/false);
}

Value DotLoopEmitter::isProducer() {
  return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::uge, kl_.tid(), c32(kl_.threads()));
}

void DotLoopEmitter::wsSetup() {
  Value first = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, kl_.tid(), c32(0));
  {
    scf::IfOp init = kl_.makeIf(first, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(init.thenBlock());
    for (int64_t q = 0; q < S; ++q) {
      // `full` completes with the cp.async arrivals of every producer thread
      // and the TMA thread's expect_tx arrival (its bytes landed), plus one
      // a shifted run copied by cp.async (the thread that publishes its
      // shift; the TMA thread publishes before its own arrival).
      int64_t fullCount = (anyCpAsync() ? P : 0) + (anyTma() ? 1 : 0) + (bBulk ? 0 : bRuns);
      kl_.mbarrierInit(mbar(0, c32(q)), fullCount, loc);
      // With A multicast, every CTA's consumers release every CTA's stage.
      kl_.mbarrierInit(mbar(1, c32(q)), opts_.numWarps * std::max<int64_t>(1, multicastA), loc);
    }
    if (multicastA)
      asmCall({}, {}, "fence.mbarrier_init.release.cluster;", "~{memory}");
  }
  if (multicastA) { // no CTA copies into, or arrives at, another's barriers before they exist
    asmCall({}, {}, "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;",
            "~{memory}");
    clusterRank = asmCall({i32}, {}, "mov.u32 $0, %cluster_ctarank;", "=r").getResult(0);
    for (int64_t k = 1; k < multicastA; ++k)
      peerRanks.push_back(arith::RemUIOp::create(
          b_, loc, arith::AddIOp::create(b_, loc, clusterRank, c32(k)), c32(multicastA)));
  } else {
    kl_.barrier(loc);
  }
  kl_.addProducerWarps(4, moveRegs() ? 168 : 0);
}

void DotLoopEmitter::producerRegs() {
  if (moveRegs())
    asmCall({}, {}, "setmaxnreg.dec.sync.aligned.u32 " + std::to_string(kProducerRegs) + ";", "~{memory}");
}

void DotLoopEmitter::consumerRegs() {
  if (moveRegs())
    asmCall({}, {}, "setmaxnreg.inc.sync.aligned.u32 " + std::to_string(kConsumerRegs) + ";", "~{memory}");
  kl_.syncConsumersOnly();
}

bool DotLoopEmitter::wsProducer(Value base) {
  auto loop = scf::ForOp::create(b_, loc, c32(0), n, c32(1));
  OpBuilder::InsertionGuard g(b_);
  kl_.enterLoopBody(loop);
  Value j = loop.getInductionVar();
  Value gj = arith::AddIOp::create(b_, loc, base, j);
  ptid = arith::SubIOp::create(b_, loc, kl_.tid(), c32(kl_.threads()));
  Value slot = slotOf(gj);
  kl_.mbarrierWait(mbar(1, slot), parityOf(gj, 1), loc);
  if (anyTma() && !anyCpAsync()) {
    if (!issueTma(j, gj, mbar(0, slot)))
      return false;
  } else if (anyTma()) {
    scf::IfOp first = kl_.makeIf(
        arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, ptid, c32(0)), false, loc);
    OpBuilder::InsertionGuard g1(b_);
    b_.setInsertionPointToStart(first.thenBlock());
    if (!issueTma(j, gj, mbar(0, slot)))
      return false;
  }
  // The cp.async copies need the iteration's addresses and masks (TMA boxes
  // need only their origins).
  if (anyCpAsync()) {
    bool ok = bindIteration(j) && (tmaA || issueCopy(m_.loadA, aStage(gj), aPlacement())) &&
              (tmaB || (swap ? issueCopy(m_.loadB, rawStage(gj),
                                         [this](Value r, Value colByte) { return rowMajorRaw(r, colByte); }, gj)
                             : issueCopy(m_.loadB, bStage(gj), bPlacement())));
    vals_.popScope();
    if (!ok)
      return false;
    asmCall({}, {mbar(0, slot)}, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];", "r,~{memory}");
  }
  scf::YieldOp::create(b_, loc);
  ptid = Value();
  return true;
}

bool DotLoopEmitter::wsConsumer(ValueRange acc0, SmallVector<Value> &accs, Value base, bool releaseLast) {
  Value rowBytes = swap ? swapFragOffset() : wgRowBytes();
  Value lane0 = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq,
                                      kl_.laneId(loc), c32(0));
  // Lane 0 of each consumer warp releases running iteration g's stage (its
  // wgmmas are complete: the wait before is warp-collective).
  auto release = [&](Value cond, Value g) {
    scf::IfOp rel = kl_.makeIf(arith::AndIOp::create(b_, loc, cond, lane0), false, loc);
    OpBuilder::InsertionGuard ig(b_);
    b_.setInsertionPointToStart(rel.thenBlock());
    kl_.mbarrierArrive(mbar(1, slotOf(g)), loc);
    if (multicastA)
      releaseRemote(g);
  };
  bool ok = emitUnrolledLoop(acc0, accs, [&](Value i, SmallVector<Value> &a) {
    Value gi = arith::AddIOp::create(b_, loc, base, i);
    kl_.mbarrierWait(mbar(0, slotOf(gi)), parityOf(gi, 0), loc);
    // cp.async copies are generic-proxy writes; wgmma reads through the
    // async proxy (TMA writes through it already).
    if (anyCpAsync())
      asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
    if (swap)
      issueSwapWgmmas(gi, rowBytes, bShiftedFragOffsets(gi), a);
    else
      issueWgmmas(gi, rowBytes, a);
    a = waitAcc(a, 1);
    release(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ugt, i, c32(0)),
            arith::SubIOp::create(b_, loc, gi, c32(1)));
    return true;
  });
  if (!ok)
    return false;
  accs = waitAcc(accs, 0);
  if (releaseLast)
    release(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sgt, n, c32(0)),
            arith::SubIOp::create(b_, loc, arith::AddIOp::create(b_, loc, base, n), c32(1)));
  return true;
}

} // namespace tessera::lowering::detail
