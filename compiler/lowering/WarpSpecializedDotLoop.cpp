// Warp specialization of pipelined dot loops (DotLoopEmitter's ws pieces)
// and persistent tile loops; see docs/performance.md section 4.
#include "DotLoopEmitter.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::lowering::detail {

Value DotLoopEmitter::mbar(int which, Value slot) {
  return arith::AddIOp::create(
      b_, loc, smemAddr,
      arith::AddIOp::create(b_, loc, c32(totalBytes + which * 8 * S),
                            arith::MulIOp::create(b_, loc, slot, c32(8))));
}

Value DotLoopEmitter::parityOf(Value j, int64_t bias) {
  return arith::AndIOp::create(
      b_, loc, arith::AddIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, j, c32(S)), c32(bias)),
      c32(1));
}

void DotLoopEmitter::mbarWait(Value bar, Value parity) {
  asmCall({}, {bar, parity},
          "{\n.reg .pred p;\nWAIT_${:uid}:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
          "@!p bra.uni WAIT_${:uid};\n}",
          "r,r,~{memory}");
}

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
      // and the TMA thread's expect_tx arrival (its bytes landed).
      int64_t fullCount = (anyCpAsync() ? P : 0) + (anyTma() ? 1 : 0) + bRuns;
      asmCall({}, {mbar(0, c32(q)), c32(fullCount)}, "mbarrier.init.shared::cta.b64 [$0], $1;",
              "r,r,~{memory}");
      asmCall({}, {mbar(1, c32(q)), c32(opts_.numWarps)}, "mbarrier.init.shared::cta.b64 [$0], $1;",
              "r,r,~{memory}");
    }
  }
  kl_.barrier(loc);
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
  mbarWait(mbar(1, slot), parityOf(gj, 1));
  if (anyTma() && !anyCpAsync()) {
    issueTma(j, gj, mbar(0, slot));
  } else if (anyTma()) {
    scf::IfOp first = kl_.makeIf(
        arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, ptid, c32(0)), false, loc);
    OpBuilder::InsertionGuard g1(b_);
    b_.setInsertionPointToStart(first.thenBlock());
    issueTma(j, gj, mbar(0, slot));
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
                                      arith::AndIOp::create(b_, loc, kl_.tid(), c32(31)), c32(0));
  // Lane 0 of each consumer warp releases running iteration g's stage (its
  // wgmmas are complete: the wait before is warp-collective).
  auto release = [&](Value cond, Value g) {
    scf::IfOp rel = kl_.makeIf(arith::AndIOp::create(b_, loc, cond, lane0), false, loc);
    OpBuilder::InsertionGuard ig(b_);
    b_.setInsertionPointToStart(rel.thenBlock());
    asmCall({}, {mbar(1, slotOf(g))}, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}");
  };
  bool ok = emitUnrolledLoop(acc0, accs, [&](Value i, SmallVector<Value> &a) {
    Value gi = arith::AddIOp::create(b_, loc, base, i);
    mbarWait(mbar(0, slotOf(gi)), parityOf(gi, 0));
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

// A persistent matmul: an outer loop over output tiles (each block takes
// tiles program_id, program_id + num_programs, ...) whose body is index
// arithmetic, one pipelined dot loop, then stores. Warp-specialized across
// tiles: the outer loop is lowered twice, for the producer warpgroup (index
// arithmetic and copies, the stores skipped) and for the consumers (wgmmas
// and epilogue), with ring slots and mbarrier phases continuing from tile to
// tile. The producers run into the next tile while the consumers store the
// last, which hides the epilogue and the pipeline's fill.
std::optional<bool> KernelLowering::lowerPersistentDotLoop(scf::ForOp outer) {
  if (!opts_.warpSpecialize || !target_.hasWgmma() || (opts_.numWarps != 4 && opts_.numWarps != 8) ||
      outer->getParentOp() != src_.getOperation() || touchedMemory_ || smem_.used() ||
      outer.getNumResults())
    return std::nullopt;
  Block &body = *outer.getBody();
  scf::ForOp inner;
  for (Operation &o : body.without_terminator()) {
    if (auto f = dyn_cast<scf::ForOp>(o)) {
      if (inner)
        return std::nullopt;
      inner = f;
    } else if (isa<tile::StoreOp>(o)) {
      if (!inner)
        return std::nullopt;
    } else if (!isMemoryEffectFree(&o)) {
      return std::nullopt;
    }
  }
  if (!inner)
    return std::nullopt;
  std::optional<DotLoop> m = matchDotLoop(inner);
  if (!m)
    return std::nullopt;
  std::optional<WgmmaKind> kind = wgmmaKindOf(m->dot);
  if (!kind)
    return std::nullopt;
  markColumnMajorB(axis(), *m, m->dot.getA().getType().getElementTypeBitWidth() / 8);
  // The epilogue stages its stores in shared memory of its own (the stages
  // are busy with the next tile): room for the widest store.
  int64_t epilogueBytes = 0;
  for (Operation *o = inner->getNextNode(); o; o = o->getNextNode())
    if (auto st = dyn_cast<tile::StoreOp>(o))
      if (auto rt = dyn_cast<RankedTensorType>(st.getValue().getType()); rt && rt.getRank() == 2)
        epilogueBytes = std::max(epilogueBytes, rt.getDimSize(0) * epiloguePitch(rt));
  Location loc = outer.getLoc();
  // The first that fits: tf32 as C^T where it applies, the largest
  // power-of-two ring (see lowerPipelinedDotLoop), room for the staged
  // epilogue (or, failing all, none: the epilogue then stores from registers).
  auto fits = [&](int stages, bool swapPath, int64_t reserve) {
    DotLoopEmitter e(*this, b_, opts_, smem_, vals_, inner, *m, *kind, stages, /*wgmma=*/true, swapPath, /*ws=*/true);
    e.persistent = true;
    return e.applies() && smem_.used() + 1024 + e.allocBytes() + reserve + 16 <= smem_.limit();
  };
  std::optional<std::pair<int, bool>> pick;
  for (int64_t reserve : {epilogueBytes, int64_t(0)})
    for (bool swapPath : {true, false})
      for (int stages = opts_.numStages; stages >= 3 && !pick; --stages)
        if (!(stages & (stages - 1)) &&
            dotPathAllowed(swapPath ? DotPath::Swapped : DotPath::Wgmma, *kind,
                           /*wgmmaTarget=*/true, m->kMajorB()) &&
            fits(stages, swapPath, reserve))
          pick = std::pair{stages, swapPath};
  if (!pick)
    return std::nullopt;
  DotLoopEmitter e(*this, b_, opts_, smem_, vals_, inner, *m, *kind, pick->first, /*wgmma=*/true, pick->second, /*ws=*/true);
  e.persistent = true;
  if (!e.applies()) // as in fits(); it also plans the TMA operands
    return std::nullopt;
  remark(outer, "persistent dot loop: " + e.summary());
  e.allocate();
  e.wsSetup();
  if (!e.addTensorMaps())
    return false;
  Value lb = scalarOf(outer.getLowerBound()), ub = scalarOf(outer.getUpperBound()),
        st = scalarOf(outer.getStep());
  // One role's copy of the outer loop, carrying the running iteration count.
  auto roleLoop = [&](bool producer) -> bool {
    Value zero = i32c(0, loc);
    auto loop = scf::ForOp::create(b_, loc, lb, ub, st, ValueRange{zero});
    OpBuilder::InsertionGuard g(b_);
    enterLoopBody(loop);
    bindScalar(outer.getInductionVar(), loop.getInductionVar());
    Value base = loop.getRegionIterArgs()[0];
    pushScope();
    bool after = false, ok = true;
    for (Operation &o : body.without_terminator()) {
      if (&o == inner.getOperation()) {
        e.emitTripCount();
        ok = e.emitAdvances();
        if (ok && producer) {
          ok = e.wsProducer(base);
        } else if (ok) {
          SmallVector<Value> acc0 = materializeIn(inner.getInitArgs()[m->accIndex], e.accLayout(), loc);
          SmallVector<Value> accs;
          ok = e.wsConsumer(acc0, accs, base, /*releaseLast=*/true);
          if (ok)
            e.bindResults(accs);
        }
        after = true;
      } else if (!(producer && after)) { // producers skip the epilogue
        ok = lowerOp(&o);
      }
      if (!ok)
        break;
    }
    if (ok)
      scf::YieldOp::create(b_, loc, ValueRange{arith::AddIOp::create(b_, loc, base, e.tripCount())});
    popScope();
    return ok;
  };
  {
    scf::IfOp role = makeIf(e.isProducer(), false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(role.thenBlock());
    e.producerRegs();
    // Only TMA copies: one thread walks the tiles, the rest of the warpgroup
    // goes straight to the exit below.
    if (!e.anyCpAsync()) {
      scf::IfOp one = makeIf(
          arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, tid_, i32c(threads_, loc)), false, loc);
      OpBuilder::InsertionGuard g1(b_);
      b_.setInsertionPointToStart(one.thenBlock());
      if (!roleLoop(true))
        return false;
    } else if (!roleLoop(true)) {
      return false;
    }
    sideEffectAsm({}, {}, "exit;", "~{memory}", loc);
  }
  e.consumerRegs();
  return roleLoop(false);
}

} // namespace tessera::lowering::detail
