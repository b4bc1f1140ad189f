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
//     hold), so a conversion feeding a store disappears; so does an atomic
//     whose old values are unused, from an mma layout.
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

/// The tensor-core layout (mma, or its row vector) that `v` is computed
/// from: a conversion out of one, or elementwise ops on one; else null.
Attribute registerLayoutOf(Value v, int depth) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return {};
  if (auto cv = dyn_cast<ConvertLayoutOp>(def)) {
    Type from = cv.getSrc().getType();
    if (tgpu::mmaEncodingOf(from) || tgpu::sliceEncodingOf(from))
      return cast<RankedTensorType>(from).getEncoding();
    return {};
  }
  if (!OpTrait::hasElementwiseMappableTraits(def) || def->getNumRegions())
    return {};
  for (Value o : def->getOperands())
    if (Attribute enc = registerLayoutOf(o, depth + 1))
      return enc;
  return {};
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
      // A tile the body computes in a tensor-core layout (the accumulator, a
      // softmax's running row max and sum) is carried in it even when the
      // body also reads it otherwise: those reads convert, and move into the
      // layout themselves when they are elementwise.
      auto argTy = cast<RankedTensorType>(arg.getType());
      if (argTy.getEncoding())
        continue; // carried in a layout already
      Attribute produced = registerLayoutOf(yield.getOperand(i), 0);
      if (produced && (!onlyConverted || !fromCarried)) {
        carried = tgpu::withEncoding(argTy, produced);
      } else if (!onlyConverted || !fromCarried || fromCarried.getSrc().getType() != carried) {
        continue;
      }
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

/// Whether `v` is index arithmetic (ranges, splats, constants, their
/// broadcasts and arithmetic): the lowering evaluates it at any coordinates,
/// so it is in every layout at no cost.
bool isIndexArithmetic(Value v, int depth) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 12)
    return false;
  if (isa<tile::MakeRangeOp, tile::SplatOp, arith::ConstantOp>(def))
    return true;
  if (!isa<tile::BroadcastOp, tile::ExpandDimsOp, tile::AddPtrOp>(def) &&
      !(OpTrait::hasElementwiseMappableTraits(def) && isMemoryEffectFree(def)))
    return false;
  for (Value o : def->getOperands())
    if (isa<RankedTensorType>(o.getType()) && !isIndexArithmetic(o, depth + 1))
      return false;
  return def->getNumRegions() == 0;
}

/// `v` as `type` (in layout `enc`, an mma layout) without a conversion
/// through shared memory, or null: `v` converted from that type, a splat,
/// index arithmetic, or a row vector of `enc` (tgpu.slice) expanded and
/// broadcast over the rows (`x - max(x, 1)[:, None]`).
Value inLayout(PatternRewriter &rewriter, Location loc, Value v, RankedTensorType type) {
  if (auto cv = v.getDefiningOp<ConvertLayoutOp>(); cv && cv.getSrc().getType() == type)
    return cv.getSrc();
  if (Value s = splatIn(rewriter, loc, v, type))
    return s;
  if (isIndexArithmetic(v, 0))
    return convertTo(rewriter, loc, type, v);
  // A vector expanded and broadcast over the rows (x[:, None]) or the
  // columns (x[None, :]) of an mma tile: the vector in the row or column
  // vector layout (tgpu.slice), which it is already in when it comes from a
  // reduction, and is otherwise converted to (a loaded vector is then loaded
  // in it: PullConversionIntoLoad).
  auto mma = tgpu::mmaEncodingOf(type);
  auto bc = v.getDefiningOp<tile::BroadcastOp>();
  auto ed = bc ? bc.getSrc().getDefiningOp<tile::ExpandDimsOp>() : tile::ExpandDimsOp();
  if (!mma || mma.getVersion() != 3 || mma.getTransposed() || !ed || type.getRank() != 2 ||
      ed.getSrc().getType().getRank() != 1)
    return {};
  unsigned axis = ed.getAxis();
  auto sliceEnc = tgpu::SliceEncodingAttr::get(rewriter.getContext(), axis == 1 ? 1 : 0, mma);
  auto vecTy = tgpu::withEncoding(ed.getSrc().getType(), sliceEnc);
  if (axis == 1 && type.getDimSize(0) % (64 * (mma.getWarps() / 4)))
    return {};
  if (axis == 0 && (type.getDimSize(1) % 8 || type.getDimSize(1) > 256))
    return {};
  Value vec = ed.getSrc();
  if (auto cv = vec.getDefiningOp<ConvertLayoutOp>(); cv && cv.getSrc().getType() == vecTy) {
    vec = cv.getSrc();
  } else if (vec.getType() != vecTy) {
    // Where the vector is defined: once before a loop that only reads it.
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointAfterValue(vec);
    vec = convertTo(rewriter, loc, vecTy, vec);
  }
  auto edType = tgpu::withEncoding(cast<RankedTensorType>(ed.getType()), mma);
  Value expanded = tile::ExpandDimsOp::create(rewriter, loc, edType, vec, ed.getAxisAttr());
  return tile::BroadcastOp::create(rewriter, loc, type, expanded);
}

/// `v` (a vector) computed directly in `type`'s layout, or null: index
/// arithmetic and splats (evaluated at any coordinates), and loads and
/// elementwise ops whose operands are (a load's pointers and mask are index
/// arithmetic, read at the layout's coordinates). Other users keep the
/// original (reading a vector twice costs little; a dead one is erased after
/// the rewrites).
Value rebuildIn(PatternRewriter &rewriter, Value v, RankedTensorType type, int depth) {
  Location loc = v.getLoc();
  if (depth > 6)
    return {};
  if (Value s = splatIn(rewriter, loc, v, type))
    return s;
  if (isIndexArithmetic(v, 0))
    return convertTo(rewriter, loc, type, v);
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumResults() != 1 || def->getNumRegions() ||
      !(isa<tile::LoadOp>(def) ||
        (OpTrait::hasElementwiseMappableTraits(def) && isMemoryEffectFree(def))))
    return {};
  SmallVector<Value> operands;
  for (Value o : def->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(o.getType());
    if (!t) {
      operands.push_back(o);
      continue;
    }
    Value in = rebuildIn(rewriter, o, tgpu::withEncoding(t, type.getEncoding()), depth + 1);
    if (!in)
      return {};
    operands.push_back(in);
  }
  Operation *inner = rewriter.clone(*def);
  inner->setOperands(operands);
  inner->getResult(0).setType(type);
  return inner->getResult(0);
}

/// A conversion into a row or column vector layout of a vector that is
/// loaded (and computed elementwise from what is loaded): loaded in that
/// layout instead, each thread reading the elements it holds, with no round
/// trip through shared memory.
struct PullConversionIntoLoad : OpRewritePattern<ConvertLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvertLayoutOp cv, PatternRewriter &rewriter) const override {
    if (!tgpu::sliceEncodingOf(cv.getType()) || cast<RankedTensorType>(cv.getSrc().getType()).getEncoding())
      return failure();
    Operation *def = cv.getSrc().getDefiningOp();
    if (!def || isa<ConvertLayoutOp>(def) || isIndexArithmetic(cv.getSrc(), 0))
      return failure();
    Value in = rebuildIn(rewriter, cv.getSrc(), cv.getType(), 0);
    if (!in)
      return failure();
    rewriter.replaceOp(cv, in);
    return success();
  }
};

/// A reduction along the rows of a tile converted out of the wgmma layout
/// reduces the registers themselves, into the layout's row vector.
struct ReduceIntoRows : OpRewritePattern<tile::ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::ReduceOp op, PatternRewriter &rewriter) const override {
    if (op.getAxis() != 1 || tgpu::sliceEncodingOf(op.getResult(0).getType()))
      return failure();
    tgpu::MmaEncodingAttr mma;
    SmallVector<Value> srcs;
    for (Value v : op.getSrcs()) {
      auto cv = v.getDefiningOp<ConvertLayoutOp>();
      auto enc = cv ? tgpu::mmaEncodingOf(cv.getSrc().getType()) : tgpu::MmaEncodingAttr();
      if (!enc || enc.getVersion() != 3 || enc.getTransposed() || (mma && enc != mma) ||
          cast<RankedTensorType>(v.getType()).getRank() != 2)
        return failure();
      mma = enc;
      srcs.push_back(cv.getSrc());
    }
    auto rows = tgpu::SliceEncodingAttr::get(op.getContext(), 1, mma);
    Operation *inner = rewriter.clone(*op);
    inner->setOperands(srcs);
    SmallVector<Value> back;
    for (OpResult r : inner->getResults()) {
      auto t = cast<RankedTensorType>(r.getType());
      r.setType(tgpu::withEncoding(t, rows));
      back.push_back(convertTo(rewriter, op.getLoc(), t, r));
    }
    rewriter.replaceOp(op, back);
    return success();
  }
};

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
    // A row vector (tgpu.slice) is a few registers: ops on it always move in.
    Attribute enc;
    for (Value v : op->getOperands())
      if (auto cv = v.getDefiningOp<ConvertLayoutOp>()) {
        Type from = cv.getSrc().getType();
        if (tgpu::sliceEncodingOf(from) ||
            (tgpu::mmaEncodingOf(from) && (cv->hasOneUse() || onlyStored(op->getResult(0), 0)))) {
          enc = cast<RankedTensorType>(from).getEncoding();
          break;
        }
      }
    if (!enc)
      return failure();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t) {
        operands.push_back(v);
        continue;
      }
      if (Value in = inLayout(rewriter, op->getLoc(), v, tgpu::withEncoding(t, enc)))
        operands.push_back(in);
      else
        return failure(); // another register tile: converting it would cost the same
    }
    Operation *inner = rewriter.clone(*op);
    inner->setOperands(operands);
    inner->getResult(0).setType(tgpu::withEncoding(resTy, enc));
    rewriter.replaceOpWithNewOp<ConvertLayoutOp>(op, resTy, inner->getResult(0));
    return success();
  }
};

struct StoreInAnyLayout : OpRewritePattern<tile::StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::StoreOp store, PatternRewriter &rewriter) const override {
    auto cv = store.getValue().getDefiningOp<ConvertLayoutOp>();
    if (!cv || !(tgpu::mmaEncodingOf(cv.getSrc().getType()) || tgpu::sliceEncodingOf(cv.getSrc().getType())))
      return failure();
    rewriter.modifyOpInPlace(store, [&] { store.getValueMutable().assign(cv.getSrc()); });
    return success();
  }
};

/// An atomic in a loop whose old values nobody reads takes its value in a
/// register layout as a store does: each thread updates the elements it holds
/// (an accumulator's adjacent pairs as one red.v2), with no round trip through
/// shared memory each iteration (FlashAttention backward's dQ^T partial sums).
/// Outside loops (an epilogue's scatter-add) the conversion stays: one round
/// trip, after which each warp adds whole rows (16-byte reds along a row)
/// rather than 8 rows of 8 bytes per instruction, or, in the transposed
/// accumulator of a tf32 C^T product, single elements. ROAST's dM at 512 x
/// 8192 x 8192 on an H200: 0.39 ms converted, 0.59 in the mma layout.
struct AtomicInAnyLayout : OpRewritePattern<tile::AtomicRMWOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tile::AtomicRMWOp op, PatternRewriter &rewriter) const override {
    auto cv = op.getValue().getDefiningOp<ConvertLayoutOp>();
    if (!op.getResult().use_empty() || !cv || !tgpu::mmaEncodingOf(cv.getSrc().getType()) ||
        !op->getParentOfType<scf::ForOp>())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getValueMutable().assign(cv.getSrc());
      op.getResult().setType(cv.getSrc().getType());
    });
    return success();
  }
};

struct RemoveLayoutConversionsPass
    : impl::TesseraRemoveLayoutConversionsBase<RemoveLayoutConversionsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    ConvertLayoutOp::getCanonicalizationPatterns(patterns, ctx);
    patterns.add<CarryInConvertedLayout, SinkConversionThroughElementwise, ReduceIntoRows,
                 StoreInAnyLayout, AtomicInAnyLayout, PullConversionIntoLoad>(ctx);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    config.enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Rounds until nothing changes: a rewrite can enable one on an op the
    // driver does not revisit (a conversion left with one user).
    for (int round = 0; round < 8; ++round) {
      // Only layout-related ops are rewritten or folded: the rest of the
      // kernel (already canonicalized) stays as it is, constants where they are.
      SmallVector<Operation *> ops;
      getOperation().walk([&](Operation *op) {
        bool tileResult =
            op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType());
        if (isa<ConvertLayoutOp, scf::ForOp, tile::StoreOp, tile::ReduceOp, tile::AtomicRMWOp>(op) ||
            (OpTrait::hasElementwiseMappableTraits(op) && tileResult))
          ops.push_back(op);
      });
      bool changed = false;
      if (failed(applyOpPatternsGreedily(ops, frozen, config, &changed)))
        return signalPassFailure();
      if (!changed)
        break;
    }
    // Conversions, expansions and splat constants left without users by the
    // rewrites (a dead conversion would still be lowered through shared memory),
    // and the loads and elementwise ops that PullConversionIntoLoad rebuilt in
    // a vector layout.
    for (bool erased = true; erased;) {
      erased = false;
      getOperation().walk([&](Operation *op) {
        // A load has no declared memory effects; an unused one that is not
        // volatile only reads.
        auto ld = dyn_cast<tile::LoadOp>(op);
        bool dead = ld ? !ld.getIsVolatile() && op->use_empty() : isOpTriviallyDead(op);
        if ((ld || OpTrait::hasElementwiseMappableTraits(op) ||
             isa<ConvertLayoutOp, tile::ExpandDimsOp, tile::BroadcastOp, tile::SplatOp,
                 arith::ConstantOp>(op)) &&
            op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType()) && dead) {
          op->erase();
          erased = true;
        }
      });
    }
  }
};

} // namespace

} // namespace tessera
