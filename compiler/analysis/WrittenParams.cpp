// writtenPointerArguments: a backward walk from every store and atomic
// address to the kernel's arguments, through ops, loop-carried values and
// the results of structured control flow.
#include "analysis/WrittenParams.h"

#include "tile/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace tessera::analysis {
namespace {

class AddressWalk {
public:
  explicit AddressWalk(func::FuncOp kernel)
      : entry_(&kernel.getBody().front()), written_(kernel.getNumArguments(), false) {}

  void from(Value address) {
    worklist_.push_back(address);
    while (!worklist_.empty() && !giveUp_) {
      Value v = worklist_.pop_back_val();
      if (seen_.insert(v).second)
        visit(v);
    }
  }

  std::vector<bool> result(func::FuncOp kernel) const {
    std::vector<bool> out = written_;
    if (giveUp_)
      for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
        out[i] = isa<tile::PtrType>(getElementTypeOrSelf(kernel.getArgument(i).getType()));
    return out;
  }

private:
  void visit(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return visitBlockArgument(arg);
    Operation *def = v.getDefiningOp();
    unsigned index = cast<OpResult>(v).getResultNumber();
    // A loop's or branch's result is what its regions yield (and, for a
    // loop, what it starts with).
    if (auto loop = dyn_cast<scf::ForOp>(def)) {
      worklist_.push_back(loop.getInitArgs()[index]);
      worklist_.push_back(loop.getBody()->getTerminator()->getOperand(index));
      return;
    }
    if (isa<scf::IfOp, scf::WhileOp, scf::IndexSwitchOp>(def)) {
      for (Region &r : def->getRegions())
        for (Block &b : r)
          if (auto yield = dyn_cast<scf::YieldOp>(b.getTerminator()))
            worklist_.push_back(yield.getOperand(index));
      if (auto loop = dyn_cast<scf::WhileOp>(def))
        for (Value init : loop.getInits())
          worklist_.push_back(init);
      return;
    }
    if (def->getNumRegions() != 0) // an op with regions the walk does not know
      return void(giveUp_ = true);
    for (Value operand : def->getOperands())
      worklist_.push_back(operand);
  }

  void visitBlockArgument(BlockArgument arg) {
    Block *block = arg.getOwner();
    if (block == entry_)
      return void(written_[arg.getArgNumber()] = true);
    Operation *parent = block->getParentOp();
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      if (arg.getArgNumber() == 0) // the induction variable
        return;
      unsigned i = arg.getArgNumber() - 1;
      worklist_.push_back(loop.getInitArgs()[i]);
      worklist_.push_back(loop.getBody()->getTerminator()->getOperand(i));
      return;
    }
    if (auto loop = dyn_cast<scf::WhileOp>(parent)) {
      for (Value init : loop.getInits())
        worklist_.push_back(init);
      for (Value yielded : loop.getYieldOp()->getOperands())
        worklist_.push_back(yielded);
      for (Value forwarded : loop.getConditionOp().getArgs())
        worklist_.push_back(forwarded);
      return;
    }
    giveUp_ = true; // an unstructured block argument: assume the worst
  }

  Block *entry_;
  std::vector<bool> written_;
  SmallVector<Value> worklist_;
  llvm::DenseSet<Value> seen_;
  bool giveUp_ = false;
};

/// The arguments the addresses (operand 0) of the ops of types `Ops` derive from.
template <class... Ops> std::vector<bool> addressArguments(func::FuncOp kernel) {
  AddressWalk walk(kernel);
  kernel.walk([&](Operation *op) {
    if (isa<Ops...>(op))
      walk.from(op->getOperand(0));
  });
  return walk.result(kernel);
}

} // namespace

std::vector<bool> writtenPointerArguments(func::FuncOp kernel) {
  return addressArguments<tile::StoreOp, tile::AtomicRMWOp, tile::AtomicCASOp>(kernel);
}

std::vector<bool> readPointerArguments(func::FuncOp kernel) {
  return addressArguments<tile::LoadOp, tile::AtomicRMWOp, tile::AtomicCASOp>(kernel);
}

std::vector<bool> argumentsOfAddress(func::FuncOp kernel, Value address) {
  AddressWalk walk(kernel);
  walk.from(address);
  return walk.result(kernel);
}

} // namespace tessera::analysis
