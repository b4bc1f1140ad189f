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

} // namespace

std::optional<bool> KernelLowering::lowerPipelinedDotLoop(scf::ForOp op) {
  if (arch_ != "sm_90a" || numStages_ < 3 || (numWarps_ != 4 && numWarps_ != 8 && numWarps_ != 16))
    return std::nullopt;
  std::optional<DotLoop> mm = matchDotLoop(op);
  if (!mm)
    return std::nullopt;
  DotLoop &m = *mm;
  auto at = m.dot.getA().getType(), bt = m.dot.getB().getType(), ct = m.dot.getAcc().getType();
  Type ea = at.getElementType(), ec = ct.getElementType();
  if (bt.getElementType() != ea)
    return std::nullopt;
  // 16-bit operands read B N-major (wgmma transposes it); tf32 and s8 wgmma
  // read both operands K-major only, so B goes through registers and is
  // stored transposed ("B via registers").
  bool half = (ea.isBF16() || ea.isF16()) && ec.isF32();
  bool tf32 = ea.isF32() && ec.isF32() && m.dot.getInputPrecision() == tile::InputPrecision::tf32;
  bool int8 = ea.isInteger(8) && ec.isInteger(32);
  if (!half && !tf32 && !int8)
    return std::nullopt;
  const bool bViaRegs = !half;
  const int64_t BM = at.getDimSize(0), BK = at.getDimSize(1), BN = bt.getDimSize(1);
  const int64_t eb = ea.getIntOrFloatBitWidth() / 8;
  const int64_t vecElems = 16 / eb;
  const int64_t kPerInst = 32 / eb; // every wgmma consumes 32 bytes of K
  // Each warpgroup owns BM / (numWarps / 4) rows, in blocks of 64 (one wgmma
  // row block each).
  const int64_t warpgroups = numWarps_ / 4;
  if (BM % (64 * warpgroups) || BK % kPerInst || (bViaRegs && BK % 16) || BN % 16 || BN > 256 || BN * eb < 32 ||
      (BM * BK / vecElems) % threads_ || (BK * BN / vecElems) % threads_)
    return std::nullopt;
  // Both operands must be contiguous along their last dimension (rows of A
  // along K, rows of B along N): whole 16-byte chunks are copied.
  for (tile::LoadOp ld : {m.loadA, m.loadB})
    if (axis_.get(ld.getPtr()).contiguity.back() < vecElems)
      return std::nullopt;
  for (auto [i, step] : m.advancing) {
    Lowered &init = lookup(op.getInitArgs()[i]);
    if (init.kind != Lowered::Virtual && init.kind != Lowered::Offset)
      return std::nullopt;
  }
  const int64_t S = numStages_;
  // Swizzle widths: A's rows are K; B's rows are N (16-bit) or, stored
  // transposed, K as well.
  const int64_t WA = std::min<int64_t>(128, BK * eb);
  const int64_t WB = bViaRegs ? WA : std::min<int64_t>(128, BN * eb);
  const int64_t aBytes = BM * BK * eb, bBytes = BK * BN * eb, stageBytes = aBytes + bBytes;
  // B staged (tf32/s8 with num_stages >= 4): B is copied by cp.async, like A,
  // into a row-major staging ring (rows padded by 16 bytes so the transposing
  // reads are conflict free), and transposed shared-to-shared into a ring of
  // three K-major buffers one iteration before its wgmmas. Global latency then
  // never sits between a load and a store. With 3 stages, or when that does
  // not fit, B goes through registers within the iteration.
  const int64_t rawRow = BN * eb + 16, rawBytes = BK * rawRow;
  const int64_t stagedBytes = S * aBytes + 3 * bBytes + (S - 2) * rawBytes;
  const bool bStaged = bViaRegs && S >= 4 && smemUsed_ + 1024 + stagedBytes <= kMaxSharedBytes;
  const int64_t totalBytes = bStaged ? stagedBytes : S * stageBytes;
  if (smemUsed_ + 1024 + totalBytes > kMaxSharedBytes)
    return std::nullopt; // generic lowering; a smaller num_stages would pipeline

  Location loc = op.getLoc();
  MLIRContext *ctx = b_.getContext();
  Type i32 = b_.getI32Type(), i64 = b_.getI64Type();
  Type accTy = ec;
  int64_t smemOff = (smemUsed_ + 1023) / 1024 * 1024; // swizzle atoms need 1024-byte alignment
  smemUsed_ = smemOff + totalBytes;
  auto asmCall = [&](TypeRange results, ValueRange operands, StringRef text, StringRef constraints) {
    Type res;
    if (results.size() == 1)
      res = results[0];
    else if (!results.empty())
      res = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(results.begin(), results.end()));
    return LLVM::InlineAsmOp::create(b_, loc, res, operands, text, constraints,
                                     /*has_side_effects=*/true, /*is_align_stack=*/false,
                                     LLVM::tailcallkind::TailCallKind::None,
                                     LLVM::AsmDialectAttr(), ArrayAttr());
  };
  auto c32 = [&](int64_t v) { return i32c(v, loc); };
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(v));
  };
  Value smemAddr = LLVM::PtrToIntOp::create(b_, loc, i32, smemBase(smemOff, loc));

  // Trip count (the step of an scf.for is positive).
  Value lo = scalarOf(op.getLowerBound()), hi = scalarOf(op.getUpperBound()), step = scalarOf(op.getStep());
  Type ivTy = lo.getType();
  auto toI32 = [&](Value v) -> Value {
    if (v.getType() == i32)
      return v;
    return arith::TruncIOp::create(b_, loc, i32, v);
  };
  Value span = arith::SubIOp::create(b_, loc, hi, lo);
  Value stepM1 = arith::SubIOp::create(
      b_, loc, step, arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(ivTy, 1)));
  Value trips = arith::DivSIOp::create(b_, loc, arith::AddIOp::create(b_, loc, span, stepM1), step);
  trips = arith::MaxSIOp::create(b_, loc, trips,
                                 arith::ConstantOp::create(b_, loc, b_.getIntegerAttr(ivTy, 0)));
  Value n = toI32(trips);

  // Each advancing pointer tile: its base tile and initial element offset.
  struct Advance {
    unsigned index;
    Value base, offset0, step;
  };
  SmallVector<Advance> advances;
  for (auto [i, st] : m.advancing) {
    Lowered &init = lookup(op.getInitArgs()[i]);
    Advance a;
    a.index = i;
    a.base = init.kind == Lowered::Offset ? init.base : op.getInitArgs()[i];
    a.offset0 = init.kind == Lowered::Offset ? init.scalar : c64(0);
    if (a.offset0.getType() != i64)
      a.offset0 = arith::ExtSIOp::create(b_, loc, i64, a.offset0);
    Value s;
    if (auto sp = st.getDefiningOp<tile::SplatOp>()) {
      s = scalarOf(sp.getSrc());
    } else {
      DenseElementsAttr dense;
      matchPattern(st, m_Constant(&dense));
      s = arith::ConstantOp::create(b_, loc, cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    }
    a.step = s.getType() == i64 ? s : Value(arith::ExtSIOp::create(b_, loc, i64, s));
    advances.push_back(a);
  }
  auto bindOffsets = [&](Value j /*i32*/) {
    Value j64 = arith::ExtSIOp::create(b_, loc, i64, j);
    for (const Advance &a : advances) {
      Lowered l;
      l.kind = Lowered::Offset;
      l.type = cast<RankedTensorType>(op.getRegionIterArgs()[a.index].getType());
      l.base = a.base;
      l.scalar = arith::AddIOp::create(b_, loc, a.offset0, arith::MulIOp::create(b_, loc, j64, a.step));
      vals_[op.getRegionIterArgs()[a.index]] = l;
    }
  };

  // Copies one operand tile of iteration j into the stage at byte address
  // `dst`, in the swizzled layout: row r, byte b of the row lands in column
  // block b / W (each block holds every row, W bytes per row), and within the
  // 8-row swizzle atom its 16-byte unit is XORed with the row's low bits.
  auto copyLayout = [&](tile::LoadOp ld) {
    auto rt = cast<RankedTensorType>(ld.getType());
    Layout cl;
    cl.shape = {rt.getDimSize(0), rt.getDimSize(1)};
    cl.total = cl.shape[0] * cl.shape[1];
    cl.vec = vecElems;
    cl.chunks = cl.total / (threads_ * vecElems);
    return cl;
  };
  // Byte offset of element (r, c) in a stage buffer of R rows whose rows are
  // W-byte swizzled (see issueCopy).
  auto swizzled = [&](Value r, Value colByte, int64_t R, int64_t W) -> Value {
    Value blk = arith::DivUIOp::create(b_, loc, colByte, c32(W));
    Value inRow = arith::RemUIOp::create(b_, loc, colByte, c32(W));
    Value o = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, r, c32(W)), inRow);
    Value sw = arith::ShLIOp::create(
        b_, loc,
        arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, o, c32(7)), c32(W / 16 - 1)),
        c32(4));
    return arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, blk, c32(R * W)),
                                 arith::XOrIOp::create(b_, loc, o, sw));
  };
  // Copies one operand tile of iteration j to shared memory at `dst` +
  // place(row, byte in row).
  using Placement = std::function<Value(Value, Value)>;
  auto swizzledIn = [&](int64_t R, int64_t W) -> Placement {
    return [&, R, W](Value r, Value colByte) { return swizzled(r, colByte, R, W); };
  };
  auto issueCopy = [&](tile::LoadOp ld, Value dst, const Placement &place) -> bool {
    Layout cl = copyLayout(ld);
    AxisInfo pa = axis_.get(ld.getPtr());
    bool aligned = pa.divisibility.back() >= 16;
    bool maskWhole = !ld.getMask() || axis_.get(ld.getMask()).constancy.back() >= vecElems;
    SmallVector<Value> fast, dsts, firsts;
    SmallVector<SmallVector<Value>> ptrs, masks;
    for (int64_t k = 0; k < cl.chunks; ++k) {
      int64_t s0 = k * vecElems;
      ArrayRef<Value> c = coords(cl, s0);
      // Byte offset of the chunk in the stage buffer.
      Value phys = place(c[0], arith::MulIOp::create(b_, loc, c[1], c32(eb)));
      dsts.push_back(arith::AddIOp::create(b_, loc, dst, phys));
      // The chunk's elements are contiguous (checked above): one address, and
      // the lanes' coordinates computed here rather than kept from the entry.
      SmallVector<Value> p{elem(ld.getPtr(), c, loc)}, mk;
      for (int64_t v = 1; v < vecElems; ++v)
        p.push_back(LLVM::GEPOp::create(b_, loc, p[0].getType(), ea, p[0], ArrayRef<LLVM::GEPArg>{int32_t(v)}));
      for (int64_t v = 0; ld.getMask() && v < (maskWhole ? 1 : vecElems); ++v) {
        SmallVector<Value> cv{c[0], v ? Value(arith::AddIOp::create(b_, loc, c[1], c32(v))) : c[1]};
        mk.push_back(elem(ld.getMask(), cv, loc));
      }
      if (aligned && maskWhole) {
        // Every chunk is all in or all out: a masked-off chunk copies 0 source
        // bytes and is zero-filled, so there is no slow path to test for.
        Value bytes = mk.empty() ? c32(16) : Value(arith::SelectOp::create(b_, loc, mk[0], c32(16), c32(0)));
        asmCall({}, {dsts.back(), p[0], bytes}, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
                "r,l,r,~{memory}");
        continue;
      }
      Value ok = vectorGuard(mk, p[0], 16, aligned, loc);
      if (!ok)
        ok = arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true));
      fast.push_back(ok);
      ptrs.push_back(p);
      masks.push_back(mk);
      asmCall({}, {dsts.back(), p[0], arith::ExtUIOp::create(b_, loc, i32, ok)},
              "{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\n@p cp.async.cg.shared.global [$0], [$1], 16;\n}",
              "r,l,r,~{memory}");
    }
    if (fast.empty())
      return true;
    // Chunks that are partly masked, or misaligned: element by element, with
    // plain shared stores (made visible by the fence and barrier before use).
    Value anySlow;
    for (Value f : fast) {
      Value notF = arith::XOrIOp::create(b_, loc, f, arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true)));
      anySlow = anySlow ? Value(arith::OrIOp::create(b_, loc, anySlow, notF)) : notF;
    }
    auto slowIf = makeIf(anySlow, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(slowIf.thenBlock());
    auto ptr3 = LLVM::LLVMPointerType::get(ctx, 3);
    for (size_t k = 0; k < fast.size(); ++k) {
      Value notF = arith::XOrIOp::create(b_, loc, fast[k], arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true)));
      auto chunkIf = makeIf(notF, false, loc);
      OpBuilder::InsertionGuard g2(b_);
      b_.setInsertionPointToStart(chunkIf.thenBlock());
      for (int64_t v = 0; v < vecElems; ++v) {
        Value mask = masks[k].empty() ? Value() : masks[k][maskWhole ? 0 : v];
        Value val;
        if (!mask) {
          val = LLVM::LoadOp::create(b_, loc, ea, ptrs[k][v], eb);
        } else {
          auto ifOp = scf::IfOp::create(b_, loc, TypeRange{ea}, mask, true, true);
          OpBuilder::InsertionGuard g3(b_);
          b_.setInsertionPointToStart(ifOp.thenBlock());
          scf::YieldOp::create(b_, loc, Value(LLVM::LoadOp::create(b_, loc, ea, ptrs[k][v], eb)));
          b_.setInsertionPointToStart(ifOp.elseBlock());
          scf::YieldOp::create(b_, loc, Value(arith::ConstantOp::create(b_, loc, b_.getZeroAttr(ea))));
          val = ifOp.getResult(0);
        }
        Value addr = arith::AddIOp::create(b_, loc, dsts[k], c32(v * eb));
        LLVM::StoreOp::create(b_, loc, val, LLVM::IntToPtrOp::create(b_, loc, ptr3, addr), eb);
      }
    }
    return true;
  };

  // B via registers: the thread's chunks of the BK x BN tile, loaded as
  // 16-byte vectors when in bounds and aligned, else element by element.
  Layout bLay = copyLayout(m.loadB);
  // One 16-byte vector per chunk (i8 lanes would each take a register).
  const int64_t bRegs = bLay.chunks;
  auto vt = VectorType::get({vecElems}, ea);
  // Chunk k of this thread: groups of 16 consecutive chunks run down K, so a
  // warp covers 16 K rows x 2 chunks along N. Its transposed stores then land
  // in 32 distinct banks (two N rows of different swizzle phase, 16 K words
  // each), and each K row still reads 32 contiguous bytes (one sector).
  const int64_t nChunks = BN / vecElems;
  auto bChunkCoords = [&](int64_t k) -> SmallVector<Value> {
    Value q = arith::AddIOp::create(b_, loc, tid_, c32(k * threads_));
    Value kRow = arith::AddIOp::create(
        b_, loc, arith::AndIOp::create(b_, loc, q, c32(15)),
        arith::MulIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, q, c32(16 * nChunks)), c32(16)));
    Value nCol = arith::MulIOp::create(
        b_, loc, arith::RemUIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, q, c32(4)), c32(nChunks)),
        c32(vecElems));
    return {kRow, nCol};
  };
  auto loadRegs = [&](tile::LoadOp ld) -> SmallVector<Value> {
    AxisInfo pa = axis_.get(ld.getPtr());
    bool aligned = pa.divisibility.back() >= 16;
    bool maskWhole = !ld.getMask() || axis_.get(ld.getMask()).constancy.back() >= vecElems;
    SmallVector<Value> ptrs, masks;
    Value all;
    for (int64_t k = 0; k < bLay.chunks; ++k) {
      SmallVector<Value> c = bChunkCoords(k);
      ptrs.push_back(elem(ld.getPtr(), c, loc));
      SmallVector<Value> mk;
      for (int64_t v = 0; ld.getMask() && v < vecElems; ++v) {
        if (maskWhole && v) {
          mk.push_back(mk[0]);
          continue;
        }
        SmallVector<Value> cv{c[0], v ? Value(arith::AddIOp::create(b_, loc, c[1], c32(v))) : c[1]};
        mk.push_back(elem(ld.getMask(), cv, loc));
      }
      masks.append(mk.begin(), mk.end());
      if (Value g = vectorGuard(maskWhole && !mk.empty() ? ArrayRef<Value>(mk).take_front(1) : ArrayRef<Value>(mk),
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
        Value p = LLVM::GEPOp::create(b_, loc, ptrs[k].getType(), ea, ptrs[k], ArrayRef<LLVM::GEPArg>{int32_t(v)});
        Value mask = masks.empty() ? Value() : masks[k * vecElems + v];
        if (!mask) {
          vec = LLVM::InsertElementOp::create(b_, loc, vec, LLVM::LoadOp::create(b_, loc, ea, p, eb), c32(v));
          continue;
        }
        auto one = scf::IfOp::create(b_, loc, TypeRange{ea}, mask, true, true);
        OpBuilder::InsertionGuard g2(b_);
        b_.setInsertionPointToStart(one.thenBlock());
        scf::YieldOp::create(b_, loc, Value(LLVM::LoadOp::create(b_, loc, ea, p, eb)));
        b_.setInsertionPointToStart(one.elseBlock());
        scf::YieldOp::create(b_, loc, Value(arith::ConstantOp::create(b_, loc, b_.getZeroAttr(ea))));
        b_.setInsertionPointAfter(one);
        vec = LLVM::InsertElementOp::create(b_, loc, vec, one.getResult(0), c32(v));
      }
      vecs.push_back(vec);
    }
    scf::YieldOp::create(b_, loc, vecs);
    return SmallVector<Value>(ifOp.getResults().begin(), ifOp.getResults().end());
  };
  // Stores B's registers transposed: element (k, n) goes to row n, byte k*eb
  // of the K-major, W-swizzled stage buffer of BN rows.
  auto ptr3 = LLVM::LLVMPointerType::get(ctx, 3);
  auto storeTransposed = [&](ValueRange regs, Value dst) {
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
  };

  // Lowers the loop body's index arithmetic for iteration j (i32) in a new
  // scope (the caller pops it): iv = lo + j * step, pointer tiles j steps on.
  Block &srcBody = *op.getBody();
  auto bindIteration = [&](Value j) -> bool {
    pushScope();
    Value jIv = j;
    if (ivTy != i32)
      jIv = arith::ExtSIOp::create(b_, loc, ivTy, j);
    Lowered iv;
    iv.kind = Lowered::Scalar;
    iv.scalar = arith::AddIOp::create(b_, loc, lo, arith::MulIOp::create(b_, loc, jIv, step));
    vals_[op.getInductionVar()] = iv;
    bindOffsets(j);
    for (Operation &o : srcBody.without_terminator()) {
      if (&o == m.loadA.getOperation() || &o == m.loadB.getOperation() || &o == m.dot.getOperation())
        continue;
      if (!lowerOp(&o))
        return false;
    }
    return true;
  };
  // B via registers: iteration j's B tile loaded into registers (poison when
  // j >= n). Issued early in the iteration so that the latency overlaps the
  // barrier and the wgmma issue before the transposed stores need the data.
  auto loadB = [&](Value j, SmallVector<Value> &vals) -> bool {
    Value cond = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n);
    auto ifOp = scf::IfOp::create(b_, loc, SmallVector<Type>(bRegs, vt), cond, true, true);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b_, loc, SmallVector<Value>(bRegs, LLVM::PoisonOp::create(b_, loc, vt)));
      b_.setInsertionPointToStart(ifOp.thenBlock());
      bool ok = bindIteration(j);
      if (ok)
        scf::YieldOp::create(b_, loc, loadRegs(m.loadB));
      popScope();
      if (!ok)
        return false;
    }
    vals.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    return true;
  };
  // Shared-memory addresses (i32) of iteration j's A stage, of the K-major
  // or N-major B buffer its wgmmas read, and (B staged) of its staging slot.
  auto addr = [&](int64_t base, Value idx, int64_t ring, int64_t bytes) -> Value {
    Value slot = arith::RemUIOp::create(b_, loc, idx, c32(ring));
    return arith::AddIOp::create(b_, loc, smemAddr,
                                 arith::AddIOp::create(b_, loc, c32(base), arith::MulIOp::create(b_, loc, slot, c32(bytes))));
  };
  auto aStage = [&](Value j) { return bStaged ? addr(0, j, S, aBytes) : addr(0, j, S, stageBytes); };
  auto bStage = [&](Value j) { return bStaged ? addr(S * aBytes, j, 3, bBytes) : addr(aBytes, j, S, stageBytes); };
  auto rawStage = [&](Value j) { return addr(S * aBytes + 3 * bBytes, j, S - 2, rawBytes); };
  Placement rowMajorRaw = [&](Value r, Value colByte) {
    return arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, r, c32(rawRow)), colByte);
  };
  // Issues iteration j's copies when j < n. B via registers: stores `bVals`
  // (from loadB) transposed; B staged: copies B to its staging slot.
  auto issueIteration = [&](Value j, ArrayRef<Value> bVals) -> bool {
    Value cond = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n);
    scf::IfOp ifOp = makeIf(cond, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    bool ok = bindIteration(j);
    ok = ok && issueCopy(m.loadA, aStage(j), swizzledIn(BM, WA));
    if (bStaged)
      ok = ok && issueCopy(m.loadB, rawStage(j), rowMajorRaw);
    else if (bViaRegs)
      storeTransposed(bVals, bStage(j));
    else
      ok = ok && issueCopy(m.loadB, bStage(j), swizzledIn(BK, WB));
    popScope();
    return ok;
  };
  // B staged: iteration j's staging slot -> its K-major buffer, when j < n.
  // Reads 16-byte chunks in the store-friendly chunk order (bChunkCoords).
  auto transposeStaged = [&](Value j) {
    auto ifOp = makeIf(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n), false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    Value raw = rawStage(j);
    SmallVector<Value> vals;
    for (int64_t k = 0; k < bLay.chunks; ++k) {
      SmallVector<Value> c = bChunkCoords(k);
      Value at = arith::AddIOp::create(b_, loc, raw, rowMajorRaw(c[0], arith::MulIOp::create(b_, loc, c[1], c32(eb))));
      vals.push_back(LLVM::LoadOp::create(b_, loc, vt, LLVM::IntToPtrOp::create(b_, loc, ptr3, at), 16));
    }
    storeTransposed(vals, bStage(j));
  };

  auto commitCopies = [&]() { asmCall({}, {}, "cp.async.commit_group;", "~{memory}"); };

  // The accumulator: wgmma's register order is the mma.sync m16n8 fragment
  // order repeated along N, warp w owning rows 16w..16w+15.
  Layout accLay;
  accLay.shape = {BM, BN};
  accLay.total = BM * BN;
  accLay.mma = true;
  accLay.vec = 2;
  accLay.wm = numWarps_;
  accLay.wn = 1;
  accLay.tm = BM / (64 * warpgroups); // 64-row blocks per warpgroup
  accLay.wgRows = accLay.tm > 1;
  accLay.tn = BN / 8;
  const int64_t T = accLay.tm;
  const int64_t R = accLay.slots();  // all T blocks: T * BN / 2 registers per thread
  const int64_t RB = R / T;          // one block's: BN / 2
  SmallVector<Value> acc0 = materializeIn(op.getInitArgs()[m.accIndex], accLay, loc);

  // Passes the accumulators through `wgmma.wait_group N`, so that no use of
  // them can move above the wait.
  const std::string accCons = int8 ? "=r," : "=f,";
  auto waitAcc = [&](ValueRange accs, int pending) {
    std::string cons;
    for (int64_t r = 0; r < R; ++r)
      cons += accCons;
    for (int64_t r = 0; r < R; ++r)
      cons += std::to_string(r) + (r + 1 < R ? "," : "");
    auto w = asmCall(SmallVector<Type>(R, accTy), accs,
                     "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";", cons + ",~{memory}");
    SmallVector<Value> out;
    for (int64_t r = 0; r < R; ++r)
      out.push_back(LLVM::ExtractValueOp::create(b_, loc, w.getResult(0), ArrayRef<int64_t>{r}));
    return out;
  };

  // Prologue: iterations 0 .. S-3 in flight.
  for (int64_t p = 0; p + 2 < S; ++p) {
    SmallVector<Value> bVals;
    if ((bViaRegs && !bStaged && !loadB(c32(p), bVals)) || !issueIteration(c32(p), bVals))
      return false;
    commitCopies();
  }
  if (bStaged) { // iteration 0's B, before the loop's first barrier
    asmCall({}, {}, "cp.async.wait_group " + std::to_string(S - 3) + ";", "~{memory}");
    barrier(loc);
    transposeStaged(c32(0));
  }

  // Descriptor constant parts: leading/stride byte offsets and swizzle mode.
  auto descHigh = [&](int64_t lbo, int64_t sbo, int64_t W) {
    return ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | swizzleMode(W) << 62;
  };
  // A is K-major (leading offset unused with swizzling); B is N-major: its
  // W-byte column blocks are BK * W bytes apart.
  int64_t highA = descHigh(16, 8 * WA, WA);
  int64_t highB = bViaRegs ? descHigh(16, 8 * WB, WB) : descHigh(BK * WB, 8 * WB, WB);
  auto desc = [&](Value addr, int64_t high) -> Value {
    Value field = arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, addr, c32(4)), c32(0x3FFF));
    return arith::OrIOp::create(b_, loc, arith::ExtUIOp::create(b_, loc, i64, field), c64(high));
  };
  std::string shape = "m64n" + std::to_string(BN) + "k" + std::to_string(kPerInst);
  std::string ty = ea.isBF16() ? "bf16" : ea.isF16() ? "f16" : tf32 ? "tf32" : "s8";
  std::string wgmmaText = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(RB + 2) +
                          ", 0;\nwgmma.mma_async.sync.aligned." + shape + (int8 ? ".s32." : ".f32.") + ty +
                          "." + ty + " {";
  for (int64_t r = 0; r < RB; ++r)
    wgmmaText += "$" + std::to_string(r) + (r + 1 < RB ? "," : "");
  // Scale and transpose immediates: 16-bit types read B transposed; tf32 has
  // scales only; integer wgmma has neither.
  wgmmaText += "}, $" + std::to_string(RB) + ", $" + std::to_string(RB + 1) +
               (half ? ", p, 1, 1, 0, 1;\n}" : tf32 ? ", p, 1, 1;\n}" : ", p;\n}");
  std::string wgmmaCons;
  for (int64_t r = 0; r < RB; ++r)
    wgmmaCons += accCons;
  wgmmaCons += "l,l,r";
  for (int64_t r = 0; r < RB; ++r)
    wgmmaCons += "," + std::to_string(r);

  Value warp = arith::ShRUIOp::create(b_, loc, tid_, c32(5));
  Value wgRowBytes = arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, warp, c32(2)), c32(T * 64 * WA));

  auto loop = scf::ForOp::create(b_, loc, c32(0), n, c32(1), acc0);
  {
    OpBuilder::InsertionGuard g(b_);
    enterLoopBody(loop);
    Value i = loop.getInductionVar();
    Value j = arith::AddIOp::create(b_, loc, i, c32(S - 2));
    SmallVector<Value> bVals;
    if (bViaRegs && !bStaged && !loadB(j, bVals))
      return false;
    // B staged also needs iteration i + 1's group, transposed below.
    asmCall({}, {}, "cp.async.wait_group " + std::to_string(bStaged ? S - 4 : S - 3) + ";", "~{memory}");
    asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
    barrier(loc);
    Value sB = bStage(i);
    Value sAw = arith::AddIOp::create(b_, loc, aStage(i), wgRowBytes);
    asmCall({}, {}, "wgmma.fence.sync.aligned;", "~{memory}");
    SmallVector<Value> accs(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
    for (int64_t kk = 0; kk < BK / kPerInst; ++kk) {
      int64_t kb = kk * 32;
      // B: 16 rows of K further (N-major), or 32 bytes along K (K-major).
      Value bDesc = desc(arith::AddIOp::create(
                             b_, loc, sB, c32(bViaRegs ? kb / WB * (BN * WB) + kb % WB : kk * 16 * WB)),
                         highB);
      for (int64_t t = 0; t < T; ++t) { // the warpgroup's 64-row blocks
        Value aAddr = arith::AddIOp::create(b_, loc, sAw, c32(kb / WA * (BM * WA) + kb % WA + t * 64 * WA));
        SmallVector<Value> operands{desc(aAddr, highA), bDesc, c32(1)};
        operands.append(accs.begin() + t * RB, accs.begin() + (t + 1) * RB);
        auto mma = asmCall(SmallVector<Type>(RB, accTy), operands, wgmmaText, wgmmaCons + ",~{memory}");
        for (int64_t r = 0; r < RB; ++r)
          accs[t * RB + r] = LLVM::ExtractValueOp::create(b_, loc, mma.getResult(0), ArrayRef<int64_t>{r});
      }
    }
    asmCall({}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
    if (!issueIteration(j, bVals))
      return false;
    commitCopies();
    if (bStaged)
      transposeStaged(arith::AddIOp::create(b_, loc, i, c32(1)));
    scf::YieldOp::create(b_, loc, waitAcc(accs, 1));
  }
  SmallVector<Value> accs(loop.getResults().begin(), loop.getResults().end());
  accs = waitAcc(accs, 0);
  asmCall({}, {}, "cp.async.wait_group 0;", "~{memory}");

  // Results: the accumulator in its mma layout; pointer tiles advanced n steps.
  for (auto [idx, res] : llvm::enumerate(op.getResults())) {
    if (idx == m.accIndex) {
      Lowered l;
      l.kind = Lowered::Dist;
      l.type = cast<RankedTensorType>(res.getType());
      l.layout = accLay;
      l.regs = accs;
      vals_[res] = l;
    }
  }
  for (const Advance &a : advances) {
    Lowered l;
    l.kind = Lowered::Offset;
    l.type = cast<RankedTensorType>(op.getResult(a.index).getType());
    l.base = a.base;
    l.scalar = arith::AddIOp::create(
        b_, loc, a.offset0,
        arith::MulIOp::create(b_, loc, arith::ExtSIOp::create(b_, loc, i64, n), a.step));
    vals_[op.getResult(a.index)] = l;
  }
  return true;
}

} // namespace tessera::lowering::detail
