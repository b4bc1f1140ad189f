// Rows that share their alignment (RowAlignment.h).
#include "analysis/RowAlignment.h"

#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tessera::analysis {
using namespace mlir;

namespace {

/// The same value in every row: a scalar, a tile of one row, or constant
/// along axis 0.
bool sameInEveryRow(Value v, const AxisInfoAnalysis &axis) {
  auto rt = dyn_cast<RankedTensorType>(v.getType());
  if (!rt)
    return true;
  if (rt.getRank() != 2)
    return false;
  if (rt.getDimSize(0) == 1)
    return true;
  AxisInfo ai = axis.get(v);
  return ai.rank() == 2 && ai.constancy[0] >= rt.getDimSize(0);
}

/// An integer offset term whose row-to-row differences are multiples of
/// `elems` in every column.
bool termKeepsAlignment(Value t, int64_t elems, const AxisInfoAnalysis &axis) {
  if (sameInEveryRow(t, axis))
    return true;
  Operation *op = t.getDefiningOp();
  if (op && isa<arith::AddIOp, arith::SubIOp>(op))
    return termKeepsAlignment(op->getOperand(0), elems, axis) &&
           termKeepsAlignment(op->getOperand(1), elems, axis);
  if (op && isa<tile::BroadcastOp, tgpu::ConvertLayoutOp>(op))
    return termKeepsAlignment(op->getOperand(0), elems, axis);
  // Every element a multiple of `elems`: each is the start of its own run
  // along the rows (contiguity 1), so the divisibility holds for all.
  AxisInfo ai = axis.get(t);
  return ai.rank() == 2 && ai.contiguity[0] == 1 && ai.divisibility[0] % elems == 0;
}

} // namespace

bool rowsShareAlignment(Value ptr, int64_t eb, int64_t bytes, const AxisInfoAnalysis &axis) {
  if (bytes % eb)
    return false;
  int64_t elems = bytes / eb;
  Value v = ptr;
  while (true) {
    if (sameInEveryRow(v, axis))
      return true; // the base (or what is left of it) is the same in every row
    Operation *op = v.getDefiningOp();
    if (!op)
      return false;
    if (isa<tile::BroadcastOp, tgpu::ConvertLayoutOp, tile::HintOp>(op)) {
      v = op->getOperand(0);
      continue;
    }
    auto ap = dyn_cast<tile::AddPtrOp>(op);
    if (!ap || !termKeepsAlignment(ap.getOffset(), elems, axis))
      return false;
    v = ap.getPtr();
  }
}

} // namespace tessera::analysis
