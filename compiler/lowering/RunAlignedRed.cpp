// An f32 atomic add whose old values nobody reads, on long runs of
// contiguous addresses whose alignment is not proven (ROAST's dM with
// RzLinear's mapping: each hash tile is one run at any 4-byte offset).
//
// Adding each thread's own 16-byte vector would need the vector aligned;
// adding its elements one by one sends L2 a request per 128-byte line that
// each warp instruction touches, two for every 128 bytes of a misaligned run.
// Instead the values go through shared memory, and each thread adds whole
// aligned 16-byte chunks of a run (red.v4): a warp instruction then covers
// 512 contiguous bytes, five lines at most. Chunk c of a run that starts
// `shift` elements past an aligned address holds the run's elements
// 4c - shift .. 4c - shift + 3; the first and the last chunk are partial and
// take one atom per element that belongs to the run (and is on in the mask),
// so no address outside the atomic's own elements is touched. When the whole
// block's mask is on (a bar.red.and at the barrier that publishes the values),
// an interior chunk is four shared loads and one red.v4.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

bool KernelLowering::lowerRunAlignedRed(tile::AtomicRMWOp op, const Layout &lay, int64_t runElems) {
  const int64_t total = lay.total, C = runElems;
  if (lay.replicated || C < 16 || C % 4 != 0 || total % C != 0 ||
      op->getParentOfType<scf::ForOp>() || op->getParentOfType<scf::WhileOp>())
    return false;
  Location loc = op.getLoc();
  Type i32 = b_.getI32Type(), i64 = b_.getI64Type(), f32 = b_.getF32Type(), i8 = b_.getI8Type();
  auto c32 = [&](int64_t v) { return i32c(v, loc); };
  auto c64 = [&](int64_t v) { return arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(v)); };
  const int64_t runs = total / C, chunksPerRun = C / 4 + 1, chunks = runs * chunksPerRun;
  Value mask = op.getMask();
  Type ptrTy = atSlot(op.getPtr(), lay, 0, loc).getType();

  // Shared memory: each run's first address, the values, the mask's bytes.
  // A finished dot loop's stage buffers when they hold them (a temporary
  // beyond them would cost the block's occupancy), else a temporary.
  const int64_t bytes = runs * 8 + total * 4 + (mask ? total : 0);
  int64_t off = smem_.transientScratch(bytes, 16);
  if (off < 0 && !smem_.fitsTemp(bytes, 16))
    return false; // the per-thread vectors need no space
  SmemTemps temps(smem_);
  if (off < 0)
    off = temps.take(bytes, 16);
  Value starts = smemBase(off, loc);
  Value vals = smemBase(off + runs * 8, loc);
  Value masks = mask ? smemBase(off + runs * 8 + total * 4, loc) : Value();
  barrier(loc); // the space may still be read by an earlier use
  // In a blocked layout the run starts' holders are known: flat index f is
  // thread (f / vec) % threads, slot vec * (f / (threads * vec)). Only they
  // form a pointer (forming every slot's cost registers).
  const bool blocked = !lay.mma && !lay.rows && !lay.cols;
  for (int64_t r = 0; blocked && r < runs; ++r) {
    const int64_t f = r * C, owner = (f / lay.vec) % threads_, slot = lay.vec * (f / (threads_ * lay.vec));
    Value addr = LLVM::PtrToIntOp::create(b_, loc, i64, atSlot(op.getPtr(), lay, slot, loc));
    auto mine = makeIf(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, tid_, c32(owner)), false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(mine.thenBlock());
    storeSmemElem(addr, starts, c32(r), loc);
  }
  Value mineOn; // every lane of this thread's is on
  for (int64_t s = 0; s < lay.slots(); ++s) {
    Value flat = flatIndex(coords(lay, s), lay.shape, loc);
    storeSmemElem(atSlot(op.getValue(), lay, s, loc), vals, flat, loc);
    if (mask) {
      Value m = atSlot(mask, lay, s, loc);
      storeSmemElem(m, masks, flat, loc);
      mineOn = mineOn ? Value(arith::AndIOp::create(b_, loc, mineOn, m)) : m;
    }
    if (s % lay.vec != 0 || blocked) // a vector's later lanes never start a run (C % 4 == 0)
      continue;
    // The thread that holds a run's first element publishes its address.
    // (atSlot outside the branch: what it materializes is cached for later uses.)
    Value addr = LLVM::PtrToIntOp::create(b_, loc, i64, atSlot(op.getPtr(), lay, s, loc));
    Value first = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq,
                                        arith::RemUIOp::create(b_, loc, flat, c32(C)), c32(0));
    auto ifFirst = makeIf(first, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifFirst.thenBlock());
    storeSmemElem(addr, starts, arith::DivUIOp::create(b_, loc, flat, c32(C)), loc);
  }
  // The barrier that publishes the values also tells every thread whether
  // the whole block's mask is on (bar.red.and): then interior chunks need no
  // mask test.
  Value blockOn = arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true));
  if (mask) {
    // The block's barrier, or (warp-specialized loops) the consumers' named one.
    std::string bar = barrierThreads_ ? "1, " + std::to_string(barrierThreads_) : "0";
    Value r = sideEffectAsm({i32}, {arith::ExtUIOp::create(b_, loc, i32, mineOn)},
                            "{\n.reg .pred p, q;\nsetp.ne.u32 q, $1, 0;\n"
                            "bar.red.and.pred p, " + bar + ", q;\nselp.u32 $0, 1, 0, p;\n}",
                            "=r,r,~{memory}", loc)
                  .getResult(0);
    blockOn = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne, r, c32(0));
  } else {
    barrier(loc);
  }

  std::string text = std::string("red.") +
                     (op.getSem() == tile::MemSem::release ? "release" : "relaxed") + "." +
                     (op.getScope() == tile::MemScope::cta   ? "cta"
                      : op.getScope() == tile::MemScope::sys ? "sys"
                                                             : "gpu") +
                     ".global.add.v4.f32 [$0], {$1, $2, $3, $4};";
  // A loop over the thread's chunks, not unrolled: unrolled, the shared loads
  // of every chunk were scheduled together and the registers cost the SM a block.
  {
    const int64_t reps = (chunks + threads_ - 1) / threads_;
    auto loop = scf::ForOp::create(b_, loc, c32(0), c32(reps), c32(1));
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(loop.getBody());
    Value q = arith::AddIOp::create(b_, loc, tid_,
                                    arith::MulIOp::create(b_, loc, loop.getInductionVar(), c32(threads_)));
    std::optional<scf::IfOp> inRange;
    if (reps * threads_ > chunks) {
      inRange = makeIf(arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, q, c32(chunks)),
                       false, loc);
      b_.setInsertionPointToStart(inRange->thenBlock());
    }
    Value run = arith::DivUIOp::create(b_, loc, q, c32(chunksPerRun));
    Value c = arith::RemUIOp::create(b_, loc, q, c32(chunksPerRun));
    Value start = loadSmemElem(starts, run, i64, loc);
    Value shift = arith::TruncIOp::create(
        b_, loc, i32, arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, start, c64(2)), c64(3)));
    // The chunk's aligned address: start - 4 * shift + 16 * c.
    Value chunkAddr = arith::AddIOp::create(
        b_, loc, arith::AndIOp::create(b_, loc, start, c64(~int64_t(15))),
        arith::ShLIOp::create(b_, loc, arith::ExtUIOp::create(b_, loc, i64, c), c64(4)));
    // Interior chunks (all four elements in the run) of a block whose mask is
    // all on: four shared loads and one red.v4, no per-element tests.
    Value idx0 = arith::SubIOp::create(b_, loc, arith::ShLIOp::create(b_, loc, c, c32(2)), shift);
    Value interior = arith::AndIOp::create(
        b_, loc, arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sge, idx0, c32(0)),
        arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sle, idx0, c32(C - 4)));
    auto fast = makeIf(arith::AndIOp::create(b_, loc, interior, blockOn), true, loc);
    OpBuilder::InsertionGuard gFast(b_);
    b_.setInsertionPointToStart(fast.thenBlock());
    {
      Value base = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, run, c32(C)), idx0);
      SmallVector<Value> operands{LLVM::IntToPtrOp::create(b_, loc, ptrTy, chunkAddr)};
      for (int64_t e = 0; e < 4; ++e)
        operands.push_back(
            loadSmemElem(vals, arith::AddIOp::create(b_, loc, base, c32(e)), f32, loc));
      sideEffectAsm({}, operands, text, "l,f,f,f,f,~{memory}", loc);
    }
    b_.setInsertionPointToStart(fast.elseBlock());
    SmallVector<Value> v(4), on(4);
    Value all;
    for (int64_t e = 0; e < 4; ++e) {
      // Element 4c - shift + e of the run, when it is one (unsigned: < 0 wraps).
      Value idx = arith::AddIOp::create(
          b_, loc, arith::SubIOp::create(b_, loc, arith::ShLIOp::create(b_, loc, c, c32(2)), shift), c32(e));
      Value inRun = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ult, idx, c32(C));
      Value flat = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, run, c32(C)),
                                         arith::SelectOp::create(b_, loc, inRun, idx, c32(0)));
      v[e] = loadSmemElem(vals, flat, f32, loc);
      on[e] = inRun;
      if (mask)
        on[e] = arith::AndIOp::create(
            b_, loc, inRun,
            arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne, loadSmemElem(masks, flat, i8, loc),
                                  arith::ConstantOp::create(b_, loc, b_.getI8IntegerAttr(0))));
      all = all ? Value(arith::AndIOp::create(b_, loc, all, on[e])) : on[e];
    }
    auto whole = makeIf(all, true, loc);
    OpBuilder::InsertionGuard g2(b_);
    b_.setInsertionPointToStart(whole.thenBlock());
    SmallVector<Value> operands{LLVM::IntToPtrOp::create(b_, loc, ptrTy, chunkAddr)};
    operands.append(v.begin(), v.end());
    sideEffectAsm({}, operands, text, "l,f,f,f,f,~{memory}", loc);
    b_.setInsertionPointToStart(whole.elseBlock());
    for (int64_t e = 0; e < 4; ++e) {
      auto one = makeIf(on[e], false, loc);
      OpBuilder::InsertionGuard g3(b_);
      b_.setInsertionPointToStart(one.thenBlock());
      Value at = arith::AddIOp::create(b_, loc, chunkAddr, c64(4 * e));
      Value p = LLVM::IntToPtrOp::create(b_, loc, ptrTy, at);
      emitAtomic(op, p, v[e], Value(), loc);
    }
  }
  return true;
}

} // namespace tessera::lowering::detail
