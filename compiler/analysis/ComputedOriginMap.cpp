// Operand tiles that TMA boxes load from computed origins (ComputedOriginMap.h).
#include "analysis/ComputedOriginMap.h"

#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

namespace tessera::analysis {
using namespace mlir;

namespace {

/// The integer every element of `v` holds, when it is a constant.
std::optional<int64_t> uniformConstant(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.getSExtValue();
  DenseElementsAttr d;
  if (matchPattern(v, m_Constant(&d)) && d.isSplat() && isa<IntegerType>(d.getElementType()))
    return d.getSplatValue<APInt>().getSExtValue();
  if (auto sp = v.getDefiningOp<tile::SplatOp>())
    return uniformConstant(sp.getSrc());
  return std::nullopt;
}

/// How much `v` (an integer or pointer tile) grows from one index to the next
/// along axis `ax` inside every aligned group of `g` indices, when that is
/// one constant: 0 where the axis info finds it constant in such groups, 1
/// where contiguous, and sums and constant multiples of those.
std::optional<int64_t> stepAlong(Value v, int64_t ax, int64_t g, const AxisInfoAnalysis &axis) {
  auto rt = dyn_cast<RankedTensorType>(v.getType());
  if (!rt || rt.getDimSize(ax) == 1)
    return 0; // a scalar, or one index along the axis: the same throughout
  AxisInfo ai = axis.get(v);
  if (ai.rank() == rt.getRank()) {
    if (ai.constancy[ax] % g == 0)
      return 0;
    if (ai.contiguity[ax] % g == 0)
      return 1;
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (isa<tile::SplatOp>(op))
    return 0;
  if (isa<tile::BroadcastOp, tgpu::ConvertLayoutOp, tile::HintOp, arith::ExtSIOp, arith::ExtUIOp,
          arith::TruncIOp>(op))
    return stepAlong(op->getOperand(0), ax, g, axis);
  if (auto ex = dyn_cast<tile::ExpandDimsOp>(op)) // the new axis has one index (above)
    return stepAlong(ex.getSrc(), ax < int64_t(ex.getAxis()) ? ax : ax - 1, g, axis);
  if (isa<tile::AddPtrOp, arith::AddIOp, arith::SubIOp>(op)) {
    std::optional<int64_t> a = stepAlong(op->getOperand(0), ax, g, axis),
                           b = stepAlong(op->getOperand(1), ax, g, axis);
    if (!a || !b)
      return std::nullopt;
    return isa<arith::SubIOp>(op) ? *a - *b : *a + *b;
  }
  if (isa<arith::MulIOp>(op)) {
    for (int i = 0; i < 2; ++i)
      if (std::optional<int64_t> k = uniformConstant(op->getOperand(1 - i)))
        if (std::optional<int64_t> s = stepAlong(op->getOperand(i), ax, g, axis))
          return *s * *k;
  }
  return std::nullopt;
}

/// The kernel argument a pointer tile is an offset from.
std::optional<unsigned> baseArgument(Value p, Block &entry) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(p)) {
      if (arg.getOwner() != &entry || !isa<tile::PtrType>(arg.getType()))
        return std::nullopt;
      return arg.getArgNumber();
    }
    Operation *op = p.getDefiningOp();
    if (auto ap = dyn_cast_or_null<tile::AddPtrOp>(op))
      p = ap.getPtr();
    else if (op && isa<tile::SplatOp, tile::BroadcastOp, tile::ExpandDimsOp, tgpu::ConvertLayoutOp,
                       tile::HintOp>(op))
      p = op->getOperand(0);
    else
      return std::nullopt;
  }
}

} // namespace

std::optional<ComputedOriginOperand> analyzeComputedOrigin(tile::LoadOp ld, int64_t eb, int64_t boxCols,
                                                           int64_t maxRows, Block &entry,
                                                           const AxisInfoAnalysis &axis,
                                                           std::string &whyNot) {
  auto no = [&](const std::string &why) -> std::optional<ComputedOriginOperand> {
    whyNot = why;
    return std::nullopt;
  };
  auto rt = dyn_cast<RankedTensorType>(ld.getType());
  if (!rt || rt.getRank() != 2)
    return no("not a 2-D tile");
  // A box copies every element of its rows and columns: nothing to mask.
  if (ld.getMask())
    return no("a masked load (a computed origin needs an unmasked one)");
  Value ptr = ld.getPtr();
  std::optional<unsigned> base = baseArgument(ptr, entry);
  if (!base)
    return no("the pointer tile is not an offset from a pointer argument");
  AxisInfo pa = axis.get(ptr);
  if (pa.rank() != 2 || pa.contiguity[1] % boxCols)
    return no("rows are not contiguous in runs of " + std::to_string(boxCols) + " elements");
  int64_t rows = rt.getDimSize(0);
  for (int64_t g = std::min(rows, maxRows); g >= 8; g /= 2) {
    if (rows % g)
      continue;
    std::optional<int64_t> s = stepAlong(ptr, 0, g, axis);
    if (!s)
      continue;
    if (*s <= 0 || (*s * eb) % 16)
      return no("the row stride (" + std::to_string(*s) +
                " elements) is not a positive multiple of 16 bytes");
    return ComputedOriginOperand{*base, *s, g};
  }
  return no("rows are not a constant stride apart in groups of 8 or more");
}

} // namespace tessera::analysis
