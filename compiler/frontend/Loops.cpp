// `for` and `while` loops. A run-time loop becomes scf.for (or scf.while);
// the variables its body assigns that exist before it are carried. A loop
// whose body may `break` becomes an scf.while that also stops once the break
// flag is set (LoopExits.cpp). static_range unrolls.
#include "analysis/LoopCarried.h"
#include "IRGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace tessera::fe {

bool IRGen::genFor(const Stmt &s) {
  const Expr &target = *s.targets[0];
  if (target.kind != ExprKind::Name) {
    fail(target.loc, "a for-loop variable must be a single name");
    return false;
  }
  const Expr &iter = *s.value;
  std::string kind = iter.kind == ExprKind::Call && iter.operands[0]->kind == ExprKind::Name
                         ? iter.operands[0]->str
                         : "";
  if (kind != "range" && kind != "static_range") {
    fail(iter.loc, "for loops iterate over range(...) or static_range(...)");
    return false;
  }
  if (!iter.keywords.empty()) {
    fail(iter.keywords[0].loc, kind + "() takes no keyword arguments");
    return false;
  }
  if (iter.args.empty() || iter.args.size() > 3) {
    fail(iter.loc, kind + "() takes 1 to 3 arguments, got " + std::to_string(iter.args.size()));
    return false;
  }
  std::vector<SemValue> bounds;
  for (const ExprPtr &a : iter.args) {
    SemValue v = genExpr(*a);
    if (!v.ok())
      return false;
    if (v.kind == SemValue::Bool)
      v = SemValue::ofInt(v.b);
    bool isInt = v.kind == SemValue::Int ||
                 (v.isRuntime() && !v.type.isTile() && !v.type.elem.isPointer() &&
                  !isFloat(v.type.elem.scalar));
    if (!isInt) {
      fail(a->loc, kind + "() bounds must be integers, got " + v.describe());
      return false;
    }
    bounds.push_back(v);
  }
  SemValue lo = bounds.size() >= 2 ? bounds[0] : SemValue::ofInt(0);
  SemValue hi = bounds.size() >= 2 ? bounds[1] : bounds[0];
  SemValue step = bounds.size() == 3 ? bounds[2] : SemValue::ofInt(1);
  Loc stepLoc = bounds.size() == 3 ? iter.args[2]->loc : iter.loc;

  if (kind == "static_range") {
    for (auto *v : {&lo, &hi, &step})
      if (v->kind != SemValue::Int) {
        fail(iter.loc, "static_range() bounds must be constexpr integers");
        return false;
      }
    if (step.i == 0) {
      fail(stepLoc, "static_range() step must not be zero");
      return false;
    }
    return genStaticRange(s, lo.i, hi.i, step.i, iter.loc);
  }
  if (step.kind == SemValue::Int && step.i == 0) {
    fail(stepLoc, "range() step must not be zero");
    return false;
  }
  return genRangeLoop(s, lo, hi, step, iter.loc);
}

bool IRGen::genStaticRange(const Stmt &s, int64_t lo, int64_t hi, int64_t step, Loc iterLoc) {
  const std::string &var = s.targets[0]->str;
  bool breaks = hasLoopExit(s.body, StmtKind::Break);
  bool continues = hasLoopExit(s.body, StmtKind::Continue);
  OuterLoopExits outer = enterLoop();
  if (breaks) // the flags exist before any run-time `if` that may set them
    frame().vars[kBreakFlag] = SemValue::ofBool(false);
  int64_t trips = 0;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
    if (++trips > 4096) {
      fail(iterLoc, "static_range() unrolls at most 4096 iterations");
      return false;
    }
    frame().vars[var] = SemValue::ofInt(i);
    frame().vars.erase(kContinueFlag);
    SemValue broke = iterationLeft(iterLoc); // only the break flag is left
    if (continues)
      frame().vars[kContinueFlag] = SemValue::ofBool(false);
    if (broke.kind == SemValue::Bool) {
      if (broke.b)
        break;
      if (!genBlock(s.body))
        return false;
    } else { // an earlier copy may have broken at run time: this one runs if not
      Location ml = loc(iterLoc);
      Value one = arith::ConstantOp::create(b_, ml, b_.getBoolAttr(true));
      Value stay = arith::XOrIOp::create(b_, ml, broke.value, one);
      if (!genRuntimeIf(stay, s.loc, [&] {
            frame().vars[kBreakFlag] = SemValue::ofBool(false);
            return genBlock(s.body);
          }, [] { return true; }))
        return false;
    }
    if (frame().returned)
      break;
  }
  exitLoop(outer);
  return true;
}

SemValue IRGen::runtimeTripCount(const SemValue &lo, const SemValue &hi, const SemValue &step,
                                 Loc l) {
  Location ml = loc(l);
  Type t = toMlir(lo.type);
  auto cst = [&](int64_t v) { return Value(arith::ConstantOp::create(b_, ml, b_.getIntegerAttr(t, v))); };
  Value zero = cst(0), one = cst(1);
  using P = arith::CmpIPredicate;
  Value up = arith::CmpIOp::create(b_, ml, P::sgt, step.value, zero);
  Value down = arith::CmpIOp::create(b_, ml, P::slt, step.value, zero);
  Value span = arith::SelectOp::create(b_, ml, up, arith::SubIOp::create(b_, ml, hi.value, lo.value),
                                       arith::SubIOp::create(b_, ml, lo.value, hi.value));
  Value mag = arith::SelectOp::create(b_, ml, down, arith::SubIOp::create(b_, ml, zero, step.value),
                                      step.value);
  Value den = arith::SelectOp::create(b_, ml, arith::OrIOp::create(b_, ml, up, down), mag, one);
  // ceil(span / den), and no iteration when the span is empty or the step is zero
  Value num = arith::AddIOp::create(b_, ml, span, arith::SubIOp::create(b_, ml, den, one));
  Value trips = arith::MaxSIOp::create(b_, ml, arith::DivSIOp::create(b_, ml, num, den), zero);
  trips = arith::SelectOp::create(b_, ml, arith::OrIOp::create(b_, ml, up, down), trips, zero);
  return SemValue::ofRuntime(trips, lo.type);
}

bool IRGen::genRangeLoop(const Stmt &s, SemValue lo, SemValue hi, SemValue step, Loc il) {
  const std::string &var = s.targets[0]->str;
  // A negative or run-time step: iterate j over [0, trips) and compute i = lo + j * step.
  bool counted = step.kind != SemValue::Int || step.i < 0;
  SemValue userLo = lo, userStep = step;
  if (counted) {
    SemValue trips;
    if (step.kind == SemValue::Int) {
      int64_t downStep = -step.i;
      SemValue span = binary(BinOp::Sub, lo, hi, il); // > 0 when there is work
      trips = span.ok() ? binary(BinOp::Add, span, SemValue::ofInt(downStep - 1), il) : span;
      trips = trips.ok() ? binary(BinOp::FloorDiv, trips, SemValue::ofInt(downStep), il) : trips;
      if (!trips.ok())
        return false;
      if (trips.isRuntime()) { // max(trips, 0): C division truncates toward zero
        SemValue zero = castTo(SemValue::ofInt(0), trips.type.elem, il);
        trips = SemValue::ofRuntime(arith::MaxSIOp::create(b_, loc(il), trips.value, zero.value),
                                    trips.type);
      } else if (trips.i < 0) {
        trips = SemValue::ofInt(0);
      }
    } else {
      DType bt{ScalarType::i32, 0};
      for (auto *v : {&lo, &hi, &step})
        if ((v->isRuntime() && scalarTypeBits(v->type.elem.scalar) == 64) ||
            (v->kind == SemValue::Int && !fitsIn(v->i, bt)))
          bt = DType{ScalarType::i64, 0};
      SemValue l2 = castTo(lo, bt, il), h2 = castTo(hi, bt, il), s2 = castTo(step, bt, il);
      if (!l2.ok() || !h2.ok() || !s2.ok())
        return false;
      trips = runtimeTripCount(l2, h2, s2, il);
    }
    lo = SemValue::ofInt(0);
    hi = trips;
    step = SemValue::ofInt(1);
  }
  DType ivType{ScalarType::i32, 0};
  for (auto *v : {&lo, &hi})
    if ((v->isRuntime() && v->type.elem.scalar == ScalarType::i64) ||
        (v->kind == SemValue::Int && !fitsIn(v->i, ivType)))
      ivType = DType{ScalarType::i64, 0};
  lo = castTo(lo, ivType, il);
  hi = castTo(hi, ivType, il);
  step = castTo(step, ivType, il);
  if (!lo.ok() || !hi.ok() || !step.ok())
    return false;

  RuntimeLoop loop;
  if (!openLoop(s, &var, loop))
    return false;
  const bool breaks = loop.breaks, continues = loop.continues;
  const std::vector<std::string> &carried = loop.carried;
  const std::vector<Value> &inits = loop.inits;
  // The body at iteration `iv`, with the carried variables in `args`.
  auto genBody = [&](Value iv, ValueRange args, std::vector<Value> &yields) {
    frame().vars[var] = SemValue::ofRuntime(iv, TileType{ivType, {}});
    if (counted) {
      SemValue off = binary(BinOp::Mul, frame().vars[var], userStep, il);
      SemValue i = off.ok() ? binary(BinOp::Add, userLo, off, il) : off;
      if (!i.ok())
        return false;
      frame().vars[var] = castTo(i, ivType, il);
    }
    bindCarried(loop, args);
    if (continues)
      frame().vars[kContinueFlag] = SemValue::ofBool(false);
    frame().runtimeControlDepth++;
    if (!genBlock(s.body))
      return false;
    frame().runtimeControlDepth--;
    return carriedYields(loop, s.loc, yields);
  };
  Location ml = loc(s.loc);
  OpBuilder::InsertionGuard guard(b_);
  std::vector<Value> yields;
  ValueRange results;
  if (!breaks) {
    auto forOp = scf::ForOp::create(b_, ml, lo.value, hi.value, step.value, inits);
    forOp->setAttr(analysis::kCarriedNamesAttr, b_.getStrArrayAttr(llvm::SmallVector<StringRef>(carried.begin(), carried.end())));
    mlir::Block *body = forOp.getBody();
    if (!body->empty() && body->back().hasTrait<mlir::OpTrait::IsTerminator>())
      body->back().erase();
    b_.setInsertionPointToEnd(body);
    if (!genBody(forOp.getInductionVar(), forOp.getRegionIterArgs(), yields))
      return false;
    scf::YieldOp::create(b_, ml, yields);
    results = forOp.getResults();
  } else { // while (iv < hi and not broken): the induction variable is carried first
    std::vector<Value> wInits{lo.value};
    wInits.insert(wInits.end(), inits.begin(), inits.end());
    std::vector<Type> wTypes;
    for (Value v : wInits)
      wTypes.push_back(v.getType());
    std::vector<Location> locs(wTypes.size(), ml);
    size_t brk = std::find(carried.begin(), carried.end(), kBreakFlag) - carried.begin();
    auto whileOp = scf::WhileOp::create(b_, ml, wTypes, wInits);
    whileOp->setAttr(analysis::kCarriedNamesAttr, b_.getStrArrayAttr(llvm::SmallVector<StringRef>(carried.begin(), carried.end())));
    mlir::Block *beforeBlk = b_.createBlock(&whileOp.getBefore(), {}, wTypes, locs);
    Value inRange = arith::CmpIOp::create(b_, ml, arith::CmpIPredicate::slt,
                                          beforeBlk->getArgument(0), hi.value);
    Value one = arith::ConstantOp::create(b_, ml, b_.getBoolAttr(true));
    Value notBroken = arith::XOrIOp::create(b_, ml, beforeBlk->getArgument(1 + brk), one);
    Value go = arith::AndIOp::create(b_, ml, inRange, notBroken);
    scf::ConditionOp::create(b_, ml, go, beforeBlk->getArguments());
    mlir::Block *afterBlk = b_.createBlock(&whileOp.getAfter(), {}, wTypes, locs);
    if (!genBody(afterBlk->getArgument(0), afterBlk->getArguments().drop_front(1), yields))
      return false;
    yields.insert(yields.begin(),
                  arith::AddIOp::create(b_, ml, afterBlk->getArgument(0), step.value));
    scf::YieldOp::create(b_, ml, yields);
    results = whileOp.getResults().drop_front(1);
  }
  bool ok = closeLoop(loop, results, s.loc);
  exitLoop(loop.outer);
  return ok;
}

bool IRGen::openLoop(const Stmt &s, const std::string *inductionVar, RuntimeLoop &loop) {
  loop.breaks = hasLoopExit(s.body, StmtKind::Break);
  loop.continues = hasLoopExit(s.body, StmtKind::Continue);
  loop.outer = enterLoop();
  collectAssigned(s.body, loop.assigned);
  if (inductionVar)
    loop.assigned.erase(*inductionVar);
  if (loop.breaks) {
    frame().vars[kBreakFlag] = SemValue::ofBool(false);
    loop.assigned.insert(kBreakFlag);
  }
  loop.before = frame().vars;
  for (const std::string &name : loop.assigned) {
    auto it = loop.before.find(name);
    if (it == loop.before.end())
      continue;
    SemValue start = it->second;
    std::vector<SemValue *> numbers;
    if (start.isCompound())
      numericLeaves(start, numbers);
    else if (start.isConst() || start.isRuntime())
      numbers.push_back(&start);
    for (size_t k = 0; k < numbers.size(); ++k) {
      SemValue v = toCarried(*numbers[k], s.loc);
      if (!v.ok())
        return false;
      loop.carried.push_back(name);
      loop.leaf.push_back(start.isCompound() ? int(k) : -1);
      loop.inits.push_back(v.value);
      loop.types.push_back(v.type);
    }
  }
  return true;
}

void IRGen::bindCarried(const RuntimeLoop &loop, ValueRange values) {
  for (size_t i = 0; i < loop.carried.size(); ++i) {
    SemValue v = SemValue::ofRuntime(values[i], loop.types[i]);
    SemValue &var = frame().vars[loop.carried[i]];
    if (loop.leaf[i] < 0) {
      var = v;
      continue;
    }
    if (loop.leaf[i] == 0) // the first number of a compound: start from its value before the loop
      var = loop.before.at(loop.carried[i]);
    std::vector<SemValue *> numbers;
    numericLeaves(var, numbers);
    *numbers[size_t(loop.leaf[i])] = v;
  }
}

bool IRGen::genWhile(const Stmt &s) {
  RuntimeLoop loop;
  if (!openLoop(s, nullptr, loop))
    return false;
  const bool breaks = loop.breaks, continues = loop.continues;
  const std::vector<std::string> &carried = loop.carried;
  const std::vector<TileType> &types = loop.types;
  Location ml = loc(s.loc);
  std::vector<Type> mlirTypes;
  for (const TileType &t : types)
    mlirTypes.push_back(toMlir(t));
  std::vector<Location> locs(types.size(), ml);
  auto whileOp = scf::WhileOp::create(b_, ml, mlirTypes, loop.inits);
  whileOp->setAttr(analysis::kCarriedNamesAttr, b_.getStrArrayAttr(llvm::SmallVector<StringRef>(carried.begin(), carried.end())));
  OpBuilder::InsertionGuard guard(b_);
  mlir::Block *beforeBlk = b_.createBlock(&whileOp.getBefore(), {}, mlirTypes, locs);
  bindCarried(loop, beforeBlk->getArguments());
  // The condition; after a break it is not evaluated (it may load out of bounds).
  auto genCond = [&](Value &cond) {
    SemValue c = genExpr(*s.cond);
    return c.ok() && truthy(c, s.cond->loc, cond);
  };
  Value cond;
  if (!breaks) {
    if (!genCond(cond))
      return false;
  } else {
    Value broken = frame().vars.at(kBreakFlag).value;
    auto ifOp = scf::IfOp::create(b_, ml, TypeRange{b_.getI1Type()}, broken, true, true);
    for (mlir::Block *blk : {&ifOp.getThenRegion().front(), &ifOp.getElseRegion().front()})
      if (!blk->empty() && blk->back().hasTrait<mlir::OpTrait::IsTerminator>())
        blk->back().erase();
    b_.setInsertionPointToEnd(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b_, ml, ValueRange{arith::ConstantOp::create(b_, ml, b_.getBoolAttr(false))});
    b_.setInsertionPointToEnd(&ifOp.getElseRegion().front());
    Value c;
    if (!genCond(c))
      return false;
    scf::YieldOp::create(b_, ml, ValueRange{c});
    b_.setInsertionPointAfter(ifOp);
    cond = ifOp.getResult(0);
  }
  scf::ConditionOp::create(b_, ml, cond, beforeBlk->getArguments());

  mlir::Block *afterBlk = b_.createBlock(&whileOp.getAfter(), {}, mlirTypes, locs);
  frame().vars = loop.before;
  bindCarried(loop, afterBlk->getArguments());
  if (continues)
    frame().vars[kContinueFlag] = SemValue::ofBool(false);
  frame().runtimeControlDepth++;
  if (!genBlock(s.body))
    return false;
  frame().runtimeControlDepth--;
  std::vector<Value> yields;
  if (!carriedYields(loop, s.loc, yields))
    return false;
  scf::YieldOp::create(b_, ml, yields);
  bool ok = closeLoop(loop, whileOp.getResults(), s.loc);
  exitLoop(loop.outer);
  return ok;
}

} // namespace tessera::fe
