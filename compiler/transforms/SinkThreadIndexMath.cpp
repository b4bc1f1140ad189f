// tessera-sink-thread-index-math: the lowering computes each layout's
// per-thread coordinates once, in the kernel's entry block (the same Value
// for every use, which is how values held at coordinates are found again).
// A kernel with two loops in sequence, or a long unrolled prologue, then
// keeps the coordinates that only later code reads live through it, and
// neither LLVM nor ptxas moves them back down: flash attention's backward at
// head dim 128 spilled 332 B at 64 x 128 tiles (108 B after this pass) and
// 36 and 56 B at 32 x 64 (none after).
//
// This pass moves each such value, in the function's top-level block, down
// to just before the first top-level op that (itself or inside its regions)
// uses it. Only pure, region-free ops move, and only those that read at most
// one value which is not a constant or a kernel parameter: moving an op can
// then only trade its result's live range for that one operand's, never add
// to the values live at any point.
#include "Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERASINKTHREADINDEXMATH
#include "Passes.h.inc"

namespace {

/// Whether `v` costs no register to keep: a constant, or a kernel parameter
/// (ptxas reads those from the parameter bank where they are used).
bool isFree(Value v, Block &entry) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &entry;
  return matchPattern(v, m_Constant());
}

constexpr int64_t kFarApart = 256; // top-level ops

bool isMovable(Operation &op, Block &entry) {
  if (op.getNumRegions() || op.getNumResults() == 0 || op.hasTrait<OpTrait::ConstantLike>() ||
      !isMemoryEffectFree(&op))
    return false;
  int live = 0;
  for (Value o : op.getOperands())
    live += !isFree(o, entry);
  return live <= 1;
}

/// The first op of `block` at or after `after` that is, or contains, a user
/// of `op`'s results; null when there is none.
Operation *firstUserIn(Block &block, Operation &op) {
  Operation *first = nullptr;
  for (Value r : op.getResults())
    for (Operation *user : r.getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (top && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
  return first;
}

/// Whether moving from `from` to `to` (one block) can shorten a live range
/// that ptxas would not shorten itself: a loop lies between them, or many
/// ops do (a tile's unrolled loads and stores; ptxas schedules within a
/// window). A few ops apart, registers went up as often as down (a 4-byte
/// spill appeared in adam8bit_step).
bool worthMoving(Operation *from, Operation *to) {
  int64_t between = 0;
  for (Operation *o = from->getNextNode(); o && o != to; o = o->getNextNode()) {
    if (isa<LoopLikeOpInterface>(o) || ++between >= kFarApart)
      return true;
  }
  return false;
}

struct SinkThreadIndexMathPass : impl::TesseraSinkThreadIndexMathBase<SinkThreadIndexMathPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) {
      if (fn.isExternal())
        return;
      Block &entry = fn.getBody().front();
      // Bottom-up, so that an op's users have moved before it does.
      SmallVector<Operation *> ops;
      for (Operation &op : entry)
        ops.push_back(&op);
      for (Operation *op : llvm::reverse(ops)) {
        if (!isMovable(*op, entry))
          continue;
        Operation *first = firstUserIn(entry, *op);
        if (first && op->isBeforeInBlock(first) && worthMoving(op, first))
          op->moveBefore(first);
      }
    });
  }
};

} // namespace
} // namespace tessera
