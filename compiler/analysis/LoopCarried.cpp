#include "analysis/LoopCarried.h"

#include "Passes.h"
#include "analysis/DotPath.h"
#include "analysis/Layout.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tessera::analysis {

namespace {

// 32-bit registers a thread holds for a value of type `t` in its layout.
int64_t registersOf(Type t, int64_t threads) {
  auto bits = [](Type e) -> int64_t {
    if (isa<tile::PtrType>(e))
      return 64;
    return e.isIntOrFloat() ? e.getIntOrFloatBitWidth() : 32;
  };
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt)
    return (bits(t) + 31) / 32;
  Layout l = layoutOfType(rt, threads);
  return (l.slots() * bits(rt.getElementType()) + 31) / 32;
}

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto rt = dyn_cast<RankedTensorType>(t);
  Type e = rt ? rt.getElementType() : t;
  if (isa<tile::PtrType>(e))
    os << "ptr";
  else
    e.print(os);
  if (rt) {
    os << "[";
    for (int64_t i = 0; i < rt.getRank(); ++i)
      os << (i ? ", " : "") << rt.getDimSize(i);
    os << "]";
  }
  return s;
}

} // namespace

std::vector<std::string> loopCarriedReport(func::FuncOp fn, int64_t numWarps) {
  std::vector<std::string> lines;
  int64_t threads = 32 * numWarps;
  fn.walk([&](Operation *op) {
    ValueRange carried;
    if (auto f = dyn_cast<scf::ForOp>(op))
      carried = f.getRegionIterArgs();
    else if (auto w = dyn_cast<scf::WhileOp>(op))
      carried = w.getBeforeArguments();
    else
      return;
    auto names = op->getAttrOfType<ArrayAttr>(kCarriedNamesAttr);
    // A while loop from a `for` with `break` carries its induction variable first.
    size_t skip = names && carried.size() > names.size() ? carried.size() - names.size() : 0;
    if (names && (skip > 1 || names.size() + skip != carried.size()))
      names = nullptr; // a pass rebuilt the loop with other arguments: no names
    std::string items;
    int64_t total = 0;
    bool anyTile = false;
    auto forOp = dyn_cast<scf::ForOp>(op);
    for (size_t i = skip; i < carried.size(); ++i) {
      Type t = carried[i].getType();
      // A pointer tile advanced by a uniform step is recomputed in each
      // iteration from its start (when that is index arithmetic), not carried.
      if (forOp && advancesUniformly(forOp, unsigned(i)))
        continue;
      anyTile |= isa<RankedTensorType>(t);
      std::string name = names ? cast<StringAttr>(names[i - skip]).str() : "";
      if (!name.empty() && name[0] == '%')
        continue; // the front end's own flags (break)
      if (name.empty())
        name = "value " + std::to_string(i - skip);
      int64_t regs = registersOf(t, threads);
      total += regs;
      items += (items.empty() ? "" : ", ") + name + " " + typeName(t) + " " +
               std::to_string(regs) + (regs == 1 ? " register" : " registers");
    }
    if (!anyTile)
      return;
    lines.push_back(sourcePrefix(op->getLoc()) + "loop carries, per thread of " +
                    std::to_string(numWarps) + " warps: " + items + " (about " +
                    std::to_string(total) + " in all)");
  });
  return lines;
}

} // namespace tessera::analysis
