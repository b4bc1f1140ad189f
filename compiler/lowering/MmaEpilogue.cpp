// Stores of a tile held in a tensor-core accumulator layout, through shared
// memory. In its mma layout a thread holds pairs of adjacent columns (or, for
// the transposed layout of C^T = B^T A^T, single elements), so storing from
// registers takes one narrow global store per pair. Here the registers go to a
// row-padded shared buffer (conflict free for the mma pattern), and each thread
// then reads 16-byte row chunks back and stores them as 16-byte vectors, under
// the same mask and alignment checks as any vector store. After a pipelined
// dot loop the buffer reuses the loop's stage memory.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

namespace {
/// (row, column) of slot s of an mma layout relative to slot 0 of the same
/// thread: a constant, so that per-slot shared addresses are immediates off
/// one register (see KernelLowering::coords).
std::pair<int64_t, int64_t> mmaSlotDelta(const Layout &l, int64_t s) {
  int64_t q = s % 4, t = s / 4, i = t / l.tn, j = t % l.tn;
  int64_t dr = (l.wgRows ? i * 64 : i * 16) + (q >= 2 ? (l.transposed ? 1 : 8) : 0),
          dc = j * 8 + (q & 1);
  return l.transposed ? std::pair{dc, dr} : std::pair{dr, dc};
}
} // namespace

bool KernelLowering::lowerStoreThroughSmem(tile::StoreOp op, const Layout &mmaLay) {
  Location loc = op.getLoc();
  auto rt = cast<RankedTensorType>(op.getValue().getType());
  Type et = convertElem(rt.getElementType());
  if (rt.getRank() != 2 || !et.isIntOrFloat() || et.isInteger(1))
    return false;
  int64_t eb = byteWidth(et), rows = rt.getDimSize(0), cols = rt.getDimSize(1);
  // The blocked layout of the read-back: 16-byte chunks along rows.
  Layout bl = blockedLayout(rt.getShape());
  bl.vec = 16 / eb;
  if (bl.replicated || cols % bl.vec || bl.total % (threads_ * bl.vec))
    return false;
  bl.chunks = bl.total / (threads_ * bl.vec);
  VectorPlan plan = planVector(bl, op.getPtr(), et);
  if (!plan.contiguous)
    return false;
  // Rows padded by 16 bytes: the 8 rows x 4 column pairs of a warp's mma
  // fragment then fall in distinct banks.
  int64_t pitch = epiloguePitch(rt);
  int64_t bytes = rows * pitch;
  // Transient: after the tiles staged in the scratch (which stay live), and
  // not counted as taken.
  int64_t off = smem_.transientScratch(bytes, 128);
  SmemTemps temps(smem_); // else a temporary: a finished loop's space, reused
  if (off < 0) {
    // 128-byte aligned: a warp's 16-byte reads of a row then touch as few
    // 128-byte lines as the padding allows.
    smem_.alignEnd(128);
    if (!smem_.fits(bytes))
      return false;
    off = temps.take(bytes, 128);
  }
  auto ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  Value base = LLVM::PtrToIntOp::create(b_, loc, b_.getI32Type(), smemBase(off, loc));
  auto at = [&](Value r, Value c) -> Value {
    Value o = arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, r, i32c(pitch, loc)),
                                    arith::MulIOp::create(b_, loc, c, i32c(eb, loc)));
    return arith::AddIOp::create(b_, loc, base, o);
  };
  auto plus = [&](Value addr, int64_t bytes) -> Value {
    Value a = bytes ? Value(arith::AddIOp::create(b_, loc, addr, i32c(bytes, loc))) : addr;
    return LLVM::IntToPtrOp::create(b_, loc, ptr3, a);
  };
  ArrayRef<Value> c0 = coords(mmaLay, 0);
  Value mmaBase = at(c0[0], c0[1]);
  // Earlier users of the buffer (the loop's wgmmas of other warpgroups, or a
  // previous store) are done.
  barrier(loc);
  // Pairs of adjacent columns per store: slots s, s + 1 of the mma layout, or
  // s, s + 2 of the transposed one (its interleaved rows r and r + 8 are
  // adjacent columns of the tile); both conflict free with the padding.
  for (int64_t s = 0; s < mmaLay.slots(); ++s) {
    int64_t q = s % 4;
    int64_t next = mmaLay.transposed ? s + 2 : s + 1;
    if (mmaLay.transposed ? q >= 2 : q % 2 == 1)
      continue; // stored with its pair
    auto [dr, dc] = mmaSlotDelta(mmaLay, s);
    Value dst = plus(mmaBase, dr * pitch + dc * eb);
    auto vt = VectorType::get({2}, et);
    Value vec = LLVM::PoisonOp::create(b_, loc, vt);
    vec = LLVM::InsertElementOp::create(b_, loc, vec, atSlot(op.getValue(), mmaLay, s, loc), i32c(0, loc));
    vec = LLVM::InsertElementOp::create(b_, loc, vec, atSlot(op.getValue(), mmaLay, next, loc),
                                        i32c(1, loc));
    LLVM::StoreOp::create(b_, loc, vec, dst, 2 * eb);
  }
  barrier(loc);
  auto vt = VectorType::get({bl.vec}, et);
  // Chunk k is k * threads * vec elements on: whole rows further when that
  // is a multiple of the row length.
  int64_t step = threads_ * bl.vec;
  ArrayRef<Value> b0 = coords(bl, 0);
  Value blockedBase = at(b0[0], b0[1]);
  for (int64_t k = 0; k < bl.chunks; ++k) {
    int64_t s0 = k * bl.vec;
    Value src;
    if (step % cols == 0) {
      src = plus(blockedBase, k * (step / cols) * pitch);
    } else {
      ArrayRef<Value> c = coords(bl, s0);
      src = plus(at(c[0], c[1]), 0);
    }
    Value vec = LLVM::LoadOp::create(b_, loc, vt, src, 16);
    Value ptr = atSlot(op.getPtr(), bl, s0, loc);
    SmallVector<Value> masks;
    for (int64_t v = 0; op.getMask() && v < bl.vec; ++v)
      masks.push_back(atSlot(op.getMask(), bl, s0 + v, loc));
    Value all = vectorGuard(masks, ptr, 16, plan.aligned, loc);
    if (!all) {
      globalStore(vec, ptr, 16, loc);
      continue;
    }
    auto ifOp = makeIf(all, true, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    LLVM::StoreOp::create(b_, loc, vec, ptr, 16);
    b_.setInsertionPointToStart(ifOp.elseBlock());
    for (int64_t v = 0; v < bl.vec; ++v) {
      Value p = LLVM::GEPOp::create(b_, loc, ptr.getType(), et, ptr, ArrayRef<LLVM::GEPArg>{int32_t(v)});
      Value x = LLVM::ExtractElementOp::create(b_, loc, vec, i32c(v, loc));
      maskedStore(x, p, masks.empty() ? Value() : masks[v], loc);
    }
  }
  return true;
}

} // namespace tessera::lowering::detail
