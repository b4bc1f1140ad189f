// An f32 atomic add whose old values nobody reads, on lanes proven contiguous
// but not proven 16-byte aligned: one red.v4 per aligned 16-byte chunk.
//
// A thread's vector of `vec` lanes starts `shift` = (address / 4) % vec
// elements past an aligned boundary. The aligned chunk that ends inside the
// vector holds the previous thread's last `shift` lanes and this thread's
// first vec - shift: the thread fetches the former with one warp shuffle per
// lane (the previous thread of a blocked layout holds the previous vector of
// the same run) and adds the chunk with one red.v4. Only the two ragged ends
// of a run take scalar atoms: the head (no previous thread in the run) and the
// tail (the last thread's lanes past its chunk). A chunk with a masked-off lane
// also takes scalar atoms, one per lane that is on. No address outside the
// atomic's own elements is touched.
//
// ROAST's RzLinear mapping scatters dM into hashed runs at any 4-byte offset:
// scalar atoms for every element there, four times the red instructions.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

bool KernelLowering::lowerShiftedVectorRed(tile::AtomicRMWOp op, const Layout &lay,
                                           int64_t runElems, const std::string &text,
                                           const std::string &cons) {
  const int64_t vec = lay.vec;
  // Runs may start wherever the column is a multiple of runElems, and the
  // thread before a warp's first holds nothing a shuffle can reach: a thread
  // is at a run's head when its lane is a multiple of `period`.
  const int64_t period = std::min<int64_t>(runElems, 32 * vec) / vec;
  if (vec < 2 || period < 2 || lay.shape.back() % (period * vec) != 0)
    return false;
  Location loc = op.getLoc();
  Type i32 = b_.getI32Type(), i64 = b_.getI64Type(), f32 = b_.getF32Type();
  auto c32 = [&](int64_t v) { return i32c(v, loc); };
  auto eq = [&](Value a, Value b) {
    return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, a, b);
  };
  auto shflUp = [&](Value x) -> Value {
    Value bits = x.getType().isF32() ? Value(arith::BitcastOp::create(b_, loc, i32, x)) : x;
    // c = 0: lane 0 keeps its own value (unused: lane 0 is always a head).
    Value got = NVVM::ShflOp::create(b_, loc, i32, c32(-1), bits, c32(1), c32(0),
                                     NVVM::ShflKind::up, UnitAttr());
    return x.getType().isF32() ? Value(arith::BitcastOp::create(b_, loc, f32, got)) : got;
  };
  Value lanePos = arith::AndIOp::create(b_, loc, tid_, c32(period - 1));
  Value head = eq(lanePos, c32(0));
  Value last = eq(lanePos, c32(period - 1));
  Value full = c32((1 << vec) - 1);
  for (int64_t k = 0; k < lay.slots() / vec; ++k) {
    auto [ptrs, vals, masks] = vectorLanes(op.getPtr(), op.getValue(), op.getMask(), lay, k, Value(), loc);
    Value addr = LLVM::PtrToIntOp::create(b_, loc, i64, ptrs[0]);
    Value shift = arith::TruncIOp::create(
        b_, loc, i32,
        arith::AndIOp::create(b_, loc,
                              arith::ShRUIOp::create(b_, loc, addr,
                                                     arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(2))),
                              arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(vec - 1))));
    // Bit v: lane v is on.
    Value bits = full;
    if (op.getMask()) {
      bits = c32(0);
      for (int64_t v = 0; v < vec; ++v)
        bits = arith::OrIOp::create(
            b_, loc, bits,
            arith::ShLIOp::create(b_, loc, arith::ExtUIOp::create(b_, loc, i32, masks[v]), c32(v)));
    }
    // Shuffles first: every lane of the warp takes part.
    SmallVector<Value> prev(vec);
    for (int64_t v = 1; v < vec; ++v)
      prev[v] = shflUp(vals[v]);
    Value prevBits = arith::SelectOp::create(b_, loc, head, c32(0), shflUp(bits));
    // The chunk [addr - 4 * shift, + 4 * vec): lane e is the previous
    // thread's lane vec - shift + e for e < shift, else this thread's e - shift.
    SmallVector<Value> chunk(vec);
    for (int64_t e = 0; e < vec; ++e) {
      chunk[e] = vals[e];
      for (int64_t s = 1; s < vec; ++s) {
        Value pick = e < s ? prev[vec - s + e] : vals[e - s];
        chunk[e] = arith::SelectOp::create(b_, loc, eq(shift, c32(s)), pick, chunk[e]);
      }
    }
    Value chunkBits = arith::AndIOp::create(
        b_, loc,
        arith::OrIOp::create(b_, loc, arith::ShLIOp::create(b_, loc, bits, shift),
                             arith::ShRUIOp::create(b_, loc, prevBits,
                                                    arith::SubIOp::create(b_, loc, c32(vec), shift))),
        full);
    Value negShift = arith::SubIOp::create(b_, loc, c32(0), shift);
    Value base = LLVM::GEPOp::create(b_, loc, ptrs[0].getType(), f32, ptrs[0],
                                     ArrayRef<LLVM::GEPArg>{negShift});
    auto atomIf = [&](Value cond, Value ptr, Value val) {
      auto one = makeIf(cond, false, loc);
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(one.thenBlock());
      emitAtomic(op, ptr, val, Value(), loc);
    };
    {
      auto whole = makeIf(eq(chunkBits, full), true, loc);
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(whole.thenBlock());
      SmallVector<Value> operands{base};
      operands.append(chunk.begin(), chunk.end());
      sideEffectAsm({}, operands, text, cons, loc);
      b_.setInsertionPointToStart(whole.elseBlock());
      for (int64_t e = 0; e < vec; ++e) {
        Value on = arith::TruncIOp::create(
            b_, loc, b_.getI1Type(), arith::ShRUIOp::create(b_, loc, chunkBits, c32(e)));
        Value p = LLVM::GEPOp::create(b_, loc, base.getType(), f32, base, ArrayRef<LLVM::GEPArg>{int32_t(e)});
        atomIf(on, p, chunk[e]);
      }
    }
    // The run's tail: this thread's lanes vec - shift .. vec - 1, which no
    // next thread's chunk covers.
    Value tail = arith::AndIOp::create(
        b_, loc, last, arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne, shift, c32(0)));
    auto tailIf = makeIf(tail, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(tailIf.thenBlock());
    for (int64_t v = 1; v < vec; ++v) {
      Value inTail = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sge, c32(v),
                                           arith::SubIOp::create(b_, loc, c32(vec), shift));
      Value on = masks[v] ? Value(arith::AndIOp::create(b_, loc, inTail, masks[v])) : inTail;
      atomIf(on, ptrs[v], vals[v]);
    }
  }
  return true;
}

} // namespace tessera::lowering::detail
