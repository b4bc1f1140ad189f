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

// Whether the dot's product reaches, through elementwise ops and layout
// conversions, a reduction along its rows or another dot, or an operand of
// it is such a product: attention's softmax(Q K^T) V. Those dots take the
// wgmma accumulator layout even when not pipelined: warps split only rows,
// so a row's reduction stays within a quad of lanes, row vectors broadcast
// back from registers, and P is the next dot's A operand in registers.
static bool feedsRowsOrDot(tile::DotOp dot) {
  SmallVector<std::pair<Value, int>> work{{dot.getResult(), 0}};
  auto isProduct = [](Value a) {
    SmallVector<std::pair<Value, int>> back{{a, 0}};
    while (!back.empty()) {
      auto [v, depth] = back.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || depth > 16)
        continue;
      if (isa<tile::DotOp>(def))
        return true;
      if (OpTrait::hasElementwiseMappableTraits(def) || isa<tgpu::ConvertLayoutOp>(def))
        for (Value o : def->getOperands())
          if (isa<RankedTensorType>(o.getType()))
            back.push_back({o, depth + 1});
    }
    return false;
  };
  // A product as the second operand too: FlashAttention backward's
  // dQ^T = K^T dS^T, whose dS^T is staged from the registers of the softmax.
  if (isProduct(dot.getA()) || isProduct(dot.getB()))
    return true;
  while (!work.empty()) {
    auto [v, depth] = work.pop_back_val();
    if (depth > 16)
      continue;
    for (Operation *user : v.getUsers()) {
      if (auto red = dyn_cast<tile::ReduceOp>(user); red && red.getAxis() == 1)
        return true;
      if (auto d = dyn_cast<tile::DotOp>(user); d && (d.getA() == v || d.getB() == v))
        return true;
      if ((OpTrait::hasElementwiseMappableTraits(user) || isa<tgpu::ConvertLayoutOp>(user)) &&
          user->getNumResults() == 1 && isa<RankedTensorType>(user->getResult(0).getType()))
        work.push_back({user->getResult(0), depth + 1});
    }
  }
  return false;
}

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
  if (m)
    markColumnMajorB(impl_->axis, *m, eb);
  // Any operand layout pipelines: 16-byte chunks where rows are contiguous,
  // element by element where they are not (StageCopier).
  if (target.hasCpAsync() && opts.numStages >= 3 && m && m->dot == dot && kind) {
    bool wgmmaTarget = isWgmmaTarget(target, opts.numWarps);
    for (DotPath path : {DotPath::Swapped, DotPath::Wgmma, DotPath::MmaSync}) {
      if (!dotPathAllowed(path, *kind, wgmmaTarget, m->kMajorB()))
        continue;
      // The lowering tries down to 3 stages; the ring must fit at that depth.
      if (1024 + ringBytes(path == DotPath::Swapped, BM, BN, BK, eb, 3) > target.maxSharedBytesPerBlock())
        continue;
      if (dotTileWhyNot(path, kind->half, BM, BN, BK, eb, opts.numWarps, m->kMajorB()).empty())
        return tgpu::MmaEncodingAttr::get(ctx, path == DotPath::MmaSync ? 2 : 3, opts.numWarps,
                                          path == DotPath::Swapped);
    }
  }
  if (unpipelinedRowsLayout(dot, opts.numWarps) && feedsRowsOrDot(dot))
    return tgpu::MmaEncodingAttr::get(ctx, 3, opts.numWarps, false);
  if (unpipelinedMmaLayout(dot, opts.numWarps))
    return tgpu::MmaEncodingAttr::get(ctx, 2, opts.numWarps, false);
  return {};
}

} // namespace tessera::analysis
