// Verifiers and folders of the tile ops. Verifiers check what the front end
// promises, so that hand-written IR (tessera-opt) gets the same guarantees.
#include "tile/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace tessera::tile;

namespace {
bool isPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// A value that is either a scalar of `elem` or a tile of `elem` shaped like `ref`.
bool sameShape(Type a, Type b) {
  return getShapeOrEmpty(a) == getShapeOrEmpty(b) &&
         isa<RankedTensorType>(a) == isa<RankedTensorType>(b);
}

LogicalResult verifyMask(Operation *op, Type ptrTy, Value mask) {
  if (!mask)
    return success();
  if (!mlir::getElementTypeOrSelf(mask.getType()).isInteger(1))
    return op->emitOpError("mask must have i1 elements, got ") << mask.getType();
  if (!sameShape(mask.getType(), ptrTy))
    return op->emitOpError("mask shape ")
           << mask.getType() << " does not match pointer shape " << ptrTy;
  return success();
}

// Pointee type of a pointer or tile of pointers, or null.
Type pointeeOf(Type t) {
  if (auto p = dyn_cast<PtrType>(mlir::getElementTypeOrSelf(t)))
    return p.getPointeeType();
  return {};
}
} // namespace

#define GET_OP_CLASSES
#include "tile/TileOps.cpp.inc"

LogicalResult MakeRangeOp::verify() {
  int64_t n = int64_t(int32_t(getEnd())) - int64_t(int32_t(getStart()));
  if (n <= 0)
    return emitOpError("end must be greater than start");
  if (!isPow2(n))
    return emitOpError("range length ") << n << " is not a power of two";
  auto rt = getResult().getType();
  if (rt.getRank() != 1 || rt.getDimSize(0) != n)
    return emitOpError("result must be tensor<") << n << "xi32>";
  return success();
}

LogicalResult SplatOp::verify() {
  if (isa<ShapedType>(getSrc().getType()))
    return emitOpError("source must be a scalar");
  if (getResult().getType().getElementType() != getSrc().getType())
    return emitOpError("result element type must equal the source type");
  return success();
}

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  if (auto attr = dyn_cast_or_null<TypedAttr>(adaptor.getSrc()))
    if (isa<IntegerType, FloatType>(attr.getType()))
      return DenseElementsAttr::get(cast<ShapedType>(getResult().getType()), attr);
  return {};
}

LogicalResult BroadcastOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  if (src.getElementType() != dst.getElementType())
    return emitOpError("element types differ");
  if (src.getRank() != dst.getRank())
    return emitOpError("source and result ranks differ");
  for (int64_t i = 0; i < src.getRank(); ++i)
    if (src.getDimSize(i) != 1 && src.getDimSize(i) != dst.getDimSize(i))
      return emitOpError("dimension ") << i << " of size " << src.getDimSize(i)
                                       << " cannot broadcast to " << dst.getDimSize(i);
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getResult().getType())
    return getSrc();
  if (auto attr = dyn_cast_or_null<SplatElementsAttr>(adaptor.getSrc()))
    return SplatElementsAttr::get(getResult().getType(), attr.getSplatValue<Attribute>());
  return {};
}

LogicalResult ExpandDimsOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis > src.getRank())
    return emitOpError("axis ") << axis << " out of range for rank " << src.getRank();
  SmallVector<int64_t> shape(src.getShape());
  shape.insert(shape.begin() + axis, 1);
  if (dst.getShape() != ArrayRef<int64_t>(shape) || dst.getElementType() != src.getElementType())
    return emitOpError("result type does not insert a unit dimension at axis ") << axis;
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  if (src.getElementType() != dst.getElementType())
    return emitOpError("element types differ");
  if (src.getNumElements() != dst.getNumElements())
    return emitOpError("element counts differ: ")
           << src.getNumElements() << " vs " << dst.getNumElements();
  return success();
}

LogicalResult GatherOp::verify() {
  auto src = getSrc().getType(), idx = getIndex().getType(), dst = getResult().getType();
  if (!isa<IntegerType>(idx.getElementType()))
    return emitOpError("indices must be integers");
  if (src.getElementType() != dst.getElementType())
    return emitOpError("element types differ");
  if (idx.getShape() != dst.getShape())
    return emitOpError("the result must have the shape of the indices");
  int64_t axis = getAxis();
  if (src.getRank() == 1)
    return axis == 0 ? success() : emitOpError("a rank-1 table is read along axis 0");
  if (src.getRank() != idx.getRank())
    return emitOpError("src and indices must have the same rank (or src rank 1)");
  if (axis < 0 || axis >= src.getRank())
    return emitOpError("axis out of range");
  for (int64_t d = 0; d < src.getRank(); ++d)
    if (d != axis && src.getDimSize(d) != idx.getDimSize(d))
      return emitOpError("src and indices differ in dimension ") << d;
  return success();
}

LogicalResult TransOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  auto order = getOrder();
  if (int64_t(order.size()) != src.getRank())
    return emitOpError("order must name every dimension");
  SmallVector<bool> seen(order.size(), false);
  SmallVector<int64_t> shape;
  for (int32_t d : order) {
    if (d < 0 || d >= int32_t(order.size()) || seen[d])
      return emitOpError("order is not a permutation");
    seen[d] = true;
    shape.push_back(src.getDimSize(d));
  }
  if (dst.getShape() != ArrayRef<int64_t>(shape) || dst.getElementType() != src.getElementType())
    return emitOpError("result type does not match the permuted source");
  return success();
}

LogicalResult AddPtrOp::verify() {
  if (!isPointerLike(getPtr().getType()))
    return emitOpError("first operand must be a pointer or a tile of pointers");
  if (!isa<IntegerType>(mlir::getElementTypeOrSelf(getOffset().getType())))
    return emitOpError("offset must be an integer or a tile of integers");
  if (!sameShape(getPtr().getType(), getOffset().getType()))
    return emitOpError("pointer and offset shapes differ");
  return success();
}

ArrayRef<StringRef> tessera::tile::cacheModifiers(bool isLoad) {
  static const StringRef loadOps[] = {".ca", ".cg", ".cv"};
  static const StringRef storeOps[] = {".wb", ".cg", ".cs", ".wt"};
  return isLoad ? ArrayRef<StringRef>(loadOps) : ArrayRef<StringRef>(storeOps);
}

ArrayRef<StringRef> tessera::tile::evictionPolicies() {
  static const StringRef policies[] = {"evict_first", "evict_last", "evict_normal"};
  return policies;
}

/// `values`, each in double quotes, separated by ", ".
static std::string quotedList(ArrayRef<StringRef> values) {
  std::string s;
  for (StringRef v : values)
    s += (s.empty() ? "\"" : ", \"") + v.str() + "\"";
  return s;
}

/// The cache operator and eviction policy of a load or store, against the
/// values PTX has for it.
static LogicalResult verifyMemoryHints(Operation *op, std::optional<StringRef> cop,
                                       std::optional<StringRef> evict, bool isLoad) {
  if (cop && !llvm::is_contained(cacheModifiers(isLoad), *cop))
    return op->emitOpError("cache modifier '") << *cop << "' is not one of "
                                                << quotedList(cacheModifiers(isLoad));
  if (evict && !llvm::is_contained(evictionPolicies(), *evict))
    return op->emitOpError("eviction policy '") << *evict << "' is not one of "
                                                 << quotedList(evictionPolicies());
  return success();
}

LogicalResult LoadOp::verify() {
  if (failed(verifyMemoryHints(*this, getCacheModifier(), getEvictionPolicy(), true)))
    return failure();
  Type pointee = pointeeOf(getPtr().getType());
  if (!pointee)
    return emitOpError("expects a pointer or a tile of pointers");
  // The result may be in any layout (tgpu encoding): the pointers are
  // evaluated at the coordinates its registers hold.
  if (!sameShape(getResult().getType(), getPtr().getType()) ||
      getElementTypeOrSelf(getResult().getType()) != pointee)
    return emitOpError("result type ") << getResult().getType()
                                       << " does not match the pointer type " << getPtr().getType();
  if (failed(verifyMask(*this, getPtr().getType(), getMask())))
    return failure();
  if (getOther()) {
    if (!getMask())
      return emitOpError("`other` requires a mask");
    if (getOther().getType() != getResult().getType())
      return emitOpError("`other` type ") << getOther().getType()
                                          << " must equal the result type " << getResult().getType();
  }
  return success();
}

LogicalResult StoreOp::verify() {
  if (failed(verifyMemoryHints(*this, getCacheModifier(), getEvictionPolicy(), false)))
    return failure();
  Type pointee = pointeeOf(getPtr().getType());
  if (!pointee)
    return emitOpError("expects a pointer or a tile of pointers");
  // The value may be in any layout (tgpu encoding): the pointers are
  // evaluated at the coordinates its registers hold.
  if (!sameShape(getValue().getType(), getPtr().getType()) ||
      getElementTypeOrSelf(getValue().getType()) != pointee)
    return emitOpError("value type ") << getValue().getType()
                                      << " does not match the pointer type " << getPtr().getType();
  return verifyMask(*this, getPtr().getType(), getMask());
}

LogicalResult AtomicRMWOp::verify() {
  Type pointee = pointeeOf(getPtr().getType());
  if (!pointee)
    return emitOpError("expects a pointer or a tile of pointers");
  // As for a store, the value may be in any layout (tgpu encoding).
  if (!sameShape(getValue().getType(), getPtr().getType()) ||
      getElementTypeOrSelf(getValue().getType()) != pointee)
    return emitOpError("value type does not match the pointer type");
  if (getResult().getType() != getValue().getType())
    return emitOpError("result type must equal the value type");
  bool isFloat = isa<FloatType>(pointee);
  switch (getKind()) {
  case RMWKind::add:
  case RMWKind::max:
  case RMWKind::min:
  case RMWKind::xchg:
    break;
  default:
    if (isFloat)
      return emitOpError("bitwise atomics need integer elements");
  }
  unsigned width = pointee.isIntOrFloat() ? pointee.getIntOrFloatBitWidth() : 64;
  if (width < 16)
    return emitOpError("atomics need elements of at least 16 bits, got ") << pointee;
  return verifyMask(*this, getPtr().getType(), getMask());
}

LogicalResult AtomicCASOp::verify() {
  Type pointee = pointeeOf(getPtr().getType());
  if (!pointee)
    return emitOpError("expects a pointer or a tile of pointers");
  Type expect = withElementType(getPtr().getType(), pointee);
  if (getCmp().getType() != expect || getValue().getType() != expect ||
      getResult().getType() != expect)
    return emitOpError("compare, value and result must have type ") << expect;
  if (!pointee.isIntOrFloat() || pointee.getIntOrFloatBitWidth() < 32)
    return emitOpError("atomic_cas needs 32- or 64-bit elements");
  return success();
}

LogicalResult DotOp::verify() {
  auto a = getA().getType(), b = getB().getType(), c = getAcc().getType();
  if (a.getRank() != 2 || b.getRank() != 2 || c.getRank() != 2)
    return emitOpError("operands must be 2-D tiles");
  if (a.getDimSize(1) != b.getDimSize(0))
    return emitOpError("inner dimensions differ: ")
           << a.getDimSize(1) << " vs " << b.getDimSize(0);
  if (c.getDimSize(0) != a.getDimSize(0) || c.getDimSize(1) != b.getDimSize(1))
    return emitOpError("accumulator must be ") << a.getDimSize(0) << "x" << b.getDimSize(1);
  if (getResult().getType() != c)
    return emitOpError("result type must equal the accumulator type");
  for (int64_t d : {a.getDimSize(0), a.getDimSize(1), b.getDimSize(1)})
    if (d < 16)
      return emitOpError("every dot dimension must be at least 16, got ") << d;
  Type ea = a.getElementType(), eb = b.getElementType(), ec = c.getElementType();
  bool float8 = isFloat8Type(ea) && isFloat8Type(eb); // the two 8-bit formats may mix
  if (ea != eb && !float8)
    return emitOpError("operand element types differ: ") << ea << " vs " << eb;
  bool ok = (ea.isF32() && ec.isF32()) || ((ea.isF16() || ea.isBF16()) && ec.isF32()) ||
            (ea.isF16() && ec.isF16()) || (ea.isInteger(8) && ec.isInteger(32)) ||
            (ea.isF64() && ec.isF64()) || (float8 && ec.isF32());
  if (!ok)
    return emitOpError("unsupported dot types: ") << ea << " x " << eb << " -> " << ec;
  return success();
}

// The combiner of a reduce or scan over `srcs`: 2 x srcs.size() element
// arguments, returned as srcs.size() values of the same types. `keepAxis`:
// the results have the sources' shape (scan), else the axis is dropped.
static LogicalResult verifyCombine(Operation *op, ValueRange srcs, ValueRange results,
                                   int64_t axis, Region &combine, bool keepAxis) {
  if (srcs.empty())
    return op->emitOpError("needs at least one operand");
  auto shape = cast<RankedTensorType>(srcs[0].getType()).getShape();
  if (axis < 0 || axis >= int64_t(shape.size()))
    return op->emitOpError("axis ") << axis << " out of range for rank " << shape.size();
  if (results.size() != srcs.size())
    return op->emitOpError("needs one result per operand");
  SmallVector<int64_t> rshape(shape);
  if (!keepAxis)
    rshape.erase(rshape.begin() + axis);
  Block &body = combine.front();
  if (body.getNumArguments() != 2 * srcs.size())
    return op->emitOpError("combiner takes ") << 2 * srcs.size() << " arguments";
  for (auto [i, src] : llvm::enumerate(srcs)) {
    auto st = cast<RankedTensorType>(src.getType());
    if (st.getShape() != shape)
      return op->emitOpError("operands must have the same shape");
    Type elem = st.getElementType();
    Type expect = rshape.empty() ? elem : Type(RankedTensorType::get(rshape, elem));
    // After layout assignment a result may carry a layout (tgpu.slice).
    Type got = results[i].getType();
    if (auto rt = dyn_cast<RankedTensorType>(got); rt && rt.getEncoding())
      got = RankedTensorType::get(rt.getShape(), rt.getElementType());
    if (got != expect)
      return op->emitOpError("result ") << i << " must be " << expect;
    if (body.getArgument(i).getType() != elem ||
        body.getArgument(i + srcs.size()).getType() != elem)
      return op->emitOpError("combiner argument types must match the element types");
  }
  auto ret = dyn_cast_or_null<ReduceReturnOp>(body.empty() ? nullptr : &body.back());
  if (!ret)
    return op->emitOpError("combiner must end with tile.reduce.return");
  if (ret.getResults().size() != srcs.size())
    return op->emitOpError("combiner must return ") << srcs.size() << " values";
  for (auto [i, v] : llvm::enumerate(ret.getResults()))
    if (v.getType() != body.getArgument(i).getType())
      return op->emitOpError("combiner result types must match the element types");
  return success();
}

LogicalResult SortOp::verify() {
  auto st = cast<RankedTensorType>(getSrc().getType());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= st.getRank())
    return emitOpError("axis ") << axis << " out of range for rank " << st.getRank();
  if (!llvm::isPowerOf2_64(uint64_t(st.getDimSize(axis))))
    return emitOpError("sorts lines of a power-of-two length, got ") << st.getDimSize(axis);
  if (getSorted().getType() != st)
    return emitOpError("sorted result must be ") << st;
  auto it = dyn_cast<RankedTensorType>(getIndices().getType());
  if (!it || it.getShape() != st.getShape() || !it.getElementType().isInteger(32))
    return emitOpError("indices must be i32 of the source's shape");
  if (isa<PtrType>(st.getElementType()) || st.getElementType().isInteger(1))
    return emitOpError("sorts numbers, got ") << st.getElementType();
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  return verifyCombine(*this, getSrcs(), getResults(), getAxis(), getCombine(), true);
}

LogicalResult ReduceOp::verifyRegions() {
  return verifyCombine(*this, getSrcs(), getResults(), getAxis(), getCombine(), false);
}

LogicalResult BitcastOp::verify() {
  Type s = getSrc().getType(), d = getResult().getType();
  if (!sameShape(s, d))
    return emitOpError("bitcast cannot change the shape");
  Type se = mlir::getElementTypeOrSelf(s);
  Type de = mlir::getElementTypeOrSelf(d);
  auto width = [](Type t) -> unsigned {
    if (isa<PtrType>(t))
      return 64;
    return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 0;
  };
  if (!width(se) || width(se) != width(de))
    return emitOpError("bitcast needs element types of equal width, got ") << se << " and " << de;
  return success();
}

LogicalResult PtrToIntOp::verify() {
  if (!isPointerLike(getSrc().getType()))
    return emitOpError("source must be a pointer or a tile of pointers");
  if (!sameShape(getSrc().getType(), getResult().getType()) ||
      !mlir::getElementTypeOrSelf(getResult().getType()).isInteger(64))
    return emitOpError("result must be i64 with the source's shape");
  return success();
}

LogicalResult HintOp::verify() {
  size_t rank = std::max<size_t>(1, getShapeOrEmpty(getSrc().getType()).size());
  Type elem = mlir::getElementTypeOrSelf(getSrc().getType());
  if (!isa<IntegerType, PtrType>(elem))
    return emitOpError("hints apply to integers and pointers");
  for (auto attr : {getDivisibilityAttr(), getContiguityAttr()}) {
    if (!attr)
      continue;
    if (attr.size() != int64_t(rank))
      return emitOpError("hint needs one value per dimension (") << rank << ")";
    for (int32_t v : attr.asArrayRef())
      if (!isPow2(v))
        return emitOpError("hint values must be powers of two, got ") << v;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Canonicalization
//===----------------------------------------------------------------------===//

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(adaptor.getOffset(), m_Zero()))
    return getPtr();
  return {};
}

namespace {
// addptr(addptr(p, a), b) -> addptr(p, a + b): one address computation, and
// axis analysis sees the whole offset at once.
struct FoldAddPtrChain : OpRewritePattern<AddPtrOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddPtrOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getPtr().getDefiningOp<AddPtrOp>();
    if (!inner || inner.getOffset().getType() != op.getOffset().getType())
      return failure();
    Value sum = arith::AddIOp::create(rewriter, op.getLoc(), inner.getOffset(), op.getOffset());
    rewriter.replaceOpWithNewOp<AddPtrOp>(op, op.getType(), inner.getPtr(), sum);
    return success();
  }
};

// Reshaping a splat is a splat of the new shape.
template <typename OpTy>
struct ShapeOfSplat : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto splat = op.getSrc().template getDefiningOp<SplatOp>();
    if (!splat)
      return failure();
    rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(), splat.getSrc());
    return success();
  }
};

// c + dot(a, b, 0) -> dot(a, b, c): `acc += dot(a, b)` accumulates in the
// tensor cores like `acc = dot(a, b, acc)`, and its loop keeps the form that
// the software pipeliner knows (as Triton combines them).
template <typename AddOp>
struct AccumulateIntoDot : OpRewritePattern<AddOp> {
  using OpRewritePattern<AddOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (int k = 0; k < 2; ++k) {
      auto dot = add->getOperand(k).template getDefiningOp<DotOp>();
      Value other = add->getOperand(1 - k);
      if (!dot || !dot->hasOneUse() || other.getType() != dot.getType() ||
          !(matchPattern(dot.getAcc(), m_AnyZeroFloat()) || matchPattern(dot.getAcc(), m_Zero())))
        continue;
      rewriter.replaceOpWithNewOp<DotOp>(add, dot.getType(), dot.getA(), dot.getB(), other,
                                         dot.getInputPrecisionAttr());
      return success();
    }
    return failure();
  }
};
} // namespace

void DotOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<AccumulateIntoDot<arith::AddFOp>, AccumulateIntoDot<arith::AddIOp>>(ctx);
}
void AddPtrOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<FoldAddPtrChain>(ctx);
}
void ExpandDimsOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<ShapeOfSplat<ExpandDimsOp>>(ctx);
}
void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<ShapeOfSplat<ReshapeOp>>(ctx);
}
void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *ctx) {
  results.add<ShapeOfSplat<BroadcastOp>>(ctx);
}
