// Lowering of tile IR to per-thread scalar code.
//
// A tile is in the layout its type names (tgpu encodings, assigned by
// transforms/AssignLayouts.cpp before lowering): a tensor-core accumulator
// layout, or else the canonical blocked layout of its shape (see Layout): the
// row-major elements are cut into vectors of `vec` consecutive elements, and
// consecutive threads own consecutive vectors, so that warps touch contiguous
// memory. A tile value is then one of:
//   - Dist:    held in registers, one value per element the thread owns;
//   - Virtual: recomputable from element coordinates (ranges, splats, index
//              arithmetic, broadcasts of those). It is evaluated where used, so
//              broadcasting `rm[:, None]` costs no data movement;
// A Dist value read at coordinates the thread does not own (a broadcast of a
// reduction result, the operands of `dot`) is first copied to shared memory,
// once per region, and read back from there.
// Scalars are uniform across the block and stay plain SSA values.
#include "KernelLowering.h"
#include "Passes.h"
#include "analysis/ModuleOptions.h"
#include "analysis/TensorMapAttr.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <map>
#include <optional>

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::lowering {

using namespace detail;

//===----------------------------------------------------------------------===//
// Coordinates and shared memory
//===----------------------------------------------------------------------===//

ArrayRef<Value> KernelLowering::coords(const Layout &l, int64_t s) {
  std::vector<int64_t> key(l.shape.begin(), l.shape.end());
  key.push_back(l.mma || l.rows || l.cols
                   ? l.wm * 1000 + l.wn + (l.wgRows ? 100000 : 0) + (l.transposed ? 200000 : 0) +
                         (l.rows ? 400000 : 0) + (l.cols ? 800000 : 0)
                   : -1);
  key.push_back(l.vec);
  auto it = coordCache_.find({key, s});
  if (it != coordCache_.end())
    return it->second;
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointAfter(tid_.getDefiningOp());
  Location loc = src_.getLoc();
  if (l.mma) {
    // Slot s: tile (i, j) of the warp, element q of the thread's four.
    int64_t q = s % 4, t = s / 4, i = t / l.tn, j = t % l.tn;
    Value lane = laneId(loc);
    Value warp = arith::ShRUIOp::create(b_, loc, tid_, i32c(5, loc));
    Value wc = arith::RemUIOp::create(b_, loc, warp, i32c(l.wn, loc));
    Value row;
    if (l.transposed) {
      // C^T = B^T A^T: the warp's 16 rows are interleaved, row r of the
      // fragment at 2 * (r % 8) + r / 8, so that a thread's two rows are
      // adjacent (see Layout::transposed).
      Value group = arith::ShLIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, i32c(2, loc)),
                                          i32c(1, loc));
      row = arith::AddIOp::create(
          b_, loc, warpFirstRow(l, warp, loc),
          arith::AddIOp::create(b_, loc, group, i32c(tileFirstRow(l, i) + (q >= 2), loc)));
    } else {
      row = mmaRow(l, i, q >= 2);
    }
    // One warp across the columns (wgmma's layouts): the column values that
    // a column vector (tgpu.slice dim 0) is found at.
    Value col = l.wn == 1 && !l.transposed
                    ? mmaCol(j, q & 1)
                    : Value(arith::AddIOp::create(
                          b_, loc, arith::MulIOp::create(b_, loc, wc, i32c(l.tn * 8, loc)),
                          arith::AddIOp::create(
                              b_, loc,
                              arith::ShLIOp::create(b_, loc, arith::AndIOp::create(b_, loc, lane, i32c(3, loc)),
                                                    i32c(1, loc)),
                              i32c(j * 8 + (q & 1), loc))));
    if (l.transposed)
      std::swap(row, col);
    return coordCache_[{key, s}] = SmallVector<Value>{row, col};
  }
  if (l.rows)
    return coordCache_[{key, s}] = SmallVector<Value>{mmaRow(l, s / 2, s % 2)};
  if (l.cols)
    return coordCache_[{key, s}] = SmallVector<Value>{mmaCol(s / 2, s % 2)};
  if (l.replicated) {
    Value flat = arith::AndIOp::create(b_, loc, tid_, i32c(l.total - 1, loc));
    return coordCache_[{key, s}] = unflatten(flat, l.shape, loc);
  }
  // Slot s is flat index (tid * vec + v) + k * threads * vec: lane v of the
  // thread's k-th vector.
  int64_t k = s / l.vec, v = s % l.vec;
  auto laneKey = std::make_pair(std::vector<int64_t>{-2, l.vec, v}, int64_t(0));
  SmallVector<Value> &lane = coordCache_[laneKey];
  if (lane.empty()) {
    Value base = arith::MulIOp::create(b_, loc, tid_, i32c(l.vec, loc));
    if (v)
      base = arith::AddIOp::create(b_, loc, base, i32c(v, loc));
    lane.push_back(base);
  }
  Value base = lane[0];
  return coordCache_[{key, s}] = unflattenFrom(base, threads_ * l.vec, k * threads_ * l.vec, l.shape);
}

Value KernelLowering::warpFirstRow(const Layout &l, Value warp, Location loc) {
  if (!l.wgRows)
    return arith::MulIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, warp, i32c(l.wn, loc)),
                                 i32c(l.tm * 16, loc));
  // Warpgroup warp / 4 owns tm blocks of 64 rows; warp w % 4 rows 16 (w % 4).. of each.
  return arith::AddIOp::create(
      b_, loc, arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, warp, i32c(2, loc)), i32c(l.tm * 64, loc)),
      arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, warp, i32c(3, loc)), i32c(16, loc)));
}

static std::vector<int64_t> rowsKey(const Layout &l) { return {l.wm, l.wn, l.tm, l.wgRows}; }

Value KernelLowering::mmaRow(const Layout &l, int64_t i, int64_t h) {
  std::vector<int64_t> key = rowsKey(l);
  key.push_back(i);
  key.push_back(h);
  Value &row = mmaRows_[key];
  if (row)
    return row;
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointAfter(tid_.getDefiningOp());
  Location loc = src_.getLoc();
  Value lane = laneId(loc);
  Value warp = arith::ShRUIOp::create(b_, loc, tid_, i32c(5, loc));
  Value group = arith::ShRUIOp::create(b_, loc, lane, i32c(2, loc));
  row = arith::AddIOp::create(b_, loc, warpFirstRow(l, warp, loc),
                              arith::AddIOp::create(b_, loc, group, i32c(tileFirstRow(l, i) + 8 * h, loc)));
  rowSlots_[row] = {rowsKey(l), 2 * i + h};
  return row;
}

Value KernelLowering::mmaCol(int64_t j, int64_t q) {
  Value &col = mmaCols_[{j, q}];
  if (col)
    return col;
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointAfter(tid_.getDefiningOp());
  Location loc = src_.getLoc();
  Value lane = laneId(loc);
  Value pair = arith::ShLIOp::create(b_, loc, arith::AndIOp::create(b_, loc, lane, i32c(3, loc)),
                                     i32c(1, loc));
  col = arith::AddIOp::create(b_, loc, pair, i32c(j * 8 + q, loc));
  colSlots_[col] = 2 * j + q;
  return col;
}

int64_t KernelLowering::rowSlot(const Layout &l, Value row) {
  auto it = rowSlots_.find(row);
  return it != rowSlots_.end() && it->second.first == rowsKey(l) ? it->second.second : -1;
}

int64_t KernelLowering::heldRow(Value v, ArrayRef<Value> c) {
  Lowered &lv = lookup(v);
  if (lv.kind != Lowered::Dist || c.size() != 1)
    return -1;
  Layout l = layoutOfValue(v);
  if (l.cols) {
    auto it = colSlots_.find(c[0]);
    return it != colSlots_.end() && it->second < l.slots() ? it->second : -1;
  }
  return l.rows ? rowSlot(l, c[0]) : -1;
}

Value KernelLowering::offsetCoord(Value base, int64_t bound, int64_t off) {
  Value &known = offsetCoords_[{base.getAsOpaquePointer(), off}];
  if (!known) {
    if (off == 0) {
      known = base;
    } else {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointAfterValue(base);
      known = arith::AddIOp::create(b_, base.getLoc(), base, i32c(off, base.getLoc()));
    }
  }
  coordForms_.try_emplace(known, CoordForm{base, bound, off});
  return known;
}

Value KernelLowering::basePart(Value base, bool shift, int64_t amount) {
  Value &known = baseParts_[{base.getAsOpaquePointer(), shift, amount}];
  if (!known) {
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointAfterValue(base);
    Location loc = base.getLoc();
    known = shift ? Value(arith::ShRUIOp::create(b_, loc, base, i32c(amount, loc)))
                  : Value(arith::AndIOp::create(b_, loc, base, i32c(amount, loc)));
  }
  return known;
}

SmallVector<Value> KernelLowering::unflattenFrom(Value base, int64_t bound, int64_t off,
                                                 ArrayRef<int64_t> shape) {
  int64_t n = int64_t(shape.size());
  SmallVector<Value> c(n);
  for (int64_t d = n - 1; d >= 1; --d) {
    int64_t w = shape[d];
    if (bound >= w) { // this coordinate comes from base alone
      c[d] = basePart(base, false, w - 1);
      base = basePart(base, true, log2i(w));
      bound /= w;
      off /= w;
      continue;
    }
    // base + off % w stays below w; the coordinates above are constants.
    c[d] = offsetCoord(base, bound, off % w);
    int64_t rest = off / w;
    for (int64_t e = d - 1; e >= 0; --e) {
      int64_t x = e ? rest % shape[e] : rest;
      c[e] = entryConst(b_.getI32IntegerAttr(int32_t(x)));
      rest /= shape[e];
    }
    return c;
  }
  c[0] = offsetCoord(base, bound, off);
  return c;
}

// Where v has runs of equal values (its constancy) that a recorded
// coordinate's run of offsets spans, the coordinate moves to the run's first
// offset: the same element value, computed once for the run.
bool KernelLowering::canonicalCoords(Value v, ArrayRef<Value> c, SmallVector<Value> &out) {
  if (coordForms_.empty() || !isa<RankedTensorType>(v.getType()))
    return false;
  AxisInfo ai = axis_.get(v);
  bool changed = false;
  out.assign(c.begin(), c.end());
  for (size_t d = 0; d < c.size() && d < size_t(ai.rank()); ++d) {
    int64_t run = ai.constancy[d];
    if (run <= 1 || (run & (run - 1)))
      continue;
    auto it = coordForms_.find(c[d]);
    if (it == coordForms_.end() || run % it->second.bound)
      continue;
    const CoordForm f = it->second;
    int64_t first = f.off - f.off % run;
    if (first == f.off)
      continue;
    out[d] = offsetCoord(f.base, f.bound, first);
    changed = true;
  }
  return changed;
}

SmallVector<Value> KernelLowering::unflatten(Value flat, ArrayRef<int64_t> shape, Location loc) {
  SmallVector<Value> c(shape.size());
  Value rest = flat;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      c[0] = rest;
      break;
    }
    c[d] = arith::AndIOp::create(b_, loc, rest, i32c(shape[d] - 1, loc));
    rest = arith::ShRUIOp::create(b_, loc, rest, i32c(log2i(shape[d]), loc));
  }
  return c;
}

Value KernelLowering::flatIndex(ArrayRef<Value> c, ArrayRef<int64_t> shape, Location loc) {
  Value flat = c[0];
  for (size_t d = 1; d < shape.size(); ++d) {
    Value sh = arith::ShLIOp::create(b_, loc, flat, i32c(log2i(shape[d]), loc));
    flat = arith::OrIOp::create(b_, loc, sh, c[d]);
  }
  return flat;
}

Value KernelLowering::smemBase(int64_t offsetBytes, Location loc) {
  auto ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  Value base = LLVM::AddressOfOp::create(b_, loc, ptr3, smemGlobal_.getSymName());
  if (offsetBytes == 0)
    return base;
  return LLVM::GEPOp::create(b_, loc, ptr3, b_.getI8Type(), base,
                             ArrayRef<LLVM::GEPArg>{int32_t(offsetBytes)});
}

Value KernelLowering::smemPtr(Value base, Value index, Type elemTy, Location loc) {
  auto ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  return LLVM::GEPOp::create(b_, loc, ptr3, elemTy, base, ValueRange{index});
}

Value KernelLowering::isPrimary(const Layout &l, Location loc) {
  return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ult, tid_, i32c(l.total, loc));
}

Value KernelLowering::toSmem(Value v, Location loc) {
  // The copy is valid within the region that wrote it (and regions nested in it).
  LoweredValues::MemoKey key{v.getAsOpaquePointer(), {nullptr}};
  if (Value known = vals_.recall(key))
    return known;
  auto t = cast<RankedTensorType>(v.getType());
  Type et = convertElem(t.getElementType());
  Type mt = memType(et, b_.getContext());
  auto off = smemOffsets_.find(v);
  if (off == smemOffsets_.end()) {
    int64_t bytes = t.getNumElements() * byteWidth(mt);
    int64_t at = smem_.takeScratch(bytes, 16);
    if (at < 0) {
      // Reuses what an ended scope gave back; writeToSmem starts at a barrier.
      at = smem_.allocateTemp(bytes);
      scopeCopies_.back().push_back({v, bytes});
    }
    off = smemOffsets_.insert({v, at}).first;
  }
  Value base = smemBase(off->second, loc);
  writeToSmem(v, base, loc);
  vals_.remember(key, base);
  return base;
}

void KernelLowering::popScope() {
  vals_.popScope();
  for (auto [v, bytes] : scopeCopies_.pop_back_val()) {
    smem_.releaseTemp(smemOffsets_.lookup(v), bytes);
    smemOffsets_.erase(v);
  }
}

// v's elements, row-major at `base`, between two barriers (the first: earlier
// readers of the buffer, a previous loop iteration or op, are done).
void KernelLowering::writeToSmem(Value v, Value base, Location loc) {
  Layout l = layoutOfValue(v);
  SmallVector<Value> regs = materializeIn(v, l, loc);
  barrier(loc);
  for (int64_t s = 0; s < l.slots(); ++s)
    storeSmemElem(regs[s], base, flatIndex(coords(l, s), l.shape, loc), loc);
  barrier(loc);
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

Value KernelLowering::atSlot(Value v, const Layout &l, int64_t s, Location loc) {
  Lowered &lv = lookup(v);
  switch (lv.kind) {
  case Lowered::Scalar: return lv.scalar;
  case Lowered::Dist:
    if (layoutOfValue(v) == l)
      return lv.regs[s];
    return elem(v, coords(l, s), loc);
  default: return elem(v, coords(l, s), loc);
  }
}

SmallVector<Value> KernelLowering::materializeIn(Value v, const Layout &l, Location loc) {
  Lowered &lv = lookup(v);
  if (lv.kind == Lowered::Dist && layoutOfValue(v) == l)
    return lv.regs;
  SmallVector<Value> regs;
  for (int64_t s = 0; s < l.slots(); ++s)
    regs.push_back(atSlot(v, l, s, loc));
  return regs;
}

SmallVector<Value> KernelLowering::materialize(Value v, Location loc) {
  return materializeIn(v, layoutOf(cast<RankedTensorType>(v.getType())), loc);
}

Value KernelLowering::elem(Value v, ArrayRef<Value> c, Location loc) {
  Lowered &lv = lookup(v);
  if (lv.kind == Lowered::Scalar)
    return lv.scalar;
  if (int64_t slot = heldRow(v, c); slot >= 0)
    return lv.regs[slot];
  if (lv.kind != Lowered::Dist) {
    SmallVector<Value> first;
    if (canonicalCoords(v, c, first))
      return elem(v, first, loc);
  }
  LoweredValues::MemoKey key{v.getAsOpaquePointer(), {}};
  for (Value x : c)
    key.second.push_back(x.getAsOpaquePointer());
  if (Value known = vals_.recall(key))
    return known;
  Value r;
  auto shape = lv.type.getShape();
  if (lv.kind == Lowered::Offset) {
    Value p = elem(lv.base, c, loc);
    Type et = cast<tile::PtrType>(getElementTypeOrSelf(lv.type)).getPointeeType();
    r = LLVM::GEPOp::create(b_, loc, LLVM::LLVMPointerType::get(b_.getContext(), 1),
                            convertElem(et), p, ValueRange{lv.scalar});
  } else if (Operation *def = v.getDefiningOp();
             lv.kind == Lowered::Dist && def && isElementwise(def) && servable(v, c)) {
    // A function of row values known in these coordinates' slots (slices):
    // recomputed here from registers.
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, isa<RankedTensorType>(operand.getType()) ? elem(operand, c, loc)
                                                                 : scalarOf(operand));
    r = emitScalarOp(def, map, loc);
  } else if (lv.kind == Lowered::Dist) {
    // Registers read at arbitrary coordinates: through shared memory.
    Value base = toSmem(v, loc);
    r = loadSmemElem(base, flatIndex(c, shape, loc), convertElem(lv.type.getElementType()), loc);
  } else {
    Operation *op = v.getDefiningOp();
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      auto dense = cast<DenseElementsAttr>(cst.getValue());
      r = entryConst(cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    } else if (auto mr = dyn_cast<tile::MakeRangeOp>(op)) {
      r = mr.getStart() == 0 ? c[0] : Value(arith::AddIOp::create(b_, loc, c[0], i32c(int32_t(mr.getStart()), loc)));
    } else if (auto sp = dyn_cast<tile::SplatOp>(op)) {
      r = scalarOf(sp.getSrc());
    } else if (auto bc = dyn_cast<tile::BroadcastOp>(op)) {
      auto srcShape = bc.getSrc().getType().getShape();
      SmallVector<Value> sc(c.begin(), c.end());
      for (size_t d = 0; d < srcShape.size(); ++d)
        if (srcShape[d] == 1)
          sc[d] = entryConst(b_.getI32IntegerAttr(0));
      r = elem(bc.getSrc(), sc, loc);
    } else if (auto ed = dyn_cast<tile::ExpandDimsOp>(op)) {
      SmallVector<Value> sc(c.begin(), c.end());
      sc.erase(sc.begin() + ed.getAxis());
      r = elem(ed.getSrc(), sc, loc);
    } else if (auto rs = dyn_cast<tile::ReshapeOp>(op)) {
      Value flat = flatIndex(c, shape, loc);
      r = elem(rs.getSrc(), unflatten(flat, rs.getSrc().getType().getShape(), loc), loc);
    } else if (auto tr = dyn_cast<tile::TransOp>(op)) {
      auto order = tr.getOrder();
      SmallVector<Value> sc(c.size());
      for (size_t i = 0; i < order.size(); ++i)
        sc[order[i]] = c[i];
      r = elem(tr.getSrc(), sc, loc);
    } else if (auto cv = dyn_cast<tgpu::ConvertLayoutOp>(op)) {
      r = elem(cv.getSrc(), c, loc); // the same element in another layout
    } else if (auto h = dyn_cast<tile::HintOp>(op)) {
      r = elem(h.getSrc(), c, loc);
    } else {
      // Elementwise op whose tile operands are all virtual.
      IRMapping map;
      for (Value operand : op->getOperands())
        map.map(operand, isa<RankedTensorType>(operand.getType()) ? elem(operand, c, loc)
                                                                   : scalarOf(operand));
      r = emitScalarOp(op, map, loc);
    }
  }
  vals_.remember(key, r);
  return r;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

// A kernel without tensor cores (row reductions, scans, element-wise work)
// waits on memory between its phases, and a block of 8 warps alone on an SM
// has nothing to run meanwhile. When such a block would need more than 128
// registers a thread, only one fits; ask ptxas for two (.minnctapersm 2,
// which caps registers at 128 the way __launch_bounds__ does). Only where
// the tiles are small enough to fit: at most 32 elements a thread in the
// largest tile. Then the cap costs at most a few spills, and the layer-norm
// backward of the tutorial runs 28% faster (1 block of 184 registers -> 2 of
// 128, 108 bytes of spills). Dot kernels keep their registers: their
// accumulators need them and their pipelines hide latency. An explicit
// maxnreg wins. Smaller blocks fit two at 255 registers anyway.
int64_t KernelLowering::latencyOccupancyBlocks(bool hasDot, int64_t largestTile) const {
  constexpr int64_t kRegisterFile = 65536, kBlocks = 2, kMaxElementsPerThread = 32;
  int64_t threads = (opts_.numWarps + extraWarps_) * 32;
  int64_t cap = kRegisterFile / (kBlocks * threads);
  if (hasDot || extraWarps_ || cap >= 255 || cap < 128 ||
      largestTile > kMaxElementsPerThread * threads)
    return 0;
  if (int64_t used = smem_.used(); used && kBlocks * used > smem_.limit())
    return 0;
  return kBlocks;
}

bool KernelLowering::run() {
  MLIRContext *ctx = module_.getContext();
  Location loc = src_.getLoc();
  SmallVector<Type> argTypes;
  for (Type t : src_.getArgumentTypes())
    argTypes.push_back(convertScalar(t));
  std::string name = src_.getName().str();
  src_.setName(name + "__tile");
  b_.setInsertionPoint(src_);
  dst_ = func::FuncOp::create(b_, loc, name, b_.getFunctionType(argTypes, {}));
  dst_->setAttr("tessera.kernel", b_.getUnitAttr());
  dst_->setAttr("tessera.num_warps", b_.getI32IntegerAttr(opts_.numWarps));
  for (auto attr : {"tile.signature", "tile.constexprs"})
    if (Attribute a = src_->getAttr(attr))
      dst_->setAttr(attr, a);

  // Dynamic shared memory: one external array, carved up by allocSmem.
  {
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(module_.getBody());
    if (!(smemGlobal_ = module_.lookupSymbol<LLVM::GlobalOp>("__tessera_smem")))
      smemGlobal_ = LLVM::GlobalOp::create(
          b_, loc, LLVM::LLVMArrayType::get(b_.getI8Type(), 0), /*isConstant=*/false,
          LLVM::Linkage::External, "__tessera_smem", Attribute(), /*alignment=*/1024,
          /*addrSpace=*/3);
  }

  bool hasDot = false;
  int64_t largestTile = 0;
  src_.walk([&](Operation *op) {
    hasDot |= isa<tile::DotOp>(op);
    for (Type t : op->getResultTypes())
      if (auto rt = dyn_cast<RankedTensorType>(t))
        largestTile = std::max(largestTile, rt.getNumElements());
  });
  Block *entry = dst_.addEntryBlock();
  b_.setInsertionPointToStart(entry);
  tid_ = NVVM::ThreadIdXOp::create(b_, loc, b_.getI32Type());
  for (auto [from, to] : llvm::zip(src_.getArguments(), entry->getArguments())) {
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = to;
    vals_[from] = l;
  }
  pushScope();
  bool ok;
  if (std::optional<bool> tiles = lowerKernelAsTileLoop())
    ok = *tiles && lowerOp(src_.getBody().front().getTerminator());
  else
    ok = lowerBlock(src_.getBody().front());
  popScope();
  if (ok && smem_.used() > smem_.limit())
    ok = fail(src_, "kernel '" + name + "' needs " + std::to_string(smem_.used()) +
                        " bytes of shared memory; the limit on " + target_.name() + " is " +
                        std::to_string(smem_.limit()));
  dst_->setAttr("tessera.shared_bytes", b_.getI32IntegerAttr(int32_t(smem_.used())));
  if (extraWarps_)
    dst_->setAttr("tessera.num_warps", b_.getI32IntegerAttr(int32_t(opts_.numWarps + extraWarps_)));
  if (opts_.clusterSize > 1) {
    // Launched in clusters of clusterSize along x (PTX .reqnctapercluster):
    // the driver takes them from the kernel, cuLaunchKernel needs nothing.
    if (target_.sm < 90)
      ok = fail(src_, "cluster_size " + std::to_string(opts_.clusterSize) + " needs sm_90 or later; the target is " +
                          target_.name());
    dst_->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                  b_.getDenseI32ArrayAttr({int32_t(opts_.clusterSize), 1, 1}));
  }
  if (maxRegs_)
    dst_->setAttr("nvvm.maxnreg", b_.getI32IntegerAttr(int32_t(maxRegs_)));
  else if (int64_t blocks = latencyOccupancyBlocks(hasDot, largestTile))
    dst_->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), b_.getI32IntegerAttr(int32_t(blocks)));
  if (ok)
    remarkCallsBesideWgmma();
  if (!tensorMaps_.empty()) {
    SmallVector<Attribute> specs;
    for (const TensorMapSpec &s : tensorMaps_)
      specs.push_back(analysis::tensorMapAttr(b_.getContext(), s));
    dst_->setAttr("tessera.tensor_maps", b_.getArrayAttr(specs));
  }
  src_.erase();
  return ok;
}

void KernelLowering::remarkCallsBesideWgmma() {
  bool wgmma = false;
  LLVM::CallOp call;
  dst_.walk([&](Operation *op) {
    if (auto a = dyn_cast<LLVM::InlineAsmOp>(op))
      wgmma |= a.getAsmString().contains("wgmma.mma_async");
    if (auto c = dyn_cast<LLVM::CallOp>(op); c && !call)
      call = c;
  });
  if (!wgmma || !call)
    return;
  std::string callee = call.getCallee() ? call.getCallee()->str() : "a function";
  remark(call, "kernel '" + dst_.getName().str() + "' calls " + callee +
                   " (device_assert or device_print) and computes with wgmma: ptxas serializes "
                   "every wgmma of a kernel that makes a call (its C7510 warning), which can "
                   "cost a large part of the tensor cores' speed");
}

Value KernelLowering::addTensorMapParam(const TensorMapSpec &spec, Location loc) {
  MLIRContext *ctx = b_.getContext();
  unsigned idx = dst_.getNumArguments();
  NamedAttrList attrs;
  attrs.set("llvm.byval", TypeAttr::get(LLVM::LLVMArrayType::get(b_.getI8Type(), 128)));
  attrs.set("llvm.align", b_.getI64IntegerAttr(64));
  attrs.set("tessera.grid_constant", b_.getUnitAttr());
  if (failed(dst_.insertArgument(idx, LLVM::LLVMPointerType::get(ctx), attrs.getDictionary(ctx), loc)))
    return Value();
  tensorMaps_.push_back(spec);
  return LLVM::PtrToIntOp::create(b_, loc, b_.getI64Type(), dst_.getArgument(idx));
}

// Whether `u` converts `v` to a dot operand for a dot inside a loop nested in
// v's region (not a pipelined one: those load both operands in the loop).
// A staged dot loop stages such operands itself.
bool KernelLowering::isDotOperandInLoop(Operation *u, Value v) {
  auto cv = dyn_cast<tgpu::ConvertLayoutOp>(u);
  if (!cv || !isa_and_present<tgpu::DotOperandEncodingAttr>(cv.getType().getEncoding()))
    return false;
  Region *home = v.getParentRegion();
  return llvm::any_of(cv->getUsers(), [&](Operation *d) {
    if (!isa<tile::DotOp>(d) || d->getParentRegion() == home || !home->isAncestor(d->getParentRegion()))
      return false;
    auto loop = dyn_cast<scf::ForOp>(d->getParentOp());
    return !(loop && stagesDotLoop(loop));
  });
}

bool KernelLowering::lowerBlock(Block &blk) {
  for (Operation &op : blk) {
    if (!lowerOp(&op))
      return false;
    // A tile that gather reads is staged in shared memory here, where it is
    // defined, so a gather inside a loop does not stage it every iteration.
    // So is a dot operand that a loop inside reads (attention's Q): staged
    // once, and its registers are free during the loop.
    for (Value r : op.getResults())
      if (isa<RankedTensorType>(r.getType()) && lookup(r).kind == Lowered::Dist &&
          llvm::any_of(r.getUsers(), [&](Operation *u) {
            auto g = dyn_cast<tile::GatherOp>(u);
            return (g && g.getSrc() == r) || isDotOperandInLoop(u, r);
          }))
        toSmem(r, op.getLoc());
    // Scalar loads read the same address in every thread, producer warps
    // included; anything else with memory effects rules out warp specialization.
    auto ld = dyn_cast<tile::LoadOp>(op);
    bool scalarLoad = ld && !isa<RankedTensorType>(ld.getType());
    touchedMemory_ |= !scalarLoad && !isMemoryEffectFree(&op);
  }
  return true;
}

std::optional<Layout> KernelLowering::sliceParentOf(Value v, int depth) {
  if (auto it = sliceParent_.find(v); it != sliceParent_.end())
    return it->second;
  Operation *op = v.getDefiningOp();
  if (!op || depth > 8 || !isElementwise(op))
    return std::nullopt;
  std::optional<Layout> found;
  for (Value o : op->getOperands()) {
    if (!isa<RankedTensorType>(o.getType()) || lookup(o).kind != Lowered::Dist)
      continue;
    std::optional<Layout> p = sliceParentOf(o, depth + 1);
    if (!p || (found && *found != *p))
      return std::nullopt;
    found = p;
  }
  return found;
}

bool KernelLowering::servable(Value v, ArrayRef<Value> c, int depth) {
  if (depth > 8)
    return false;
  Lowered &lv = lookup(v);
  if (lv.kind == Lowered::Scalar)
    return true;
  LoweredValues::MemoKey key{v.getAsOpaquePointer(), {}};
  for (Value x : c)
    key.second.push_back(x.getAsOpaquePointer());
  if (vals_.recall(key) || heldRow(v, c) >= 0)
    return true;
  Operation *op = v.getDefiningOp();
  if (!op || (lv.kind != Lowered::Dist && lv.kind != Lowered::Virtual))
    return false;
  if (isElementwise(op)) {
    for (Value o : op->getOperands())
      if (isa<RankedTensorType>(o.getType()) && !servable(o, c, depth + 1))
        return false;
    return true;
  }
  if (lv.kind == Lowered::Dist)
    return false;
  if (isa<arith::ConstantOp, tile::MakeRangeOp, tile::SplatOp>(op))
    return true;
  if (auto ed = dyn_cast<tile::ExpandDimsOp>(op)) {
    SmallVector<Value> sc(c.begin(), c.end());
    sc.erase(sc.begin() + ed.getAxis());
    return servable(ed.getSrc(), sc, depth + 1);
  }
  if (auto bc = dyn_cast<tile::BroadcastOp>(op)) {
    auto srcShape = bc.getSrc().getType().getShape();
    SmallVector<Value> sc(c.begin(), c.end());
    for (size_t d = 0; d < srcShape.size(); ++d)
      if (srcShape[d] == 1)
        sc[d] = entryConst(b_.getI32IntegerAttr(0));
    return servable(bc.getSrc(), sc, depth + 1);
  }
  return false;
}

bool KernelLowering::readOnlyIn(Value v, const Layout &p, int depth) {
  if (depth > 8)
    return false;
  for (Operation *u : v.getUsers()) {
    if (isa<tile::BroadcastOp, tile::ExpandDimsOp>(u)) {
      if (!readOnlyIn(u->getResult(0), p, depth + 1))
        return false;
      continue;
    }
    if (!isElementwise(u))
      return false;
    auto rt = dyn_cast<RankedTensorType>(u->getResult(0).getType());
    if (!rt || tgpu::mmaEncodingOf(rt) || layoutOf(rt) != p)
      return false;
  }
  return true;
}

bool KernelLowering::lowerOp(Operation *op) {
  Location loc = op->getLoc();
  auto setScalar = [&](Value from, Value to) {
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = to;
    vals_[from] = l;
  };
  auto setVirtual = [&](Value from) {
    Lowered l;
    l.kind = Lowered::Virtual;
    l.type = cast<RankedTensorType>(from.getType());
    vals_[from] = l;
  };

  if (auto pid = dyn_cast<tile::ProgramIdOp>(op)) {
    Value v = pid.getAxis() == 0 ? Value(NVVM::BlockIdXOp::create(b_, loc, b_.getI32Type()))
              : pid.getAxis() == 1 ? Value(NVVM::BlockIdYOp::create(b_, loc, b_.getI32Type()))
                                   : Value(NVVM::BlockIdZOp::create(b_, loc, b_.getI32Type()));
    setScalar(pid, v);
    return true;
  }
  if (auto np = dyn_cast<tile::NumProgramsOp>(op)) {
    Value v = np.getAxis() == 0 ? Value(NVVM::GridDimXOp::create(b_, loc, b_.getI32Type()))
              : np.getAxis() == 1 ? Value(NVVM::GridDimYOp::create(b_, loc, b_.getI32Type()))
                                  : Value(NVVM::GridDimZOp::create(b_, loc, b_.getI32Type()));
    setScalar(np, v);
    return true;
  }
  if (auto cs = dyn_cast<tile::ClusterSizeOp>(op)) {
    // The cluster's blocks along x (%cluster_nctaid.x, sm_90+; 1 without a
    // cluster launch). Clusters span x only (CompileOptions::clusterSize).
    Value v = target_.sm >= 90 ? Value(NVVM::ClusterDimBlocksXOp::create(b_, loc, b_.getI32Type()))
                               : Value(i32c(1, loc));
    setScalar(cs, v);
    return true;
  }
  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    if (auto rt = dyn_cast<RankedTensorType>(cst.getType())) {
      auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
      if (!dense || !dense.isSplat())
        return fail(op, "non-splat tile constants are not supported by the GPU back end");
      setVirtual(cst);
      return true;
    }
    setScalar(cst, arith::ConstantOp::create(b_, cst.getLoc(), storageAttr(cast<TypedAttr>(cst.getValue()))));
    return true;
  }
  if (isa<tile::MakeRangeOp, tile::SplatOp>(op)) {
    setVirtual(op->getResult(0));
    return true;
  }
  if (isa<tile::BroadcastOp, tile::ExpandDimsOp, tile::ReshapeOp, tile::TransOp, tile::HintOp>(op)) {
    Value src = op->getOperand(0), res = op->getResult(0);
    if (!isa<RankedTensorType>(src.getType())) { // hint on a scalar
      setScalar(res, scalarOf(src));
      return true;
    }
    Lowered &ls = lookup(src);
    auto rt = cast<RankedTensorType>(res.getType());
    if (isa<tile::ExpandDimsOp>(op) && ls.kind == Lowered::Dist &&
        (layoutOfValue(src).rows || layoutOfValue(src).cols)) {
      // A row (column) vector in registers, read at the rows (columns) of its
      // parent's slots.
      setVirtual(res);
      return true;
    }
    if (auto ed = dyn_cast<tile::ExpandDimsOp>(op); ed && ls.kind == Lowered::Dist) {
      // A row value (a slice of a reduced tile's layout) expanded to be
      // broadcast back over the rows: when every use reads it in that layout,
      // where the reduction left it in registers, nothing goes to shared memory.
      std::optional<Layout> p = sliceParentOf(src);
      if (p && int64_t(p->shape.size()) == rt.getRank() && readOnlyIn(res, *p)) {
        bool all = true;
        for (int64_t s = 0; all && s < p->slots(); ++s) {
          SmallVector<Value> sc(coords(*p, s));
          sc.erase(sc.begin() + ed.getAxis());
          all = servable(src, sc);
        }
        if (all) {
          setVirtual(res);
          return true;
        }
      }
    }
    if (ls.kind == Lowered::Dist) {
      // Same flat order and same layout: the registers carry over unchanged.
      Layout a = layoutOfValue(src), b = layoutOf(rt);
      bool flatPreserving = isa<tile::ExpandDimsOp, tile::ReshapeOp, tile::HintOp>(op);
      if (flatPreserving && !a.mma && a.vec == b.vec && a.replicated == b.replicated &&
          a.total == b.total) {
        Lowered l = ls;
        l.type = rt;
        vals_[res] = l;
        return true;
      }
      toSmem(src, loc); // read back at the new coordinates
    }
    setVirtual(res);
    return true;
  }
  if (auto g = dyn_cast<tile::GatherOp>(op))
    return lowerGather(g);
  if (auto cv = dyn_cast<tgpu::ConvertLayoutOp>(op))
    return lowerConvertLayout(cv);
  if (auto ld = dyn_cast<tile::LoadOp>(op))
    return lowerLoad(ld);
  if (auto st = dyn_cast<tile::StoreOp>(op))
    return lowerStore(st);
  if (isa<tile::AtomicRMWOp, tile::AtomicCASOp>(op))
    return lowerAtomic(op);
  if (auto d = dyn_cast<tile::DotOp>(op))
    return lowerDot(d);
  if (auto r = dyn_cast<tile::ReduceOp>(op))
    return lowerReduce(r);
  if (auto sc = dyn_cast<tile::ScanOp>(op))
    return lowerScan(sc);
  if (auto so = dyn_cast<tile::SortOp>(op))
    return lowerSort(so);
  if (auto f = dyn_cast<scf::ForOp>(op))
    return lowerFor(f);
  if (auto i = dyn_cast<scf::IfOp>(op))
    return lowerIf(i);
  if (auto w = dyn_cast<scf::WhileOp>(op))
    return lowerWhile(w);
  if (isa<func::ReturnOp>(op)) {
    func::ReturnOp::create(b_, loc);
    return true;
  }
  if (auto as = dyn_cast<tile::AssertOp>(op))
    return lowerAssert(as);
  if (auto ia = dyn_cast<tile::InlineAsmOp>(op))
    return lowerInlineAsm(ia);
  if (isa<tile::BarrierOp>(op)) {
    barrier(loc);
    return true;
  }
  if (isa<tile::GridDependencyWaitOp, tile::LaunchDependentsOp>(op))
    return lowerGridDependency(op);
  if (auto pr = dyn_cast<tile::PrintOp>(op))
    return lowerPrint(pr);
  if (isElementwise(op))
    return lowerElementwise(op);
  return fail(op, "the GPU back end cannot lower '" + op->getName().getStringRef().str() + "'");
}

bool KernelLowering::lowerConvertLayout(tgpu::ConvertLayoutOp op) {
  Value src = op.getSrc(), res = op.getResult();
  auto rt = op.getType();
  Lowered l = lookup(src);
  l.type = rt;
  // Index arithmetic has no layout (it is evaluated at any coordinates); a
  // dot operand is read by the dot's own staging, from whatever registers the
  // tile is in; registers already in the target layout stay where they are.
  if (l.kind != Lowered::Dist || isa_and_present<tgpu::DotOperandEncodingAttr>(rt.getEncoding()) ||
      layoutOfValue(src) == layoutOf(rt)) {
    if (l.kind == Lowered::Dist)
      l.layout = layoutOfValue(src);
    vals_[res] = l;
    return true;
  }
  // Registers move: through shared memory.
  l.regs = materializeIn(src, layoutOf(rt), op.getLoc());
  l.layout.reset();
  vals_[res] = l;
  return true;
}

Value KernelLowering::emitScalarOp(Operation *op, IRMapping &map, Location loc) {
  if (auto ap = dyn_cast<tile::AddPtrOp>(op)) {
    Type et = cast<tile::PtrType>(getElementTypeOrSelf(ap.getType())).getPointeeType();
    return LLVM::GEPOp::create(b_, loc, LLVM::LLVMPointerType::get(b_.getContext(), 1),
                               convertElem(et), map.lookup(ap.getPtr()),
                               ValueRange{map.lookup(ap.getOffset())});
  }
  if (auto bc = dyn_cast<tile::BitcastOp>(op)) {
    Value x = map.lookup(bc.getSrc());
    Type to = convertElem(getElementTypeOrSelf(bc.getType()));
    if (x.getType() == to)
      return x;
    if (isa<LLVM::LLVMPointerType>(to))
      return LLVM::IntToPtrOp::create(b_, loc, to, x);
    if (isa<LLVM::LLVMPointerType>(x.getType()))
      return LLVM::PtrToIntOp::create(b_, loc, to, x);
    return arith::BitcastOp::create(b_, loc, to, x);
  }
  if (auto p2i = dyn_cast<tile::PtrToIntOp>(op))
    return LLVM::PtrToIntOp::create(b_, loc, b_.getI64Type(), map.lookup(p2i.getSrc()));
  if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
      (isFloat8Type(getElementTypeOrSelf(op->getOperand(0).getType())) ||
       isFloat8Type(getElementTypeOrSelf(op->getResult(0).getType()))))
    return convertFloat8(op, map.lookup(op->getOperand(0)), loc);
  Operation *clone = b_.clone(*op, map);
  clone->getResult(0).setType(convertElem(getElementTypeOrSelf(op->getResult(0).getType())));
  return clone->getResult(0);
}

bool KernelLowering::lowerElementwise(Operation *op) {
  Location loc = op->getLoc();
  Value res = op->getResult(0);
  auto rt = dyn_cast<RankedTensorType>(res.getType());
  auto emitScalar = [&](IRMapping &map) -> Value { return emitScalarOp(op, map, loc); };
  if (!rt) {
    IRMapping map;
    for (Value operand : op->getOperands())
      map.map(operand, scalarOf(operand));
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = emitScalar(map);
    vals_[res] = l;
    return error_.empty(); // emitScalarOp reports what it cannot lower
  }
  bool allVirtual = true;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType())) {
      auto k = lookup(operand).kind;
      allVirtual &= k == Lowered::Virtual || k == Lowered::Offset;
    }
  if (allVirtual) {
    Lowered l;
    l.kind = Lowered::Virtual;
    l.type = rt;
    vals_[res] = l;
    return true;
  }
  Layout lay = layoutOf(rt);
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()) && lookup(operand).kind == Lowered::Dist) {
      lay = layoutOfValue(operand); // no conversion for the first register operand
      break;
    }
  Lowered l;
  l.kind = Lowered::Dist;
  l.type = rt;
  if (lay != layoutOf(rt))
    l.layout = lay;
  for (int64_t s = 0; s < lay.slots(); ++s) {
    IRMapping map;
    for (Value operand : op->getOperands())
      map.map(operand, isa<RankedTensorType>(operand.getType()) ? atSlot(operand, lay, s, loc)
                                                                 : scalarOf(operand));
    l.regs.push_back(emitScalar(map));
  }
  vals_[res] = l;
  return error_.empty();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

// Each lane reads src at its coordinates with the axis's one replaced by its
// index: src's elements come from shared memory (staged once by lowerBlock
// for a tile in registers), read back at arbitrary coordinates by elem().
bool KernelLowering::lowerGather(tile::GatherOp op) {
  Location loc = op.getLoc();
  auto rt = cast<RankedTensorType>(op.getType());
  Layout lay = layoutOf(rt);
  Value src = op.getSrc(), index = op.getIndex();
  bool table = op.getSrc().getType().getRank() == 1;
  int64_t axis = op.getAxis();
  SmallVector<Value> regs;
  for (int64_t s = 0; s < lay.slots(); ++s) {
    Value i = atSlot(index, lay, s, loc);
    unsigned w = i.getType().getIntOrFloatBitWidth();
    if (w > 32)
      i = arith::TruncIOp::create(b_, loc, b_.getI32Type(), i);
    else if (w < 32)
      i = arith::ExtSIOp::create(b_, loc, b_.getI32Type(), i);
    SmallVector<Value> c;
    if (table) {
      c.push_back(i);
    } else {
      ArrayRef<Value> at = coords(lay, s);
      c.assign(at.begin(), at.end());
      c[size_t(axis)] = i;
    }
    regs.push_back(elem(src, c, loc));
  }
  bindDist(op.getResult(), regs);
  return true;
}

bool KernelLowering::lowerLoad(tile::LoadOp op) {
  Location loc = op.getLoc();
  ScopedMemoryHints hints(*this, op.getCacheModifier(), op.getEvictionPolicy());
  Type et = convertElem(getElementTypeOrSelf(op.getType()));
  if (et.isInteger(1))
    return fail(op, "loads of i1 are not supported; store booleans as i8");
  auto loadOne = [&](Value ptr, Value mask, Value other) -> Value {
    return maskedLoad(et, ptr, mask, other, op.getIsVolatile(), loc);
  };
  auto rt = dyn_cast<RankedTensorType>(op.getType());
  if (!rt) {
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = loadOne(scalarOf(op.getPtr()), op.getMask() ? scalarOf(op.getMask()) : Value(),
                       op.getOther() ? scalarOf(op.getOther()) : Value());
    vals_[op.getResult()] = l;
    return true;
  }
  Layout lay = layoutOf(rt);
  int64_t eb = byteWidth(et);
  VectorPlan plan = planVector(lay, op.getPtr(), et, op.getMask());
  bool vectorize = plan.contiguous;
  Lowered l;
  l.kind = Lowered::Dist;
  l.type = rt;
  int64_t nslots = lay.slots();
  SmallVector<Value> ptrs, masks, others;
  for (int64_t s = 0; s < nslots; ++s) {
    ptrs.push_back(atSlot(op.getPtr(), lay, s, loc));
    masks.push_back(op.getMask() ? atSlot(op.getMask(), lay, s, loc) : Value());
    others.push_back(op.getOther() ? atSlot(op.getOther(), lay, s, loc) : Value());
  }
  if (!vectorize) {
    for (int64_t s = 0; s < nslots; ++s)
      l.regs.push_back(loadOne(ptrs[s], masks[s], others[s]));
    vals_[op.getResult()] = l;
    return true;
  }
  // Aligned vectors whose mask is one value per vector: a predicated vector
  // load each, as Triton issues them. One path, so no element-wise fallback
  // holds a register per element: with its stores predicated too, the layer
  // norm tutorial's forward went from 123 registers to 80 (three blocks per
  // SM), and flash attention's backward at 32 x 128 tiles from 1260 bytes of
  // spills to 88.
  if (plan.predicated && !op.getIsVolatile()) {
    for (int64_t k = 0; k < nslots / lay.vec; ++k) {
      ArrayRef<Value> o(others.begin() + k * lay.vec, others.begin() + (k + 1) * lay.vec);
      SmallVector<Value> lanes = predicatedVectorLoad(et, o, ptrs[k * lay.vec], masks[k * lay.vec], loc);
      l.regs.append(lanes.begin(), lanes.end());
    }
    vals_[op.getResult()] = l;
    return true;
  }
  // One guard for the whole tile: when every vector is in bounds (and aligned),
  // all wide loads sit in one block and issue back to back; otherwise every
  // element is loaded on its own. Guarding each vector separately put each
  // load in its own branch and serialized their latencies.
  auto vt = VectorType::get({lay.vec}, et);
  // Bytes load as one integer and are shifted out of it: a vector of i8
  // goes through 16-bit registers in NVPTX, and a later widening (a u8 index)
  // then costs a mask an element.
  // A guarded vector load without masks (alignment not proven) also loads as
  // one integer: LLVM scalarizes a vector load whose uses are all extracts,
  // and then merges the two branches into the scalar loads.
  bool unmasked = llvm::all_of(masks, [](Value m) { return !m; });
  bool bytes = et.isInteger(8) && lay.vec > 1;
  auto wide = b_.getIntegerType(unsigned(8 * eb * lay.vec));
  auto lane = b_.getIntegerType(unsigned(8 * eb));
  auto vecLoads = [&](bool asInteger) {
    SmallVector<Value> lanes;
    for (int64_t k = 0; k < nslots / lay.vec; ++k) {
      if (bytes || asInteger) {
        Value w = globalLoad(wide, ptrs[k * lay.vec], lay.vec * eb, op.getIsVolatile(), loc);
        for (int64_t v = 0; v < lay.vec; ++v) {
          Value sh = arith::ShRUIOp::create(
              b_, loc, w, arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(wide, 8 * eb * v)));
          Value x = arith::TruncIOp::create(b_, loc, lane, sh);
          lanes.push_back(lane == et ? x : Value(arith::BitcastOp::create(b_, loc, et, x)));
        }
        continue;
      }
      Value vec = globalLoad(vt, ptrs[k * lay.vec], lay.vec * eb, op.getIsVolatile(), loc);
      for (int64_t v = 0; v < lay.vec; ++v)
        lanes.push_back(LLVM::ExtractElementOp::create(b_, loc, vec, i32c(v, loc)));
    }
    return lanes;
  };
  Value all;
  for (int64_t k = 0; k < nslots / lay.vec; ++k) {
    ArrayRef<Value> m(masks.begin() + k * lay.vec, masks.begin() + (k + 1) * lay.vec);
    Value g = vectorGuard(m, ptrs[k * lay.vec], lay.vec * eb, plan.aligned, loc);
    if (g)
      all = all ? Value(arith::AndIOp::create(b_, loc, all, g)) : g;
  }
  if (!all) {
    l.regs = vecLoads(false);
    vals_[op.getResult()] = l;
    return true;
  }
  SmallVector<Type> tys(nslots, et);
  auto ifOp = scf::IfOp::create(b_, loc, tys, all, true, true);
  {
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b_, loc, vecLoads(unmasked && isa<IntegerType, FloatType>(et)));
    b_.setInsertionPointToStart(ifOp.elseBlock());
    SmallVector<Value> lanes;
    for (int64_t s = 0; s < nslots; ++s)
      lanes.push_back(loadOne(ptrs[s], masks[s], others[s]));
    scf::YieldOp::create(b_, loc, lanes);
  }
  for (Value x : ifOp.getResults())
    l.regs.push_back(x);
  vals_[op.getResult()] = l;
  return true;
}

bool KernelLowering::lowerStore(tile::StoreOp op) {
  Location loc = op.getLoc();
  ScopedMemoryHints hints(*this, op.getCacheModifier(), op.getEvictionPolicy());
  Type et = convertElem(getElementTypeOrSelf(op.getValue().getType()));
  if (et.isInteger(1))
    return fail(op, "stores of i1 are not supported; store booleans as i8");
  auto rt = dyn_cast<RankedTensorType>(op.getValue().getType());
  if (!rt) { // one thread writes a scalar
    Value first = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, tid_, i32c(0, loc));
    Value m = op.getMask() ? Value(arith::AndIOp::create(b_, loc, first, scalarOf(op.getMask()))) : first;
    maskedStore(scalarOf(op.getValue()), scalarOf(op.getPtr()), m, loc);
    return true;
  }
  // A value in a tensor-core layout is stored from the registers it is in
  // (pairs of adjacent columns), not converted to the blocked layout first.
  Layout lay = layoutOfValue(op.getValue());
  if (lookup(op.getValue()).kind != Lowered::Dist || !lay.mma)
    lay = layoutOf(rt);
  else if (lowerStoreThroughSmem(op, lay)) // 16-byte stores through shared memory
    return true;
  int64_t eb = byteWidth(et);
  VectorPlan plan = planVector(lay, op.getPtr(), et, op.getMask());
  bool vectorize = plan.contiguous;
  Value primary = lay.replicated ? isPrimary(lay, loc) : Value();
  for (int64_t k = 0; k < lay.slots() / lay.vec; ++k) {
    auto [ptrs, vals, masks] = vectorLanes(op.getPtr(), op.getValue(), op.getMask(), lay, k, primary, loc);
    if (plan.predicated) { // a predicated vector store each, as for loads
      predicatedVectorStore(vals, et, ptrs[0], masks[0], loc);
      continue;
    }
    if (!vectorize) {
      for (int64_t v = 0; v < lay.vec; ++v)
        maskedStore(vals[v], ptrs[v], masks[v], loc);
      continue;
    }
    auto vt = VectorType::get({lay.vec}, et);
    auto vecStore = [&]() {
      Value vec = LLVM::PoisonOp::create(b_, loc, vt);
      for (int64_t v = 0; v < lay.vec; ++v)
        vec = LLVM::InsertElementOp::create(b_, loc, vec, vals[v], i32c(v, loc));
      globalStore(vec, ptrs[0], lay.vec * eb, loc);
    };
    guardedVector(masks, ptrs[0], lay.vec * eb, plan.aligned, lay.vec, vecStore,
                  [&](int64_t v) { maskedStore(vals[v], ptrs[v], masks[v], loc); }, loc);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// device_print: one vprintf per owned element, by the primary owner
//===----------------------------------------------------------------------===//

// inline_asm_elementwise: the PTX once per element the thread holds, with
// that element of each tile operand (scalars as they are); side effects
// unless pure.
bool KernelLowering::lowerInlineAsm(tile::InlineAsmOp op) {
  Location loc = op.getLoc();
  auto rt = dyn_cast<RankedTensorType>(op.getResult().getType());
  Type et = convertElem(getElementTypeOrSelf(op.getResult().getType()));
  const int64_t P = op.getPack();
  Type i32 = b_.getI32Type();
  // P elements of one type as the asm's registers: narrower than 32 bits,
  // packed into i32s from the low bits up; else one register each.
  auto packRegs = [&](ArrayRef<Value> elems) -> SmallVector<Value> {
    Type t = elems[0].getType();
    int64_t bits = registerBits(t);
    if (bits >= 32)
      return SmallVector<Value>(elems);
    int64_t per = 32 / bits;
    auto vt = VectorType::get({per}, t);
    SmallVector<Value> regs;
    for (int64_t r = 0; r < int64_t(elems.size()) / per; ++r) {
      Value vec = LLVM::PoisonOp::create(b_, loc, vt);
      for (int64_t k = 0; k < per; ++k)
        vec = LLVM::InsertElementOp::create(b_, loc, vec, elems[size_t(r * per + k)], i32c(k, loc));
      regs.push_back(LLVM::BitcastOp::create(b_, loc, i32, vec));
    }
    return regs;
  };
  int64_t resBits = registerBits(et), perOut = resBits < 32 ? 32 / resBits : 1;
  Type regTy = resBits < 32 ? i32 : et;
  int64_t outRegs = P / perOut;
  // One asm over P elements (`elems[a]` holds argument a's P values): its P results.
  auto emit = [&](ArrayRef<SmallVector<Value>> elems) -> SmallVector<Value> {
    SmallVector<Value> operands;
    for (const SmallVector<Value> &e : elems)
      for (Value r : P > 1 ? packRegs(e) : e)
        operands.push_back(r);
    // One element: its own type; else outRegs registers, several as a struct.
    Type res = P == 1         ? et
               : outRegs == 1 ? regTy
                              : LLVM::LLVMStructType::getLiteral(b_.getContext(), SmallVector<Type>(outRegs, regTy));
    Value out = LLVM::InlineAsmOp::create(b_, loc, res, operands, op.getText(), op.getConstraints(),
                                          /*has_side_effects=*/!op.getPure(), /*is_align_stack=*/false,
                                          LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                          ArrayAttr())
                    .getResult(0);
    if (P == 1)
      return {out};
    SmallVector<Value> vals;
    for (int64_t r = 0; r < outRegs; ++r) {
      Value reg = outRegs == 1 ? out : Value(LLVM::ExtractValueOp::create(b_, loc, out, ArrayRef<int64_t>{r}));
      if (perOut == 1) {
        vals.push_back(reg);
        continue;
      }
      Value vec = LLVM::BitcastOp::create(b_, loc, VectorType::get({perOut}, et), reg);
      for (int64_t k = 0; k < perOut; ++k)
        vals.push_back(LLVM::ExtractElementOp::create(b_, loc, vec, i32c(k, loc)));
    }
    return vals;
  };
  // Every element the thread holds (a scalar: one), in groups of P; the
  // last group is padded with poison lanes whose results are dropped.
  Layout lay = rt ? layoutOf(rt) : Layout();
  int64_t n = rt ? lay.slots() : 1;
  SmallVector<Value> results;
  for (int64_t g = 0; g < n; g += P) {
    SmallVector<SmallVector<Value>> elems;
    for (Value a : op.getArgs()) {
      SmallVector<Value> e;
      for (int64_t s = g; s < g + P; ++s) {
        if (s < n)
          e.push_back(!rt ? scalarOf(a) : isa<RankedTensorType>(a.getType()) ? atSlot(a, lay, s, loc) : scalarOf(a));
        else
          e.push_back(LLVM::PoisonOp::create(b_, loc, e[0].getType()));
      }
      elems.push_back(e);
    }
    SmallVector<Value> out = emit(elems);
    for (int64_t k = 0; k < P && g + k < n; ++k)
      results.push_back(out[size_t(k)]);
  }
  if (!rt) {
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = results[0];
    vals_[op.getResult()] = l;
    return true;
  }
  bindDist(op.getResult(), results);
  return true;
}

bool KernelLowering::lowerGridDependency(Operation *op) {
  if (target_.sm < 90)
    return true;
  NVVM::GriddepcontrolOp::create(b_, op->getLoc(),
                                 isa<tile::GridDependencyWaitOp>(op) ? NVVM::GridDepActionKind::wait
                                                                     : NVVM::GridDepActionKind::launch_dependents);
  return true;
}

// device_assert: every slot's condition, and when one is false a call to
// __assertfail (assertFailIf).
bool KernelLowering::lowerAssert(tile::AssertOp op) {
  Location loc = op.getLoc();
  Value ok;
  if (auto rt = dyn_cast<RankedTensorType>(op.getCond().getType())) {
    Layout lay = layoutOfValue(op.getCond());
    for (int64_t s = 0; s < lay.slots(); ++s) {
      Value c = atSlot(op.getCond(), lay, s, loc);
      ok = ok ? Value(arith::AndIOp::create(b_, loc, ok, c)) : c;
    }
  } else {
    ok = scalarOf(op.getCond());
  }
  Value failed = arith::XOrIOp::create(
      b_, loc, ok, arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true)));
  assertFailIf(failed, op.getMessage().empty() ? "device_assert" : op.getMessage().str(), loc);
  return true;
}

// A call to __assertfail (a PTX system call, like vprintf) with the message,
// the source file and line and the kernel's name: the kernel stops and the
// next synchronization reports a device-side assert.
void KernelLowering::assertFailIf(Value failed, const std::string &message, Location loc) {
  auto ptr0 = LLVM::LLVMPointerType::get(b_.getContext());
  std::string file = "<unknown>";
  unsigned line = 0;
  if (auto fl = loc->findInstanceOf<FileLineColLoc>()) {
    file = fl.getFilename().str();
    line = fl.getLine();
  }
  int id = printCount_++;
  auto global = [&](const std::string &what, std::string text) {
    text.push_back('\0');
    std::string sym = "__tessera_assert_" + what + "_" + dst_.getName().str() + "_" + std::to_string(id);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(module_.getBody());
    auto arrTy = LLVM::LLVMArrayType::get(b_.getI8Type(), text.size());
    LLVM::GlobalOp::create(b_, loc, arrTy, /*isConstant=*/true, LLVM::Linkage::Internal, sym,
                           b_.getStringAttr(text));
    return sym;
  };
  std::string msgSym = global("msg", message);
  std::string fileSym = global("file", file), funcSym = global("func", dst_.getName().str());
  {
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(module_.getBody());
    if (!module_.lookupSymbol<LLVM::LLVMFuncOp>("__assertfail"))
      LLVM::LLVMFuncOp::create(
          b_, loc, "__assertfail",
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b_.getContext()),
                                      {ptr0, ptr0, b_.getI32Type(), ptr0, b_.getI64Type()}));
  }
  auto ifOp = makeIf(failed, false, loc);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Value msg = LLVM::AddressOfOp::create(b_, loc, ptr0, msgSym);
  Value fileP = LLVM::AddressOfOp::create(b_, loc, ptr0, fileSym);
  Value funcP = LLVM::AddressOfOp::create(b_, loc, ptr0, funcSym);
  LLVM::CallOp::create(b_, loc, TypeRange{}, "__assertfail",
                       ValueRange{msg, fileP, i32c(int64_t(line), loc), funcP,
                                  arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(1))});
}

void KernelLowering::trapIf(Value failed, Location loc) {
  auto ifOp = makeIf(failed, false, loc);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  sideEffectAsm({}, {}, "trap;", "~{memory}", loc);
}

bool KernelLowering::lowerPrint(tile::PrintOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b_.getContext();
  RankedTensorType shapeTy;
  for (Value a : op.getArgs())
    if (auto rt = dyn_cast<RankedTensorType>(a.getType())) {
      if (shapeTy && shapeTy.getShape() != rt.getShape())
        return fail(op, "device_print of tiles with different shapes is not supported on the GPU");
      shapeTy = rt;
    }
  // Format: "pid (x, y, z) idx (i, j): <prefix> v0 v1 ...\n"; floats print as %f of a double.
  std::string fmt = "pid (%d, %d, %d)";
  if (shapeTy) {
    fmt += " idx (";
    for (int64_t d = 0; d < shapeTy.getRank(); ++d)
      fmt += d ? ", %d" : "%d";
    fmt += ")";
  }
  fmt += ": " + op.getPrefix().str();
  for (Value a : op.getArgs()) {
    Type et = getElementTypeOrSelf(a.getType());
    fmt += isa<FloatType>(et) ? " %f" : isa<tile::PtrType>(et) ? " %p" : et.getIntOrFloatBitWidth() > 32 ? " %lld" : " %d";
  }
  fmt += "\n";
  fmt.push_back('\0');
  std::string sym = "__tessera_fmt_" + dst_.getName().str() + "_" + std::to_string(printCount_++);
  auto ptr0 = LLVM::LLVMPointerType::get(ctx);
  {
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(module_.getBody());
    auto arrTy = LLVM::LLVMArrayType::get(b_.getI8Type(), fmt.size());
    LLVM::GlobalOp::create(b_, loc, arrTy, /*isConstant=*/true, LLVM::Linkage::Internal, sym,
                           b_.getStringAttr(fmt));
    if (!module_.lookupSymbol<LLVM::LLVMFuncOp>("vprintf"))
      LLVM::LLVMFuncOp::create(b_, loc, "vprintf",
                               LLVM::LLVMFunctionType::get(b_.getI32Type(), {ptr0, ptr0}));
  }
  auto emitOne = [&](ArrayRef<Value> values) {
    SmallVector<Type> fields;
    SmallVector<Value> promoted;
    for (Value v : values) {
      Value p = v;
      if (isa<FloatType>(v.getType()))
        p = v.getType().isF64() ? v : Value(arith::ExtFOp::create(b_, loc, b_.getF64Type(), v));
      else if (v.getType().isInteger() && v.getType().getIntOrFloatBitWidth() < 32)
        p = arith::ExtSIOp::create(b_, loc, b_.getI32Type(), v);
      else if (isa<LLVM::LLVMPointerType>(v.getType()))
        p = LLVM::AddrSpaceCastOp::create(b_, loc, ptr0, v);
      fields.push_back(p.getType());
      promoted.push_back(p);
    }
    auto structTy = LLVM::LLVMStructType::getLiteral(ctx, fields);
    Value one = arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(1));
    Value buf = LLVM::AllocaOp::create(b_, loc, ptr0, structTy, one, 8);
    for (size_t i = 0; i < promoted.size(); ++i) {
      Value f = LLVM::GEPOp::create(b_, loc, ptr0, structTy, buf,
                                    ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
      LLVM::StoreOp::create(b_, loc, promoted[i], f);
    }
    Value fmtPtr = LLVM::AddressOfOp::create(b_, loc, ptr0, sym);
    LLVM::CallOp::create(b_, loc, TypeRange{b_.getI32Type()}, "vprintf", ValueRange{fmtPtr, buf});
  };
  SmallVector<Value> pid{NVVM::BlockIdXOp::create(b_, loc, b_.getI32Type()),
                         NVVM::BlockIdYOp::create(b_, loc, b_.getI32Type()),
                         NVVM::BlockIdZOp::create(b_, loc, b_.getI32Type())};
  if (!shapeTy) { // scalars: thread 0 prints once
    Value first = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, tid_, i32c(0, loc));
    auto ifOp = makeIf(first, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    SmallVector<Value> vals(pid);
    for (Value a : op.getArgs())
      vals.push_back(scalarOf(a));
    emitOne(vals);
    return true;
  }
  Layout lay = layoutOf(shapeTy);
  Value primary = lay.replicated ? isPrimary(lay, loc) : Value();
  for (int64_t s = 0; s < lay.slots(); ++s) {
    SmallVector<Value> vals(pid);
    for (Value c : coords(lay, s))
      vals.push_back(c);
    for (Value a : op.getArgs())
      vals.push_back(isa<RankedTensorType>(a.getType()) ? atSlot(a, lay, s, loc) : scalarOf(a));
    if (primary) {
      auto ifOp = makeIf(primary, false, loc);
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      emitOne(vals);
    } else {
      emitOne(vals);
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// dot on tensor cores: mma.sync.m16n8k16 (f16/bf16 -> f32), operands from the
// shared-memory copies, accumulators in the mma layout.
//===----------------------------------------------------------------------===//

bool KernelLowering::lowerDotMma(tile::DotOp op, const Layout &lay, Value aS, Value bS,
                                 ArrayRef<Value> aRegs) {
  Location loc = op.getLoc();
  auto at = op.getA().getType(), bt = op.getB().getType();
  int64_t K = at.getDimSize(1), N = bt.getDimSize(1);
  Type ea = at.getElementType();
  Type i16 = b_.getI16Type(), i32 = b_.getI32Type(), f32 = b_.getF32Type();
  SmallVector<Value> accs = materializeIn(op.getAcc(), lay, loc);
  Value lane = laneId(loc);
  Value warp = arith::ShRUIOp::create(b_, loc, tid_, i32c(5, loc));
  Value wc = arith::RemUIOp::create(b_, loc, warp, i32c(lay.wn, loc));
  Value g = arith::ShRUIOp::create(b_, loc, lane, i32c(2, loc));                     // lane / 4
  Value t2 = arith::ShLIOp::create(b_, loc, arith::AndIOp::create(b_, loc, lane, i32c(3, loc)),
                                   i32c(1, loc));                                   // (lane % 4) * 2
  Value colBase = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, wc, i32c(lay.tn * 8, loc)), g);
  const char *asmText = ea.isBF16()
      ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
      : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
  auto resTy = LLVM::LLVMStructType::getLiteral(b_.getContext(), {f32, f32, f32, f32});

  // A (row-major M x K): the two halves of a register are adjacent in memory.
  auto loadA = [&](Value row, Value col) -> Value {
    Value idx = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, row, i32c(K, loc)), col);
    Value p = smemPtr(aS, idx, i16, loc);
    return LLVM::LoadOp::create(b_, loc, i32, p, 4);
  };
  // B (row-major K x N): k and k+1 are a row apart; pack two halves.
  auto loadB = [&](Value k, Value col) -> Value {
    Value i0 = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, k, i32c(N, loc)), col);
    Value i1 = arith::AddIOp::create(b_, loc, i0, i32c(N, loc));
    Value lo = LLVM::LoadOp::create(b_, loc, i16, smemPtr(bS, i0, i16, loc), 2);
    Value hi = LLVM::LoadOp::create(b_, loc, i16, smemPtr(bS, i1, i16, loc), 2);
    Value l32 = arith::ExtUIOp::create(b_, loc, i32, lo);
    Value h32 = arith::ShLIOp::create(b_, loc, arith::ExtUIOp::create(b_, loc, i32, hi), i32c(16, loc));
    return arith::OrIOp::create(b_, loc, l32, h32);
  };
  // One k step of 16: fragments, then tm x tn mma.sync on `accs`. `kStep`
  // (static) picks A's registers when A is in registers; `k0` is the step's
  // first column of A.
  // A's registers packed in pairs up front: its 16-bit values die at once.
  SmallVector<Value> aPacked;
  for (size_t r = 0; r + 1 < aRegs.size(); r += 2)
    aPacked.push_back(packHalves(aRegs[r], aRegs[r + 1], loc));
  auto step = [&](Value k0, int64_t kStep, SmallVector<Value> &next) {
    Value kc = arith::AddIOp::create(b_, loc, k0, t2);
    SmallVector<SmallVector<Value, 4>> aFrag(lay.tm), bFrag(lay.tn);
    for (int64_t i = 0; i < lay.tm; ++i) {
      if (!aRegs.empty()) {
        // A in the accumulator layout of an M x K product: the fragment of
        // rows 16i.. and columns 16 kStep.. is its two n8 tiles' registers.
        int64_t t0 = (i * (K / 8) + 2 * kStep) * 2, t1 = t0 + 2;
        aFrag[i] = {aPacked[t0], aPacked[t0 + 1], aPacked[t1], aPacked[t1 + 1]};
        continue;
      }
      // The thread's rows of tile i: its accumulator slots 0 and 2.
      Value r0 = coords(lay, i * lay.tn * 4)[0], r8 = coords(lay, i * lay.tn * 4 + 2)[0];
      Value c8 = arith::AddIOp::create(b_, loc, kc, i32c(8, loc));
      aFrag[i] = {loadA(r0, kc), loadA(r8, kc), loadA(r0, c8), loadA(r8, c8)};
    }
    for (int64_t j = 0; j < lay.tn; ++j) {
      Value c = arith::AddIOp::create(b_, loc, colBase, i32c(j * 8, loc));
      Value k8 = arith::AddIOp::create(b_, loc, kc, i32c(8, loc));
      bFrag[j] = {loadB(kc, c), loadB(k8, c)};
    }
    for (int64_t i = 0; i < lay.tm; ++i)
      for (int64_t j = 0; j < lay.tn; ++j) {
        int64_t base = (i * lay.tn + j) * 4;
        SmallVector<Value> operands(aFrag[i].begin(), aFrag[i].end());
        operands.append(bFrag[j].begin(), bFrag[j].end());
        for (int q = 0; q < 4; ++q)
          operands.push_back(next[base + q]);
        auto asmOp = LLVM::InlineAsmOp::create(
            b_, loc, resTy, operands, b_.getStringAttr(asmText),
            b_.getStringAttr("=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"), UnitAttr(), UnitAttr(),
            LLVM::TailCallKindAttr::get(b_.getContext(), LLVM::tailcallkind::TailCallKind::None),
            LLVM::AsmDialectAttr(), ArrayAttr());
        for (int q = 0; q < 4; ++q)
          next[base + q] = LLVM::ExtractValueOp::create(b_, loc, asmOp.getResult(0), ArrayRef<int64_t>{q});
      }
  };

  Lowered l;
  l.kind = Lowered::Dist;
  l.type = op.getType();
  l.layout = lay;
  if (!aRegs.empty()) {
    // Registers are picked statically: the k steps unrolled.
    for (int64_t ks = 0; ks < K / 16; ++ks)
      step(i32c(int32_t(ks * 16), loc), ks, accs);
    l.regs = accs;
  } else {
    auto forOp = scf::ForOp::create(b_, loc, i32c(0, loc), i32c(K, loc), i32c(16, loc), accs);
    {
      OpBuilder::InsertionGuard guard(b_);
      enterLoopBody(forOp);
      SmallVector<Value> next(forOp.getRegionIterArgs().begin(), forOp.getRegionIterArgs().end());
      step(forOp.getInductionVar(), -1, next);
      scf::YieldOp::create(b_, loc, next);
    }
    for (Value r : forOp.getResults())
      l.regs.push_back(r);
  }
  vals_[op.getResult()] = l;
  return true;
}

//===----------------------------------------------------------------------===//
// dot (FMA): operands through shared memory, one accumulator per owned element
//===----------------------------------------------------------------------===//

bool KernelLowering::lowerDot(tile::DotOp op) {
  Location loc = op.getLoc();
  auto at = op.getA().getType(), bt = op.getB().getType(), ct = op.getAcc().getType();
  int64_t K = at.getDimSize(1);
  Type ea = at.getElementType(), ec = ct.getElementType();
  if (isFloat8Type(ea) && !target_.hasFloat8())
    return fail(op, "dot() of 8-bit floats needs sm_89 or later; the target is " + target_.name());
  // An operand converted to the dot-operand layout is staged as its source
  // (which may have been staged where it is defined, outside the loop).
  auto source = [](Value v) {
    auto cv = v.getDefiningOp<tgpu::ConvertLayoutOp>();
    return cv ? cv.getSrc() : v;
  };
  Value a = source(op.getA()), bSrc = source(op.getB());
  // The accumulator layout the planner chose (mma.sync's, or wgmma's rows).
  bool planned = bool(tgpu::mmaEncodingOf(op.getType()));
  std::optional<Layout> mma =
      planned ? std::optional<Layout>(layoutOf(op.getType())) : unpipelinedMmaLayout(op, opts_.numWarps);
  if (planned && (ea.isF16() || ea.isBF16()) && lookup(a).kind == Lowered::Dist) {
    // A that is the product of another dot in the same rows (attention's P,
    // in the accumulator layout of S) is used from its registers: mma.sync's
    // A fragment of 16 columns is the accumulator's two n8 tiles there.
    Layout al = layoutOfValue(a);
    if (al.mma && !al.transposed && al.wn == 1 && mma->wn == 1 && al.wm == mma->wm &&
        al.tm == mma->tm && al.wgRows == mma->wgRows && al.shape[1] == K) {
      SmallVector<Value> regs = lookup(a).regs; // a copy: staging B adds lowered values
      return lowerDotMma(op, *mma, Value(), toSmem(bSrc, loc), regs);
    }
  }
  Value aS = toSmem(a, loc);
  Value bS = toSmem(bSrc, loc);
  if (mma)
    return lowerDotMma(op, *mma, aS, bS);
  Layout lay = layoutOf(ct);
  SmallVector<Value> accs = materialize(op.getAcc(), loc);
  Value lo = i32c(0, loc), hi = i32c(K, loc), one = i32c(1, loc);
  auto forOp = scf::ForOp::create(b_, loc, lo, hi, one, accs);
  {
    OpBuilder::InsertionGuard g(b_);
    enterLoopBody(forOp);
    Value k = forOp.getInductionVar();
    Value Kc = i32c(K, loc), Nc = i32c(bt.getDimSize(1), loc);
    SmallVector<Value> next;
    for (int64_t s = 0; s < lay.slots(); ++s) {
      ArrayRef<Value> c = coords(lay, s);
      Value ai = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, c[0], Kc), k);
      Value bi = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, k, Nc), c[1]);
      Type eb = bt.getElementType();
      Type sa = convertElem(ea), sb = convertElem(eb);
      Value a = LLVM::LoadOp::create(b_, loc, sa, smemPtr(aS, ai, sa, loc));
      Value bv = LLVM::LoadOp::create(b_, loc, sb, smemPtr(bS, bi, sb, loc));
      Value acc = forOp.getRegionIterArgs()[s];
      Value r;
      if (isFloat8Type(ea)) { // 8-bit floats: converted to f32 (exactly), then FMA
        a = float8ToF32(ea, a, loc);
        bv = float8ToF32(eb, bv, loc);
        r = math::FmaOp::create(b_, loc, a, bv, acc);
      } else if (isa<FloatType>(ec)) {
        if (ea != ec) {
          a = arith::ExtFOp::create(b_, loc, ec, a);
          bv = arith::ExtFOp::create(b_, loc, ec, bv);
        }
        r = math::FmaOp::create(b_, loc, a, bv, acc);
      } else {
        a = arith::ExtSIOp::create(b_, loc, ec, a);
        bv = arith::ExtSIOp::create(b_, loc, ec, bv);
        r = arith::AddIOp::create(b_, loc, acc, arith::MulIOp::create(b_, loc, a, bv));
      }
      next.push_back(r);
    }
    scf::YieldOp::create(b_, loc, next);
  }
  Lowered l;
  l.kind = Lowered::Dist;
  l.type = ct;
  for (Value r : forOp.getResults())
    l.regs.push_back(r);
  vals_[op.getResult()] = l;
  return true;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

SmallVector<Value> KernelLowering::combine(Region &combiner, ValueRange lhs, ValueRange rhs) {
  Block &body = combiner.front();
  IRMapping map;
  size_t n = lhs.size();
  for (size_t i = 0; i < n; ++i) {
    map.map(body.getArgument(i), lhs[i]);
    map.map(body.getArgument(i + n), rhs[i]);
  }
  SmallVector<Value> out;
  for (Operation &o : body) {
    if (auto ret = dyn_cast<tile::ReduceReturnOp>(o)) {
      for (Value v : ret.getResults())
        out.push_back(map.lookupOrDefault(v));
      break;
    }
    b_.clone(o, map);
  }
  return out;
}

Value KernelLowering::shuffleXor(Value v, int offset, Location loc) {
  return shuffle(v, NVVM::ShflKind::bfly, offset, loc);
}

Value KernelLowering::shuffle(Value v, NVVM::ShflKind kind, int offset, Location loc) {
  Type t = v.getType();
  Type i32 = b_.getI32Type();
  // The clamp operand: the lowest source lane for `up`, the highest else; a
  // source lane past it gives the lane its own value.
  const int64_t bound = kind == NVVM::ShflKind::up ? 0 : 31;
  auto shfl = [&](Value x) -> Value {
    Value mask = i32c(-1, loc), off = i32c(offset, loc), clamp = i32c(bound, loc);
    return NVVM::ShflOp::create(b_, loc, x.getType(), mask, x, off, clamp, kind, UnitAttr());
  };
  if (t.isF32() || t.isInteger(32))
    return shfl(v);
  unsigned w = t.getIntOrFloatBitWidth();
  Type it = b_.getIntegerType(w);
  Value bits = isa<FloatType>(t) ? Value(arith::BitcastOp::create(b_, loc, it, v)) : v;
  Value out;
  if (w < 32) {
    Value wide = arith::ExtUIOp::create(b_, loc, i32, bits);
    out = arith::TruncIOp::create(b_, loc, it, shfl(wide));
  } else { // 64 bits: two halves
    Value lo = arith::TruncIOp::create(b_, loc, i32, bits);
    Value hi = arith::TruncIOp::create(
        b_, loc, i32, arith::ShRUIOp::create(b_, loc, bits, arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(32))));
    Value slo = arith::ExtUIOp::create(b_, loc, it, shfl(lo));
    Value shi = arith::ExtUIOp::create(b_, loc, it, shfl(hi));
    out = arith::OrIOp::create(
        b_, loc, slo, arith::ShLIOp::create(b_, loc, shi, arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(32))));
  }
  return isa<FloatType>(t) ? Value(arith::BitcastOp::create(b_, loc, t, out)) : out;
}

bool KernelLowering::lowerReduce(tile::ReduceOp op) {
  Location loc = op.getLoc();
  auto srcs = op.getSrcs();
  auto st = cast<RankedTensorType>(srcs[0].getType());
  size_t n = srcs.size();
  int64_t axis = op.getAxis();
  SmallVector<Type> ets;
  for (Value s : srcs)
    ets.push_back(convertElem(cast<RankedTensorType>(s.getType()).getElementType()));

  if (st.getRank() == 1) {
    // Thread-local, then warp shuffles, then across warps through shared memory.
    Layout lay = layoutOf(st);
    SmallVector<Value> acc;
    for (Value s : srcs)
      acc.push_back(atSlot(s, lay, 0, loc));
    for (int64_t s = 1; s < lay.slots(); ++s) {
      SmallVector<Value> rhs;
      for (Value v : srcs)
        rhs.push_back(atSlot(v, lay, s, loc));
      acc = combine(op.getCombine(), acc, rhs);
    }
    // With replication only primaries hold data; `valid` tracks it.
    Value valid = lay.replicated ? isPrimary(lay, loc) : Value();
    auto mergeValid = [&](SmallVector<Value> mine, SmallVector<Value> other, Value otherValid) {
      if (!valid)
        return combine(op.getCombine(), mine, other);
      SmallVector<Value> both = combine(op.getCombine(), mine, other);
      Value bothValid = arith::AndIOp::create(b_, loc, valid, otherValid);
      SmallVector<Value> out;
      for (size_t i = 0; i < mine.size(); ++i) {
        Value pick = arith::SelectOp::create(b_, loc, valid, mine[i], other[i]);
        out.push_back(arith::SelectOp::create(b_, loc, bothValid, both[i], pick));
      }
      valid = arith::OrIOp::create(b_, loc, valid, otherValid);
      return out;
    };
    for (int off = 16; off >= 1; off /= 2) {
      SmallVector<Value> other;
      for (Value v : acc)
        other.push_back(shuffleXor(v, off, loc));
      Value ov = valid ? Value(arith::TruncIOp::create(
                             b_, loc, b_.getI1Type(),
                             shuffleXor(arith::ExtUIOp::create(b_, loc, b_.getI32Type(), valid), off, loc)))
                       : Value();
      acc = mergeValid(acc, other, ov);
    }
    if (opts_.numWarps > 1) {
      SmemTemps temps(smem_);
      SmallVector<Value> bases;
      for (Type t : ets)
        bases.push_back(smemBase(temps.take(opts_.numWarps * byteWidth(t)), loc));
      Value validBase = valid ? smemBase(temps.take(opts_.numWarps), loc) : Value();
      Value warp = arith::ShRUIOp::create(b_, loc, tid_, i32c(5, loc));
      Value lane0 = arith::CmpIOp::create(
          b_, loc, arith::CmpIPredicate::eq,
          laneId(loc), i32c(0, loc));
      barrier(loc);
      {
        auto ifOp = makeIf(lane0, false, loc);
        OpBuilder::InsertionGuard g(b_);
        b_.setInsertionPointToStart(ifOp.thenBlock());
        for (size_t i = 0; i < n; ++i)
          LLVM::StoreOp::create(b_, loc, acc[i], smemPtr(bases[i], warp, ets[i], loc));
        if (validBase)
          LLVM::StoreOp::create(b_, loc, arith::ExtUIOp::create(b_, loc, b_.getI8Type(), valid),
                                smemPtr(validBase, warp, b_.getI8Type(), loc));
      }
      barrier(loc);
      auto readWarp = [&](int64_t w, SmallVector<Value> &vals, Value &v) {
        vals.clear();
        for (size_t i = 0; i < n; ++i)
          vals.push_back(LLVM::LoadOp::create(b_, loc, ets[i], smemPtr(bases[i], i32c(w, loc), ets[i], loc)));
        if (validBase)
          v = arith::TruncIOp::create(
              b_, loc, b_.getI1Type(),
              LLVM::LoadOp::create(b_, loc, b_.getI8Type(), smemPtr(validBase, i32c(w, loc), b_.getI8Type(), loc)));
      };
      Value v0;
      readWarp(0, acc, v0);
      if (validBase)
        valid = v0;
      for (int64_t w = 1; w < opts_.numWarps; ++w) {
        SmallVector<Value> other;
        Value ov;
        readWarp(w, other, ov);
        acc = mergeValid(acc, other, ov);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Lowered l;
      l.kind = Lowered::Scalar;
      l.scalar = acc[i];
      vals_[op.getResult(i)] = l;
    }
    return true;
  }

  if (tgpu::sliceEncodingOf(op.getResult(0).getType()))
    return lowerRowsReduce(op);
  if (std::optional<bool> done = lowerLastAxisReduce(op))
    return *done;
  // Reduction of one axis of an N-D tile: every owned result element walks
  // the reduced axis, reading its inputs at arbitrary coordinates.
  auto rt = cast<RankedTensorType>(op.getResult(0).getType());
  Layout lay = layoutOf(rt);
  int64_t A = st.getDimSize(axis);
  // Sources in registers go to temporary shared memory, which the next op
  // may reuse once this one is done; virtual ones are computed where read.
  SmemTemps temps(smem_);
  SmallVector<Value> staged(n);
  for (size_t i = 0; i < n; ++i)
    if (lookup(srcs[i]).kind == Lowered::Dist) {
      Type mt = memType(ets[i], b_.getContext());
      staged[i] = smemBase(temps.take(st.getNumElements() * byteWidth(mt)), loc);
      writeToSmem(srcs[i], staged[i], loc);
    }
  auto read = [&](size_t i, ArrayRef<Value> c) -> Value {
    return staged[i] ? loadSmemElem(staged[i], flatIndex(c, st.getShape(), loc), ets[i], loc)
                     : elem(srcs[i], c, loc);
  };
  SmallVector<SmallVector<Value>> results(n);
  for (int64_t s = 0; s < lay.slots(); ++s) {
    ArrayRef<Value> rc = coords(lay, s);
    auto inputCoords = [&](Value a) {
      SmallVector<Value> c(rc.begin(), rc.end());
      c.insert(c.begin() + axis, a);
      return c;
    };
    SmallVector<Value> init;
    Value zero = entryConst(b_.getI32IntegerAttr(0));
    for (size_t i = 0; i < n; ++i)
      init.push_back(read(i, inputCoords(zero)));
    auto forOp = scf::ForOp::create(b_, loc, i32c(1, loc), i32c(A, loc), i32c(1, loc), init);
    {
      OpBuilder::InsertionGuard g(b_);
      enterLoopBody(forOp);
      pushScope();
      SmallVector<Value> rhs;
      for (size_t i = 0; i < n; ++i)
        rhs.push_back(read(i, inputCoords(forOp.getInductionVar())));
      SmallVector<Value> lhs(forOp.getRegionIterArgs().begin(), forOp.getRegionIterArgs().end());
      scf::YieldOp::create(b_, loc, combine(op.getCombine(), lhs, rhs));
      popScope();
    }
    for (size_t i = 0; i < n; ++i)
      results[i].push_back(forOp.getResult(i));
  }
  for (size_t i = 0; i < n; ++i)
    bindDist(op.getResult(i), results[i]);
  return true;
}

//===----------------------------------------------------------------------===//
// Structured control flow: tiles travel as one SSA value per owned element
//===----------------------------------------------------------------------===//

SmallVector<Type> KernelLowering::flatTypes(Type t) {
  if (auto rt = dyn_cast<RankedTensorType>(t)) {
    Layout l = layoutOf(rt);
    return SmallVector<Type>(l.slots(), convertElem(rt.getElementType()));
  }
  return {convertScalar(t)};
}

void KernelLowering::flatten(Value v, SmallVector<Value> &out, Location loc, const Layout *l) {
  if (auto rt = dyn_cast<RankedTensorType>(v.getType())) {
    for (Value r : materializeIn(v, l ? *l : layoutOf(rt), loc))
      out.push_back(r);
    return;
  }
  out.push_back(scalarOf(v));
}

void KernelLowering::bindFlat(Value v, ValueRange flat, size_t &pos, const Layout *lay) {
  Lowered l;
  if (auto rt = dyn_cast<RankedTensorType>(v.getType())) {
    l.kind = Lowered::Dist;
    l.type = rt;
    if (lay && lay->mma)
      l.layout = *lay;
    size_t n = (lay ? *lay : layoutOf(rt)).slots();
    for (size_t i = 0; i < n; ++i)
      l.regs.push_back(flat[pos++]);
  } else {
    l.kind = Lowered::Scalar;
    l.scalar = flat[pos++];
  }
  vals_[v] = l;
}

KernelLowering::LoopTrips KernelLowering::loopTrips(scf::ForOp op, Location loc) {
  LoopTrips t;
  t.lo = scalarOf(op.getLowerBound());
  Value hi = scalarOf(op.getUpperBound());
  t.step = scalarOf(op.getStep());
  t.ivTy = t.lo.getType();
  Value span = arith::SubIOp::create(b_, loc, hi, t.lo);
  Value stepM1 = arith::SubIOp::create(
      b_, loc, t.step, arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(t.ivTy, 1)));
  Value trips =
      arith::DivSIOp::create(b_, loc, arith::AddIOp::create(b_, loc, span, stepM1), t.step);
  trips = arith::MaxSIOp::create(b_, loc, trips,
                                 arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(t.ivTy, 0)));
  Type i32 = b_.getI32Type();
  t.n = t.ivTy == i32 ? trips : Value(arith::TruncIOp::create(b_, loc, i32, trips));
  return t;
}

Value KernelLowering::inductionAt(const LoopTrips &t, Value j, Location loc) {
  Value jIv = t.ivTy == j.getType() ? j : Value(arith::ExtSIOp::create(b_, loc, t.ivTy, j));
  return arith::AddIOp::create(b_, loc, t.lo, arith::MulIOp::create(b_, loc, jIv, t.step));
}

SmallVector<std::optional<Layout>> KernelLowering::carriedLayouts(scf::ForOp op) {
  SmallVector<std::optional<Layout>> layouts;
  for (Value a : op.getRegionIterArgs()) {
    std::optional<Layout> l;
    if (auto t = dyn_cast<RankedTensorType>(a.getType()))
      l = layoutOf(t);
    layouts.push_back(l);
  }
  return layouts;
}

Value KernelLowering::packHalves(Value lo, Value hi, Location loc) {
  Type i16 = b_.getI16Type(), i32 = b_.getI32Type();
  // Two f32 values rounded to 16 bits: one cvt.rn.{f16,bf16}x2.f32 (its
  // first operand lands in the high half) instead of two cvts and a permute.
  auto fromF32 = [](Value v) {
    auto t = v.getDefiningOp<arith::TruncFOp>();
    return t && t.getIn().getType().isF32() && !t.getRoundingmodeAttr() ? t.getIn() : Value();
  };
  Value lo32 = fromF32(lo), hi32 = fromF32(hi);
  if (lo32 && hi32 && lo.getType() == hi.getType() && (lo.getType().isF16() || lo.getType().isBF16())) {
    auto v2 = VectorType::get({2}, lo.getType());
    Value pair = LLVM::CallIntrinsicOp::create(
                     b_, loc, v2,
                     b_.getStringAttr(lo.getType().isF16() ? "llvm.nvvm.ff2f16x2.rn" : "llvm.nvvm.ff2bf16x2.rn"),
                     ValueRange{hi32, lo32})
                     .getResult(0);
    return LLVM::BitcastOp::create(b_, loc, i32, pair);
  }
  auto half = [&](Value x) -> Value {
    return arith::ExtUIOp::create(b_, loc, i32, arith::BitcastOp::create(b_, loc, i16, x));
  };
  return arith::OrIOp::create(b_, loc, half(lo),
                              arith::ShLIOp::create(b_, loc, half(hi), i32c(16, loc)));
}

std::optional<KernelLowering::AdvancingTile>
KernelLowering::advancingTile(scf::ForOp op, unsigned index, Value stepTile, Location loc) {
  Type i64 = b_.getI64Type();
  Lowered &init = lookup(op.getInitArgs()[index]);
  if (init.kind != Lowered::Virtual && init.kind != Lowered::Offset)
    return std::nullopt;
  AdvancingTile a;
  a.index = index;
  a.base = init.kind == Lowered::Offset ? init.base : op.getInitArgs()[index];
  a.offset0 = init.kind == Lowered::Offset
                  ? init.scalar
                  : Value(arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(0)));
  if (a.offset0.getType() != i64)
    a.offset0 = arith::ExtSIOp::create(b_, loc, i64, a.offset0);
  Value s;
  if (auto sp = stepTile.getDefiningOp<tile::SplatOp>()) {
    s = scalarOf(sp.getSrc());
  } else {
    DenseElementsAttr dense;
    if (!matchPattern(stepTile, m_Constant(&dense)) || !dense.isSplat())
      return std::nullopt;
    s = arith::ConstantOp::create(b_, loc, cast<TypedAttr>(dense.getSplatValue<Attribute>()));
  }
  a.step = s.getType() == i64 ? s : Value(arith::ExtSIOp::create(b_, loc, i64, s));
  return a;
}

void KernelLowering::bindAdvanced(Value v, const AdvancingTile &a, Value j, Location loc) {
  Type i64 = b_.getI64Type();
  Value j64 = j.getType() == i64 ? j : Value(arith::ExtSIOp::create(b_, loc, i64, j));
  Lowered l;
  l.kind = Lowered::Offset;
  l.type = cast<RankedTensorType>(v.getType());
  l.base = a.base;
  l.scalar = arith::AddIOp::create(b_, loc, a.offset0, arith::MulIOp::create(b_, loc, j64, a.step));
  vals_[v] = l;
}

bool KernelLowering::lowerFor(scf::ForOp op) {
  if (std::optional<bool> persistent = lowerPersistentDotLoop(op))
    return *persistent;
  if (std::optional<bool> pipelined = lowerPipelinedDotLoop(op))
    return *pipelined;
  if (std::optional<bool> staged = lowerStagedDotLoop(op))
    return *staged;
  Location loc = op.getLoc();
  // A carried tile stays in its type's layout across iterations (layout
  // assignment keeps a dot's accumulator in its mma layout).
  SmallVector<std::optional<Layout>> layouts = carriedLayouts(op);
  auto layoutPtr = [&](size_t i) -> const Layout * { return layouts[i] ? &*layouts[i] : nullptr; };
  // A pointer tile that starts from index arithmetic and advances by a
  // uniform step (`p += BK * stride`) is not carried: iteration j reads it as
  // its start plus j steps, as the pipelined loops do. Carried, it would hold
  // a 64-bit address per element in registers across the loop.
  SmallVector<std::optional<AdvancingTile>> advancing(op.getNumRegionIterArgs());
  bool anyAdvancing = false;
  for (unsigned i = 0; i < op.getNumRegionIterArgs(); ++i)
    if (analysis::advancesUniformly(op, i)) {
      advancing[i] = advancingTile(op, i, analysis::pointerAdvance(op, i).getOffset(), loc);
      anyAdvancing |= advancing[i].has_value();
    }
  // The trip count, for the advancing tiles' values after the loop.
  std::optional<LoopTrips> trips;
  if (anyAdvancing)
    trips = loopTrips(op, loc);
  SmallVector<Value> inits;
  for (auto [i, v] : llvm::enumerate(op.getInitArgs()))
    if (!advancing[i])
      flatten(v, inits, loc, layoutPtr(i));
  Value lo = scalarOf(op.getLowerBound()), step = scalarOf(op.getStep());
  auto forOp = scf::ForOp::create(b_, loc, lo, scalarOf(op.getUpperBound()), step, inits);
  {
    OpBuilder::InsertionGuard g(b_);
    enterLoopBody(forOp);
    Value iv = forOp.getInductionVar();
    bindScalar(op.getInductionVar(), iv);
    // The iteration count, for the advancing tiles.
    Value j = anyAdvancing ? Value(arith::DivSIOp::create(
                                 b_, loc, arith::SubIOp::create(b_, loc, iv, lo), step))
                           : Value();
    size_t pos = 0;
    ValueRange args = forOp.getRegionIterArgs();
    for (auto [i, a] : llvm::enumerate(op.getRegionIterArgs())) {
      if (advancing[i])
        bindAdvanced(a, *advancing[i], j, loc);
      else
        bindFlat(a, args, pos, layoutPtr(i));
    }
    pushScope();
    Block &src = *op.getBody();
    for (Operation &o : src.without_terminator())
      if (!lowerOp(&o)) {
        popScope();
        return false;
      }
    SmallVector<Value> yields;
    for (auto [i, v] : llvm::enumerate(src.getTerminator()->getOperands()))
      if (!advancing[i])
        flatten(v, yields, loc, layoutPtr(i));
    scf::YieldOp::create(b_, loc, yields);
    popScope();
  }
  size_t pos = 0;
  ValueRange results = forOp.getResults();
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    if (advancing[i])
      bindAdvanced(r, *advancing[i], trips->n, loc);
    else
      bindFlat(r, results, pos, layoutPtr(i));
  }
  return true;
}

bool KernelLowering::lowerIf(scf::IfOp op) {
  Location loc = op.getLoc();
  SmallVector<Type> types;
  for (Type t : op.getResultTypes())
    for (Type ft : flatTypes(t))
      types.push_back(ft);
  bool hasElse = !op.getElseRegion().empty();
  auto ifOp = scf::IfOp::create(b_, loc, types, scalarOf(op.getCondition()), true, hasElse);
  auto lowerRegion = [&](Block *srcBlk, Block *dstBlk) -> bool {
    OpBuilder::InsertionGuard g(b_);
    if (!dstBlk->empty() && dstBlk->back().hasTrait<OpTrait::IsTerminator>())
      dstBlk->back().erase();
    b_.setInsertionPointToEnd(dstBlk);
    pushScope();
    for (Operation &o : srcBlk->without_terminator())
      if (!lowerOp(&o)) {
        popScope();
        return false;
      }
    SmallVector<Value> yields;
    for (Value v : srcBlk->getTerminator()->getOperands())
      flatten(v, yields, loc);
    scf::YieldOp::create(b_, loc, yields);
    popScope();
    return true;
  };
  if (!lowerRegion(op.thenBlock(), ifOp.thenBlock()))
    return false;
  if (hasElse && !lowerRegion(op.elseBlock(), ifOp.elseBlock()))
    return false;
  size_t pos = 0;
  ValueRange results = ifOp.getResults();
  for (Value r : op.getResults())
    bindFlat(r, results, pos);
  return true;
}

bool KernelLowering::lowerWhile(scf::WhileOp op) {
  Location loc = op.getLoc();
  // Only scf.for loops are pipelined; a `for` with a `break` arrives as a while loop.
  if (llvm::any_of(op.getAfterBody()->getOperations(), [](Operation &o) { return isa<tile::DotOp>(o); }))
    remark(op, "dot loop not pipelined: it is a 'while' loop, or a 'for' loop with 'break' "
               "(only a 'for' loop without 'break' is pipelined)");
  SmallVector<Value> inits;
  for (Value v : op.getInits())
    flatten(v, inits, loc);
  SmallVector<Type> beforeTypes, afterTypes;
  for (Value a : op.getBeforeArguments())
    for (Type t : flatTypes(a.getType()))
      beforeTypes.push_back(t);
  for (Value a : op.getAfterArguments())
    for (Type t : flatTypes(a.getType()))
      afterTypes.push_back(t);
  auto w = scf::WhileOp::create(b_, loc, afterTypes, inits);
  SmallVector<Location> bl(beforeTypes.size(), loc), al(afterTypes.size(), loc);
  {
    OpBuilder::InsertionGuard g(b_);
    Block *before = b_.createBlock(&w.getBefore(), {}, beforeTypes, bl);
    size_t pos = 0;
    for (Value a : op.getBeforeArguments())
      bindFlat(a, before->getArguments(), pos);
    pushScope();
    for (Operation &o : op.getBeforeBody()->without_terminator())
      if (!lowerOp(&o)) {
        popScope();
        return false;
      }
    auto cond = cast<scf::ConditionOp>(op.getBeforeBody()->getTerminator());
    SmallVector<Value> args;
    for (Value v : cond.getArgs())
      flatten(v, args, loc);
    scf::ConditionOp::create(b_, loc, scalarOf(cond.getCondition()), args);
    popScope();

    Block *after = b_.createBlock(&w.getAfter(), {}, afterTypes, al);
    pos = 0;
    for (Value a : op.getAfterArguments())
      bindFlat(a, after->getArguments(), pos);
    pushScope();
    for (Operation &o : op.getAfterBody()->without_terminator())
      if (!lowerOp(&o)) {
        popScope();
        return false;
      }
    SmallVector<Value> yields;
    for (Value v : op.getAfterBody()->getTerminator()->getOperands())
      flatten(v, yields, loc);
    scf::YieldOp::create(b_, loc, yields);
    popScope();
  }
  size_t pos = 0;
  ValueRange results = w.getResults();
  for (Value r : op.getResults())
    bindFlat(r, results, pos);
  return true;
}

} // namespace tessera::lowering

namespace tessera {
#define GEN_PASS_DEF_TESSERALOWERTONVVM
#include "Passes.h.inc"

namespace {
using namespace lowering::detail;

struct LowerToNVVMPass : impl::TesseraLowerToNVVMBase<LowerToNVVMPass> {
  LowerToNVVMPass() = default;
  explicit LowerToNVVMPass(std::vector<std::string> *remarks) : remarks_(remarks) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::optional<CompileOptions> options = analysis::moduleOptions(module, error);
    if (!options) {
      module.emitError(error);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("tile.kernel"))
        kernels.push_back(fn);
    // Hand-written layout IR must match the warps it is lowered for.
    for (func::FuncOp fn : kernels) {
      WalkResult bad = fn.walk([&](Operation *op) {
        for (Type t : op->getResultTypes())
          if (auto enc = tgpu::mmaEncodingOf(t))
            // (A row vector expanded to be broadcast over the rows is N x 1.)
            if (int(enc.getWarps()) != options->numWarps ||
                (!accLayoutFor(cast<RankedTensorType>(t).getShape(), enc) &&
                 !isa<tile::ExpandDimsOp>(op))) {
              fn.emitError() << fn.getName() << ": a tile's mma layout is for "
                             << enc.getWarps() << " warps or another shape; lowering with "
                             << options->numWarps << " warps";
              return WalkResult::interrupt();
            }
        return WalkResult::advance();
      });
      if (bad.wasInterrupted())
        return signalPassFailure();
    }
    // Remarks go to the driver's list as text, or out as MLIR remarks.
    KernelLowering::RemarkSink sink = [this](Location loc, const std::string &msg) {
      if (remarks_)
        remarks_->push_back(sourcePrefix(loc) + "remark: " + msg);
      else
        emitRemark(loc, msg);
    };
    for (func::FuncOp fn : kernels) {
      KernelLowering kl(module, fn, *options, sink);
      if (!kl.run()) {
        emitError(kl.errorLoc(), kl.errorMessage());
        return signalPassFailure();
      }
    }
  }

  std::vector<std::string> *remarks_ = nullptr;
};

} // namespace

std::unique_ptr<Pass> createTesseraLowerToNVVMWithRemarks(std::vector<std::string> *remarks) {
  return std::make_unique<LowerToNVVMPass>(remarks);
}

} // namespace tessera
