// Decides whether a TMA tensor map can load an operand tile of a pipelined
// dot loop; see TensorMapAnalysis.h.
#include "analysis/TensorMapAnalysis.h"

#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

namespace tessera::analysis {

void LinearForm::add(const LinearForm &o, int64_t k) {
  c += k * o.c;
  for (auto [v, s] : o.terms) {
    auto it = llvm::find_if(terms, [&](auto &t) { return t.first == v; });
    if (it == terms.end())
      terms.push_back({v, k * s});
    else
      it->second += k * s;
  }
  llvm::erase_if(terms, [](auto &t) { return t.second == 0; });
}

void LinearForm::scale(int64_t k) {
  c *= k;
  for (auto &t : terms)
    t.second *= k;
  llvm::erase_if(terms, [](auto &t) { return t.second == 0; });
}

int64_t LinearForm::coef(Value v) const {
  for (auto [x, s] : terms)
    if (x == v)
      return s;
  return 0;
}

bool LinearForm::operator==(const LinearForm &o) const {
  LinearForm d = *this;
  d.add(o, -1);
  return d.c == 0 && d.terms.empty();
}

LinearForm linearFormOf(Value v) {
  APInt cst;
  if (matchPattern(v, m_ConstantInt(&cst)))
    return LinearForm::constant(cst.getSExtValue());
  Operation *op = v.getDefiningOp();
  if (!op)
    return LinearForm::leaf(v);
  if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp>(op))
    return linearFormOf(op->getOperand(0));
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    LinearForm f = linearFormOf(op->getOperand(0));
    f.add(linearFormOf(op->getOperand(1)), isa<arith::AddIOp>(op) ? 1 : -1);
    return f;
  }
  if (isa<arith::MulIOp>(op)) {
    LinearForm a = linearFormOf(op->getOperand(0)), b = linearFormOf(op->getOperand(1));
    if (b.isConstant()) {
      a.scale(b.c);
      return a;
    }
    if (a.isConstant()) {
      b.scale(a.c);
      return b;
    }
  }
  return LinearForm::leaf(v);
}

namespace {

/// An integer tile of rank <= 2: rest + sum over d of stride_d * (origin_d + i_d).
struct AffineTile {
  /// A dimension whose index `wrap.origin + i` was taken modulo `modulus`
  /// (Triton's `(pid * BM + arange(0, BM)) % M`), read here without the
  /// remainder: only for pointers, and only where no wrapped element is
  /// ever stored (wrapObservedWhy).
  struct Wrap {
    LinearForm modulus, origin;
  };
  struct Dim {
    LinearForm stride, origin;
    std::optional<Wrap> wrap;
  };
  LinearForm rest;
  std::optional<Dim> dim[2];
  bool uniform() const { return !dim[0] && !dim[1]; }
};

Value throughViews(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<tile::BroadcastOp, tgpu::ConvertLayoutOp, tile::HintOp>(op))
      break;
    v = op->getOperand(0);
  }
  return v;
}

std::optional<AffineTile> affineOf(Value v, bool unwrap = false);

/// a + b; folds a uniform addend into the origin of a lone unit-stride dim
/// (`pid * BM + arange(0, BM)` starts at pid * BM).
std::optional<AffineTile> addAffine(AffineTile a, const AffineTile &b, int64_t k) {
  a.rest.add(b.rest, k);
  for (int d = 0; d < 2; ++d) {
    if (!b.dim[d])
      continue;
    if (a.dim[d] || k != 1)
      return std::nullopt;
    a.dim[d] = b.dim[d];
  }
  int dims = int(bool(a.dim[0])) + int(bool(a.dim[1]));
  for (int d = 0; d < 2 && dims == 1; ++d)
    if (a.dim[d] && a.dim[d]->stride == LinearForm::constant(1)) {
      a.dim[d]->origin.add(a.rest);
      a.rest = LinearForm();
    }
  return a;
}

std::optional<AffineTile> affineOf(Value v, bool unwrap) {
  v = throughViews(v);
  if (!isa<RankedTensorType>(v.getType())) // a scalar
    return AffineTile{linearFormOf(v), {}};
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  DenseElementsAttr dense;
  if (matchPattern(v, m_Constant(&dense)) && dense.isSplat() &&
      isa<IntegerType>(dense.getElementType()))
    return AffineTile{LinearForm::constant(dense.getSplatValue<APInt>().getSExtValue()), {}};
  if (auto sp = dyn_cast<tile::SplatOp>(op))
    return affineOf(sp.getSrc(), unwrap);
  if (auto r = dyn_cast<tile::MakeRangeOp>(op)) {
    AffineTile t;
    t.dim[0] = AffineTile::Dim{LinearForm::constant(1), LinearForm::constant(r.getStart())};
    return t;
  }
  if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(op))
    return affineOf(op->getOperand(0), unwrap);
  if (isa<arith::RemSIOp>(op) && unwrap) {
    // x % n, n the same for every element, x one run of consecutive indices:
    // x, remembering the wrap (the caller checks that it is never observed).
    std::optional<AffineTile> x = affineOf(op->getOperand(0), unwrap), n = affineOf(op->getOperand(1));
    if (!x || !n || !n->uniform() || (x->dim[0] && x->dim[1]) || x->uniform() ||
        !(x->rest == LinearForm()))
      return std::nullopt;
    AffineTile::Dim &d = *(x->dim[0] ? x->dim[0] : x->dim[1]);
    if (d.wrap || !(d.stride == LinearForm::constant(1)))
      return std::nullopt;
    d.wrap = AffineTile::Wrap{n->rest, d.origin};
    return x;
  }
  if (auto ex = dyn_cast<tile::ExpandDimsOp>(op)) {
    std::optional<AffineTile> t = affineOf(ex.getSrc(), unwrap);
    if (!t || t->dim[1] || cast<RankedTensorType>(ex.getSrc().getType()).getRank() != 1)
      return std::nullopt;
    if (ex.getAxis() == 0)
      std::swap(t->dim[0], t->dim[1]);
    return t;
  }
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    std::optional<AffineTile> a = affineOf(op->getOperand(0), unwrap), b = affineOf(op->getOperand(1), unwrap);
    if (!a || !b)
      return std::nullopt;
    return addAffine(*a, *b, isa<arith::AddIOp>(op) ? 1 : -1);
  }
  if (isa<arith::MulIOp>(op)) {
    std::optional<AffineTile> a = affineOf(op->getOperand(0), unwrap), b = affineOf(op->getOperand(1), unwrap);
    if (!a || !b)
      return std::nullopt;
    if (!b->uniform())
      std::swap(a, b);
    if (!b->uniform())
      return std::nullopt;
    const LinearForm &f = b->rest;
    // stride * f and rest * f must stay linear: one side constant.
    for (auto &d : a->dim) {
      if (!d)
        continue;
      if (f.isConstant()) {
        d->stride.scale(f.c);
      } else if (d->stride.isConstant()) {
        LinearForm s = f;
        s.scale(d->stride.c);
        d->stride = s;
      } else {
        return std::nullopt;
      }
    }
    if (f.isConstant())
      a->rest.scale(f.c);
    else if (!(a->rest == LinearForm()))
      return std::nullopt;
    return a;
  }
  return std::nullopt;
}

/// A pointer tile: splat(kernel pointer argument) + offsets.
struct PointerTile {
  BlockArgument base;
  AffineTile off;
};

std::optional<PointerTile> pointerOf(Value p, Block &entry, bool scalarOffsets) {
  p = throughViews(p);
  Operation *op = p.getDefiningOp();
  if (auto sp = dyn_cast_or_null<tile::SplatOp>(op)) {
    // The argument, or (scalarOffsets) the argument plus scalar offsets.
    Value src = sp.getSrc();
    AffineTile off;
    while (auto ap = src.getDefiningOp<tile::AddPtrOp>()) {
      if (!scalarOffsets || isa<RankedTensorType>(ap.getType()))
        return std::nullopt;
      off.rest.add(linearFormOf(ap.getOffset()));
      src = ap.getPtr();
    }
    auto arg = dyn_cast<BlockArgument>(src);
    if (!arg || arg.getOwner() != &entry)
      return std::nullopt;
    return PointerTile{arg, off};
  }
  if (auto ap = dyn_cast_or_null<tile::AddPtrOp>(op)) {
    std::optional<PointerTile> base = pointerOf(ap.getPtr(), entry, scalarOffsets);
    std::optional<AffineTile> off = affineOf(ap.getOffset(), /*unwrap=*/true);
    if (!base || !off)
      return std::nullopt;
    std::optional<AffineTile> sum = addAffine(base->off, *off, 1);
    if (!sum)
      return std::nullopt;
    base->off = *sum;
    return base;
  }
  return std::nullopt;
}

/// Splits a mask into its conjuncts.
void conjuncts(Value m, SmallVectorImpl<Value> &out) {
  m = throughViews(m);
  if (auto a = m.getDefiningOp<arith::AndIOp>()) {
    conjuncts(a.getLhs(), out);
    conjuncts(a.getRhs(), out);
    return;
  }
  out.push_back(m);
}

/// A conjunct of a mask as a comparison and its operands' affine forms in
/// the tile's coordinates: a comparison of 1-D indices expanded to 2-D
/// (`k_ok[None, :]` with `k_ok = rk < K - k0`) counts along the dimension
/// the expansion puts it on.
struct MaskTerm {
  arith::CmpIOp cmp;
  std::optional<AffineTile> lhs, rhs;
};
MaskTerm maskTermOf(Value term) {
  bool swapDims = false;
  if (auto ex = term.getDefiningOp<tile::ExpandDimsOp>();
      ex && cast<RankedTensorType>(ex.getSrc().getType()).getRank() == 1) {
    swapDims = ex.getAxis() == 0;
    term = throughViews(ex.getSrc());
  }
  MaskTerm t;
  t.cmp = term.getDefiningOp<arith::CmpIOp>();
  if (!t.cmp)
    return t;
  t.lhs = affineOf(t.cmp.getLhs());
  t.rhs = affineOf(t.cmp.getRhs());
  if (swapDims)
    for (std::optional<AffineTile> *a : {&t.lhs, &t.rhs})
      if (*a)
        std::swap((*a)->dim[0], (*a)->dim[1]);
  return t;
}

/// Whether the mask of `st` keeps only the elements whose index along
/// dimension `dim` is below the modulus of `w`: a conjunct `idx < modulus`
/// with idx the wrapped index (`w.origin + i`).
bool masksWrap(tile::StoreOp st, int dim, const AffineTile::Wrap &w) {
  if (!st.getMask())
    return false;
  SmallVector<Value> terms;
  conjuncts(st.getMask(), terms);
  for (Value c : terms) {
    MaskTerm t = maskTermOf(c);
    if (!t.cmp || (t.cmp.getPredicate() != arith::CmpIPredicate::slt &&
                   t.cmp.getPredicate() != arith::CmpIPredicate::sgt))
      continue;
    bool lt = t.cmp.getPredicate() == arith::CmpIPredicate::slt;
    std::optional<AffineTile> &x = lt ? t.lhs : t.rhs, &y = lt ? t.rhs : t.lhs;
    if (x && y && y->uniform() && x->dim[dim] && !x->dim[1 - dim] && x->rest == LinearForm() &&
        x->dim[dim]->stride == LinearForm::constant(1) && x->dim[dim]->origin == w.origin &&
        y->rest == w.modulus)
      return true;
  }
  return false;
}

/// Why reading dimension `td` of the tile that `ld` loads without its wrap
/// `w` could change what the kernel stores, or "" when it cannot. It cannot
/// when the dimension indexes the rows (A) or columns (B) of the dot's
/// result, and the accumulator leaves the loop only through element-wise
/// operations into stores whose masks drop every row (column) whose index
/// reaches the modulus: exactly the ones the wrap would have filled. Then
/// TMA may read those rows past the tensor's end as zeros instead.
std::string wrapObservedWhy(tile::LoadOp ld, scf::ForOp loop, int td, const AffineTile::Wrap &w) {
  // The dot that reads the tile, and which dimension of its result `td` is.
  Value v = ld.getResult();
  bool swapped = false;
  tile::DotOp dot;
  while (!dot) {
    if (!v.hasOneUse())
      return "the tile has more than one user";
    Operation *u = *v.getUsers().begin();
    if (isa<tgpu::ConvertLayoutOp>(u)) {
      v = u->getResult(0);
    } else if (isa<tile::TransOp>(u)) {
      swapped = !swapped;
      v = u->getResult(0);
    } else if (auto d = dyn_cast<tile::DotOp>(u)) {
      dot = d;
    } else {
      return "the tile reaches the dot through other operations";
    }
  }
  int opDim = swapped ? 1 - td : td;
  bool isA = dot.getA() == v;
  if (isA ? opDim != 0 : opDim != 1)
    return "it wraps the reduction dimension";
  int accDim = isA ? 0 : 1;
  auto accArg = dyn_cast<BlockArgument>(dot.getAcc());
  if (!accArg || accArg.getOwner() != loop.getBody() || accArg.getArgNumber() == 0)
    return "the dot's accumulator is not carried by the loop";
  Value result = loop.getResult(accArg.getArgNumber() - 1);
  auto shape = cast<RankedTensorType>(result.getType()).getShape();
  SmallVector<Value> work{result};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (OpOperand &use : x.getUses()) {
      Operation *u = use.getOwner();
      // Every use by a store is checked (the result may reach one store
      // twice); other users are followed once.
      if (auto st = dyn_cast<tile::StoreOp>(u)) {
        if (use.getOperandNumber() != 1)
          return "the result reaches a store's address or mask";
        if (!masksWrap(st, accDim, w))
          return "a store of the result does not mask the wrapped elements";
        continue;
      }
      if (!seen.insert(u).second)
        continue;
      auto rt = u->getNumResults() == 1 ? dyn_cast<RankedTensorType>(u->getResult(0).getType())
                                        : RankedTensorType();
      bool elementwise = rt && rt.getShape() == shape &&
                         (isa<tgpu::ConvertLayoutOp>(u) ||
                          u->getDialect()->getNamespace() == "arith" ||
                          u->getDialect()->getNamespace() == "math");
      if (!elementwise)
        return "the result reaches '" + u->getName().getStringRef().str() + "'";
      work.push_back(u->getResult(0));
    }
  }
  return "";
}

bool onlyArgs(const LinearForm &f, Block &entry) {
  return llvm::all_of(f.terms, [&](auto &t) {
    auto a = dyn_cast<BlockArgument>(t.first);
    return a && a.getOwner() == &entry && isa<IntegerType>(a.getType());
  });
}

/// Whether every value of `f` fits 32 bits: TMA's coordinates are i32, and
/// a wider value (an i64 product) may not.
bool narrow(const LinearForm &f) {
  return llvm::all_of(f.terms, [](auto &t) { return t.first.getType().getIntOrFloatBitWidth() <= 32; });
}

/// Splits a tile's scalar offset `rest` into outer dimensions (a coordinate
/// times a stride over the arguments) and what adds to its column origin (a
/// term that is no such product, and the constant), or the reason why not.
std::string outerDimsOf(const LinearForm &rest, Block &entry,
                        SmallVectorImpl<TensorMapOperand::OuterDim> &outer, LinearForm &toColumns) {
  toColumns = LinearForm::constant(rest.c);
  for (auto [v, k] : rest.terms) {
    // linearFormOf looked through casts: a leaf is the product itself.
    auto mul = v.getDefiningOp<arith::MulIOp>();
    LinearForm a = mul ? linearFormOf(mul.getLhs()) : LinearForm(),
               b = mul ? linearFormOf(mul.getRhs()) : LinearForm();
    if (mul && !onlyArgs(b, entry))
      std::swap(a, b);
    if (!mul || !onlyArgs(b, entry) || b.isConstant()) {
      if (!narrow(LinearForm::leaf(v)))
        return "a scalar offset wider than 32 bits (TMA's coordinates are i32)";
      toColumns.add(LinearForm::leaf(v), k); // an offset in elements
      continue;
    }
    if (!narrow(a))
      return "a coordinate wider than 32 bits (TMA's coordinates are i32)";
    b.scale(k);
    outer.push_back({b, a});
  }
  if (outer.size() > 3)
    return "more than three dimensions past the rows";
  return "";
}

/// Whether scalar `v` is provably not negative, given that the integer
/// arguments of `entry` it meets are not (added to `assumed`).
bool nonNegative(Value v, Block &entry, SmallVectorImpl<unsigned> &assumed) {
  APInt cst;
  if (matchPattern(v, m_ConstantInt(&cst)))
    return !cst.isNegative();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != &entry || !isa<IntegerType>(arg.getType()))
      return false;
    if (!llvm::is_contained(assumed, arg.getArgNumber()))
      assumed.push_back(arg.getArgNumber());
    return true;
  }
  Operation *op = v.getDefiningOp();
  if (isa_and_present<tile::ProgramIdOp, tile::NumProgramsOp, tile::ClusterSizeOp>(op))
    return true;
  if (isa_and_present<arith::ExtSIOp, arith::ExtUIOp, arith::RemSIOp>(op)) // a remainder has the dividend's sign
    return nonNegative(op->getOperand(0), entry, assumed);
  if (isa_and_present<arith::AddIOp, arith::MulIOp, arith::DivSIOp, arith::MaxSIOp, arith::MinSIOp>(op))
    return nonNegative(op->getOperand(0), entry, assumed) && nonNegative(op->getOperand(1), entry, assumed);
  return false;
}

/// Whether c + sum(coef * value) + j * step is not negative for every j >= 0.
bool nonNegative(const LinearForm &f, int64_t step, Block &entry, SmallVectorImpl<unsigned> &assumed) {
  if (f.c < 0 || step < 0)
    return false;
  return llvm::all_of(f.terms, [&](auto &t) { return t.second > 0 && nonNegative(t.first, entry, assumed); });
}

} // namespace

std::optional<TensorMapOperand> analyzeTensorMapOperand(tile::LoadOp ld, scf::ForOp loop,
                                                        Block &entry, std::string &whyNot,
                                                        TensorMapQuery query) {
  const bool transposed = query.transposed;
  auto no = [&](const std::string &why) -> std::optional<TensorMapOperand> {
    whyNot = why;
    return std::nullopt;
  };
  auto rt = dyn_cast<RankedTensorType>(ld.getType());
  if (!rt || rt.getRank() != 2)
    return no("not a 2-D tile");
  // Iteration j: the induction variable is lo + j * step. The iteration
  // count j is written as the induction variable itself in the forms below.
  Value iv = loop.getInductionVar();
  LinearForm lo = linearFormOf(loop.getLowerBound()), step = linearFormOf(loop.getStep());
  if (!step.isConstant())
    return no("the loop step is not a constant");
  auto substitute = [&](LinearForm f) {
    int64_t k = f.coef(iv);
    f.add(LinearForm::leaf(iv), -k);
    f.add(lo, k);
    f.add(LinearForm::leaf(iv), k * step.c);
    return f;
  };

  // The pointer tile in iteration 0, and its advance per iteration.
  Value ptr = ld.getPtr();
  LinearForm advance;
  if (auto arg = dyn_cast<BlockArgument>(ptr); arg && arg.getOwner() == loop.getBody()) {
    unsigned i = arg.getArgNumber() - 1;
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    auto ap = yield.getOperand(i).getDefiningOp<tile::AddPtrOp>();
    std::optional<AffineTile> a = ap ? affineOf(ap.getOffset()) : std::nullopt;
    if (!ap || ap.getPtr() != arg || !a || !a->uniform())
      return no("the pointer tile does not advance by a uniform step");
    advance = a->rest;
    ptr = loop.getInitArgs()[i];
  }
  std::optional<PointerTile> p = pointerOf(ptr, entry, query.outerDims);
  if (!p)
    return no("the pointer tile is not a pointer argument plus affine offsets");
  AffineTile &off = p->off;
  // A wrapped dimension (`idx % n`) is read unwrapped when no wrapped
  // element is ever stored; its extent is where the wrap would begin.
  std::optional<AffineTile::Wrap> wrapOf[2];
  for (int td = 0; td < 2; ++td)
    if (off.dim[td] && off.dim[td]->wrap) {
      if (std::string why = wrapObservedWhy(ld, loop, td, *off.dim[td]->wrap); !why.empty())
        return no("an index taken modulo a run-time value, and " + why);
      wrapOf[td] = off.dim[td]->wrap;
    }
  // From here on, dimensions are the map's: rows, then contiguous columns.
  if (transposed) {
    std::swap(off.dim[0], off.dim[1]);
    std::swap(wrapOf[0], wrapOf[1]);
  }
  if (!off.dim[0] || !off.dim[1])
    return no("the pointer tile is not base + row * stride + column");
  SmallVector<TensorMapOperand::OuterDim> outer;
  if (query.outerDims) {
    LinearForm toColumns;
    if (std::string why = outerDimsOf(off.rest, entry, outer, toColumns); !why.empty())
      return no(why);
    off.dim[1]->origin.add(toColumns);
  } else if (!(off.rest == LinearForm())) {
    return no("the pointer tile is not base + row * stride + column");
  }
  if (!(off.dim[1]->stride == LinearForm::constant(1)))
    return no("the columns of the tile are not contiguous");
  TensorMapOperand t;
  t.pointerArg = p->base.getArgNumber();
  t.rowStride = off.dim[0]->stride;
  if (!onlyArgs(t.rowStride, entry))
    return no("the row stride is not a function of the kernel's arguments");
  // The advance moves whole rows or columns.
  int64_t rowSteps = 0, colSteps = 0;
  if (advance.isConstant() && t.rowStride.isConstant() && t.rowStride.c &&
      advance.c % t.rowStride.c == 0 && advance.c) {
    rowSteps = advance.c / t.rowStride.c;
  } else if (!t.rowStride.isConstant() && !advance.terms.empty()) {
    auto [v, s] = t.rowStride.terms.front();
    int64_t k = advance.coef(v) / s;
    LinearForm scaled = t.rowStride;
    scaled.scale(k);
    if (!(scaled == advance))
      return no("the pointer step is not a whole number of rows");
    rowSteps = k;
  } else if (advance.isConstant()) {
    colSteps = advance.c;
  } else {
    return no("the pointer step is not a whole number of rows or columns");
  }
  // Coordinates of iteration j: origin + j * (step in the loop's own terms).
  LinearForm origin[2] = {substitute(off.dim[0]->origin), substitute(off.dim[1]->origin)};
  int64_t stepOf[2] = {rowSteps + origin[0].coef(iv), colSteps + origin[1].coef(iv)};
  for (int d = 0; d < 2; ++d) {
    origin[d].add(LinearForm::leaf(iv), -origin[d].coef(iv));
    for (auto [v, s] : origin[d].terms)
      if (!loop.isDefinedOutsideOfLoop(v))
        return no("the tile's origin depends on values computed in the loop");
  }
  for (TensorMapOperand::OuterDim &o : outer)
    for (auto [v, s] : o.coord.terms)
      if (!loop.isDefinedOutsideOfLoop(v))
        return no("the tile's offset depends on values computed in the loop");

  // Extents from the wraps: coordinate origin + i is wrapped from
  // wrap.origin + i >= modulus on.
  std::optional<LinearForm> extent[2];
  for (int d = 0; d < 2; ++d) {
    if (!wrapOf[d])
      continue;
    LinearForm e = substitute(wrapOf[d]->modulus);
    e.add(origin[d]);
    e.add(substitute(wrapOf[d]->origin), -1);
    if (e.coef(iv) != 0 || stepOf[d] != 0 || !onlyArgs(e, entry))
      return no("an index taken modulo a run-time value moves with the loop");
    extent[d] = e;
  }
  // Extents from the mask: per dimension one `index < bound`.
  SmallVector<Value> terms;
  if (ld.getMask())
    conjuncts(ld.getMask(), terms);
  else if ((!extent[0] || !extent[1]) && !query.outerDims)
    return no("the load has no mask to bound it");
  for (Value c : terms) {
    using P = arith::CmpIPredicate;
    MaskTerm t = maskTermOf(c);
    arith::CmpIOp cmp = t.cmp;
    P pred = cmp ? cmp.getPredicate() : P::eq;
    // `index < bound`, or `index >= bound` where the bound is the tensor's
    // first element (a block pointer's lower check): TMA reads what lies
    // below coordinate 0 as zeros too.
    bool lower = pred == P::sge || pred == P::sle;
    if (!cmp || !(pred == P::slt || pred == P::sgt || lower))
      return no("a mask term is not `index < bound`");
    bool indexLeft = pred == P::slt || pred == P::sge;
    std::optional<AffineTile> &x = indexLeft ? t.lhs : t.rhs, &y = indexLeft ? t.rhs : t.lhs;
    if (!x || !y || !y->uniform() || (x->dim[0] && x->dim[1]) || x->uniform())
      return no("a mask term is not `index < bound` along one dimension");
    int td = x->dim[0] ? 0 : 1;              // the tile's dimension
    int d = transposed ? 1 - td : td;         // the map's
    if (!(x->dim[td]->stride == LinearForm::constant(1)))
      return no("a mask term's index does not step by one");
    // index = rest + origin + i < bound  <=>  coordinate < bound - rest - origin + pointer origin.
    LinearForm e = substitute(y->rest);
    e.add(substitute(x->rest), -1);
    e.add(substitute(x->dim[td]->origin), -1);
    e.add(origin[d]);
    e.add(LinearForm::leaf(iv), stepOf[d]);
    if (e.coef(iv) != 0)
      return no("the mask's bound moves with the loop differently from the pointer");
    if (lower) {
      if (!(e == LinearForm::constant(0)))
        return no("a mask term `index >= bound` does not start at the tensor's first element");
      continue;
    }
    if (!onlyArgs(e, entry))
      return no("the mask's bound is not a function of the kernel's arguments");
    if (extent[d] && !(*extent[d] == e))
      return no("two bounds on one dimension");
    extent[d] = e;
  }
  // Unmasked dimensions (outerDims): the columns of a tile that does not
  // move along them end with it; anything else is unbounded.
  if (query.outerDims && !extent[1] && origin[1].isConstant() && !stepOf[1])
    extent[1] = LinearForm::constant(origin[1].c + rt.getDimSize(transposed ? 0 : 1));
  for (int d = 0; d < 2 && query.outerDims; ++d) {
    if (extent[d])
      continue;
    if (!nonNegative(origin[d], stepOf[d], entry, t.nonNegativeArgs))
      return no(std::string("the tile's ") + (d ? "columns" : "rows") +
                " have no mask term and may start at a negative index");
    extent[d] = LinearForm::constant(kUnboundedExtent);
  }
  for (TensorMapOperand::OuterDim &o : outer)
    if (!nonNegative(o.coord, 0, entry, t.nonNegativeArgs))
      return no("a scalar offset's coordinate may be negative");
  if (!extent[0] || !extent[1])
    return no("the mask does not bound both dimensions");
  t.rows = *extent[0];
  t.cols = *extent[1];
  t.outer = outer;
  t.row0 = origin[0];
  t.col0 = origin[1];
  t.rowStep = stepOf[0];
  t.colStep = stepOf[1];
  return t;
}

} // namespace tessera::analysis
