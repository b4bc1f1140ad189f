// tessera-hoist-guarded-loads: a load in one branch of an scf.if is issued
// before the branch when the program accesses the same addresses on every
// path anyway (Passes.td). Its latency then overlaps whatever decides the
// branch: in the layer-norm tutorial's backward, the partial sums load while
// the count that selects "first writer" is still in flight, one memory round
// trip less in the critical section of a spin lock.
#include "Passes.h"
#include "tile/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERAHOISTGUARDEDLOADS
#include "Passes.h.inc"

namespace {

/// Whether `v` is defined inside `op` (in one of its regions).
bool definedInside(Value v, Operation *op) {
  Region *r = v.getParentRegion();
  return r && op->isAncestor(r->getParentOp());
}

/// Ops that may stop the program before it reaches a later access: an
/// assert, inline assembly (a trap) and loops that may never end.
bool mayStop(Operation *op) {
  bool stops = false;
  op->walk([&](Operation *inner) {
    if (isa<tile::AssertOp, tile::InlineAsmOp, scf::WhileOp>(inner))
      stops = true;
  });
  return stops;
}

/// The pointer and mask of a tile.load or tile.store, or a null pointer.
std::pair<Value, Value> accessOf(Operation *op) {
  if (auto l = dyn_cast<tile::LoadOp>(op))
    return {l.getPtr(), l.getMask()};
  if (auto s = dyn_cast<tile::StoreOp>(op))
    return {s.getPtr(), s.getMask()};
  return {};
}

/// Whether the block of `level` accesses every address that `load` reads,
/// unconditionally: a load or store of the same pointer whose mask covers the
/// load's (the same mask, or none), before `level`, or after it when neither
/// `level` nor anything in between may stop the program.
bool touchedInBlockOf(tile::LoadOp load, Operation *level) {
  for (Operation &op : *level->getBlock()) {
    auto [ptr, mask] = accessOf(&op);
    if (ptr != load.getPtr() || (mask && mask != load.getMask()))
      continue;
    if (op.isBeforeInBlock(level))
      return true;
    bool reached = !mayStop(level);
    for (Operation *o = level->getNextNode(); o && o != &op; o = o->getNextNode())
      reached &= !mayStop(o);
    if (reached)
      return true;
  }
  return false;
}

/// Whether every path through `ifOp` touches the addresses `load` reads: in
/// the block of `ifOp`, or of an enclosing scf.if that every path from
/// `ifOp` reaches (nothing after `ifOp` in its block may stop the program).
bool addressesTouchedAnyway(tile::LoadOp load, scf::IfOp ifOp) {
  for (Operation *level = ifOp;;) {
    if (touchedInBlockOf(load, level))
      return true;
    Operation *parent = level->getParentOp();
    if (!isa<scf::IfOp>(parent))
      return false;
    for (Operation *o = level->getNextNode(); o; o = o->getNextNode())
      if (mayStop(o))
        return false;
    level = parent;
  }
}

/// Whether `ifOp`'s condition is computed from a value read from memory (a
/// load or an atomic): only then is there a wait to hide the load behind. A
/// condition known early (program ids, arguments) gains nothing, and its
/// other branch would only read more.
bool conditionWaitsOnMemory(scf::IfOp ifOp) {
  SmallVector<Value> work{ifOp.getCondition()};
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (isa<tile::LoadOp, tile::AtomicRMWOp, tile::AtomicCASOp>(def))
      return true;
    if (isMemoryEffectFree(def) && def->getNumRegions() == 0)
      llvm::append_range(work, def->getOperands());
  }
  return false;
}

/// Moves the loads of `ifOp`'s branches that qualify in front of it; true
/// when one moved.
bool hoistFrom(scf::IfOp ifOp) {
  if (!conditionWaitsOnMemory(ifOp))
    return false;
  bool moved = false;
  for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
    if (region->empty())
      continue;
    for (Operation &op : llvm::make_early_inc_range(region->front())) {
      auto load = dyn_cast<tile::LoadOp>(&op);
      if (!load) {
        if (isMemoryEffectFree(&op))
          continue;
        break; // a store, an atomic, a barrier...: later loads keep their place
      }
      if (load.getIsVolatile())
        break;
      // Weak loads may pass each other: one that stays does not stop the next.
      if (llvm::any_of(load->getOperands(), [&](Value v) { return definedInside(v, ifOp); }) ||
          !addressesTouchedAnyway(load, ifOp))
        continue;
      load->moveBefore(ifOp);
      moved = true;
    }
  }
  return moved;
}

struct HoistGuardedLoadsPass : impl::TesseraHoistGuardedLoadsBase<HoistGuardedLoadsPass> {
  void runOnOperation() override {
    // Inner ifs first (post-order); a load that left an inner if may leave
    // the outer one on the next round.
    bool changed = true;
    while (changed) {
      SmallVector<scf::IfOp> ifs;
      getOperation().walk([&](scf::IfOp op) { ifs.push_back(op); });
      changed = false;
      for (scf::IfOp op : ifs)
        changed |= hoistFrom(op);
    }
  }
};

} // namespace

} // namespace tessera
