// Persistent tile loops: each block computes output tiles program_id,
// program_id + num_programs, ... Each tile is index arithmetic, one pipelined
// dot loop, then stores. The loop is warp-specialized across tiles: it is
// lowered twice, for the producer warpgroup (index arithmetic and copies, the
// stores skipped) and for the consumers (wgmmas and epilogue), with ring slots
// and mbarrier phases continuing from tile to tile. The producers run into the
// next tile while the consumers store the last, which hides the epilogue and
// the pipeline's fill.
//
// Two forms take this path:
//  - a loop over tiles that the kernel writes itself (matmul_persistent.tile);
//  - a kernel that is one tile, indexed by program_id(0), as Triton's
//    tutorials write a matmul, with 16- or 8-bit operands
//    (CompileOptions::persistentLaunch). The lowering
//    wraps the kernel in the loop: program_id(0) becomes the loop's tile and
//    num_programs(0) the launched grid's x size, which the kernel takes as an
//    extra i32 parameter; the runtime launches at most one wave of blocks.
#include "DotLoopEmitter.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::lowering::detail {

namespace {

// The dot loop of one tile's ops: ops without memory effects, one scf.for,
// then stores and ops without memory effects. Null for any other form.
scf::ForOp tileDotLoop(Block &body) {
  scf::ForOp inner;
  for (Operation &o : body.without_terminator()) {
    if (auto f = dyn_cast<scf::ForOp>(o)) {
      if (inner)
        return {};
      inner = f;
    } else if (isa<tile::StoreOp>(o)) {
      if (!inner)
        return {};
    } else if (!isMemoryEffectFree(&o)) {
      return {};
    }
  }
  return inner;
}

// program_id(0) or num_programs(0): what a kernel-wide tile loop rebinds.
bool readsGridX(Operation *op) {
  if (auto p = dyn_cast<tile::ProgramIdOp>(op))
    return p.getAxis() == 0;
  if (auto n = dyn_cast<tile::NumProgramsOp>(op))
    return n.getAxis() == 0;
  return false;
}

} // namespace

std::optional<bool> KernelLowering::lowerPersistentDotLoop(scf::ForOp outer) {
  if (outer->getParentOp() != src_.getOperation() || outer.getNumResults())
    return std::nullopt;
  TileLoop t;
  t.body = outer.getBody();
  t.bounds = [this, outer]() mutable {
    return std::array<Value, 3>{scalarOf(outer.getLowerBound()), scalarOf(outer.getUpperBound()),
                                scalarOf(outer.getStep())};
  };
  t.bindTile = [this, outer](Value tile) mutable { bindScalar(outer.getInductionVar(), tile); };
  t.remarkAt = outer;
  t.remarkPrefix = "persistent dot loop: ";
  return lowerTileLoop(t);
}

std::optional<bool> KernelLowering::lowerKernelAsTileLoop() {
  // A persistent grid is one block an SM, whatever the clusters would need.
  if (!opts_.persistentLaunch || opts_.clusterSize > 1)
    return std::nullopt;
  Block &body = src_.getBody().front();
  // Every program_id(0) at the top level, where the loop rebinds it.
  bool nested = false;
  src_.walk([&](Operation *op) { nested |= readsGridX(op) && op->getBlock() != &body; });
  if (nested)
    return std::nullopt;
  Location loc = src_.getLoc();
  Value grid; // the launched grid's x size: the extra parameter
  TileLoop t;
  t.body = &body;
  t.bounds = [&] {
    grid = addGridParam(loc);
    return std::array<Value, 3>{NVVM::BlockIdXOp::create(b_, loc, b_.getI32Type()), grid,
                                NVVM::GridDimXOp::create(b_, loc, b_.getI32Type())};
  };
  t.rebinds = readsGridX;
  t.bindTile = [&](Value tile) {
    for (Operation &o : body.without_terminator())
      if (readsGridX(&o))
        bindScalar(o.getResult(0), isa<tile::ProgramIdOp>(o) ? tile : grid);
  };
  // tf32 kernels stay a block per program: ROAST's (tf32 as C^T, B^T through
  // registers) ran 2-4% slower persistent on an H200 (bench/NOTES.md).
  t.tf32 = false;
  t.remarkPrefix = "dot loop pipelined: ";
  t.remarkSuffix = "; launched persistent: a block per SM walks program_id(0) (the kernel takes the "
                   "grid's x size after its arguments)";
  return lowerTileLoop(t);
}

Value KernelLowering::addGridParam(Location loc) {
  unsigned idx = dst_.getNumArguments();
  if (failed(dst_.insertArgument(idx, b_.getI32Type(), DictionaryAttr::get(b_.getContext()), loc)))
    return Value();
  dst_->setAttr("tessera.persistent_grid", b_.getUnitAttr());
  return dst_.getArgument(idx);
}

std::optional<bool> KernelLowering::lowerTileLoop(const TileLoop &t) {
  if (!opts_.warpSpecialize || !target_.hasWgmma() || (opts_.numWarps != 4 && opts_.numWarps != 8) ||
      touchedMemory_ || smem_.used())
    return std::nullopt;
  Block &body = *t.body;
  scf::ForOp inner = tileDotLoop(body);
  if (!inner)
    return std::nullopt;
  std::optional<DotLoop> m = matchDotLoop(inner);
  if (!m)
    return std::nullopt;
  std::optional<WgmmaKind> kind = wgmmaKindOf(m->dot);
  if (!kind || (!t.tf32 && m->dot.getA().getType().getElementType().isF32()))
    return std::nullopt;
  markColumnMajorB(axis(), *m, m->dot.getA().getType().getElementTypeBitWidth() / 8);
  // The epilogue stages its stores in shared memory of its own (the stages
  // are busy with the next tile): room for the widest store.
  int64_t epilogueBytes = 0;
  for (Operation *o = inner->getNextNode(); o; o = o->getNextNode())
    if (auto st = dyn_cast<tile::StoreOp>(o))
      if (auto rt = dyn_cast<RankedTensorType>(st.getValue().getType()); rt && rt.getRank() == 2)
        epilogueBytes = std::max(epilogueBytes, rt.getDimSize(0) * epiloguePitch(rt));
  Location loc = t.remarkAt ? t.remarkAt->getLoc() : inner.getLoc();
  // The first that fits: tf32 as C^T where it applies, the largest ring
  // (any count of stages, as in lowerPipelinedDotLoop), room for the staged
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
        if (dotPathAllowed(swapPath ? DotPath::Swapped : DotPath::Wgmma, *kind,
                           /*wgmmaTarget=*/true, m->kMajorB()) &&
            fits(stages, swapPath, reserve))
          pick = std::pair{stages, swapPath};
  if (!pick)
    return std::nullopt;
  DotLoopEmitter e(*this, b_, opts_, smem_, vals_, inner, *m, *kind, pick->first, /*wgmma=*/true, pick->second, /*ws=*/true);
  e.persistent = true;
  if (!e.applies()) // as in fits(); it also plans the TMA operands
    return std::nullopt;
  remark(t.remarkAt ? t.remarkAt : inner.getOperation(), t.remarkPrefix + e.summary() + t.remarkSuffix);
  auto [lb, ub, st] = t.bounds(); // before the tensor maps: their parameters come last
  if (!ub)
    return fail(inner, "could not add the persistent grid parameter");
  e.allocate();
  e.wsSetup();
  if (!e.addTensorMaps())
    return false;
  // One role's copy of the tile loop, carrying the running iteration count.
  auto roleLoop = [&](bool producer) -> bool {
    Value zero = i32c(0, loc);
    auto loop = scf::ForOp::create(b_, loc, lb, ub, st, ValueRange{zero});
    OpBuilder::InsertionGuard g(b_);
    enterLoopBody(loop);
    t.bindTile(loop.getInductionVar());
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
      } else if (!(producer && after) && !(t.rebinds && t.rebinds(&o))) { // producers skip the epilogue
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
