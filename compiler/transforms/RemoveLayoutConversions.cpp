// tessera-remove-layout-conversions: every tgpu.convert_layout between
// register layouts costs a round trip through shared memory and a barrier.
// Layout assignment puts one on each side of every dot; this pass removes
// those that need not exist:
//   - chains and identities fold, and splats are rebuilt in the target layout
//     (ConvertLayoutOp's folder and canonicalization patterns);
//   - a loop-carried tile that the body only uses converted to layout L, and
//     yields converted from L, is carried in L (the accumulator of a dot
//     loop stays in its mma layout across iterations);
//   - a conversion out of an mma layout moves below the elementwise ops that
//     consume it (their splat operands are rebuilt in the mma layout), so
//     the epilogue (scaling, casting) runs on the accumulator's registers;
//     when the conversion has other users it stays for them, and the ops
//     move only if their result is just stored;
//   - a store takes its value in any layout (pointers and masks are index
//     arithmetic, evaluated at whatever coordinates the value's registers
//     hold), so a conversion feeding a store disappears.
#include "Passes.h"

#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERAREMOVELAYOUTCONVERSIONS
#include "Passes.h.inc"

namespace {

using tgpu::ConvertLayoutOp;

Value convertTo(OpBuilder &b, Location loc, Type type, Value v) {
  return ConvertLayoutOp::create(b, loc, type, v);
}

struct CarryInConvertedLayout : OpRewritePattern<scf::ForOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::ForOp loop, PatternRewriter &rewriter) const override {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      if (!isa<RankedTensorType>(arg.getType()) || arg.use_empty())
        continue;
      Type carried;
      bool onlyConverted = llvm::all_of(arg.getUsers(), [&](Operation *user) {
        auto cv = dyn_cast<ConvertLayoutOp>(user);
        if (!cv || (carried && cv.getType() != carried))
          return false;
        carried = cv.getType();
        return true;
      });
      auto fromCarried = yield.getOperand(i).getDefiningOp<ConvertLayoutOp>();
      if (!onlyConverted || !fromCarried || fromCarried.getSrc().getType() != carried)
        continue;
      OpOperand &init = loop.getInitArgsMutable()[i];
      rewriter.setInsertionPoint(loop);
      Value newInit = convertTo(rewriter, loop.getLoc(), carried, init.get());
      // The casts it inserts (carried -> old inside, old -> carried at the
      // yield) meet the existing conversions and fold away.
      SmallVector<Value> results =
          scf::replaceAndCastForOpIterArg(rewriter, loop, init, newInit, convertTo);
      rewriter.replaceOp(loop, results);
      return success();
    }
    return failure();
  }
};

/// The tile as a splat in `type`'s layout, when it is one (else null).
Value splatIn(PatternRewriter &rewriter, Location loc, Value v, RankedTensorType type) {
  SplatElementsAttr splat;
  if (matchPattern(v, m_Constant(&splat)) || v.getDefiningOp<tile::SplatOp>())
    return convertTo(rewriter, loc, type, v); // folds or canonicalizes into a splat
  return {};
}

/// Whether every use of `v` is the value of a store, directly or through
/// single-result elementwise ops (a few levels deep).
bool onlyStored(Value v, int depth) {
  if (depth > 8 || v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto st = dyn_cast<tile::StoreOp>(user)) {
      if (use.get() != st.getValue())
        return false;
      continue;
    }
    if (!OpTrait::hasElementwiseMappableTraits(user) || user->getNumResults() != 1 ||
        user->getNumRegions() || !onlyStored(user->getResult(0), depth + 1))
      return false;
  }
  return true;
}

struct SinkConversionThroughElementwise : RewritePattern {
  SinkConversionThroughElementwise(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!OpTrait::hasElementwiseMappableTraits(op) || op->getNumResults() != 1 ||
        op->getNumRegions())
      return failure();
    auto resTy = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resTy || resTy.getEncoding())
      return failure();
    // The mma layout to compute in: that of a conversion feeding op, when op
    // is its only user, or when op's result only flows (through elementwise
    // ops) into stores: then no conversion is needed on that path at all,
    // while the conversion stays for its other users.
    tgpu::MmaEncodingAttr mma;
    for (Value v : op->getOperands())
      if (auto cv = v.getDefiningOp<ConvertLayoutOp>())
        if (auto enc = tgpu::mmaEncodingOf(cv.getSrc().getType());
            enc && (cv->hasOneUse() || onlyStored(op->getResult(0), 0))) {
          mma = enc;
          break;
        }
    if (!mma)
      return failure();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t) {
        operands.push_back(v);
        continue;
      }
      auto inMma = tgpu::withEncoding(t, mma);
      if (auto cv = v.getDefiningOp<ConvertLayoutOp>(); cv && cv.getSrc().getType() == inMma) {
        operands.push_back(cv.getSrc());
      } else if (Value s = splatIn(rewriter, op->getLoc(), v, inMma)) {
        operands.push_back(s);
      } else {
        return failure(); // another register tile: converting it would cost the same
      }
    }
    Operation *inner = rewriter.clone(*op);
    inner->setOperands(operands);
    inner->getResult(0).setType(tgpu::withEncoding(resTy, mma));
    rewriter.replaceOpWithNewOp<ConvertLayoutOp>(op, resTy, inner->getResult(0));
    return success();
  }
};

struct StoreInAnyLayout : OpRewritePattern<tile::StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::StoreOp store, PatternRewriter &rewriter) const override {
    auto cv = store.getValue().getDefiningOp<ConvertLayoutOp>();
    if (!cv || !tgpu::mmaEncodingOf(cv.getSrc().getType()))
      return failure();
    rewriter.modifyOpInPlace(store, [&] { store.getValueMutable().assign(cv.getSrc()); });
    return success();
  }
};

struct RemoveLayoutConversionsPass
    : impl::TesseraRemoveLayoutConversionsBase<RemoveLayoutConversionsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    ConvertLayoutOp::getCanonicalizationPatterns(patterns, ctx);
    patterns.add<CarryInConvertedLayout, SinkConversionThroughElementwise, StoreInAnyLayout>(ctx);
    // Only layout-related ops are rewritten or folded: the rest of the kernel
    // (already canonicalized) stays as it is, constants where they are.
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      auto tileResult = [&] {
        return op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType());
      };
      if (isa<ConvertLayoutOp, scf::ForOp, tile::StoreOp>(op) ||
          (OpTrait::hasElementwiseMappableTraits(op) && tileResult()))
        ops.push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    config.enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      signalPassFailure();
    // Splat constants left without users by rematerialization.
    getOperation().walk([](arith::ConstantOp c) {
      if (c->use_empty() && isa<RankedTensorType>(c.getType()))
        c->erase();
    });
  }
};

} // namespace

} // namespace tessera
