// tessera-substitute-induction-variables: an integer that a loop carries and
// advances by a fixed amount each iteration becomes a function of the
// induction variable (Passes.td). A block pointer's offsets are such values
// (the front end carries them one by one); once they are written in terms of
// the induction variable, the loop carries only tiles, and the software
// pipeliner and the TMA analysis see the pointer arithmetic they know.
#include "Passes.h"
#include "analysis/LoopCarried.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERASUBSTITUTEINDUCTIONVARIABLES
#include "Passes.h.inc"

namespace {

/// `v` as an integer of type `to` (sign-extended or truncated).
Value castInt(OpBuilder &b, Location l, Value v, Type to) {
  unsigned from = v.getType().getIntOrFloatBitWidth(), want = to.getIntOrFloatBitWidth();
  if (from == want)
    return v;
  if (from < want)
    return arith::ExtSIOp::create(b, l, to, v);
  return arith::TruncIOp::create(b, l, to, v);
}

/// How far an iter_arg advances each iteration: a constant, or a value
/// defined outside the loop.
struct Advance {
  std::optional<int64_t> constant;
  Value invariant;
};

/// The advance of iter_arg `arg` of `loop` when the loop yields `arg + d`,
/// `d + arg` or `arg - c` (c a constant).
std::optional<Advance> advanceOf(scf::ForOp loop, BlockArgument arg, Value yielded) {
  Operation *def = yielded.getDefiningOp();
  Value other;
  bool negate = false;
  if (auto add = dyn_cast_or_null<arith::AddIOp>(def))
    other = add.getLhs() == arg ? add.getRhs() : add.getRhs() == arg ? add.getLhs() : Value();
  else if (auto sub = dyn_cast_or_null<arith::SubIOp>(def); sub && sub.getLhs() == arg)
    other = sub.getRhs(), negate = true;
  if (!other)
    return std::nullopt;
  APInt c;
  if (matchPattern(other, m_ConstantInt(&c)))
    return Advance{negate ? -c.getSExtValue() : c.getSExtValue(), Value()};
  if (!negate && loop.isDefinedOutsideOfLoop(other))
    return Advance{std::nullopt, other};
  return std::nullopt;
}

/// Rewrites the iter_args of `loop` (with a constant positive step) that
/// advance by a loop-invariant amount per iteration.
void substitute(scf::ForOp loop) {
  APInt stepC;
  if (!matchPattern(loop.getStep(), m_ConstantInt(&stepC)) || !stepC.isStrictlyPositive())
    return;
  int64_t step = stepC.getSExtValue();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  OpBuilder b(loop);
  Location l = loop.getLoc();
  Value iv = loop.getInductionVar();
  Type ivType = iv.getType();
  if (!ivType.isSignlessInteger())
    return;
  for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (!arg.getType().isSignlessInteger() || arg.getType().isInteger(1))
      continue;
    std::optional<Advance> adv = advanceOf(loop, arg, yield.getOperand(i));
    if (!adv)
      continue;
    // Iteration j (iv = lb + j * step) sees x0 + j * d. A constant d that is
    // a multiple of the step is (iv - lb) * (d / step); with step 1, any
    // invariant d is (iv - lb) * d.
    if (step != 1 && !(adv->constant && *adv->constant % step == 0))
      continue;
    Type t = arg.getType();
    Value init = loop.getInitArgs()[i];
    b.setInsertionPointToStart(loop.getBody());
    Value j = castInt(b, l, arith::SubIOp::create(b, l, iv, loop.getLowerBound()), t);
    auto constant = [&](int64_t v) {
      return Value(arith::ConstantOp::create(b, l, b.getIntegerAttr(t, v)));
    };
    Value perIv = adv->constant ? constant(*adv->constant / step) : adv->invariant;
    Value x = arith::AddIOp::create(b, l, init, arith::MulIOp::create(b, l, j, perIv));
    arg.replaceAllUsesWith(x);
    // After the loop: x0 + trips * d, trips = max(0, (ub - lb + step - 1) / step).
    Value result = loop.getResult(i);
    if (!result.use_empty()) {
      b.setInsertionPointAfter(loop);
      Value span = arith::SubIOp::create(b, l, loop.getUpperBound(), loop.getLowerBound());
      auto ivConstant = [&](int64_t v) {
        return Value(arith::ConstantOp::create(b, l, b.getIntegerAttr(ivType, v)));
      };
      Value up = arith::AddIOp::create(b, l, span, ivConstant(step - 1));
      Value trips = arith::MaxSIOp::create(
          b, l, arith::DivSIOp::create(b, l, up, ivConstant(step)), ivConstant(0));
      Value deltaT = adv->constant ? constant(*adv->constant) : adv->invariant;
      Value last = arith::AddIOp::create(b, l, init,
                                         arith::MulIOp::create(b, l, castInt(b, l, trips, t), deltaT));
      result.replaceAllUsesWith(last);
    }
    // The loop now passes the value through unchanged (dropped below).
    yield->setOperand(i, arg);
  }
}

/// Rebuilds `loop` without the iter_args it passes through unchanged (a
/// block pointer's base, extents and strides, and the offsets substituted
/// above): their uses read the initial values. The front end's names of the
/// carried variables (tile.carried) lose the same entries, so that they keep
/// naming the iter_args that remain.
void dropPassThroughs(scf::ForOp loop) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<unsigned> kept;
  for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (yield.getOperand(i) != arg) {
      kept.push_back(unsigned(i));
      continue;
    }
    arg.replaceAllUsesWith(loop.getInitArgs()[i]);
    loop.getResult(i).replaceAllUsesWith(loop.getInitArgs()[i]);
  }
  if (kept.size() == loop.getNumRegionIterArgs())
    return;
  OpBuilder b(loop);
  SmallVector<Value> inits;
  SmallVector<Attribute> names;
  auto oldNames = loop->getAttrOfType<ArrayAttr>(analysis::kCarriedNamesAttr);
  for (unsigned i : kept) {
    inits.push_back(loop.getInitArgs()[i]);
    if (oldNames && i < oldNames.size())
      names.push_back(oldNames[i]);
  }
  auto next = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(),
                                 loop.getStep(), inits);
  next->setAttrs(loop->getAttrs());
  if (oldNames && oldNames.size() == loop.getNumRegionIterArgs())
    next->setAttr(analysis::kCarriedNamesAttr, b.getArrayAttr(names));
  // The old body, with the kept iter_args mapped onto the new loop's.
  Block *body = next.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  SmallVector<Value> argMap{next.getInductionVar()};
  for (unsigned i = 0, k = 0; i < loop.getNumRegionIterArgs(); ++i)
    argMap.push_back(k < kept.size() && kept[k] == i ? Value(next.getRegionIterArgs()[k++])
                                                     : loop.getInitArgs()[i]);
  body->getOperations().splice(body->end(), loop.getBody()->getOperations());
  for (auto [old, now] : llvm::zip(loop.getBody()->getArguments(), argMap))
    old.replaceAllUsesWith(now);
  SmallVector<Value> yields;
  for (unsigned i : kept)
    yields.push_back(yield.getOperand(i));
  yield->setOperands(yields);
  for (auto [k, i] : llvm::enumerate(kept))
    loop.getResult(i).replaceAllUsesWith(next.getResult(k));
  loop.erase();
}

struct SubstituteInductionVariablesPass
    : impl::TesseraSubstituteInductionVariablesBase<SubstituteInductionVariablesPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) { // inner loops first
      substitute(loop);
      dropPassThroughs(loop);
    }
  }
};

} // namespace
} // namespace tessera
