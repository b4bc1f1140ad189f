// The state of lowering one tile-IR kernel to per-thread scalar code: layouts,
// the lowered form of each tile value, and the op-lowering entry points. Shared
// by TileToNVVM.cpp (the generic lowering) and PipelinedDotLoop.cpp (software-
// pipelined loops that feed tensor-core dots).
#ifndef TESSERA_LOWERING_KERNELLOWERING_H
#define TESSERA_LOWERING_KERNELLOWERING_H

#include "analysis/AxisInfo.h"
#include "analysis/DotPath.h"
#include "analysis/Layout.h"
#include "LoweredValues.h"
#include "SharedMemoryAllocator.h"
#include "tessera/CompileOptions.h"
#include "tessera/TensorMapSpec.h"
#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>
#include <functional>
#include <map>
#include <optional>

namespace tessera::lowering::detail {
using namespace mlir;
using namespace tessera::analysis;

class DotLoopEmitter;


inline int64_t byteWidth(Type t) {
  if (isa<LLVM::LLVMPointerType>(t))
    return 8;
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// Bits of one register value: an integer, a float, a pointer (64) or a
/// vector of them (the total); 0 for anything else.
inline int64_t registerBits(Type t) {
  if (auto vt = dyn_cast<VectorType>(t))
    return vt.getNumElements() * registerBits(vt.getElementType());
  if (isa<LLVM::LLVMPointerType>(t))
    return 64;
  return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 0;
}

/// One result computed lane by lane from its operands: arith and math ops,
/// and the tile ops that are elementwise (addptr, bitcast, ptr_to_int).
inline bool isElementwise(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return false;
  return isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) ||
         isa<tile::AddPtrOp, tile::BitcastOp, tile::PtrToIntOp>(op);
}

using tile::isFloat8Type;

/// A scalar constant as its registers hold it: an 8-bit float as the i8 of its bits.
inline TypedAttr storageAttr(TypedAttr a) {
  if (auto f = dyn_cast<FloatAttr>(a); f && isFloat8Type(f.getType()))
    return IntegerAttr::get(IntegerType::get(a.getContext(), 8),
                            f.getValue().bitcastToAPInt().getZExtValue());
  return a;
}

// Memory representation of an element type (i1 is stored as i8).
inline Type memType(Type t, MLIRContext *ctx) {
  if (t.isInteger(1))
    return IntegerType::get(ctx, 8);
  return t;
}

inline int64_t log2i(int64_t v) {
  int64_t r = 0;
  while ((int64_t(1) << r) < v)
    ++r;
  return r;
}

class KernelLowering {
public:
  /// Receives each remark (the op's location and the message).
  using RemarkSink = std::function<void(Location, const std::string &)>;

  KernelLowering(ModuleOp module, func::FuncOp src, const CompileOptions &opts,
                 RemarkSink remarks)
      : module_(module), src_(src), b_(module.getContext()), axis_(src), opts_(opts),
        target_(opts.resolvedTarget()), threads_(32 * opts.numWarps),
        blockedVec_(blockedVectorWidth(src)),
        remarks_(std::move(remarks)), smem_(target_.maxSharedBytesPerBlock()),
        errorLoc_(src.getLoc()) {
    maxRegs_ = opts.maxRegisters;
  }

  /// Lowers the kernel; on failure the first error is errorLoc() / errorMessage().
  bool run();
  Location errorLoc() const { return errorLoc_; }
  const std::string &errorMessage() const { return error_; }

  // ---- what the dot-loop emitter (DotLoopEmitter.h) uses ----
  /// The thread index (i32), computed once at the kernel's entry.
  Value tid() const { return tid_; }
  /// Stops the kernel with a device-side assert (`message`, the file and
  /// line of `loc`, the kernel's name) where `failed` (i1) is true.
  void assertFailIf(Value failed, const std::string &message, Location loc);
  /// Stops the kernel with `trap` where `failed` (i1) is true: no message,
  /// but no call either. Kernels with wgmma use it for the compiler's own
  /// checks: any call in them makes ptxas serialize every wgmma (C7510).
  void trapIf(Value failed, Location loc);
  /// The thread's lane in its warp (tid & 31), at the builder's position.
  Value laneId(Location loc) { return arith::AndIOp::create(b_, loc, tid_, i32c(31, loc)); }
  /// Threads of the num_warps warps (producer warps not counted).
  int64_t threads() const { return threads_; }
  AxisInfoAnalysis &axis() { return axis_; }
  /// The tile-IR kernel being lowered.
  func::FuncOp source() const { return src_; }
  /// Whether code before the current op read or wrote memory.
  bool touchedMemory() const { return touchedMemory_; }
  /// A warp-specialized loop adds a producer warpgroup of `warps` warps to the
  /// block, and caps registers at `maxRegs` at entry (0: no cap), in place of
  /// the options' cap (its setmaxnreg split needs its own).
  void addProducerWarps(int64_t warps, int64_t maxRegs) {
    extraWarps_ = warps;
    if (maxRegs)
      maxRegs_ = maxRegs;
  }
  /// Blocks per SM to ask ptxas for (.minnctapersm) so that a kernel without
  /// tensor cores keeps a second block resident to hide memory latency; 0:
  /// none. `largestTile`: the elements of the kernel's largest tile.
  int64_t latencyOccupancyBlocks(bool hasDot, int64_t largestTile) const;
  /// After a warp-specialized loop the producers have exited: barriers name
  /// barrier 1 with the consumers' threads only.
  void syncConsumersOnly() { barrierThreads_ = threads_; }
  /// Appends a 128-byte __grid_constant__ parameter for the tensor map
  /// `spec` and returns its generic address (i64).
  Value addTensorMapParam(const TensorMapSpec &spec, Location loc);

  // ---- the code-emission toolkit, shared with DotLoopEmitter ----
  // ---- helpers ----
  bool fail(Operation *op, const std::string &msg) {
    if (error_.empty()) {
      errorLoc_ = op->getLoc();
      error_ = msg;
    }
    return false;
  }
  /// A remark when the lowered kernel both calls a function (__assertfail,
  /// vprintf) and issues wgmma, which ptxas then serializes.
  void remarkCallsBesideWgmma();
  /// Reports how `op` was lowered (dot loops: how they were pipelined, or why not).
  void remark(Operation *op, const std::string &msg) {
    if (remarks_)
      remarks_(op->getLoc(), msg);
  }
  // 8-bit floats live in i8 registers: only conversions (cvt) and tensor
  // cores read them, and LLVM has no such types.
  Type convertElem(Type t) {
    if (isa<tile::PtrType>(t))
      return LLVM::LLVMPointerType::get(b_.getContext(), 1);
    if (isFloat8Type(t))
      return b_.getI8Type();
    return t;
  }
  Type convertScalar(Type t) { return convertElem(t); }
  Value i32c(int64_t v, Location loc) {
    return arith::ConstantOp::create(b_, loc, b_.getI32IntegerAttr(int32_t(v)));
  }
  // One constant per attribute, at the entry: the same Value every time, so
  // that per-element values keyed on coordinates are found again.
  Value entryConst(TypedAttr attr) {
    attr = storageAttr(attr);
    Value &known = entryConsts_[attr];
    if (known)
      return known;
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointAfter(tid_.getDefiningOp());
    return known = arith::ConstantOp::create(b_, src_.getLoc(), attr);
  }

  /// The layout a tile of type `t` is in (analysis::layoutOfType).
  Layout layoutOf(RankedTensorType t) { return layoutOfType(t, threads_, blockedVec_); }
  /// The blocked layout of a tile of `shape` (no encoding).
  Layout blockedLayout(ArrayRef<int64_t> shape) { return layoutFor(shape, threads_, blockedVec_); }
  /// The layout a Dist value's registers are in.
  Layout layoutOfValue(Value v) {
    Lowered &l = lookup(v);
    if (l.kind == Lowered::Dist && l.layout)
      return *l.layout;
    return layoutOf(cast<RankedTensorType>(v.getType()));
  }
  /// The value's elements in layout `l`, converting through shared memory if needed.
  SmallVector<Value> materializeIn(Value v, const Layout &l, Location loc);

  // Coordinates of slot `s` of `layout`, computed once in the entry block.
  ArrayRef<Value> coords(const Layout &l, int64_t s);
  // The row of an (untransposed) mma layout's tile i, upper (h = 0) or lower
  // (h = 1) half: one value for every slot on that row, and for the rows
  // layout's slot 2i + h, so that a row vector is found in registers at the
  // coordinates of its parent's slots (rowSlot).
  Value mmaRow(const Layout &l, int64_t i, int64_t h);
  // An mma layout's first row for the thread's warp (`warp`: tid / 32), and
  // the offset of the warp's tile i from it.
  Value warpFirstRow(const Layout &l, Value warp, Location loc);
  static int64_t tileFirstRow(const Layout &l, int64_t i) { return l.wgRows ? i * 64 : i * 16; }
  // The slot of a rows-layout tile (of the parent `l`) that holds the row
  // `row` (a value from mmaRow), or -1.
  int64_t rowSlot(const Layout &l, Value row);
  // The column of a wgmma accumulator layout's n8 tile j, element q (0, 1)
  // of the thread's pair: one value for every slot on that column, and for
  // the cols layout's slot 2j + q (colSlots_).
  Value mmaCol(int64_t j, int64_t q);
  // The slot of `v` (a row or column vector in registers, tgpu.slice) at
  // coordinates `c`, or -1.
  int64_t heldRow(Value v, ArrayRef<Value> c);
  /// The coordinates of flat index `base + off` in `shape`, where `base` is in
  /// [0, bound) and `off` a multiple of `bound` (both powers of two): the
  /// parts that come from `base` are the same Values for every `off`, and
  /// each coordinate that depends on both is recorded as a CoordForm.
  SmallVector<Value> unflattenFrom(Value base, int64_t bound, int64_t off, ArrayRef<int64_t> shape);
  Value flatIndex(ArrayRef<Value> c, ArrayRef<int64_t> shape, Location loc);
  SmallVector<Value> unflatten(Value flat, ArrayRef<int64_t> shape, Location loc);

  // ---- value access ----
  Lowered &lookup(Value v) { return vals_[v]; }
  LoweredValues &values() { return vals_; }
  Value scalarOf(Value v) { return vals_[v].scalar; }
  Value elem(Value v, ArrayRef<Value> c, Location loc);
  Value atSlot(Value v, const Layout &l, int64_t s, Location loc);
  SmallVector<Value> materialize(Value v, Location loc);
  Value toSmem(Value v, Location loc);
  void writeToSmem(Value v, Value base, Location loc);
  Value smemBase(int64_t offsetBytes, Location loc);
  Value smemPtr(Value base, Value index, Type elemTy, Location loc);
  /// Element `index` of a shared-memory array of `et` (i1 is kept as i8).
  Value loadSmemElem(Value base, Value index, Type et, Location loc) {
    Type mt = memType(et, b_.getContext());
    Value v = LLVM::LoadOp::create(b_, loc, mt, smemPtr(base, index, mt, loc));
    return mt != et ? Value(arith::TruncIOp::create(b_, loc, et, v)) : v;
  }
  void storeSmemElem(Value v, Value base, Value index, Location loc) {
    Type mt = memType(v.getType(), b_.getContext());
    if (mt != v.getType())
      v = arith::ExtUIOp::create(b_, loc, mt, v);
    LLVM::StoreOp::create(b_, loc, v, smemPtr(base, index, mt, loc));
  }
  // Inline PTX with side effects, so that nothing moves across it; several
  // results come back as one literal struct.
  LLVM::InlineAsmOp sideEffectAsm(TypeRange results, ValueRange operands, StringRef text,
                                  StringRef constraints, Location loc) {
    Type res;
    if (results.size() == 1)
      res = results[0];
    else if (!results.empty())
      res = LLVM::LLVMStructType::getLiteral(b_.getContext(),
                                             SmallVector<Type>(results.begin(), results.end()));
    return LLVM::InlineAsmOp::create(b_, loc, res, operands, text, constraints,
                                     /*has_side_effects=*/true, /*is_align_stack=*/false,
                                     LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                     ArrayAttr());
  }
  /// Spins until the mbarrier at shared address `bar` (i32) has completed
  /// the phase of parity `parity` (a fresh barrier counts its phase before
  /// the first as complete: parity 1 passes at once).
  void mbarrierWait(Value bar, Value parity, Location loc) {
    sideEffectAsm({}, {bar, parity},
                  "{\n.reg .pred p;\nWAIT_${:uid}:\n"
                  "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
                  "@!p bra.uni WAIT_${:uid};\n}",
                  "r,r,~{memory}", loc);
  }
  /// Initializes the mbarrier at shared address `bar` (i32) to expect
  /// `count` arrivals a phase, and arrives on it.
  void mbarrierInit(Value bar, int64_t count, Location loc) {
    sideEffectAsm({}, {bar, i32c(count, loc)}, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", loc);
  }
  void mbarrierArrive(Value bar, Location loc) {
    sideEffectAsm({}, {bar}, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", loc);
  }
  void barrier(Location loc) {
    if (!barrierThreads_) {
      NVVM::Barrier0Op::create(b_, loc);
      return;
    }
    // The intrinsic, not inline asm: it is convergent, so LLVM never copies
    // it into divergent paths (a scalar atomic's broadcast, thread 0 on one
    // side, had its barrier duplicated into both: an aligned barrier reached
    // at two addresses by one warp, which hung on an H200).
    NVVM::BarrierOp::create(b_, loc, TypeRange{}, i32c(1, loc), i32c(barrierThreads_, loc),
                            NVVM::BarrierReductionAttr{}, Value{});
  }
  /// How a contiguous group of `vec` lanes may be accessed as one vector.
  struct VectorPlan {
    bool contiguous = false; // proven consecutive addresses
    bool aligned = false;    // proven vec*bytes alignment (else checked at run time)
    // Contiguous, aligned, and `mask` one value for all of a vector's lanes,
    // in 4, 8 or 16 bytes of 1-, 2- or 4-byte elements: one predicated
    // access a vector (predicatedVectorLoad/Store).
    bool predicated = false;
  };
  VectorPlan planVector(const Layout &lay, Value ptr, Type et, Value mask = Value()) {
    AxisInfo ai = axis_.get(ptr);
    int64_t eb = byteWidth(et);
    VectorPlan p;
    p.contiguous = !lay.replicated && lay.vec > 1 && ai.contiguity.back() >= lay.vec &&
                   lay.vec * eb <= 16 && !isa<LLVM::LLVMPointerType>(et);
    p.aligned = ai.divisibility.back() >= lay.vec * eb;
    p.predicated = p.contiguous && p.aligned && mask && eb <= 4 && lay.vec * eb % 4 == 0 &&
                   axis_.get(mask).constancy.back() >= lay.vec;
    return p;
  }
  /// The condition under which the vector access is taken: every lane's mask
  /// on and, when not proven, the first address aligned. Null: always.
  Value vectorGuard(ArrayRef<Value> masks, Value firstPtr, int64_t bytes, bool aligned,
                    Location loc) {
    Value cond;
    for (Value m : masks)
      if (m)
        cond = cond ? Value(arith::AndIOp::create(b_, loc, cond, m)) : m;
    if (!aligned) {
      Value addr = LLVM::PtrToIntOp::create(b_, loc, b_.getI64Type(), firstPtr);
      Value low = arith::AndIOp::create(
          b_, loc, addr, arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(bytes - 1)));
      Value ok = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, low,
                                       arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(0)));
      cond = cond ? Value(arith::AndIOp::create(b_, loc, cond, ok)) : ok;
    }
    return cond;
  }
  /// The pointers, values and masks of the k-th vector of `lay.vec` lanes of
  /// a store or an atomic; `primary` (a replicated layout) masks off the
  /// copies that must not write.
  struct VectorLanes {
    SmallVector<Value> ptrs, vals, masks;
  };
  VectorLanes vectorLanes(Value ptr, Value value, Value mask, const Layout &lay, int64_t k,
                          Value primary, Location loc) {
    VectorLanes l;
    for (int64_t v = 0; v < lay.vec; ++v) {
      int64_t s = k * lay.vec + v;
      l.ptrs.push_back(atSlot(ptr, lay, s, loc));
      l.vals.push_back(atSlot(value, lay, s, loc));
      Value m = mask ? atSlot(mask, lay, s, loc) : Value();
      if (primary)
        m = m ? Value(arith::AndIOp::create(b_, loc, m, primary)) : primary;
      l.masks.push_back(m);
    }
    return l;
  }
  /// One vector access `vector()` when every lane's mask is on and the
  /// address aligned (unless proven), else `lane(v)` for each of `lanes`
  /// lanes (each under its own mask, which `lane` applies).
  void guardedVector(ArrayRef<Value> masks, Value firstPtr, int64_t bytes, bool aligned,
                     int64_t lanes, const std::function<void()> &vector,
                     const std::function<void(int64_t)> &lane, Location loc) {
    Value all = vectorGuard(masks, firstPtr, bytes, aligned, loc);
    if (!all) {
      vector();
      return;
    }
    auto ifOp = makeIf(all, true, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    vector();
    b_.setInsertionPointToStart(ifOp.elseBlock());
    for (int64_t v = 0; v < lanes; ++v)
      lane(v);
  }
  /// The element at `ptr` where `mask` is on (no mask: always), else `other`
  /// (null: zero). A masked load becomes a branch, so masked-off lanes touch
  /// no memory.
  Value maskedLoad(Type et, Value ptr, Value mask, Value other, bool isVolatile, Location loc) {
    if (!mask)
      return globalLoad(et, ptr, byteWidth(et), isVolatile, loc);
    auto ifOp = scf::IfOp::create(b_, loc, TypeRange{et}, mask, true, true);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    Value v = globalLoad(et, ptr, byteWidth(et), isVolatile, loc);
    scf::YieldOp::create(b_, loc, v);
    b_.setInsertionPointToStart(ifOp.elseBlock());
    Value o = other ? other : Value(arith::ConstantOp::create(b_, loc, b_.getZeroAttr(et)));
    scf::YieldOp::create(b_, loc, o);
    return ifOp.getResult(0);
  }
  /// Stores `val` at `ptr` where `mask` is on (no mask: always); a branch, so
  /// masked-off lanes touch no memory.
  void maskedStore(Value val, Value ptr, Value mask, Location loc) {
    int64_t align = byteWidth(val.getType());
    if (!mask) {
      globalStore(val, ptr, align, loc);
      return;
    }
    auto ifOp = makeIf(mask, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    globalStore(val, ptr, align, loc);
  }
  /// The cache operator (".cg", ...) and L2 eviction policy ("evict_last",
  /// ...) of the tile.load or tile.store being lowered; empty: none.
  struct MemoryHints {
    std::string cop, evict;
    bool any() const { return !cop.empty() || !evict.empty(); }
  };
  /// Sets the hints for the duration of one load's or store's lowering.
  struct ScopedMemoryHints {
    ScopedMemoryHints(KernelLowering &kl, std::optional<StringRef> cop, std::optional<StringRef> evict)
        : kl_(kl), saved_(kl.hints_) {
      kl.hints_ = MemoryHints{cop ? cop->str() : "", evict ? evict->str() : ""};
    }
    ~ScopedMemoryHints() { kl_.hints_ = saved_; }
    KernelLowering &kl_;
    MemoryHints saved_;
  };
  /// A load (store) of one register of `t` from (to) global memory: an LLVM
  /// load (store) without hints, else inline PTX with the cache operator and
  /// an L2::cache_hint policy (MemoryHints.cpp). A volatile load keeps none.
  Value globalLoad(Type t, Value ptr, int64_t align, bool isVolatile, Location loc);
  void globalStore(Value v, Value ptr, int64_t align, Location loc);
  /// Vector accesses predicated by one mask, for aligned vectors of 4, 8 or
  /// 16 bytes of 1-, 2- or 4-byte elements, with the cache hints
  /// (MemoryHints.cpp). A load gives `others` (null: zero) where the mask is
  /// off; one `others` entry per lane.
  SmallVector<Value> predicatedVectorLoad(Type et, ArrayRef<Value> others, Value ptr, Value mask,
                                          Location loc);
  void predicatedVectorStore(ArrayRef<Value> vals, Type et, Value ptr, Value mask, Location loc);
  /// Lanes of `et` packed into 32-bit words from the low bits up (null: zero),
  /// and back.
  SmallVector<Value> packWords(ArrayRef<Value> lanes, Type et, Location loc);
  SmallVector<Value> unpackWords(ArrayRef<Value> words, Type et, Location loc);
  /// scf.if without results, with a terminator in every block it has.
  scf::IfOp makeIf(Value cond, bool withElse, Location loc) {
    auto ifOp = scf::IfOp::create(b_, loc, TypeRange{}, cond, true, withElse);
    for (Region *r : {&ifOp.getThenRegion(), &ifOp.getElseRegion()})
      for (Block &blk : *r)
        if (blk.empty() || !blk.back().hasTrait<OpTrait::IsTerminator>()) {
          OpBuilder::InsertionGuard g(b_);
          b_.setInsertionPointToEnd(&blk);
          scf::YieldOp::create(b_, loc);
        }
    return ifOp;
  }
  Value isPrimary(const Layout &l, Location loc);
  /// `v` (a scalar of the source) is `s` from here on.
  void bindScalar(Value v, Value s) {
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = s;
    vals_[v] = l;
  }
  /// `v` (a tile) is held in `regs`, one per slot of its type's layout.
  void bindDist(Value v, ArrayRef<Value> regs) {
    Lowered l;
    l.kind = Lowered::Dist;
    l.type = cast<RankedTensorType>(v.getType());
    l.regs.assign(regs.begin(), regs.end());
    vals_[v] = l;
  }
  /// Moves the builder to the end of a new scf.for's body, dropping the
  /// terminator the builder made, so the caller can emit the body and its yield.
  void enterLoopBody(scf::ForOp loop) {
    Block *body = loop.getBody();
    if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
      body->back().erase();
    b_.setInsertionPointToEnd(body);
  }

  /// A source loop's bounds as lowered scalars and its trip count (i32, at
  /// least 0): a pipelined or staged loop runs iterations j in [0, n), whose
  /// induction value is lo + j * step (inductionAt).
  struct LoopTrips {
    Value lo, step, n;
    Type ivTy; // the source loop's induction variable type
  };
  LoopTrips loopTrips(scf::ForOp op, Location loc);
  Value inductionAt(const LoopTrips &t, Value j /*i32*/, Location loc);
  /// The register layout each iter arg of `op` is carried in (nothing for
  /// scalars): its type's, so a dot's accumulator stays in its mma layout.
  SmallVector<std::optional<Layout>> carriedLayouts(scf::ForOp op);
  /// Two 16-bit values (f16/bf16) packed into an i32, `lo` in the low half:
  /// a register of an mma.sync or wgmma A fragment.
  Value packHalves(Value lo, Value hi, Location loc);

  /// A pointer tile that a loop carries and advances by a uniform step (a
  /// pipelined or staged loop binds it per iteration instead of carrying it).
  struct AdvancingTile {
    unsigned index;              // iter-arg index
    Value base, offset0, step;   // its Virtual base tile; i64 element offsets
  };
  /// The advancing tile of iter arg `index`, stepped by `stepTile` (a splat of
  /// a loop-invariant scalar, or a splat constant); nothing when its initial
  /// value is not index arithmetic (Virtual or Offset).
  std::optional<AdvancingTile> advancingTile(scf::ForOp op, unsigned index, Value stepTile,
                                             Location loc);
  /// Binds `v` (the iter arg or the loop result of `a`) to its value after
  /// `j` (i32) steps.
  void bindAdvanced(Value v, const AdvancingTile &a, Value j, Location loc);

  // ---- op lowering ----
  bool lowerOp(Operation *op);
  // A tile value as its registers (flatten), and registers bound back to a
  // tile value from position `pos` of `flat` (loop-carried values).
  void flatten(Value v, SmallVector<Value> &out, Location loc, const Layout *l = nullptr);
  SmallVector<Type> flatTypes(Type t);
  void bindFlat(Value v, ValueRange flat, size_t &pos, const Layout *l = nullptr);

  // A scope of the lowering (a region): the memo of lowered values, and the
  // shared-memory copies that toSmem made in it, released when it ends (the
  // memo that could find them ends with it).
  void pushScope() {
    vals_.pushScope();
    scopeCopies_.emplace_back();
  }
  void popScope();

private:
  bool lowerBlock(Block &blk);
  // Whether `u` converts `v` to a dot operand for a dot inside a loop nested
  // in v's region that is not pipelined (attention's Q): staged where defined.
  bool isDotOperandInLoop(Operation *u, Value v);
  bool lowerElementwise(Operation *op);
  // Slices (RowReduce.cpp, TileToNVVM.cpp): a reduction result, or an
  // elementwise function of reduction results, read in the reduced tile's
  // layout from registers. sliceParentOf: that layout, if `v` is one;
  // servable: whether elem(v, c) needs no shared memory (no barrier); readIn:
  // whether every use of a broadcast of it is an elementwise op in `p`.
  std::optional<Layout> sliceParentOf(Value v, int depth = 0);
  bool servable(Value v, ArrayRef<Value> c, int depth = 0);
  bool readOnlyIn(Value v, const Layout &p, int depth = 0);
  /// One lane of an elementwise op, its operands mapped to scalars: tile ops
  /// with no arith/math equivalent (add_ptr, bitcast, ptr_to_int) become their
  /// LLVM forms; the rest are cloned with the element type converted. Used
  /// for register tiles and for virtual ones evaluated at coordinates alike.
  Value emitScalarOp(Operation *op, IRMapping &map, Location loc);
  /// An arith.extf from an 8-bit float to f32, or an arith.truncf from f32 to
  /// one, on the lowered scalar `x` (Float8Convert.cpp); null after an error.
  Value convertFloat8(Operation *op, Value x, Location loc);
  /// The f32 value of `x`, an i8 register holding an 8-bit float of type `f8`.
  Value float8ToF32(Type f8, Value x, Location loc);
  bool lowerConvertLayout(tgpu::ConvertLayoutOp op);
  bool lowerLoad(tile::LoadOp op);
  bool lowerGather(tile::GatherOp op);
  bool lowerStore(tile::StoreOp op);
  // MmaEpilogue.cpp: a store of a value in an mma layout as 16-byte vectors
  // through shared memory; false (nothing emitted) when it does not apply.
  bool lowerStoreThroughSmem(tile::StoreOp op, const Layout &mmaLay);
  // Its shared-memory row pitch for a 2-D tile: rows padded by 16 bytes.
  int64_t epiloguePitch(RankedTensorType rt) {
    return rt.getDimSize(1) * byteWidth(convertElem(rt.getElementType())) + 16;
  }
  bool lowerAtomic(Operation *op); // Atomics.cpp
  bool lowerVectorRed(tile::AtomicRMWOp op);
  void realignedVectorRed(tile::AtomicRMWOp op, const VectorLanes &lanes, int64_t vec,
                          const std::function<void(Value, ArrayRef<Value>)> &vectorRed,
                          Location loc);
  Value emitAtomic(Operation *op, Value ptr, Value val, Value cmp, Location loc);
  void maskedAtomic(Operation *op, Value ptr, Value val, Value mask, Location loc);
  bool lowerDot(tile::DotOp op);
  // mma.sync into `lay`; A from shared memory at aS, or (aRegs not empty)
  // from the registers of a product in the same rows.
  bool lowerDotMma(tile::DotOp op, const Layout &lay, Value aS, Value bS,
                   ArrayRef<Value> aRegs = {});
  bool lowerPrint(tile::PrintOp op);
  bool lowerAssert(tile::AssertOp op);
  /// griddepcontrol on sm_90 and newer; before, launches never overlap and
  /// the op lowers to nothing.
  bool lowerGridDependency(Operation *op);
  bool lowerReduce(tile::ReduceOp op);
  bool lowerScan(tile::ScanOp op); // Scan.cpp
  bool lowerSort(tile::SortOp op); // Sort.cpp
  bool lowerInlineAsm(tile::InlineAsmOp op);
  Value keyLess(Value a, Value b, bool uns, Location loc);
  /// Shared-memory temporaries of one op, released (for the next op to
  /// reuse) when it goes out of scope, after the op's code is emitted.
  class SmemTemps {
  public:
    explicit SmemTemps(SharedMemoryAllocator &a) : a_(a) {}
    SmemTemps(const SmemTemps &) = delete;
    SmemTemps &operator=(const SmemTemps &) = delete;
    ~SmemTemps() {
      for (auto [off, bytes] : taken_)
        a_.releaseTemp(off, bytes);
    }
    int64_t take(int64_t bytes, int64_t align = 16) {
      int64_t off = a_.allocateTemp(bytes, align);
      taken_.push_back({off, bytes});
      return off;
    }

  private:
    SharedMemoryAllocator &a_;
    SmallVector<std::pair<int64_t, int64_t>> taken_;
  };
  // AxisLines.cpp: same-shaped tiles exchanged along one axis through two
  // shared-memory copies (scans and sorting networks).
  struct AxisLines {
    Layout lay;
    int64_t length = 1, stride = 1; // along the axis; between neighbours, row-major
    int copies = 2;                 // shared copies per tile (a sort's steps need one)
    SmallVector<Value> flats, along; // per slot: row-major index, coordinate on the axis
    SmallVector<Type> ets;
    SmallVector<Value> buf[2];
    SmallVector<SmallVector<Value>> current; // per tile, per slot: the thread's values
  };
  AxisLines axisLines(RankedTensorType t, int64_t axis, int copies);
  void addLineTile(AxisLines &l, SmemTemps &temps, Type et, SmallVector<Value> regs);
  void publishLines(AxisLines &l, int k, Location loc);
  SmallVector<Value> readLines(AxisLines &l, int k, Value flat, Location loc);
  // RowReduce.cpp: along the last axis of an N-D tile with shuffles;
  // nullopt when the shape or types do not allow it.
  std::optional<bool> lowerLastAxisReduce(tile::ReduceOp op);
  bool lowerRowsReduce(tile::ReduceOp op); // RowReduce.cpp
  bool lowerFor(scf::ForOp op);
  /// A loop whose body loads the operands of one tensor-core dot: lowered as a
  /// software pipeline (PipelinedDotLoop.cpp). Nothing when the loop does not
  /// have that form; then lowerFor lowers it generically.
  std::optional<bool> lowerPipelinedDotLoop(scf::ForOp op);
  // PersistentTileLoop.cpp: a loop over output tiles around one pipelined
  // dot loop, warp-specialized across its tiles. nullopt: not that form.
  // The ops of one tile, the tiles a block takes, and how the loop's tile
  // reaches the ops.
  struct TileLoop {
    Block *body = nullptr;                        // its terminator is not lowered
    std::function<std::array<Value, 3>()> bounds; // first, end, step (emitted once)
    std::function<void(Value)> bindTile;          // binds one iteration's tile
    std::function<bool(Operation *)> rebinds;     // ops that bindTile stands for
    Operation *remarkAt = nullptr;                // default: the dot loop
    std::string remarkPrefix, remarkSuffix;
    bool tf32 = true;                             // f32 operands (tf32 wgmma) too
  };
  std::optional<bool> lowerTileLoop(const TileLoop &t);
  // A loop over tiles that the kernel writes.
  std::optional<bool> lowerPersistentDotLoop(scf::ForOp op);
  // The whole kernel as one tile indexed by program_id(0), launched
  // persistent (CompileOptions::persistentLaunch).
  std::optional<bool> lowerKernelAsTileLoop();
  // Appends the persistent kernel's i32 parameter: the launched grid's x size.
  Value addGridParam(Location loc);
  /// A loop whose dots read tiles loaded in it, with more than a matmul's
  /// body (attention): the loads copied ahead into stage rings, the dots on
  /// wgmma (StagedDotLoop.cpp). Nothing when the loop does not have that form.
  std::optional<bool> lowerStagedDotLoop(scf::ForOp op);
  // Whether lowerStagedDotLoop takes `op` (its invariant A operands are then
  // staged by it, not where they are defined).
  bool stagesDotLoop(scf::ForOp op);
  bool lowerIf(scf::IfOp op);
  bool lowerWhile(scf::WhileOp op);
  SmallVector<Value> combine(Region &combiner, ValueRange lhs, ValueRange rhs);
  Value shuffleXor(Value v, int offset, Location loc);
  /// `v` from the lane `offset` away in the warp (`kind`: up, down, bfly or
  /// idx); a lane whose source is outside the warp gets its own value.
  Value shuffle(Value v, NVVM::ShflKind kind, int offset, Location loc);

  ModuleOp module_;
  func::FuncOp src_, dst_;
  OpBuilder b_;
  AxisInfoAnalysis axis_;
  const CompileOptions opts_;
  const Target target_;     // opts_.resolvedTarget()
  const int64_t threads_;   // 32 * opts_.numWarps
  const int64_t blockedVec_; // analysis::blockedVectorWidth of the kernel
  // The tensor-map parameters added so far, in order.
  SmallVector<TensorMapSpec> tensorMaps_;
  // After a warp-specialized loop the producer warps have exited: barriers
  // then name barrier 1 with this many threads (0: bar.sync 0, all threads).
  int64_t barrierThreads_ = 0;
  // Warps a warp-specialized loop adds to the block, and the register cap at
  // entry that its setmaxnreg needs (0: none).
  int64_t extraWarps_ = 0;
  int64_t maxRegs_ = 0;
  // Whether code before the current op read or wrote memory (producer warps
  // of a warp-specialized loop run that code with thread ids past the layouts).
  bool touchedMemory_ = false;
  RemarkSink remarks_;
  Value tid_;
  LLVM::GlobalOp smemGlobal_;
  SharedMemoryAllocator smem_;
  int printCount_ = 0;
  LoweredValues vals_;
  DenseMap<Value, int64_t> smemOffsets_;
  // Per open scope: the values toSmem copied there, each with its bytes.
  SmallVector<SmallVector<std::pair<Value, int64_t>>> scopeCopies_;
  // Results of last-axis reductions: the layout of the reduced tile, in whose
  // slots the row values are also remembered (RowReduce.cpp).
  DenseMap<Value, Layout> sliceParent_;
  std::map<std::pair<std::vector<int64_t>, int64_t>, SmallVector<Value>> coordCache_;
  // mmaRow's values, keyed by the parent's warp split and blocks, and the
  // inverse: row value -> (that key, slot 2i + h).
  std::map<std::vector<int64_t>, Value> mmaRows_;
  DenseMap<Value, std::pair<std::vector<int64_t>, int64_t>> rowSlots_;
  // mmaCol's values by (j, q), and the inverse: column value -> slot 2j + q.
  std::map<std::pair<int64_t, int64_t>, Value> mmaCols_;
  DenseMap<Value, int64_t> colSlots_;
  DenseMap<Attribute, Value> entryConsts_;
  // A coordinate known to be base + off, base in [0, bound), off a multiple
  // of bound. elem() moves such a coordinate to the first of its run of
  // equal values (the value's constancy) so that the run computes it once.
  struct CoordForm {
    Value base;
    int64_t bound;
    int64_t off;
  };
  DenseMap<Value, CoordForm> coordForms_;
  std::map<std::pair<void *, int64_t>, Value> offsetCoords_;    // (base, off) -> base + off
  std::map<std::tuple<void *, bool, int64_t>, Value> baseParts_; // base & m, base >> s
  Value offsetCoord(Value base, int64_t bound, int64_t off);
  Value basePart(Value base, bool shift, int64_t amount);
  bool canonicalCoords(Value v, ArrayRef<Value> c, SmallVector<Value> &out);
  Location errorLoc_;
  std::string error_;
  MemoryHints hints_;
  std::map<std::string, Value> l2Policies_; // createpolicy results at the entry, by policy
  Value l2Policy(const std::string &evict);
};

} // namespace tessera::lowering::detail

#endif
