// Which accumulator layout each dot's lowering produces, decided ahead of the
// lowering for tessera-assign-layouts. It follows lowerPipelinedDotLoop's
// order of preference (tf32 as C^T = B^T A^T, then wgmma, then mma.sync; a
// transposed B takes wgmma only) over what the tile shapes, the target, the
// stage count, operand contiguity and the ring's size at 3 stages decide, and
// the unpipelined lowering (mma.sync for 16-bit operands, else FMA in the
// blocked layout) elsewhere. What only the lowering knows (whether the
// carried pointers start from index arithmetic, shared memory used before the
// loop) can still send a loop down a later path; its result then keeps its
// actual layout, uses that need the assigned one convert, and the lowering
// remarks on it. test_layout_assignment.cpp checks the two agree.
#include "analysis/DotLayoutPlan.h"
#include "analysis/DotPath.h"

namespace tessera::analysis {
using namespace mlir;

struct DotLayoutPlanner::Impl {
  AxisInfoAnalysis axis;
  CompileOptions opts;
};

DotLayoutPlanner::DotLayoutPlanner(Operation *kernel, const CompileOptions &options)
    : impl_(new Impl{AxisInfoAnalysis(kernel), options}) {}

DotLayoutPlanner::~DotLayoutPlanner() = default;

tgpu::MmaEncodingAttr DotLayoutPlanner::choose(tile::DotOp dot) {
  const CompileOptions &opts = impl_->opts;
  Target target = opts.resolvedTarget();
  MLIRContext *ctx = dot.getContext();
  auto at = dot.getA().getType(), bt = dot.getB().getType();
  int64_t BM = at.getDimSize(0), BK = at.getDimSize(1), BN = bt.getDimSize(1);
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  std::optional<DotLoop> m = loop ? matchDotLoop(loop) : std::nullopt;
  std::optional<WgmmaKind> kind = wgmmaKindOf(dot);
  int64_t eb = at.getElementType().getIntOrFloatBitWidth() / 8;
  // The copies move 16-byte chunks of rows: both operands contiguous along them.
  bool contiguous = m && rowsContiguous(impl_->axis, m->loadA, eb) &&
                    rowsContiguous(impl_->axis, m->loadB, eb);
  if (target.hasCpAsync() && opts.numStages >= 3 && m && m->dot == dot && kind &&
      contiguous) {
    bool wgmmaTarget = isWgmmaTarget(target, opts.numWarps);
    for (DotPath path : {DotPath::Swapped, DotPath::Wgmma, DotPath::MmaSync}) {
      if (!dotPathAllowed(path, *kind, wgmmaTarget, bool(m->transB)))
        continue;
      // The lowering tries down to 3 stages; the ring must fit at that depth.
      if (1024 + ringBytes(path == DotPath::Swapped, BM, BN, BK, eb, 3) > target.maxSharedBytesPerBlock())
        continue;
      if (dotTileWhyNot(path, kind->half, BM, BN, BK, eb, opts.numWarps, bool(m->transB)).empty())
        return tgpu::MmaEncodingAttr::get(ctx, path == DotPath::MmaSync ? 2 : 3, opts.numWarps,
                                          path == DotPath::Swapped);
    }
  }
  if (unpipelinedMmaLayout(dot, opts.numWarps))
    return tgpu::MmaEncodingAttr::get(ctx, 2, opts.numWarps, false);
  return {};
}

} // namespace tessera::analysis
