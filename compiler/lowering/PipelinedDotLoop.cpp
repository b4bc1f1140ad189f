// Software-pipelined lowering of the loop at the heart of every matmul:
//
//   for k in range(lo, hi, step):
//       a = load(pa, mask=..., other=0)     # BM x BK, contiguous along K
//       b = load(pb, mask=..., other=0)     # BK x BN, contiguous along N
//       acc = dot(a, b, acc)
//       pa += da; pb += db                  # uniform (scalar) pointer steps
//
// On sm_90a the operand tiles go from global to shared memory with cp.async
// into `num_stages` stage buffers laid out in the swizzled form that wgmma reads
// (128/64/32-byte swizzle), and each warpgroup multiplies its 64 rows of the
// tile with wgmma.mma_async, accumulators in registers. Iteration i waits for
// stage i, starts the wgmmas on it, then issues the copies for iteration
// i + num_stages - 2 into the stage that iteration i - 2 read (its wgmmas are
// complete: every warpgroup waited for all but its latest wgmma group before
// the barrier at the top of iteration i).
//
// Addresses and masks of a future iteration j are computed by lowering the
// loop body's index arithmetic again with the induction variable bound to
// lo + j * step and every advancing pointer tile bound to its initial value
// plus j steps (Lowered::Offset), so nothing but the accumulators is carried.
// Loops of any other form return nullopt and are lowered generically.
#include "KernelLowering.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cstdio>
#include <functional>

namespace tessera::lowering::detail {

namespace {

/// The parts of a loop that the pipeline needs.
struct DotLoop {
  tile::DotOp dot;
  tile::LoadOp loadA, loadB;
  unsigned accIndex = 0; // iter-arg index of the accumulator
  // Iter-arg index -> the uniform offset tile a pointer tile advances by.
  SmallVector<std::pair<unsigned, Value>> advancing;
};

bool isZeroSplat(Value v) {
  if (!v)
    return true;
  Attribute a;
  if (matchPattern(v, m_Constant(&a))) {
    if (auto d = dyn_cast<DenseElementsAttr>(a))
      return d.isSplat() && (isa<FloatType>(d.getElementType())
                                 ? d.getSplatValue<APFloat>().isPosZero()
                                 : d.getSplatValue<APInt>().isZero());
    return false;
  }
  if (auto sp = v.getDefiningOp<tile::SplatOp>())
    return isZeroSplat(sp.getSrc()) ||
           matchPattern(sp.getSrc(), m_Zero()) || matchPattern(sp.getSrc(), m_PosZeroFloat());
  return false;
}

std::optional<DotLoop> matchDotLoop(scf::ForOp op) {
  Block &body = *op.getBody();
  DotLoop m;
  int loads = 0;
  for (Operation &o : body.without_terminator()) {
    if (auto d = dyn_cast<tile::DotOp>(&o)) {
      if (m.dot)
        return std::nullopt;
      m.dot = d;
      continue;
    }
    if (isa<tile::LoadOp>(&o)) {
      ++loads;
      continue;
    }
    // Everything else is recomputed for future iterations: it must be pure.
    if (o.getNumRegions() || !isMemoryEffectFree(&o))
      return std::nullopt;
  }
  if (!m.dot || loads != 2)
    return std::nullopt;
  m.loadA = m.dot.getA().getDefiningOp<tile::LoadOp>();
  m.loadB = m.dot.getB().getDefiningOp<tile::LoadOp>();
  for (tile::LoadOp ld : {m.loadA, m.loadB})
    if (!ld || ld->getBlock() != &body || !ld->hasOneUse() || ld.getIsVolatile() ||
        !isZeroSplat(ld.getOther()))
      return std::nullopt;
  auto accArg = dyn_cast<BlockArgument>(m.dot.getAcc());
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  if (!accArg || accArg.getOwner() != &body || accArg.getArgNumber() == 0 || !accArg.hasOneUse() ||
      !m.dot->hasOneUse())
    return std::nullopt;
  m.accIndex = accArg.getArgNumber() - 1;
  if (yield.getOperand(m.accIndex) != m.dot.getResult())
    return std::nullopt;
  for (auto [i, arg] : llvm::enumerate(op.getRegionIterArgs())) {
    if (i == m.accIndex)
      continue;
    auto ap = yield.getOperand(i).getDefiningOp<tile::AddPtrOp>();
    if (!ap || ap.getPtr() != arg || !isa<RankedTensorType>(arg.getType()))
      return std::nullopt;
    // The step: a splat of a loop-invariant scalar, or a splat constant.
    Value off = ap.getOffset();
    auto sp = off.getDefiningOp<tile::SplatOp>();
    DenseElementsAttr dense;
    bool uniform = sp ? op.isDefinedOutsideOfLoop(sp.getSrc())
                      : matchPattern(off, m_Constant(&dense)) && dense.isSplat();
    if (!uniform)
      return std::nullopt;
    m.advancing.push_back({unsigned(i), off});
  }
  return m;
}

/// Mode field of a wgmma shared-memory descriptor for a swizzle width in bytes.
int64_t swizzleMode(int64_t bytes) { return bytes == 128 ? 1 : bytes == 64 ? 2 : 3; }

/// Descriptor constant parts: leading/stride byte offsets and swizzle mode.
int64_t descHigh(int64_t lbo, int64_t sbo, int64_t W) {
  return ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | swizzleMode(W) << 62;
}

/// The wgmma flavour of a dot. 16-bit operands read B N-major (wgmma
/// transposes it); tf32 and s8 wgmma read both operands K-major only, so B
/// goes through registers and is stored transposed ("B via registers").
struct WgmmaKind {
  bool half = false, tf32 = false, int8 = false;
};

/// The dot's wgmma flavour, or nothing when wgmma cannot compute it.
std::optional<WgmmaKind> wgmmaKindOf(tile::DotOp dot) {
  Type ea = dot.getA().getType().getElementType(), ec = dot.getAcc().getType().getElementType();
  if (dot.getB().getType().getElementType() != ea)
    return std::nullopt;
  WgmmaKind kind;
  kind.half = (ea.isBF16() || ea.isF16()) && ec.isF32();
  kind.tf32 = ea.isF32() && ec.isF32() && dot.getInputPrecision() == tile::InputPrecision::tf32;
  kind.int8 = ea.isInteger(8) && ec.isInteger(32);
  if (!kind.half && !kind.tf32 && !kind.int8)
    return std::nullopt;
  return kind;
}

/// The accumulator: wgmma's register order is the mma.sync m16n8 fragment
/// order repeated along N, warp w owning rows 16w..16w+15.
Layout wgmmaAccLayout(int64_t BM, int64_t BN, int64_t numWarps) {
  Layout accLay;
  accLay.shape = {BM, BN};
  accLay.total = BM * BN;
  accLay.mma = true;
  accLay.vec = 2;
  accLay.wm = numWarps;
  accLay.wn = 1;
  accLay.tm = BM / (64 * (numWarps / 4)); // 64-row blocks per warpgroup
  accLay.wgRows = accLay.tm > 1;
  accLay.tn = BN / 8;
  return accLay;
}

/// The accumulator of C^T = B^T A^T: wgmma's layout of the BN x BM product,
/// read with rows and columns swapped.
Layout swappedAccLayout(int64_t BM, int64_t BN, int64_t numWarps) {
  Layout accLay = wgmmaAccLayout(BN, BM, numWarps);
  accLay.shape = {BM, BN};
  accLay.transposed = true;
  accLay.vec = 1;
  return accLay;
}

} // namespace

/// Emits the software pipeline for one matched loop. Outside the anonymous
/// namespace only because KernelLowering names it as a friend.
class DotLoopEmitter {
  // The persistent loop drives the warp-specialized pieces itself.
  friend class KernelLowering;

public:
  DotLoopEmitter(KernelLowering &kl, scf::ForOp op, DotLoop &m, WgmmaKind kind, int stages,
                 bool wgmma, bool swapAB = false, bool warpSpecialized = false)
      : kl_(kl), b_(kl.b_), op_(op), m_(m), loc(op.getLoc()), ctx(kl.b_.getContext()),
        i32(b_.getI32Type()), i64(b_.getI64Type()), ptr3(LLVM::LLVMPointerType::get(ctx, 3)),
        ea(m.dot.getA().getType().getElementType()),
        accTy(m.dot.getAcc().getType().getElementType()), half(kind.half), tf32(kind.tf32),
        int8(kind.int8), swap(swapAB), ws(warpSpecialized), bViaRegs(!half && !swap), BM(m.dot.getA().getType().getDimSize(0)),
        BK(m.dot.getA().getType().getDimSize(1)), BN(m.dot.getB().getType().getDimSize(1)),
        eb(ea.getIntOrFloatBitWidth() / 8), vecElems(16 / eb), kPerInst(32 / eb),
        warpgroups(kl.numWarps_ / 4), S(stages), WA(std::min<int64_t>(128, BK * eb)),
        WB(bViaRegs ? WA : std::min<int64_t>(128, BN * eb)), aBytes(BM * BK * eb),
        bBytes(BK * BN * eb), stageBytes(aBytes + bBytes), rawRow(BN * eb + (swap ? 32 : 16)),
        rawBytes(BK * rawRow), stagedBytes(S * aBytes + 3 * bBytes + (S - 2) * rawBytes),
        bStaged(bViaRegs && S >= 4 && kl.smemUsed_ + 1024 + stagedBytes <= kMaxSharedBytes),
        totalBytes(swap      ? S * (aBytes + rawBytes)
                   : bStaged ? stagedBytes
                             : S * stageBytes),
        bLay(copyLayout(m.loadB)),
        bRegs(bLay.chunks), nChunks(BN / vecElems), vt(VectorType::get({vecElems}, ea)),
        useWgmma(wgmma || swap),
        accLay(swap    ? swappedAccLayout(BM, BN, kl.numWarps_)
               : wgmma ? wgmmaAccLayout(BM, BN, kl.numWarps_)
                       : mmaLayoutFor(BM, BN, kl.numWarps_).value_or(Layout())),
        T(accLay.tm), R(accLay.slots()), RB(swap ? BM / 2 : BN / 2),
        accCons(int8 ? "=r," : "=f,") {}

  /// Whether the tile sizes, operand contiguity, pointer tiles and shared
  /// memory allow the pipeline; false leaves the loop to the generic lowering
  /// and has emitted nothing.
  bool applies() {
    auto no = [&](std::string why) {
      whyNot = std::move(why);
      return false;
    };
    std::string tile = std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK);
    // wgmma: 64-row blocks per warpgroup, N up to 256. mma.sync: 16-bit
    // operands, an mma layout over the warps, pairs of n8 tiles (ldmatrix.x4).
    if (swap && (BN % (64 * warpgroups) || BM > 256 || BM % 8))
      return no("B^T A^T wgmma needs BN a multiple of 16 * num_warps and BM <= 256; the tile is " +
                tile);
    if (useWgmma && !swap && (BM % (64 * warpgroups) || BN > 256))
      return no("wgmma needs BM a multiple of 16 * num_warps and BN <= 256; the tile is " + tile);
    if (!useWgmma && !half)
      return no("without wgmma only f16/bf16 operands are pipelined (mma.sync)");
    if (!useWgmma && (!accLay.mma || accLay.tn % 2))
      return no("no mma.sync warp grid with an even number of n8 tiles per warp for " + tile);
    if (BK % kPerInst || (bViaRegs && BK % 16) || BN % 16 || BN * eb < 32 ||
        (BM * BK / vecElems) % kl_.threads_ || (BK * BN / vecElems) % kl_.threads_)
      return no("the " + tile + " tile does not split into 16-byte copies over the block's threads");
    // Both operands must be contiguous along their last dimension (rows of A
    // along K, rows of B along N): whole 16-byte chunks are copied.
    for (tile::LoadOp ld : {m_.loadA, m_.loadB})
      if (kl_.axis_.get(ld.getPtr()).contiguity.back() < vecElems)
        return no(std::string("the rows of operand ") + (ld == m_.loadA ? "A" : "B") +
                  " are not provably contiguous (a unit inner stride: pass 1 at launch, which "
                  "specialization makes a constant, or --assume NAME=1)");
    for (auto [i, step] : m_.advancing) {
      if (persistent) // lowered later, per tile (checked in emitAdvances)
        break;
      Lowered &init = kl_.lookup(op_.getInitArgs()[i]);
      if (init.kind != Lowered::Virtual && init.kind != Lowered::Offset)
        return no("a carried pointer tile does not start from index arithmetic");
    }
    // Too large for this many stages (the caller tries fewer).
    if (kl_.smemUsed_ + 1024 + allocBytes() > kMaxSharedBytes)
      return no(std::to_string(S) + " stages of the " + tile + " tile need " +
                std::to_string(allocBytes()) + " bytes of shared memory; the limit is " +
                std::to_string(kMaxSharedBytes));
    return !ws || wsApplies(no);
  }

  // Warp specialization's own conditions (after the pipeline's).
  bool wsApplies(const std::function<bool(std::string)> &no) {
    if (!useWgmma || bViaRegs || (kl_.numWarps_ != 4 && kl_.numWarps_ != 8))
      return no("warp specialization needs wgmma with B read from its copy, and 4 or 8 warps");
    // Producer threads run the code before the loop with thread ids past
    // every layout, and exit after it.
    if (!persistent && (op_->getParentOp() != kl_.src_.getOperation() || kl_.touchedMemory_ || kl_.smemUsed_))
      return no("warp specialization needs the loop at the kernel's top level, after code that "
                "touches no memory");
    for (tile::LoadOp ld : {m_.loadA, m_.loadB}) {
      bool aligned = kl_.axis_.get(ld.getPtr()).divisibility.back() >= 16;
      bool maskWhole = !ld.getMask() || kl_.axis_.get(ld.getMask()).constancy.back() >= vecElems;
      auto rt = cast<RankedTensorType>(ld.getType());
      if (!aligned || !maskWhole || (rt.getNumElements() / vecElems) % P)
        return no("warp specialization needs 16-byte aligned copies, whole-chunk masks and "
                  "tiles that split over 128 producer threads");
    }
    return true;
  }
  // Shared memory: the stages, then (warp-specialized) 2 * S mbarriers.
  int64_t allocBytes() const { return totalBytes + (ws ? 16 * S : 0); }

  /// Why applies() said no.
  std::string whyNot;
  const Layout &accLayout() const { return accLay; }
  Value tripCount() const { return n; }

  /// One line on what was emitted, for remarks.
  std::string summary() const {
    std::string what =
        swap       ? "wgmma m64n" + std::to_string(BM) + "k" + std::to_string(kPerInst) +
                   " computing C^T = B^T A^T, B^T from registers"
        : useWgmma ? "wgmma m64n" + std::to_string(BN) + "k" + std::to_string(kPerInst)
                   : std::string("mma.sync m16n8k16 with ldmatrix");
    std::string b = !bViaRegs ? "" : bStaged ? ", B staged and transposed in shared memory"
                                             : ", B through registers";
    return what + ", " + std::to_string(S) + " stages" + b +
           (ws ? ", warp-specialized (a producer warpgroup copies)" : "");
  }

  /// Lowers the loop (after applies()); false on an error in its body.
  // The stages (and mbarriers) in shared memory, 1024-byte aligned for the
  // swizzle atoms.
  void allocate() {
    int64_t smemOff = (kl_.smemUsed_ + 1023) / 1024 * 1024;
    kl_.smemUsed_ = smemOff + allocBytes();
    // After the loop its stages are free: the epilogue may stage stores
    // there (not in a persistent loop, whose producers run ahead).
    kl_.scratchOff_ = smemOff;
    kl_.scratchBytes_ = persistent ? 0 : totalBytes;
    smemAddr = LLVM::PtrToIntOp::create(b_, loc, i32, kl_.smemBase(smemOff, loc));
  }

  bool emit() {
    allocate();
    emitTripCount();
    if (!emitAdvances())
      return false;
    SmallVector<Value> acc0 = kl_.materializeIn(op_.getInitArgs()[m_.accIndex], accLay, loc);
    if (!ws && !emitPrologue()) // warp-specialized: the producers run ahead on their own
      return false;
    SmallVector<Value> accs;
    if (ws) {
      if (!emitWarpSpecialized(acc0, accs))
        return false;
      bindResults(accs);
      return true;
    }
    if (swap) {
      if (!emitSwapLoop(acc0, accs))
        return false;
    } else {
      scf::ForOp loop = emitLoop(acc0);
      if (!loop)
        return false;
      accs.assign(loop.getResults().begin(), loop.getResults().end());
    }
    if (useWgmma)
      accs = waitAcc(accs, 0);
    asmCall({}, {}, "cp.async.wait_group 0;", "~{memory}");
    bindResults(accs);
    return true;
  }

private:
  /// Each advancing pointer tile: its base tile and initial element offset.
  struct Advance {
    unsigned index;
    Value base, offset0, step;
  };
  /// Where a copied chunk goes: byte offset from (row, byte in row).
  using Placement = std::function<Value(Value, Value)>;

  KernelLowering &kl_;
  OpBuilder &b_;
  scf::ForOp op_;
  DotLoop &m_;
  const Location loc;
  MLIRContext *const ctx;
  const Type i32, i64;
  const LLVM::LLVMPointerType ptr3;
  const Type ea;    // operand element type
  const Type accTy; // accumulator element type
  const bool half, tf32, int8;
  // tf32 as C^T = B^T A^T: B^T is wgmma's A operand, loaded into registers
  // from a padded row-major copy of B (any layout will do for registers), and
  // A's K-major stage is wgmma's B operand. Nothing is transposed in shared
  // memory; the accumulator is the transposed mma layout.
  const bool swap;
  // Warp-specialized: a producer warpgroup added to the block issues every
  // copy and signals a `full` mbarrier per stage through cp.async's own
  // arrive; the num_warps consumer warps wait on it, run the wgmmas and
  // arrive on the stage's `empty` mbarrier once those completed. No CTA
  // barrier, and the consumers' instruction stream holds no copies.
  const bool ws;
  static constexpr int64_t P = 128; // producer threads
public:
  // The inner loop of a persistent loop (lowerPersistentDotLoop): its
  // operands are lowered per tile, after applies().
  bool persistent = false;

private:
  // Registers per thread with two consumer warpgroups (setmaxnreg): the
  // producers keep each chunk's hoisted address, 128 x 104 + 256 x 200 <= 64K.
  static constexpr int64_t kProducerRegs = 104, kConsumerRegs = 200;
  const bool bViaRegs;
  const int64_t BM, BK, BN;
  const int64_t eb; // operand element bytes
  const int64_t vecElems;
  const int64_t kPerInst; // every wgmma consumes 32 bytes of K
  // Each warpgroup owns BM / (numWarps / 4) rows, in blocks of 64 (one wgmma
  // row block each).
  const int64_t warpgroups;
  const int64_t S; // stages
  // Swizzle widths: A's rows are K; B's rows are N (16-bit) or, stored
  // transposed, K as well.
  const int64_t WA, WB;
  const int64_t aBytes, bBytes, stageBytes;
  // B staged (tf32/s8 with num_stages >= 4): B is copied by cp.async, like A,
  // into a row-major staging ring (rows padded by 16 bytes so the transposing
  // reads are conflict free), and transposed shared-to-shared into a ring of
  // three K-major buffers one iteration before its wgmmas. Global latency then
  // never sits between a load and a store. With 3 stages, or when that does
  // not fit, B goes through registers within the iteration.
  const int64_t rawRow, rawBytes;
  const int64_t stagedBytes;
  const bool bStaged;
  const int64_t totalBytes;
  // B via registers: the thread's chunks of the BK x BN tile, loaded as
  // 16-byte vectors when in bounds and aligned, else element by element.
  const Layout bLay;
  // One 16-byte vector per chunk (i8 lanes would each take a register).
  const int64_t bRegs;
  const int64_t nChunks; // 16-byte chunks in a row of B
  const VectorType vt;
  // wgmma (sm_90a), or mma.sync m16n8k16 with ldmatrix fragments (sm_80 and
  // later, 16-bit operands) reading the same swizzled stages.
  const bool useWgmma;
  const Layout accLay;
  const int64_t T;  // the warpgroup's 64-row blocks
  const int64_t R;  // all T blocks: T * BN / 2 registers per thread
  const int64_t RB; // one block's: BN / 2 (R / T)
  const std::string accCons;

  // Set by emit() before the copies and the loop use them.
  Value ptid;     // warp-specialized producer code: the thread's index in the producer warpgroup
  Value smemAddr; // i32 shared-memory address of the pipeline's buffers
  Value lo, step; // the source loop's lower bound and step
  Type ivTy;      // its induction variable type
  Value n;        // its trip count (i32)
  SmallVector<Advance> advances;

  // Inline PTX with side effects, so that nothing moves across it; several
  // results come back as one literal struct.
  LLVM::InlineAsmOp asmCall(TypeRange results, ValueRange operands, StringRef text,
                            StringRef constraints) {
    Type res;
    if (results.size() == 1)
      res = results[0];
    else if (!results.empty())
      res =
          LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(results.begin(), results.end()));
    return LLVM::InlineAsmOp::create(b_, loc, res, operands, text, constraints,
                                     /*has_side_effects=*/true, /*is_align_stack=*/false,
                                     LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                     ArrayAttr());
  }
  // Constants and conversions for the i32 address and index arithmetic.
  Value c32(int64_t v) { return kl_.i32c(v, loc); }
  Value c64(int64_t v) { return arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(v)); }
  Value toI32(Value v) {
    if (v.getType() == i32)
      return v;
    return arith::TruncIOp::create(b_, loc, i32, v);
  }

  // Trip count (the step of an scf.for is positive).
  void emitTripCount() {
    lo = kl_.scalarOf(op_.getLowerBound());
    Value hi = kl_.scalarOf(op_.getUpperBound());
    step = kl_.scalarOf(op_.getStep());
    ivTy = lo.getType();
    Value span = arith::SubIOp::create(b_, loc, hi, lo);
    Value stepM1 = arith::SubIOp::create(
        b_, loc, step, arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(ivTy, 1)));
    Value trips =
        arith::DivSIOp::create(b_, loc, arith::AddIOp::create(b_, loc, span, stepM1), step);
    trips = arith::MaxSIOp::create(b_, loc, trips,
                                   arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(ivTy, 0)));
    n = toI32(trips);
  }

  // Each advancing pointer tile: its base tile and initial element offset.
  bool emitAdvances() {
    advances.clear();
    for (auto [i, st] : m_.advancing) {
      Lowered &init = kl_.lookup(op_.getInitArgs()[i]);
      if (init.kind != Lowered::Virtual && init.kind != Lowered::Offset)
        return kl_.fail(op_, "a carried pointer tile of the dot loop does not start from index arithmetic");
      Advance a;
      a.index = i;
      a.base = init.kind == Lowered::Offset ? init.base : op_.getInitArgs()[i];
      a.offset0 = init.kind == Lowered::Offset ? init.scalar : c64(0);
      if (a.offset0.getType() != i64)
        a.offset0 = arith::ExtSIOp::create(b_, loc, i64, a.offset0);
      Value s;
      if (auto sp = st.getDefiningOp<tile::SplatOp>()) {
        s = kl_.scalarOf(sp.getSrc());
      } else {
        DenseElementsAttr dense;
        matchPattern(st, m_Constant(&dense));
        s = arith::ConstantOp::create(b_, loc, cast<TypedAttr>(dense.getSplatValue<Attribute>()));
      }
      a.step = s.getType() == i64 ? s : Value(arith::ExtSIOp::create(b_, loc, i64, s));
      advances.push_back(a);
    }
    return true;
  }
  // Binds every advancing pointer tile to its value in iteration j.
  void bindOffsets(Value j /*i32*/) {
    Value j64 = arith::ExtSIOp::create(b_, loc, i64, j);
    for (const Advance &a : advances) {
      Lowered l;
      l.kind = Lowered::Offset;
      l.type = cast<RankedTensorType>(op_.getRegionIterArgs()[a.index].getType());
      l.base = a.base;
      l.scalar =
          arith::AddIOp::create(b_, loc, a.offset0, arith::MulIOp::create(b_, loc, j64, a.step));
      kl_.vals_[op_.getRegionIterArgs()[a.index]] = l;
    }
  }

  // Copies one operand tile of iteration j into the stage at byte address
  // `dst`, in the swizzled layout: row r, byte b of the row lands in column
  // block b / W (each block holds every row, W bytes per row), and within the
  // 8-row swizzle atom its 16-byte unit is XORed with the row's low bits.
  Layout copyLayout(tile::LoadOp ld) {
    auto rt = cast<RankedTensorType>(ld.getType());
    Layout cl;
    cl.shape = {rt.getDimSize(0), rt.getDimSize(1)};
    cl.total = cl.shape[0] * cl.shape[1];
    cl.vec = vecElems;
    cl.chunks = cl.total / (kl_.threads_ * vecElems);
    return cl;
  }
  // Byte offset of element (r, c) in a stage buffer of R rows whose rows are
  // W-byte swizzled (see issueCopy).
  Value swizzled(Value r, Value colByte, int64_t R, int64_t W) {
    Value blk = arith::DivUIOp::create(b_, loc, colByte, c32(W));
    Value inRow = arith::RemUIOp::create(b_, loc, colByte, c32(W));
    Value o = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, r, c32(W)), inRow);
    Value sw = arith::ShLIOp::create(
        b_, loc,
        arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, o, c32(7)), c32(W / 16 - 1)),
        c32(4));
    return arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, blk, c32(R * W)),
                                 arith::XOrIOp::create(b_, loc, o, sw));
  }
  // The placement into a stage buffer of R rows, W-byte swizzled.
  Placement swizzledIn(int64_t R, int64_t W) {
    return [this, R, W](Value r, Value colByte) { return swizzled(r, colByte, R, W); };
  }
  // Copies one operand tile of iteration j to shared memory at `dst` +
  // place(row, byte in row).
  bool issueCopy(tile::LoadOp ld, Value dst, const Placement &place) {
    Layout cl = copyLayout(ld);
    if (ptid) // the producer warpgroup's chunks
      cl.chunks = cl.total / (P * vecElems);
    AxisInfo pa = kl_.axis_.get(ld.getPtr());
    bool aligned = pa.divisibility.back() >= 16;
    bool maskWhole = !ld.getMask() || kl_.axis_.get(ld.getMask()).constancy.back() >= vecElems;
    SmallVector<Value> fast, dsts, ptrs;
    SmallVector<SmallVector<Value>> masks;
    for (int64_t k = 0; k < cl.chunks; ++k) {
      int64_t s0 = k * vecElems;
      SmallVector<Value> c;
      if (ptid)
        c = kl_.unflatten(arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, ptid, c32(vecElems)),
                                                c32(k * P * vecElems)),
                          cl.shape, loc);
      else
        c = llvm::to_vector(kl_.coords(cl, s0));
      // Byte offset of the chunk in the stage buffer.
      Value phys = place(c[0], arith::MulIOp::create(b_, loc, c[1], c32(eb)));
      dsts.push_back(arith::AddIOp::create(b_, loc, dst, phys));
      // The chunk's elements are contiguous (checked above): one address, and
      // the lanes' coordinates computed here rather than kept from the entry.
      Value p0 = kl_.elem(ld.getPtr(), c, loc);
      SmallVector<Value> mk;
      for (int64_t v = 0; ld.getMask() && v < (maskWhole ? 1 : vecElems); ++v) {
        SmallVector<Value> cv{c[0], v ? Value(arith::AddIOp::create(b_, loc, c[1], c32(v))) : c[1]};
        mk.push_back(kl_.elem(ld.getMask(), cv, loc));
      }
      if (aligned && maskWhole) {
        // Every chunk is all in or all out: a masked-off chunk copies 0 source
        // bytes and is zero-filled, so there is no slow path to test for.
        Value bytes =
            mk.empty() ? c32(16) : Value(arith::SelectOp::create(b_, loc, mk[0], c32(16), c32(0)));
        asmCall({}, {dsts.back(), p0, bytes}, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
                "r,l,r,~{memory}");
        continue;
      }
      Value ok = kl_.vectorGuard(mk, p0, 16, aligned, loc);
      if (!ok)
        ok = arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true));
      fast.push_back(ok);
      ptrs.push_back(p0);
      masks.push_back(mk);
      asmCall({}, {dsts.back(), p0, arith::ExtUIOp::create(b_, loc, i32, ok)},
              "{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\n"
              "@p cp.async.cg.shared.global [$0], [$1], 16;\n}",
              "r,l,r,~{memory}");
    }
    if (fast.empty())
      return true;
    // Chunks that are partly masked, or misaligned: element by element, with
    // plain shared stores (made visible by the fence and barrier before use).
    Value anySlow;
    for (Value f : fast) {
      Value notF = arith::XOrIOp::create(b_, loc, f,
                                         arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true)));
      anySlow = anySlow ? Value(arith::OrIOp::create(b_, loc, anySlow, notF)) : notF;
    }
    auto slowIf = kl_.makeIf(anySlow, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(slowIf.thenBlock());
    for (size_t k = 0; k < fast.size(); ++k) {
      Value notF = arith::XOrIOp::create(b_, loc, fast[k],
                                         arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true)));
      auto chunkIf = kl_.makeIf(notF, false, loc);
      OpBuilder::InsertionGuard g2(b_);
      b_.setInsertionPointToStart(chunkIf.thenBlock());
      for (int64_t v = 0; v < vecElems; ++v) {
        Value mask = masks[k].empty() ? Value() : masks[k][maskWhole ? 0 : v];
        Value p = LLVM::GEPOp::create(b_, loc, ptrs[k].getType(), ea, ptrs[k],
                                      ArrayRef<LLVM::GEPArg>{int32_t(v)});
        Value val = kl_.maskedLoad(ea, p, mask, Value(), false, loc);
        Value addr = arith::AddIOp::create(b_, loc, dsts[k], c32(v * eb));
        LLVM::StoreOp::create(b_, loc, val, LLVM::IntToPtrOp::create(b_, loc, ptr3, addr), eb);
      }
    }
    return true;
  }

  // Chunk k of this thread: groups of 16 consecutive chunks run down K, so a
  // warp covers 16 K rows x 2 chunks along N. Its transposed stores then land
  // in 32 distinct banks (two N rows of different swizzle phase, 16 K words
  // each), and each K row still reads 32 contiguous bytes (one sector).
  SmallVector<Value> bChunkCoords(int64_t k) {
    Value q = arith::AddIOp::create(b_, loc, kl_.tid_, c32(k * kl_.threads_));
    Value kRow = arith::AddIOp::create(
        b_, loc, arith::AndIOp::create(b_, loc, q, c32(15)),
        arith::MulIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, q, c32(16 * nChunks)),
                              c32(16)));
    Value nCol = arith::MulIOp::create(
        b_, loc,
        arith::RemUIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, q, c32(4)), c32(nChunks)),
        c32(vecElems));
    return {kRow, nCol};
  }
  // Loads the thread's chunks of `ld` (B, in bChunkCoords order) into
  // registers under the current binding of the loop body.
  SmallVector<Value> loadRegs(tile::LoadOp ld) {
    AxisInfo pa = kl_.axis_.get(ld.getPtr());
    bool aligned = pa.divisibility.back() >= 16;
    bool maskWhole = !ld.getMask() || kl_.axis_.get(ld.getMask()).constancy.back() >= vecElems;
    SmallVector<Value> ptrs, masks;
    Value all;
    for (int64_t k = 0; k < bLay.chunks; ++k) {
      SmallVector<Value> c = bChunkCoords(k);
      ptrs.push_back(kl_.elem(ld.getPtr(), c, loc));
      SmallVector<Value> mk;
      for (int64_t v = 0; ld.getMask() && v < vecElems; ++v) {
        if (maskWhole && v) {
          mk.push_back(mk[0]);
          continue;
        }
        SmallVector<Value> cv{c[0], v ? Value(arith::AddIOp::create(b_, loc, c[1], c32(v))) : c[1]};
        mk.push_back(kl_.elem(ld.getMask(), cv, loc));
      }
      masks.append(mk.begin(), mk.end());
      if (Value g = kl_.vectorGuard(maskWhole && !mk.empty() ? ArrayRef<Value>(mk).take_front(1)
                                                             : ArrayRef<Value>(mk),
                                    ptrs.back(), 16, aligned, loc))
        all = all ? Value(arith::AndIOp::create(b_, loc, all, g)) : g;
    }
    auto wide = [&]() {
      SmallVector<Value> vecs;
      for (Value p : ptrs)
        vecs.push_back(LLVM::LoadOp::create(b_, loc, vt, p, 16));
      return vecs;
    };
    if (!all)
      return wide();
    auto ifOp = scf::IfOp::create(b_, loc, SmallVector<Type>(bRegs, vt), all, true, true);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b_, loc, wide());
    b_.setInsertionPointToStart(ifOp.elseBlock());
    SmallVector<Value> vecs;
    for (int64_t k = 0; k < bLay.chunks; ++k) {
      Value vec = LLVM::PoisonOp::create(b_, loc, vt);
      for (int64_t v = 0; v < vecElems; ++v) {
        Value p = LLVM::GEPOp::create(b_, loc, ptrs[k].getType(), ea, ptrs[k],
                                      ArrayRef<LLVM::GEPArg>{int32_t(v)});
        Value mask = masks.empty() ? Value() : masks[k * vecElems + v];
        Value x = kl_.maskedLoad(ea, p, mask, Value(), false, loc);
        vec = LLVM::InsertElementOp::create(b_, loc, vec, x, c32(v));
      }
      vecs.push_back(vec);
    }
    scf::YieldOp::create(b_, loc, vecs);
    return SmallVector<Value>(ifOp.getResults().begin(), ifOp.getResults().end());
  }
  // Stores B's registers transposed: element (k, n) goes to row n, byte k*eb
  // of the K-major, W-swizzled stage buffer of BN rows.
  void storeTransposed(ValueRange regs, Value dst) {
    for (int64_t k = 0; k < bLay.chunks; ++k) {
      SmallVector<Value> c = bChunkCoords(k);
      Value colByte = arith::MulIOp::create(b_, loc, c[0], c32(eb));
      for (int64_t v = 0; v < vecElems; ++v) {
        Value nIdx = arith::AddIOp::create(b_, loc, c[1], c32(v));
        Value addr = arith::AddIOp::create(b_, loc, dst, swizzled(nIdx, colByte, BN, WB));
        Value x = LLVM::ExtractElementOp::create(b_, loc, regs[k], c32(v));
        LLVM::StoreOp::create(b_, loc, x, LLVM::IntToPtrOp::create(b_, loc, ptr3, addr), eb);
      }
    }
  }

  // Lowers the loop body's index arithmetic for iteration j (i32) in a new
  // scope (the caller pops it): iv = lo + j * step, pointer tiles j steps on.
  bool bindIteration(Value j) {
    kl_.pushScope();
    Value jIv = j;
    if (ivTy != i32)
      jIv = arith::ExtSIOp::create(b_, loc, ivTy, j);
    kl_.bindScalar(op_.getInductionVar(),
                   arith::AddIOp::create(b_, loc, lo, arith::MulIOp::create(b_, loc, jIv, step)));
    bindOffsets(j);
    for (Operation &o : op_.getBody()->without_terminator()) {
      if (&o == m_.loadA.getOperation() || &o == m_.loadB.getOperation() ||
          &o == m_.dot.getOperation())
        continue;
      if (!kl_.lowerOp(&o))
        return false;
    }
    return true;
  }
  // B via registers: iteration j's B tile loaded into registers (poison when
  // j >= n). Issued early in the iteration so that the latency overlaps the
  // barrier and the wgmma issue before the transposed stores need the data.
  bool loadB(Value j, SmallVector<Value> &vals) {
    Value cond = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n);
    auto ifOp = scf::IfOp::create(b_, loc, SmallVector<Type>(bRegs, vt), cond, true, true);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b_, loc, SmallVector<Value>(bRegs, LLVM::PoisonOp::create(b_, loc, vt)));
      b_.setInsertionPointToStart(ifOp.thenBlock());
      bool ok = bindIteration(j);
      if (ok)
        scf::YieldOp::create(b_, loc, loadRegs(m_.loadB));
      kl_.popScope();
      if (!ok)
        return false;
    }
    vals.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    return true;
  }
  // Shared-memory addresses (i32) of iteration j's A stage, of the K-major
  // or N-major B buffer its wgmmas read, and (B staged) of its staging slot.
  Value addr(int64_t base, Value idx, int64_t ring, int64_t bytes) {
    Value slot = arith::RemUIOp::create(b_, loc, idx, c32(ring));
    return arith::AddIOp::create(
        b_, loc, smemAddr,
        arith::AddIOp::create(b_, loc, c32(base),
                              arith::MulIOp::create(b_, loc, slot, c32(bytes))));
  }
  Value aStage(Value j) {
    return bStaged || swap ? addr(0, j, S, aBytes) : addr(0, j, S, stageBytes);
  }
  Value bStage(Value j) {
    return bStaged ? addr(S * aBytes, j, 3, bBytes) : addr(aBytes, j, S, stageBytes);
  }
  Value rawStage(Value j) {
    return swap ? addr(S * aBytes, j, S, rawBytes) : addr(S * aBytes + 3 * bBytes, j, S - 2, rawBytes);
  }
  // B staged: byte offset of (row, byte in row) in a padded row-major staging slot.
  Value rowMajorRaw(Value r, Value colByte) {
    return arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, r, c32(rawRow)), colByte);
  }
  // Issues iteration j's copies when j < n. B via registers: stores `bVals`
  // (from loadB) transposed; B staged: copies B to its staging slot.
  bool issueIteration(Value j, ArrayRef<Value> bVals) {
    Value cond = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n);
    scf::IfOp ifOp = kl_.makeIf(cond, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    bool ok = bindIteration(j);
    ok = ok && issueCopy(m_.loadA, aStage(j), swizzledIn(BM, WA));
    if (bStaged || swap)
      ok = ok && issueCopy(m_.loadB, rawStage(j),
                           [this](Value r, Value colByte) { return rowMajorRaw(r, colByte); });
    else if (bViaRegs)
      storeTransposed(bVals, bStage(j));
    else
      ok = ok && issueCopy(m_.loadB, bStage(j), swizzledIn(BK, WB));
    kl_.popScope();
    return ok;
  }
  // B staged: iteration j's staging slot -> its K-major buffer, when j < n.
  // Reads 16-byte chunks in the store-friendly chunk order (bChunkCoords).
  void transposeStaged(Value j) {
    auto ifOp =
        kl_.makeIf(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n), false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    Value raw = rawStage(j);
    SmallVector<Value> vals;
    for (int64_t k = 0; k < bLay.chunks; ++k) {
      SmallVector<Value> c = bChunkCoords(k);
      Value at = arith::AddIOp::create(
          b_, loc, raw, rowMajorRaw(c[0], arith::MulIOp::create(b_, loc, c[1], c32(eb))));
      vals.push_back(
          LLVM::LoadOp::create(b_, loc, vt, LLVM::IntToPtrOp::create(b_, loc, ptr3, at), 16));
    }
    storeTransposed(vals, bStage(j));
  }

  // Closes one iteration's cp.async group, the unit that wait_group counts.
  void commitCopies() { asmCall({}, {}, "cp.async.commit_group;", "~{memory}"); }

  // Passes the accumulators through `wgmma.wait_group N`, so that no use of
  // them can move above the wait.
  SmallVector<Value> waitAcc(ValueRange accs, int pending) {
    std::string cons;
    for (int64_t r = 0; r < R; ++r)
      cons += accCons;
    for (int64_t r = 0; r < R; ++r)
      cons += std::to_string(r) + (r + 1 < R ? "," : "");
    auto w = asmCall(SmallVector<Type>(R, accTy), accs,
                     "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
                     cons + ",~{memory}");
    SmallVector<Value> out;
    for (int64_t r = 0; r < R; ++r)
      out.push_back(LLVM::ExtractValueOp::create(b_, loc, w.getResult(0), ArrayRef<int64_t>{r}));
    return out;
  }

  // Prologue: iterations 0 .. S-3 in flight.
  bool emitPrologue() {
    for (int64_t p = 0; p + 2 < S; ++p) {
      SmallVector<Value> bVals;
      if ((bViaRegs && !bStaged && !loadB(c32(p), bVals)) || !issueIteration(c32(p), bVals))
        return false;
      commitCopies();
    }
    if (bStaged) { // iteration 0's B, before the loop's first barrier
      asmCall({}, {}, "cp.async.wait_group " + std::to_string(S - 3) + ";", "~{memory}");
      kl_.barrier(loc);
      transposeStaged(c32(0));
    }
    return true;
  }

  // A wgmma shared-memory descriptor: the address field of `addr` (i32)
  // joined to the constant `high` part (descHigh).
  Value desc(Value addr, int64_t high) {
    Value field =
        arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, addr, c32(4)), c32(0x3FFF));
    return arith::OrIOp::create(b_, loc, arith::ExtUIOp::create(b_, loc, i64, field), c64(high));
  }
  // Inline asm of one wgmma on a 64-row block: RB accumulators, the A and B
  // descriptors, and a flag that turns on accumulation (scale-d).
  std::string wgmmaText() const {
    std::string shape = "m64n" + std::to_string(BN) + "k" + std::to_string(kPerInst);
    std::string ty = ea.isBF16() ? "bf16" : ea.isF16() ? "f16" : tf32 ? "tf32" : "s8";
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(RB + 2) +
                       ", 0;\nwgmma.mma_async.sync.aligned." + shape + (int8 ? ".s32." : ".f32.") +
                       ty + "." + ty + " {";
    for (int64_t r = 0; r < RB; ++r)
      text += "$" + std::to_string(r) + (r + 1 < RB ? "," : "");
    // Scale and transpose immediates: 16-bit types read B transposed; tf32 has
    // scales only; integer wgmma has neither.
    text += "}, $" + std::to_string(RB) + ", $" + std::to_string(RB + 1) +
            (half ? ", p, 1, 1, 0, 1;\n}" : tf32 ? ", p, 1, 1;\n}" : ", p;\n}");
    return text;
  }
  // Constraints of wgmmaText: RB accumulator outputs, the descriptors and the
  // flag, and RB inputs tied to the outputs.
  std::string wgmmaConstraints() const {
    std::string cons;
    for (int64_t r = 0; r < RB; ++r)
      cons += accCons;
    cons += "l,l,r";
    for (int64_t r = 0; r < RB; ++r)
      cons += "," + std::to_string(r);
    return cons;
  }

  // The pipelined loop over i in [0, n), carrying the accumulators: waits for
  // stage i, runs its wgmmas, then issues iteration i + S - 2. Null on an error.
  /// mma.sync steps over stage `i`: per k16 step, A fragments of the warp's
  /// tm row tiles by ldmatrix.x4 and B fragments of pairs of its n8 tiles by
  /// ldmatrix.x4.trans, from the swizzled stages the wgmma path also uses.
  void emitMmaSyncSteps(SmallVector<Value> &accs, Value i) {
    Type f32 = b_.getF32Type();
    Value lane = arith::AndIOp::create(b_, loc, kl_.tid_, c32(31));
    Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid_, c32(5));
    Value rowBase = arith::MulIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, warp, c32(accLay.wn)),
                                          c32(accLay.tm * 16));
    Value colBase = arith::MulIOp::create(b_, loc, arith::RemUIOp::create(b_, loc, warp, c32(accLay.wn)),
                                          c32(accLay.tn * 8));
    // A: lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15.
    Value aRow = arith::AddIOp::create(b_, loc, rowBase, arith::AndIOp::create(b_, loc, lane, c32(15)));
    Value aK = arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(4)), c32(8));
    // B: lanes 8q..8q+7 address K rows (q % 2) * 8 + 0..7 of n8 tile q / 2 of the pair.
    Value bK = arith::AddIOp::create(
        b_, loc, arith::AndIOp::create(b_, loc, lane, c32(7)),
        arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(3)), c32(1)), c32(8)));
    Value bN = arith::AddIOp::create(
        b_, loc, colBase, arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(4)), c32(8)));
    Value sA = aStage(i), sB = bStage(i);
    auto ldmatrix = [&](Value addr, bool trans) {
      auto op = asmCall(SmallVector<Type>(4, i32), {addr},
                        std::string("ldmatrix.sync.aligned.m8n8.x4") + (trans ? ".trans" : "") +
                            ".shared.b16 {$0,$1,$2,$3}, [$4];",
                        "=r,=r,=r,=r,r,~{memory}");
      SmallVector<Value> r;
      for (int64_t q = 0; q < 4; ++q)
        r.push_back(LLVM::ExtractValueOp::create(b_, loc, op.getResult(0), ArrayRef<int64_t>{q}));
      return r;
    };
    std::string ty = ea.isBF16() ? "bf16" : "f16";
    std::string mmaText = "mma.sync.aligned.m16n8k16.row.col.f32." + ty + "." + ty +
                          ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
    for (int64_t kk = 0; kk < BK / 16; ++kk) {
      SmallVector<SmallVector<Value>> aFrag, bFrag(accLay.tn);
      for (int64_t t = 0; t < accLay.tm; ++t) {
        Value row = arith::AddIOp::create(b_, loc, aRow, c32(t * 16));
        Value colByte = arith::MulIOp::create(b_, loc, arith::AddIOp::create(b_, loc, aK, c32(kk * 16)), c32(eb));
        aFrag.push_back(ldmatrix(arith::AddIOp::create(b_, loc, sA, swizzled(row, colByte, BM, WA)), false));
      }
      for (int64_t jp = 0; jp < accLay.tn; jp += 2) {
        Value k = arith::AddIOp::create(b_, loc, bK, c32(kk * 16));
        Value colByte = arith::MulIOp::create(b_, loc, arith::AddIOp::create(b_, loc, bN, c32(jp * 8)), c32(eb));
        SmallVector<Value> r = ldmatrix(arith::AddIOp::create(b_, loc, sB, swizzled(k, colByte, BK, WB)), true);
        bFrag[jp] = {r[0], r[1]};
        bFrag[jp + 1] = {r[2], r[3]};
      }
      for (int64_t t = 0; t < accLay.tm; ++t)
        for (int64_t jn = 0; jn < accLay.tn; ++jn) {
          int64_t base = (t * accLay.tn + jn) * 4;
          SmallVector<Value> operands(aFrag[t].begin(), aFrag[t].end());
          operands.append(bFrag[jn].begin(), bFrag[jn].end());
          for (int q = 0; q < 4; ++q)
            operands.push_back(accs[base + q]);
          auto mma = asmCall(SmallVector<Type>(4, f32), operands, mmaText,
                             "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3");
          for (int q = 0; q < 4; ++q)
            accs[base + q] = LLVM::ExtractValueOp::create(b_, loc, mma.getResult(0), ArrayRef<int64_t>{q});
        }
    }
  }

  // One wgmma (inline asm `text`) on 64-row block t: `operands` then the
  // block's RB accumulators, which it replaces.
  void wgmmaOnBlock(const std::string &text, const std::string &cons, ArrayRef<Value> operands,
                    SmallVector<Value> &accs, int64_t t) {
    SmallVector<Value> all(operands.begin(), operands.end());
    all.append(accs.begin() + t * RB, accs.begin() + (t + 1) * RB);
    auto mma = asmCall(SmallVector<Type>(RB, accTy), all, text, cons + ",~{memory}");
    for (int64_t r = 0; r < RB; ++r)
      accs[t * RB + r] = LLVM::ExtractValueOp::create(b_, loc, mma.getResult(0), ArrayRef<int64_t>{r});
  }
  // The byte offset of the warpgroup's rows in an A stage.
  Value wgRowBytes() {
    Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid_, c32(5));
    return arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, warp, c32(2)),
                                 c32(T * 64 * WA));
  }
  // The warpgroup's wgmmas on stage i, as one committed group.
  void issueWgmmas(Value i, Value rowBytes, SmallVector<Value> &accs) {
    // A is K-major (leading offset unused with swizzling); B is N-major: its
    // W-byte column blocks are BK * W bytes apart.
    int64_t highA = descHigh(16, 8 * WA, WA);
    int64_t highB = bViaRegs ? descHigh(16, 8 * WB, WB) : descHigh(BK * WB, 8 * WB, WB);
    std::string mmaText = wgmmaText(), mmaCons = wgmmaConstraints();
    Value sB = bStage(i);
    Value sAw = arith::AddIOp::create(b_, loc, aStage(i), rowBytes);
    asmCall({}, {}, "wgmma.fence.sync.aligned;", "~{memory}");
    for (int64_t kk = 0; kk < BK / kPerInst; ++kk) {
      int64_t kb = kk * 32;
      // B: 16 rows of K further (N-major), or 32 bytes along K (K-major).
      Value bDesc =
          desc(arith::AddIOp::create(b_, loc, sB,
                                     c32(bViaRegs ? kb / WB * (BN * WB) + kb % WB : kk * 16 * WB)),
               highB);
      for (int64_t t = 0; t < T; ++t) { // the warpgroup's 64-row blocks
        Value aAddr =
            arith::AddIOp::create(b_, loc, sAw, c32(kb / WA * (BM * WA) + kb % WA + t * 64 * WA));
        wgmmaOnBlock(mmaText, mmaCons, {desc(aAddr, highA), bDesc, c32(1)}, accs, t);
      }
    }
    asmCall({}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
  }

  scf::ForOp emitLoop(ValueRange acc0) {
    Value rowBytes = wgRowBytes();
    auto loop = scf::ForOp::create(b_, loc, c32(0), n, c32(1), acc0);
    OpBuilder::InsertionGuard g(b_);
    kl_.enterLoopBody(loop);
    Value i = loop.getInductionVar();
    Value j = arith::AddIOp::create(b_, loc, i, c32(S - 2));
    SmallVector<Value> bVals;
    if (bViaRegs && !bStaged && !loadB(j, bVals))
      return {};
    // B staged also needs iteration i + 1's group, transposed below.
    asmCall({}, {}, "cp.async.wait_group " + std::to_string(bStaged ? S - 4 : S - 3) + ";",
            "~{memory}");
    if (useWgmma) // generic-proxy writes (cold copies, transposes) read by wgmma
      asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
    kl_.barrier(loc);
    if (!useWgmma) {
      SmallVector<Value> accs(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      emitMmaSyncSteps(accs, i);
      if (!issueIteration(j, bVals))
        return {};
      commitCopies();
      scf::YieldOp::create(b_, loc, accs);
      return loop;
    }
    SmallVector<Value> accs(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
    issueWgmmas(i, rowBytes, accs);
    if (!issueIteration(j, bVals))
      return {};
    commitCopies();
    if (bStaged)
      transposeStaged(arith::AddIOp::create(b_, loc, i, c32(1)));
    scf::YieldOp::create(b_, loc, waitAcc(accs, 1));
    return loop;
  }

  // One iteration of the C^T = B^T A^T loop on stage i: B^T fragments into
  // registers, the wgmmas, then iteration i + S - 2's copies. `fragOff` is the
  // thread's byte offset in a B copy (see emitSwapLoop).
  bool emitSwapIteration(Value i, Value fragOff, SmallVector<Value> &accs) {
    asmCall({}, {}, "cp.async.wait_group " + std::to_string(S - 3) + ";", "~{memory}");
    asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}"); // cold copies of A
    kl_.barrier(loc);
    issueSwapWgmmas(i, fragOff, accs);
    if (!issueIteration(arith::AddIOp::create(b_, loc, i, c32(S - 2)), {}))
      return false;
    commitCopies();
    accs = waitAcc(accs, 1);
    return true;
  }
  // The B^T fragments of stage i and the warpgroup's wgmmas on it, as one
  // committed group.
  void issueSwapWgmmas(Value i, Value fragOff, SmallVector<Value> &accs) {
    // Per k8 step and 64-row block of B^T, fragment rows g and g + 8 (g =
    // lane / 4) at columns c and c + 4 (c = lane % 4); rows interleaved, they
    // are N columns 2g and 2g + 1 of the warp's 16. B's copy has rows of BN + 8
    // words, so the 8-byte loads of a half-warp (4 K rows x 4 column pairs)
    // fall in distinct banks.
    Value frag = arith::AddIOp::create(b_, loc, rawStage(i), fragOff);
    // With the interleaved rows of the transposed layout, a0/a1 (and a2/a3)
    // are adjacent N columns: one 8-byte load each.
    auto v2 = VectorType::get({2}, i32);
    auto loadFrags = [&](int64_t kk) {
      SmallVector<Value> regs;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t q = 0; q < 4; q += 2) {
          int64_t off = (kk * 8 + (q >= 2 ? 4 : 0)) * rawRow + t * 64 * 4;
          Value at = arith::AddIOp::create(b_, loc, frag, c32(off));
          Value pair = LLVM::LoadOp::create(b_, loc, v2, LLVM::IntToPtrOp::create(b_, loc, ptr3, at), 8);
          for (int64_t e = 0; e < 2; ++e)
            regs.push_back(LLVM::ExtractElementOp::create(b_, loc, pair, c32(e)));
        }
      return regs;
    };
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(RB + 5) +
                       ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(BM) +
                       "k8.f32.tf32.tf32 {";
    for (int64_t r = 0; r < RB; ++r)
      text += "$" + std::to_string(r) + (r + 1 < RB ? "," : "");
    text += "}, {$" + std::to_string(RB) + ",$" + std::to_string(RB + 1) + ",$" +
            std::to_string(RB + 2) + ",$" + std::to_string(RB + 3) + "}, $" +
            std::to_string(RB + 4) + ", p, 1, 1;\n}";
    std::string cons;
    for (int64_t r = 0; r < RB; ++r)
      cons += "=f,";
    cons += "r,r,r,r,l,r";
    for (int64_t r = 0; r < RB; ++r)
      cons += "," + std::to_string(r);
    Value sA = aStage(i);
    for (int64_t kk = 0; kk < BK / 8; ++kk) {
      SmallVector<Value> regs = loadFrags(kk);
      // wgmma.fence orders these register writes before the wgmmas read them.
      asmCall({}, {}, "wgmma.fence.sync.aligned;", "~{memory}");
      int64_t kb = kk * 32; // bytes of K
      Value aDesc =
          desc(arith::AddIOp::create(b_, loc, sA, c32(kb / WA * (BM * WA) + kb % WA)),
               descHigh(16, 8 * WA, WA));
      for (int64_t t = 0; t < T; ++t) {
        SmallVector<Value> operands(regs.begin() + t * 4, regs.begin() + (t + 1) * 4);
        operands.push_back(aDesc);
        operands.push_back(c32(1));
        wgmmaOnBlock(text, cons, operands, accs, t);
      }
    }
    asmCall({}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
  }

  // The C^T = B^T A^T loop. wgmma reads its register operands asynchronously,
  // and one group stays in flight across iterations: the body is unrolled by
  // two so that consecutive iterations load their fragments into different
  // registers (a loop body redefining them while the previous group still
  // reads them would make ptxas serialize the wgmmas). An odd last iteration
  // follows the loop.
  // The thread's byte offset of its B^T fragments in a B copy.
  Value swapFragOffset() {
    Value lane = arith::AndIOp::create(b_, loc, kl_.tid_, c32(31));
    Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid_, c32(5));
    Value nRow = arith::AddIOp::create(
        b_, loc,
        arith::AddIOp::create(
            b_, loc,
            arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, warp, c32(2)),
                                  c32(T * 64)),
            arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, warp, c32(3)), c32(16))),
        arith::ShLIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(2)), c32(1)));
    return arith::AddIOp::create(
        b_, loc,
        arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, lane, c32(3)), c32(rawRow)),
        arith::MulIOp::create(b_, loc, nRow, c32(4)));
  }
  bool emitSwapLoop(ValueRange acc0, SmallVector<Value> &accs) {
    Value fragOff = swapFragOffset();
    return emitUnrolledLoop(acc0, accs, [&](Value i, SmallVector<Value> &a) {
      return emitSwapIteration(i, fragOff, a);
    });
  }
  // for i in [0, n): iteration(i), unrolled by two, the odd last one after.
  bool emitUnrolledLoop(ValueRange acc0, SmallVector<Value> &accs,
                        const std::function<bool(Value, SmallVector<Value> &)> &iteration) {
    Value pairs = arith::ShRUIOp::create(b_, loc, n, c32(1));
    auto loop = scf::ForOp::create(b_, loc, c32(0), pairs, c32(1), acc0);
    {
      OpBuilder::InsertionGuard g(b_);
      kl_.enterLoopBody(loop);
      Value i = arith::ShLIOp::create(b_, loc, loop.getInductionVar(), c32(1));
      SmallVector<Value> body(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      if (!iteration(i, body) || !iteration(arith::AddIOp::create(b_, loc, i, c32(1)), body))
        return false;
      scf::YieldOp::create(b_, loc, body);
    }
    Value odd = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne,
                                      arith::AndIOp::create(b_, loc, n, c32(1)), c32(0));
    auto last = scf::IfOp::create(b_, loc, SmallVector<Type>(R, accTy), odd, true, true);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(last.elseBlock());
      scf::YieldOp::create(b_, loc, loop.getResults());
      b_.setInsertionPointToStart(last.thenBlock());
      SmallVector<Value> tail(loop.getResults().begin(), loop.getResults().end());
      if (!iteration(arith::SubIOp::create(b_, loc, n, c32(1)), tail))
        return false;
      scf::YieldOp::create(b_, loc, tail);
    }
    accs.assign(last.getResults().begin(), last.getResults().end());
    return true;
  }

  // mbarrier `which` (0 full, 1 empty) of stage slot `slot` (i32).
  Value mbar(int which, Value slot) {
    return arith::AddIOp::create(
        b_, loc, smemAddr,
        arith::AddIOp::create(b_, loc, c32(totalBytes + which * 8 * S),
                              arith::MulIOp::create(b_, loc, slot, c32(8))));
  }
  Value slotOf(Value j) { return arith::RemUIOp::create(b_, loc, j, c32(S)); }
  // The parity of j's use of its slot; the phase before the first counts as complete
  // with parity 1, so a producer's first wait on `empty` passes at once.
  Value parityOf(Value j, int64_t bias) {
    return arith::AndIOp::create(
        b_, loc, arith::AddIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, j, c32(S)), c32(bias)),
        c32(1));
  }
  void mbarWait(Value bar, Value parity) {
    asmCall({}, {bar, parity},
            "{\n.reg .pred p;\nWAIT_${:uid}:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
            "@!p bra.uni WAIT_${:uid};\n}",
            "r,r,~{memory}");
  }

  // The warp-specialized loop: barriers set up by thread 0 before the
  // block-wide barrier, then the producer warpgroup (threads past the
  // num_warps warps) copies every iteration and exits, while the consumers
  // run the wgmmas. Registers move from producers to consumers with
  // setmaxnreg when two consumer warpgroups need them.
  bool emitWarpSpecialized(ValueRange acc0, SmallVector<Value> &accs) {
    wsSetup();
    {
      scf::IfOp role = kl_.makeIf(isProducer(), false, loc);
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(role.thenBlock());
      producerRegs();
      if (!wsProducer(c32(0)))
        return false;
      asmCall({}, {}, "exit;", "~{memory}");
    }
    consumerRegs();
    return wsConsumer(acc0, accs, c32(0), /*releaseLast=*/false);
  }

  // Warp-specialized pieces, also used by the persistent loop
  // (PersistentDotLoop): ring slots and phases follow a running iteration
  // count `base + j` across the tiles a block computes.
  bool moveRegs() const { return kl_.numWarps_ == 8; }
  Value isProducer() {
    return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::uge, kl_.tid_, c32(kl_.threads_));
  }
  // Thread 0 initializes the stages' mbarriers before a block-wide barrier.
  // The block gains the producer warps; with setmaxnreg the kernel needs a
  // register cap at entry (65536 / 384 threads, rounded down to 8).
  void wsSetup() {
    Value first = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, kl_.tid_, c32(0));
    {
      scf::IfOp init = kl_.makeIf(first, false, loc);
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(init.thenBlock());
      for (int64_t q = 0; q < S; ++q) {
        asmCall({}, {mbar(0, c32(q)), c32(P)}, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}");
        asmCall({}, {mbar(1, c32(q)), c32(kl_.numWarps_)}, "mbarrier.init.shared::cta.b64 [$0], $1;",
                "r,r,~{memory}");
      }
    }
    kl_.barrier(loc);
    kl_.extraWarps_ = 4;
    if (moveRegs())
      kl_.maxRegs_ = 168;
  }
  void producerRegs() {
    if (moveRegs())
      asmCall({}, {}, "setmaxnreg.dec.sync.aligned.u32 " + std::to_string(kProducerRegs) + ";", "~{memory}");
  }
  // Past this point only the consumer warps run: barriers name them alone.
  void consumerRegs() {
    if (moveRegs())
      asmCall({}, {}, "setmaxnreg.inc.sync.aligned.u32 " + std::to_string(kConsumerRegs) + ";", "~{memory}");
    kl_.barrierThreads_ = kl_.threads_;
  }
  // The producer's copies of iterations 0 .. n-1 (after emitTripCount and
  // emitAdvances), each into the stage of running iteration base + j once
  // the consumers released it.
  bool wsProducer(Value base) {
    auto loop = scf::ForOp::create(b_, loc, c32(0), n, c32(1));
    OpBuilder::InsertionGuard g(b_);
    kl_.enterLoopBody(loop);
    Value j = loop.getInductionVar();
    Value gj = arith::AddIOp::create(b_, loc, base, j);
    ptid = arith::SubIOp::create(b_, loc, kl_.tid_, c32(kl_.threads_));
    Value slot = slotOf(gj);
    mbarWait(mbar(1, slot), parityOf(gj, 1));
    if (!bindIteration(j))
      return false;
    issueCopy(m_.loadA, aStage(gj), swizzledIn(BM, WA));
    if (swap)
      issueCopy(m_.loadB, rawStage(gj), [this](Value r, Value colByte) { return rowMajorRaw(r, colByte); });
    else
      issueCopy(m_.loadB, bStage(gj), swizzledIn(BK, WB));
    kl_.popScope();
    asmCall({}, {mbar(0, slot)}, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];", "r,~{memory}");
    scf::YieldOp::create(b_, loc);
    ptid = Value();
    return true;
  }
  // The consumers' wgmmas over iterations 0 .. n-1 (running base + i); all
  // complete on return. releaseLast: also release the last iteration's stage
  // (the producer reuses it for the next tile).
  bool wsConsumer(ValueRange acc0, SmallVector<Value> &accs, Value base, bool releaseLast) {
    Value rowBytes = swap ? swapFragOffset() : wgRowBytes();
    Value lane0 = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq,
                                        arith::AndIOp::create(b_, loc, kl_.tid_, c32(31)), c32(0));
    // Lane 0 of each consumer warp releases running iteration g's stage (its
    // wgmmas are complete: the wait before is warp-collective).
    auto release = [&](Value cond, Value g) {
      scf::IfOp rel = kl_.makeIf(arith::AndIOp::create(b_, loc, cond, lane0), false, loc);
      OpBuilder::InsertionGuard ig(b_);
      b_.setInsertionPointToStart(rel.thenBlock());
      asmCall({}, {mbar(1, slotOf(g))}, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}");
    };
    bool ok = emitUnrolledLoop(acc0, accs, [&](Value i, SmallVector<Value> &a) {
      Value gi = arith::AddIOp::create(b_, loc, base, i);
      mbarWait(mbar(0, slotOf(gi)), parityOf(gi, 0));
      // The copies were generic-proxy writes; wgmma reads through the async proxy.
      asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
      if (swap)
        issueSwapWgmmas(gi, rowBytes, a);
      else
        issueWgmmas(gi, rowBytes, a);
      a = waitAcc(a, 1);
      release(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ugt, i, c32(0)),
              arith::SubIOp::create(b_, loc, gi, c32(1)));
      return true;
    });
    if (!ok)
      return false;
    accs = waitAcc(accs, 0);
    if (releaseLast)
      release(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sgt, n, c32(0)),
              arith::SubIOp::create(b_, loc, arith::AddIOp::create(b_, loc, base, n), c32(1)));
    return true;
  }

  // Results: the accumulator in its mma layout; pointer tiles advanced n steps.
  void bindResults(ArrayRef<Value> accs) {
    for (auto [idx, res] : llvm::enumerate(op_.getResults())) {
      if (idx == m_.accIndex) {
        Lowered l;
        l.kind = Lowered::Dist;
        l.type = cast<RankedTensorType>(res.getType());
        l.layout = accLay;
        l.regs.assign(accs.begin(), accs.end());
        kl_.vals_[res] = l;
      }
    }
    for (const Advance &a : advances) {
      Lowered l;
      l.kind = Lowered::Offset;
      l.type = cast<RankedTensorType>(op_.getResult(a.index).getType());
      l.base = a.base;
      l.scalar = arith::AddIOp::create(
          b_, loc, a.offset0,
          arith::MulIOp::create(b_, loc, arith::ExtSIOp::create(b_, loc, i64, n), a.step));
      kl_.vals_[op_.getResult(a.index)] = l;
    }
  }
};

// A persistent matmul: an outer loop over output tiles (each block takes
// tiles program_id, program_id + num_programs, ...) whose body is index
// arithmetic, one pipelined dot loop, then stores. Warp-specialized across
// tiles: the outer loop is lowered twice, for the producer warpgroup (index
// arithmetic and copies, the stores skipped) and for the consumers (wgmmas
// and epilogue), with ring slots and mbarrier phases continuing from tile to
// tile. The producers run into the next tile while the consumers store the
// last, which hides the epilogue and the pipeline's fill.
std::optional<bool> KernelLowering::lowerPersistentDotLoop(scf::ForOp outer) {
  if (!warpSpecialize_ || arch_ != "sm_90a" || (numWarps_ != 4 && numWarps_ != 8) ||
      outer->getParentOp() != src_.getOperation() || touchedMemory_ || smemUsed_ ||
      outer.getNumResults())
    return std::nullopt;
  Block &body = *outer.getBody();
  scf::ForOp inner;
  for (Operation &o : body.without_terminator()) {
    if (auto f = dyn_cast<scf::ForOp>(o)) {
      if (inner)
        return std::nullopt;
      inner = f;
    } else if (isa<tile::StoreOp>(o)) {
      if (!inner)
        return std::nullopt;
    } else if (!isMemoryEffectFree(&o)) {
      return std::nullopt;
    }
  }
  if (!inner)
    return std::nullopt;
  std::optional<DotLoop> m = matchDotLoop(inner);
  if (!m)
    return std::nullopt;
  std::optional<WgmmaKind> kind = wgmmaKindOf(m->dot);
  if (!kind)
    return std::nullopt;
  // The epilogue stages its stores in shared memory of its own (the stages
  // are busy with the next tile): room for the widest store.
  int64_t epilogueBytes = 0;
  for (Operation *o = inner->getNextNode(); o; o = o->getNextNode())
    if (auto st = dyn_cast<tile::StoreOp>(o))
      if (auto rt = dyn_cast<RankedTensorType>(st.getValue().getType()); rt && rt.getRank() == 2)
        epilogueBytes = std::max(epilogueBytes, rt.getDimSize(0) * (rt.getDimSize(1) *
                                                    byteWidth(convertElem(rt.getElementType())) + 16));
  Location loc = outer.getLoc();
  // Without room for the staged epilogue, it stores from registers.
  for (int64_t reserve : {epilogueBytes, int64_t(0)})
  for (bool swapPath : {true, false}) {
    if (swapPath && !kind->tf32)
      continue;
    for (int stages = numStages_; stages >= 3; --stages) {
      if (stages & (stages - 1)) // power-of-two rings (see lowerPipelinedDotLoop)
        continue;
      DotLoopEmitter e(*this, inner, *m, *kind, stages, /*wgmma=*/true, swapPath, /*ws=*/true);
      e.persistent = true;
      if (!e.applies() || smemUsed_ + 1024 + e.allocBytes() + reserve + 16 > kMaxSharedBytes)
        continue;
      remark(outer, "persistent dot loop: " + e.summary());
      e.allocate();
      e.wsSetup();
      Value lb = scalarOf(outer.getLowerBound()), ub = scalarOf(outer.getUpperBound()),
            st = scalarOf(outer.getStep());
      // One role's copy of the outer loop; `role` lowers the dot loop and
      // returns the iterations it ran.
      auto roleLoop = [&](bool producer) -> bool {
        Value zero = i32c(0, loc);
        auto loop = scf::ForOp::create(b_, loc, lb, ub, st, ValueRange{zero});
        OpBuilder::InsertionGuard g(b_);
        enterLoopBody(loop);
        bindScalar(outer.getInductionVar(), loop.getInductionVar());
        Value base = loop.getRegionIterArgs()[0];
        pushScope();
        bool after = false, ok = true;
        for (Operation &o : body.without_terminator()) {
          if (&o == inner.getOperation()) {
            e.emitTripCount();
            ok = e.emitAdvances();
            if (ok && producer) {
              ok = e.wsProducer(base);
            } else if (ok) {
              SmallVector<Value> acc0 = materializeIn(inner.getInitArgs()[m->accIndex], e.accLayout(), loc);
              SmallVector<Value> accs;
              ok = e.wsConsumer(acc0, accs, base, /*releaseLast=*/true);
              if (ok)
                e.bindResults(accs);
            }
            after = true;
          } else if (!(producer && after)) { // producers skip the epilogue
            ok = lowerOp(&o);
          }
          if (!ok)
            break;
        }
        if (ok)
          scf::YieldOp::create(b_, loc, ValueRange{arith::AddIOp::create(b_, loc, base, e.tripCount())});
        popScope();
        return ok;
      };
      {
        scf::IfOp role = makeIf(e.isProducer(), false, loc);
        OpBuilder::InsertionGuard g(b_);
        b_.setInsertionPointToStart(role.thenBlock());
        e.producerRegs();
        if (!roleLoop(true))
          return false;
        LLVM::InlineAsmOp::create(b_, loc, Type(), ValueRange{}, "exit;", "~{memory}", true, false,
                                  LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                  ArrayAttr());
      }
      e.consumerRegs();
      return roleLoop(false);
    }
  }
  return std::nullopt;
}

std::optional<bool> KernelLowering::lowerPipelinedDotLoop(scf::ForOp op) {
  // Remarks only for loops that compute a dot: the ones a user expects fast.
  bool hasDot = llvm::any_of(op.getBody()->getOperations(),
                             [](Operation &o) { return isa<tile::DotOp>(o); });
  auto notPipelined = [&](const std::string &why) -> std::optional<bool> {
    if (hasDot)
      remark(op, "dot loop not pipelined: " + why);
    return std::nullopt;
  };
  // cp.async needs sm_80 (an empty arch means the sm_80 baseline).
  int smVersion = 80;
  if (!arch_.empty() && std::sscanf(arch_.c_str(), "sm_%d", &smVersion) != 1)
    return notPipelined("unknown target '" + arch_ + "'");
  if (smVersion < 80)
    return notPipelined("target " + arch_ + " has no cp.async (sm_80 or later)");
  if (numStages_ < 3)
    return notPipelined("num_stages is " + std::to_string(numStages_) + "; the pipeline needs 3 or more");
  std::optional<DotLoop> m = matchDotLoop(op);
  if (!m)
    return notPipelined("the body is not two loads feeding one dot, pure index arithmetic and "
                        "pointer tiles advanced by uniform steps (docs/performance.md)");
  std::optional<WgmmaKind> kind = wgmmaKindOf(m->dot);
  if (!kind)
    return notPipelined("no tensor-core form for these operand and accumulator types");
  // wgmma where the target has it and the tile fits it; else mma.sync for
  // 16-bit operands. num_stages is an upper bound: with fewer stages than
  // asked for when those do not fit in shared memory, the loop still pipelines.
  bool wgmmaTarget = arch_ == "sm_90a" && (numWarps_ == 4 || numWarps_ == 8 || numWarps_ == 16);
  std::string why, wsWhy;
  // tf32 tries C^T = B^T A^T first (no shared-memory transpose of B).
  enum Path { Swapped, Wgmma, MmaSync };
  for (Path path : {Swapped, Wgmma, MmaSync}) {
    bool wgmma = path != MmaSync;
    if ((wgmma && !wgmmaTarget) || (!wgmma && !kind->half) || (path == Swapped && !kind->tf32))
      continue;
    // Warp-specialized first, with a power-of-two stage count (slots and
    // phases of the running iteration count are then masks and shifts).
    for (bool ws : {true, false}) {
      if (ws && !(wgmma && warpSpecialize_))
        continue;
      for (int stages = numStages_; stages >= 3; --stages) {
        if (ws && (stages & (stages - 1)))
          continue;
        DotLoopEmitter emitter(*this, op, *m, *kind, stages, wgmma, path == Swapped, ws);
        if (emitter.applies()) {
          std::string note = !ws && !wsWhy.empty() ? " (not warp-specialized: " + wsWhy + ")" : "";
          remark(op, "dot loop pipelined: " + emitter.summary() + note);
          return emitter.emit();
        }
        if (ws) {
          if (wsWhy.empty())
            wsWhy = emitter.whyNot;
          continue;
        }
        if (wgmma || why.empty()) // wgmma's reason (at 3 stages) explains most
          why = emitter.whyNot;
      }
    }
  }
  if (why.empty())
    why = arch_ == "sm_90a" ? "wgmma needs 4, 8 or 16 warps, and mma.sync f16/bf16 operands"
                            : "without wgmma only f16/bf16 operands are pipelined (mma.sync)";
  return notPipelined(why);
}

} // namespace tessera::lowering::detail
