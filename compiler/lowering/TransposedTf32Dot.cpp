// tf32 dot loops as C^T = B^T A^T (DotLoopEmitter's swap pieces): B^T
// fragments loaded from a padded row-major copy of B into registers as
// wgmma's A operand; A's K-major stage as its B operand.
#include "DotLoopEmitter.h"

namespace tessera::lowering::detail {

bool DotLoopEmitter::emitSwapIteration(Value i, Value fragOff, SmallVector<Value> &accs) {
  asmCall({}, {}, "cp.async.wait_group " + std::to_string(S - 3) + ";", "~{memory}");
  asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}"); // cold copies of A
  kl_.barrier(loc);
  issueSwapWgmmas(i, fragOff, bShiftedFragOffsets(i), accs);
  if (!issueIteration(arith::AddIOp::create(b_, loc, i, c32(S - 2)), {}))
    return false;
  commitCopies();
  accs = waitAcc(accs, 1);
  return true;
}

Value DotLoopEmitter::shiftWord(Value slot, Value run) {
  return arith::AddIOp::create(
      b_, loc, smemAddr,
      arith::AddIOp::create(b_, loc, c32(shiftWordsAt()),
                            arith::MulIOp::create(b_, loc,
                                                  arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, slot, c32(bRuns)), run),
                                                  c32(4))));
}

void DotLoopEmitter::publishShift(Value gj, Value run, Value shift) {
  Value w = shiftWord(slotOf(gj), run);
  LLVM::StoreOp::create(b_, loc, shift, LLVM::IntToPtrOp::create(b_, loc, ptr3, w), 4);
  if (ws)
    asmCall({}, {mbar(0, slotOf(gj))}, "mbarrier.arrive.release.cta.shared::cta.b64 _, [$0];",
            "r,~{memory}");
}

SmallVector<Value> DotLoopEmitter::bShiftedFragOffsets(Value gi) {
  SmallVector<Value> offs;
  if (!bRuns)
    return offs;
  Value lane = kl_.laneId(loc);
  Value laneRow = arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, lane, c32(3)), c32(rawRow));
  Value col0 = swapFragColumn();
  for (int64_t t = 0; t < T; ++t) {
    Value col = arith::AddIOp::create(b_, loc, col0, c32(t * 64));
    Value run = arith::DivUIOp::create(b_, loc, col, c32(bRunLen));
    Value in = arith::RemUIOp::create(b_, loc, col, c32(bRunLen));
    Value shift = LLVM::LoadOp::create(b_, loc, i32,
                                       LLVM::IntToPtrOp::create(b_, loc, ptr3, shiftWord(slotOf(gi), run)), 4);
    Value off = arith::AddIOp::create(
        b_, loc, arith::MulIOp::create(b_, loc, run, c32(bBulk ? bulkBytes() : bRunLen * eb + 16)),
        arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, in, c32(eb)), shift));
    offs.push_back(arith::AddIOp::create(b_, loc, laneRow, off));
  }
  return offs;
}

void DotLoopEmitter::issueSwapWgmmas(Value i, Value fragOff, ArrayRef<Value> shifted,
                                     SmallVector<Value> &accs) {
  // Per k8 step and 64-row block of B^T, fragment rows g and g + 8 (g =
  // lane / 4) at columns c and c + 4 (c = lane % 4); rows interleaved, they
  // are N columns 2g and 2g + 1 of the warp's 16. B's copy has rows of BN + 8
  // words, so the 8-byte loads of a half-warp (4 K rows x 4 column pairs)
  // fall in distinct banks.
  Value raw = rawStage(i);
  Value frag = arith::AddIOp::create(b_, loc, raw, fragOff);
  // With the interleaved rows of the transposed layout, a0/a1 (and a2/a3)
  // are adjacent N columns: one 8-byte load each.
  auto v2 = VectorType::get({2}, i32);
  // Shifted runs are 4-byte aligned only: two 4-byte loads a pair. Rows are
  // 8 banks apart (rawRow), so lanes c and c + 1 of the same word column
  // meet in one bank every 8 columns; a lane whose c is odd loads its pair's
  // second word first, and each load then hits 32 distinct banks (without
  // that, every load is a 2-way conflict).
  Value odd, oddBytes;
  if (!shifted.empty()) {
    odd = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne,
                                arith::AndIOp::create(b_, loc, kl_.laneId(loc), c32(1)), c32(0));
    oddBytes = arith::SelectOp::create(b_, loc, odd, c32(4), c32(0));
  }
  auto loadFrags = [&](int64_t kk) {
    SmallVector<Value> regs;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t q = 0; q < 4; q += 2) {
        int64_t row = (kk * 8 + (q >= 2 ? 4 : 0)) * rawRow;
        if (!shifted.empty()) {
          Value at = arith::AddIOp::create(b_, loc, arith::AddIOp::create(b_, loc, raw, shifted[t]), c32(row));
          auto word = [&](Value w) {
            return LLVM::LoadOp::create(b_, loc, i32, LLVM::IntToPtrOp::create(b_, loc, ptr3, w), 4);
          };
          Value first = word(arith::AddIOp::create(b_, loc, at, oddBytes));
          Value second = word(arith::AddIOp::create(
              b_, loc, at, arith::SubIOp::create(b_, loc, c32(4), oddBytes)));
          regs.push_back(arith::SelectOp::create(b_, loc, odd, second, first));
          regs.push_back(arith::SelectOp::create(b_, loc, odd, first, second));
          continue;
        }
        Value at = arith::AddIOp::create(b_, loc, frag, c32(row + t * 64 * 4));
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

Value DotLoopEmitter::swapFragOffset() {
  Value lane = kl_.laneId(loc);
  return arith::AddIOp::create(
      b_, loc,
      arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, lane, c32(3)), c32(rawRow)),
      arith::MulIOp::create(b_, loc, swapFragColumn(), c32(4)));
}

Value DotLoopEmitter::swapFragColumn() {
  Value lane = kl_.laneId(loc);
  Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid(), c32(5));
  return arith::AddIOp::create(
      b_, loc,
      arith::AddIOp::create(
          b_, loc,
          arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, warp, c32(2)),
                                c32(T * 64)),
          arith::MulIOp::create(b_, loc, arith::AndIOp::create(b_, loc, warp, c32(3)), c32(16))),
      arith::ShLIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(2)), c32(1)));
}

bool DotLoopEmitter::emitSwapLoop(ValueRange acc0, SmallVector<Value> &accs) {
  Value fragOff = swapFragOffset();
  return emitUnrolledLoop(acc0, accs, [&](Value i, SmallVector<Value> &a) {
    return emitSwapIteration(i, fragOff, a);
  });
}

} // namespace tessera::lowering::detail
