#include "tilegpu/TileGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace tessera::tgpu;

#define GET_OP_CLASSES
#include "tilegpu/TileGPUOps.cpp.inc"

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  // A conversion of a conversion starts from the original layout.
  if (auto inner = getSrc().getDefiningOp<ConvertLayoutOp>()) {
    if (inner.getSrc().getType() == getType())
      return inner.getSrc();
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  // A splat constant is the same constant in any layout.
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getSrc()))
    return SplatElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  return {};
}

namespace {
// tile.splat of a scalar computes every element alike: splat in the target layout.
struct SplatInTargetLayout : OpRewritePattern<ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertLayoutOp op, PatternRewriter &rewriter) const override {
    auto splat = op.getSrc().getDefiningOp<tessera::tile::SplatOp>();
    if (!splat)
      return failure();
    rewriter.replaceOpWithNewOp<tessera::tile::SplatOp>(op, op.getType(), splat.getSrc());
    return success();
  }
};
} // namespace

void ConvertLayoutOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<SplatInTargetLayout>(ctx);
}
