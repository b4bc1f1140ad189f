#include "analysis/AxisInfo.h"

#include "tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::analysis {

namespace {
constexpr int64_t kMax = AxisInfoAnalysis::kMaxDivisibility;

int64_t pow2Factor(int64_t v) {
  if (v == 0)
    return kMax;
  int64_t f = 1;
  while ((v & 1) == 0 && f < kMax) {
    v >>= 1;
    f <<= 1;
  }
  return f;
}
int64_t gcd2(int64_t a, int64_t b) { return std::min(a, b); } // both powers of two
int64_t mul2(int64_t a, int64_t b) {
  return (a >= kMax || b >= kMax || a * b >= kMax) ? kMax : a * b;
}

/// Whether every element of integer value `v` is known to be >= 0: what the
/// division and remainder rules need (C-like signed division rounds toward
/// zero, so runs of x / c and x % c only line up for non-negative x).
bool nonNegative(Value v, int depth = 0) {
  if (depth > 12)
    return false;
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return !c.isNegative();
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr)))
    if (auto d = dyn_cast<DenseIntElementsAttr>(attr))
      return d.isSplat() && !d.getSplatValue<APInt>().isNegative();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    // The induction variable of a loop with a non-negative lower bound.
    if (auto f = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
      return arg == f.getInductionVar() && nonNegative(f.getLowerBound(), depth + 1);
    return false;
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return false;
  if (auto r = dyn_cast<tile::MakeRangeOp>(op))
    return int32_t(r.getStart()) >= 0;
  if (isa<tile::ProgramIdOp, tile::NumProgramsOp, tile::ClusterSizeOp, arith::DivUIOp, arith::RemUIOp,
          arith::ExtUIOp>(op))
    return true;
  if (isa<tile::SplatOp, tile::BroadcastOp, tile::ExpandDimsOp, tile::ReshapeOp, tile::TransOp,
          tile::HintOp, arith::ExtSIOp>(op))
    return nonNegative(op->getOperand(0), depth + 1);
  if (isa<arith::RemSIOp>(op)) // the remainder takes the dividend's sign
    return nonNegative(op->getOperand(0), depth + 1);
  // A quotient of a non-negative dividend by a run-time divisor counts as
  // non-negative: index arithmetic divides by positive counts (a group size,
  // a number of blocks), as Triton's analysis assumes, and Triton's grouped
  // tile order `(pid % group) // group_size_m` needs it, its group_size_m a
  // min(count - first, GROUP) that is positive for every program the grid
  // launches. A negative run-time divisor in an index is outside this
  // (docs/performance.md, "What axis analysis assumes").
  if (isa<arith::DivSIOp>(op))
    return nonNegative(op->getOperand(0), depth + 1);
  if (isa<arith::AddIOp, arith::MulIOp, arith::MinSIOp>(op))
    return nonNegative(op->getOperand(0), depth + 1) && nonNegative(op->getOperand(1), depth + 1);
  if (isa<arith::MaxSIOp>(op))
    return nonNegative(op->getOperand(0), depth + 1) || nonNegative(op->getOperand(1), depth + 1);
  return false;
}

llvm::ArrayRef<int64_t> shapeOf(Type t) {
  if (auto rt = dyn_cast<RankedTensorType>(t))
    return rt.getShape();
  return {};
}

AxisInfo uniform(Type t, int64_t div) {
  auto shape = shapeOf(t);
  size_t rank = std::max<size_t>(1, shape.size());
  AxisInfo a;
  for (size_t d = 0; d < rank; ++d) {
    a.contiguity.push_back(1);
    a.divisibility.push_back(div);
    a.constancy.push_back(shape.empty() ? 1 : shape[d]);
  }
  return a;
}

int64_t elemBytes(Type t) {
  Type e = getElementTypeOrSelf(t);
  if (auto p = dyn_cast<tile::PtrType>(e)) {
    Type pe = p.getPointeeType();
    if (isa<tile::PtrType>(pe))
      return 8;
    return std::max<int64_t>(1, pe.getIntOrFloatBitWidth() / 8);
  }
  return 1;
}

/// Nothing known: runs of length 1, divisible by 1.
AxisInfo pessimisticInfo(Value v) {
  AxisInfo a = uniform(v.getType(), 1);
  for (int64_t &c : a.constancy)
    c = 1;
  return a;
}
} // namespace

AxisInfoAnalysis::AxisInfoAnalysis(Operation *root) {
  if (auto fn = dyn_cast<func::FuncOp>(root)) {
    for (BlockArgument arg : fn.getArguments()) {
      bool isPtr = isa<tile::PtrType>(arg.getType());
      int64_t div = isPtr ? kArgPointerAlignment : 1;
      // An integer argument specialized as a multiple of 16 (see
      // CompileOptions::argFacts); the JIT only launches such a variant with
      // values that are.
      if (auto a = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), kArgDivisibilityAttr);
          a && !isPtr && a.getInt() > 0)
        div = pow2Factor(a.getInt());
      set(arg, uniform(arg.getType(), div));
    }
  }
  for (Region &r : root->getRegions())
    visitRegionOps(r);
}

void AxisInfoAnalysis::visitRegionOps(Region &r) {
  for (Block &b : r)
    for (Operation &op : b)
      visit(&op);
}

AxisInfo AxisInfoAnalysis::pessimistic(Value v) const { return pessimisticInfo(v); }

AxisInfo AxisInfoAnalysis::get(Value v) const {
  auto it = infos_.find(v);
  if (it != infos_.end())
    return it->second;
  return pessimistic(v);
}

void AxisInfoAnalysis::set(Value v, AxisInfo info) { infos_[v] = std::move(info); }

static AxisInfo meet(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = a;
  for (int64_t d = 0; d < a.rank() && d < b.rank(); ++d) {
    r.contiguity[d] = std::min(a.contiguity[d], b.contiguity[d]);
    r.divisibility[d] = gcd2(a.divisibility[d], b.divisibility[d]);
    r.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
  }
  return r;
}

// ---- transfer functions: the info of an op's result from its operands' ------
namespace {
using Analysis = AxisInfoAnalysis;

AxisInfo constantInfo(arith::ConstantOp c) {
  Type t = c.getType();
  int64_t div = 1;
  if (auto ia = dyn_cast<IntegerAttr>(c.getValue()))
    div = pow2Factor(ia.getInt());
  else if (auto da = dyn_cast<DenseIntElementsAttr>(c.getValue()); da && da.isSplat())
    div = pow2Factor(da.getSplatValue<APInt>().getSExtValue());
  return uniform(t, div);
}

AxisInfo makeRangeInfo(tile::MakeRangeOp r) {
  AxisInfo a;
  a.contiguity = {int64_t(int32_t(r.getEnd())) - int64_t(int32_t(r.getStart()))};
  a.divisibility = {pow2Factor(int32_t(r.getStart()))};
  a.constancy = {1};
  return a;
}

AxisInfo splatInfo(const Analysis &A, tile::SplatOp s) {
  AxisInfo src = A.get(s.getSrc());
  return uniform(s.getType(), src.divisibility.empty() ? 1 : src.divisibility[0]);
}

AxisInfo hintInfo(const Analysis &A, tile::HintOp h) {
  AxisInfo a = A.get(h.getSrc());
  if (auto div = h.getDivisibilityAttr())
    for (int64_t d = 0; d < a.rank() && d < int64_t(div.size()); ++d)
      a.divisibility[d] = std::max<int64_t>(a.divisibility[d],
                                            int64_t(div[d]) * (isa<tile::PtrType>(getElementTypeOrSelf(h.getType())) ? elemBytes(h.getType()) : 1));
  if (auto con = h.getContiguityAttr())
    for (int64_t d = 0; d < a.rank() && d < int64_t(con.size()); ++d)
      a.contiguity[d] = std::max<int64_t>(a.contiguity[d], con[d]);
  return a;
}

AxisInfo expandDimsInfo(const Analysis &A, tile::ExpandDimsOp e) {
  AxisInfo a = A.get(e.getSrc());
  int64_t ax = e.getAxis();
  // Along the new unit dimension every element starts its own run, so only
  // a divisibility that holds for every element carries over. (Computed
  // over the source's dimensions, before the insertion.)
  int64_t every = kMax;
  for (int64_t d = 0; d < a.rank(); ++d)
    every = std::min(every, a.contiguity[d] > 1 ? int64_t(1) : a.divisibility[d]);
  bool any = a.rank() > 0;
  a.contiguity.insert(a.contiguity.begin() + ax, 1);
  a.divisibility.insert(a.divisibility.begin() + ax, any ? every : 1);
  a.constancy.insert(a.constancy.begin() + ax, 1);
  return a;
}

AxisInfo broadcastInfo(const Analysis &A, tile::BroadcastOp bc) {
  AxisInfo a = A.get(bc.getSrc());
  auto src = bc.getSrc().getType().getShape(), dst = bc.getType().getShape();
  for (size_t d = 0; d < dst.size() && int64_t(d) < a.rank(); ++d)
    if (src[d] == 1 && dst[d] != 1) {
      a.contiguity[d] = 1;
      a.constancy[d] = dst[d];
    }
  return a;
}

AxisInfo addPtrInfo(const Analysis &A, tile::AddPtrOp ap) {
  AxisInfo p = A.get(ap.getPtr()), o = A.get(ap.getOffset());
  int64_t eb = elemBytes(ap.getType());
  AxisInfo r = p;
  for (int64_t d = 0; d < r.rank(); ++d) {
    r.contiguity[d] = std::max(std::min(p.contiguity[d], o.constancy[d]),
                               std::min(o.contiguity[d], p.constancy[d]));
    r.divisibility[d] = gcd2(p.divisibility[d], mul2(o.divisibility[d], eb));
    r.constancy[d] = std::min(p.constancy[d], o.constancy[d]);
  }
  return r;
}

/// arith.addi, arith.subi.
AxisInfo addSubInfo(const Analysis &A, Operation *op) {
  AxisInfo a = A.get(op->getOperand(0)), b = A.get(op->getOperand(1));
  bool sub = isa<arith::SubIOp>(op);
  AxisInfo r = a;
  for (int64_t d = 0; d < r.rank(); ++d) {
    r.contiguity[d] = sub ? std::min(a.contiguity[d], b.constancy[d])
                          : std::max(std::min(a.contiguity[d], b.constancy[d]),
                                     std::min(b.contiguity[d], a.constancy[d]));
    r.divisibility[d] = gcd2(a.divisibility[d], b.divisibility[d]);
    r.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
  }
  return r;
}

/// arith.muli, arith.shli.
AxisInfo mulShlInfo(const Analysis &A, Operation *op) {
  AxisInfo a = A.get(op->getOperand(0)), b = A.get(op->getOperand(1));
  AxisInfo r = a;
  APInt cst;
  bool isShl = isa<arith::ShLIOp>(op);
  bool rhsConst = matchPattern(op->getOperand(1), m_ConstantInt(&cst));
  for (int64_t d = 0; d < r.rank(); ++d) {
    bool identity = rhsConst && ((isShl && cst.isZero()) || (!isShl && cst.isOne()));
    r.contiguity[d] = identity ? a.contiguity[d] : 1;
    if (identity) {
      r.divisibility[d] = a.divisibility[d];
      r.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
      continue;
    }
    // The product's runs have length 1, so every element must be divisible:
    // inside a run of consecutive values only its first one is.
    int64_t adiv = a.contiguity[d] > 1 ? 1 : a.divisibility[d];
    int64_t bdiv = isShl ? (rhsConst ? mul2(1, int64_t(1) << std::min<int64_t>(30, cst.getZExtValue())) : 1)
                         : (b.contiguity[d] > 1 ? 1 : b.divisibility[d]);
    r.divisibility[d] = mul2(adiv, bdiv);
    r.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
  }
  return r;
}

/// arith.divsi, arith.divui, arith.remsi, arith.remui.
AxisInfo divRemInfo(const Analysis &A, Operation *op) {
  // By a positive constant c, of a non-negative dividend: a run of
  // consecutive values whose pieces start at multiples of g (a power of two
  // dividing both the run's divisibility and c) never crosses a multiple of
  // c inside a piece, so x / c is constant and x % c consecutive there.
  AxisInfo a = A.get(op->getOperand(0));
  AxisInfo r = pessimisticInfo(op->getResult(0));
  APInt c;
  bool isDiv = isa<arith::DivSIOp, arith::DivUIOp>(op);
  bool positiveConst = matchPattern(op->getOperand(1), m_ConstantInt(&c)) &&
                       c.isStrictlyPositive() && c.getBitWidth() <= 64;
  int64_t cf = positiveConst ? pow2Factor(int64_t(c.getZExtValue())) : 1;
  // A run-time divisor the same for every element (a splat of a scalar) whose
  // known power-of-two factor is f (launch specialization: N % 16 == 0)
  // splits runs the same way: its multiples are multiples of f, whatever its
  // sign (C's x % n is x % |n| for x >= 0). Triton's tutorial matmul relies
  // on this for (pid * BN + arange(0, BN)) % N.
  bool uniformDivisor = false;
  if (!positiveConst) {
    AxisInfo b = A.get(op->getOperand(1));
    auto shape = shapeOf(op->getOperand(1).getType());
    uniformDivisor = b.rank() > 0;
    for (int64_t d = 0; d < b.rank(); ++d)
      uniformDivisor = uniformDivisor && d < int64_t(shape.size()) && b.constancy[d] >= shape[d];
    if (uniformDivisor) {
      cf = b.divisibility[0];
      for (int64_t d = 1; d < b.rank(); ++d)
        cf = std::min(cf, b.divisibility[d]);
      uniformDivisor = cf > 1;
    }
  }
  if ((positiveConst || uniformDivisor) &&
      (isa<arith::DivUIOp, arith::RemUIOp>(op) || nonNegative(op->getOperand(0)))) {
    for (int64_t d = 0; d < r.rank() && d < a.rank(); ++d) {
      int64_t g = std::min(a.contiguity[d], gcd2(a.divisibility[d], cf));
      if (isDiv) {
        r.constancy[d] = std::max(a.constancy[d], g);
      } else {
        r.contiguity[d] = std::max<int64_t>(1, g);
        r.divisibility[d] = g > 1 ? g : (positiveConst && c.isOne() ? kMax : 1);
        r.constancy[d] = a.constancy[d];
      }
    }
  } else {
    // Any divisor: constant wherever both operands are.
    AxisInfo b = A.get(op->getOperand(1));
    for (int64_t d = 0; d < r.rank() && d < a.rank() && d < b.rank(); ++d)
      r.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
  }
  // x % c = x - q * c, whatever the signs: where every element of x is a
  // multiple of g, so is x % c for g dividing c (e.g. (pid * 64) % 64).
  if (!isDiv && positiveConst) {
    for (int64_t d = 0; d < r.rank() && d < a.rank(); ++d)
      if (a.contiguity[d] <= 1)
        r.divisibility[d] = std::max(r.divisibility[d], gcd2(a.divisibility[d], cf));
  }
  return r;
}

/// arith.andi, arith.ori, arith.xori, arith.select.
AxisInfo bitwiseSelectInfo(const Analysis &A, Operation *op) {
  // Bitwise ops and selects are constant wherever all their tile operands
  // are (masks combined with `&`); other properties are not tracked.
  Value res = op->getResult(0);
  AxisInfo r = pessimisticInfo(res);
  auto rt = dyn_cast<RankedTensorType>(res.getType());
  for (int64_t d = 0; rt && d < r.rank(); ++d) {
    int64_t c = rt.getDimSize(d);
    for (Value operand : op->getOperands())
      if (isa<RankedTensorType>(operand.getType()))
        c = std::min(c, A.get(operand).constancy[d]);
    r.constancy[d] = c;
  }
  return r;
}

AxisInfo cmpIInfo(const Analysis &A, arith::CmpIOp cmp) {
  // An ordered comparison of a run of consecutive values with a value that is
  // constant over it flips at most once, where the two are equal. When the
  // run's values and the constant are multiples of g, that point is a
  // multiple of g, so aligned pieces of g positions compare alike.
  AxisInfo a = A.get(cmp.getLhs()), b = A.get(cmp.getRhs());
  AxisInfo r = pessimisticInfo(cmp.getResult());
  bool ordered = cmp.getPredicate() != arith::CmpIPredicate::eq &&
                 cmp.getPredicate() != arith::CmpIPredicate::ne;
  auto pieces = [&](const AxisInfo &run, const AxisInfo &flat, int64_t d) -> int64_t {
    return std::min({run.contiguity[d], flat.constancy[d], gcd2(run.divisibility[d], flat.divisibility[d])});
  };
  for (int64_t d = 0; d < r.rank() && d < a.rank() && d < b.rank(); ++d) {
    r.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
    if (ordered)
      r.constancy[d] = std::max({r.constancy[d], pieces(a, b, d), pieces(b, a, d)});
  }
  return r;
}

/// Other pure integer arithmetic on tiles (min/max, shifts, casts).
bool isOtherTileArith(Operation *op) {
  return op->getNumResults() == 1 && op->getNumRegions() == 0 && isa<arith::ArithDialect>(op->getDialect()) &&
         isa<RankedTensorType>(op->getResult(0).getType());
}

/// For isOtherTileArith ops: constant wherever all operands are.
AxisInfo otherTileArithInfo(const Analysis &A, Operation *op) {
  AxisInfo r = pessimisticInfo(op->getResult(0));
  auto shape = shapeOf(op->getResult(0).getType());
  for (int64_t d = 0; d < r.rank(); ++d) {
    int64_t c = shape[d];
    for (Value operand : op->getOperands())
      if (isa<RankedTensorType>(operand.getType()))
        c = std::min(c, A.get(operand).constancy[d]);
    r.constancy[d] = c;
  }
  return r;
}
} // namespace

void AxisInfoAnalysis::visit(Operation *op) {
  auto result = [&](AxisInfo a) { set(op->getResult(0), std::move(a)); };
  const AxisInfoAnalysis &A = *this;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](arith::ConstantOp c) { result(constantInfo(c)); })
      .Case([&](tile::MakeRangeOp r) { result(makeRangeInfo(r)); })
      .Case<tile::ProgramIdOp, tile::NumProgramsOp, tile::ClusterSizeOp>(
          [&](Operation *) { result(uniform(op->getResult(0).getType(), 1)); })
      .Case([&](tile::SplatOp s) { result(splatInfo(A, s)); })
      .Case([&](tile::HintOp h) { result(hintInfo(A, h)); })
      .Case([&](tile::ExpandDimsOp e) { result(expandDimsInfo(A, e)); })
      .Case([&](tile::BroadcastOp b) { result(broadcastInfo(A, b)); })
      .Case([&](tile::AddPtrOp p) { result(addPtrInfo(A, p)); })
      .Case<arith::AddIOp, arith::SubIOp>([&](Operation *) { result(addSubInfo(A, op)); })
      .Case<arith::MulIOp, arith::ShLIOp>([&](Operation *) { result(mulShlInfo(A, op)); })
      .Case<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp>(
          [&](Operation *) { result(divRemInfo(A, op)); })
      .Case<arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::SelectOp>(
          [&](Operation *) { result(bitwiseSelectInfo(A, op)); })
      .Case([&](arith::CmpIOp c) { result(cmpIInfo(A, c)); })
      .Case<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp>(
          [&](Operation *) { result(get(op->getOperand(0))); })
      .Case([&](scf::ForOp f) { visitFor(f); })
      .Case([&](scf::IfOp i) { visitIf(i); })
      .Default([&](Operation *) {
        if (isOtherTileArith(op))
          return result(otherTileArithInfo(A, op));
        // Anything else: visit nested regions, results pessimistic.
        for (Region &r : op->getRegions())
          visitRegionOps(r);
      });
}

void AxisInfoAnalysis::visitFor(scf::ForOp f) {
  // One round of fixpoint: analyze the body with the init facts, then meet
  // with what the body yields and analyze again.
  auto args = f.getRegionIterArgs();
  auto inits = f.getInitArgs();
  // iv = lb + i * step: divisible by what divides both.
  set(f.getInductionVar(), uniform(f.getInductionVar().getType(),
                                   gcd2(get(f.getLowerBound()).divisibility.empty()
                                            ? 1 : get(f.getLowerBound()).divisibility[0],
                                        get(f.getStep()).divisibility.empty()
                                            ? 1 : get(f.getStep()).divisibility[0])));
  for (size_t i = 0; i < args.size(); ++i)
    set(args[i], get(inits[i]));
  visitRegionOps(f.getRegion());
  auto yield = cast<scf::YieldOp>(f.getBody()->getTerminator());
  for (size_t i = 0; i < args.size(); ++i)
    set(args[i], meet(get(inits[i]), get(yield.getOperand(i))));
  visitRegionOps(f.getRegion());
  for (size_t i = 0; i < args.size(); ++i)
    set(f.getResult(i), meet(get(args[i]), get(yield.getOperand(i))));
}

void AxisInfoAnalysis::visitIf(scf::IfOp i) {
  visitRegionOps(i.getThenRegion());
  visitRegionOps(i.getElseRegion());
  if (i.getNumResults() && !i.getElseRegion().empty()) {
    auto ty = cast<scf::YieldOp>(i.thenBlock()->getTerminator());
    auto ey = cast<scf::YieldOp>(i.elseBlock()->getTerminator());
    for (unsigned k = 0; k < i.getNumResults(); ++k)
      set(i.getResult(k), meet(get(ty.getOperand(k)), get(ey.getOperand(k))));
  }
}

} // namespace tessera::analysis
