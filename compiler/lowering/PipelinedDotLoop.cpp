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
#include "DotLoopEmitter.h"
#include "Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cstdio>

namespace tessera::lowering::detail {

// Why the rows of `ld` are not contiguous, when the cause is a `%` or `/`
// by a run-time value that broke a run of consecutive indices (the dividend
// consecutive along the last axis, the result not): its location. Empty
// when no such op feeds the pointer.
static std::string brokenRunAt(analysis::AxisInfoAnalysis &axis, tile::LoadOp ld) {
  SmallVector<Value> work{ld.getPtr()};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) // a carried pointer: where it starts
      if (auto f = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
        if (arg.getArgNumber() >= 1 && arg.getArgNumber() - 1 < f.getInitArgs().size())
          work.push_back(f.getInitArgs()[arg.getArgNumber() - 1]);
    Operation *op = v.getDefiningOp();
    if (!op || !seen.insert(op).second || !isa<RankedTensorType>(v.getType()))
      continue;
    if (isa<arith::RemSIOp, arith::RemUIOp, arith::DivSIOp, arith::DivUIOp>(op) &&
        !matchPattern(op->getOperand(1), m_Constant())) {
      analysis::AxisInfo in = axis.get(op->getOperand(0)), out = axis.get(v);
      if (in.rank() > 0 && in.contiguity.back() > 1 && out.contiguity.back() <= 1)
        return sourcePrefix(op->getLoc());
    }
    for (Value operand : op->getOperands())
      work.push_back(operand);
  }
  return "";
}

bool DotLoopEmitter::applies() {
  auto no = [&](std::string why) {
    whyNot = std::move(why);
    return false;
  };
  std::string tile = std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK);
  DotPath path = swap ? DotPath::Swapped : useWgmma ? DotPath::Wgmma : DotPath::MmaSync;
  if (std::string why = dotTileWhyNot(path, half, BM, BN, BK, eb, opts_.numWarps, kMajorB);
      !why.empty())
    return no(why);
  // Operands whose rows are not provably contiguous are copied element by
  // element (gathered): correct for any strides, slower to copy; the remark
  // says why, so that a user can supply the fact.
  gatheredWhy.clear();
  std::string plain; // operands with no reason but unknown strides
  for (tile::LoadOp ld : {m_.loadA, m_.loadB}) {
    if (!gathered(ld))
      continue;
    std::string what = ld == m_.loadA ? "A" : "B";
    // An A contiguous along M that this path cannot read M-major.
    if (ld == m_.loadA && kl_.axis().get(ld.getPtr()).contiguity[aMAxis()] >= vecElems) {
      gatheredWhy.push_back("A copied element by element: its rows run along M, which only "
                            "16-bit wgmma reads (transposed); this path reads A K-major");
      continue;
    }
    if (std::string at = brokenRunAt(kl_.axis(), ld); !at.empty())
      gatheredWhy.push_back(what + " copied element by element: a run-time '%' or '/' (" +
                            at.substr(0, at.size() - 2) +
                            ") breaks the runs of its column index; it keeps them when the "
                            "dividend is provably non-negative and the divisor a multiple of 16 "
                            "(specialized at launch), or when max_contiguous/multiple_of say so");
    else
      plain += (plain.empty() ? "" : " and ") + what;
  }
  if (!plain.empty())
    gatheredWhy.push_back(plain + " copied element by element: " + StageCopier::kGatheredReason);
  for (auto [i, step] : m_.advancing) {
    if (persistent) // lowered later, per tile (checked in emitAdvances)
      break;
    Lowered &init = kl_.lookup(op_.getInitArgs()[i]);
    if (init.kind != Lowered::Virtual && init.kind != Lowered::Offset)
      return no("a carried pointer tile does not start from index arithmetic");
  }
  // Too large for this many stages (the caller tries fewer).
  if (smem_.used() + 1024 + allocBytes() > smem_.limit())
    return no(std::to_string(S) + " stages of the " + tile + " tile need " +
              std::to_string(allocBytes()) + " bytes of shared memory; the limit is " +
              std::to_string(smem_.limit()));
  return !ws || wsApplies(no);
}

bool DotLoopEmitter::wsApplies(const std::function<bool(std::string)> &no) {
  if (!useWgmma || bViaRegs || (opts_.numWarps != 4 && opts_.numWarps != 8))
    return no("warp specialization needs wgmma with B read from its copy, and 4 or 8 warps");
  // Producer threads run the code before the loop with thread ids past
  // every layout, and exit after it.
  if (!persistent && (op_->getParentOp() != kl_.source().getOperation() || kl_.touchedMemory() || smem_.used()))
    return no("warp specialization needs the loop at the kernel's top level, after code that "
              "touches no memory");
  // Operands that TMA loads need neither: the copy engine clips ragged
  // edges (a K that is no multiple of 16) itself.
  planTma();
  for (tile::LoadOp ld : {m_.loadA, m_.loadB}) {
    if (ld == m_.loadA ? bool(tmaA) : bool(tmaB))
      continue;
    if (ld == m_.loadB && bRuns) // 16-byte copies, a loop over the producers' chunks
      continue;
    auto rt = cast<RankedTensorType>(ld.getType());
    if (!copyFacts(ld).async() || (rt.getNumElements() / vecElems) % P)
      return no("warp specialization needs copies without an element-wise path (16-byte aligned, "
                "whole-chunk masks, or 4-byte elements) and tiles that split over 128 producer "
                "threads");
  }
  return true;
}

std::string DotLoopEmitter::summary() const {
  std::string what =
      swap       ? "wgmma m64n" + std::to_string(BM) + "k" + std::to_string(kPerInst) +
                 " computing C^T = B^T A^T, B^T from registers"
      : useWgmma ? "wgmma m64n" + std::to_string(BN) + "k" + std::to_string(kPerInst)
                 : std::string("mma.sync m16n8k16 with ldmatrix");
  std::string a = aMMajor ? ", A copied M-major (read transposed by wgmma)" : "";
  std::string b = bBulk ? ", B runs of unknown alignment bulk-copied from 16-byte boundaries and read shifted"
                  : bRuns ? ", B rows of unknown alignment copied from 16-byte boundaries and read shifted"
                  : m_.bGathered ? ", B gathered into a K-major stage"
                  : m_.bColumnMajor ? ", B column-major, copied K-major"
                  : kMajorB    ? ", B^T copied K-major"
                  : !bViaRegs ? ""
                  : bStaged   ? ", B staged and transposed in shared memory"
                              : ", B through registers";
  std::string tma = tmaA && tmaB   ? ", A and B by TMA"
                    : tmaA || tmaB ? std::string(tmaA ? ", A" : ", B") + " by TMA (not " + tmaWhyNot + ")"
                    : ws && opts_.tma ? " (no TMA: " + tmaWhyNot + ")"
                                     : "";
  std::string g;
  for (const std::string &why : gatheredWhy)
    g += "; " + why;
  return what + ", " + std::to_string(S) + " stages" + a + b +
         (ws ? ", warp-specialized (a producer warpgroup copies)" : "") + tma + g;
}

void DotLoopEmitter::allocate() {
  int64_t smemOff = smem_.allocate(allocBytes(), 1024);
  // After the loop its stages are free: the epilogue may stage stores
  // there (not in a persistent loop, whose producers run ahead).
  smem_.setScratch(smemOff, persistent ? 0 : totalBytes);
  smemAddr = LLVM::PtrToIntOp::create(b_, loc, i32, kl_.smemBase(smemOff, loc));
}

bool DotLoopEmitter::emit() {
  allocate();
  emitTripCount();
  if (!emitAdvances())
    return false;
  SmallVector<Value> acc0 = kl_.materializeIn(op_.getInitArgs()[m_.accIndex], accLay, loc);
  if (!ws && !emitPrologue()) // warp-specialized: the producers run ahead on their own
    return false;
  SmallVector<Value> accs;
  if (ws) {
    if (!addTensorMaps() || !emitWarpSpecialized(acc0, accs))
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

Value DotLoopEmitter::toI32(Value v) {
  if (v.getType() == i32)
    return v;
  return arith::TruncIOp::create(b_, loc, i32, v);
}

void DotLoopEmitter::emitTripCount() {
  KernelLowering::LoopTrips t = kl_.loopTrips(op_, loc);
  lo = t.lo;
  step = t.step;
  ivTy = t.ivTy;
  n = t.n;
}

bool DotLoopEmitter::emitAdvances() {
  advances.clear();
  for (auto [i, st] : m_.advancing) {
    std::optional<Advance> a = kl_.advancingTile(op_, i, st, loc);
    if (!a)
      return kl_.fail(op_, "a carried pointer tile of the dot loop does not start from index arithmetic");
    advances.push_back(*a);
  }
  return true;
}

void DotLoopEmitter::bindOffsets(Value j /*i32*/) {
  for (const Advance &a : advances)
    kl_.bindAdvanced(op_.getRegionIterArgs()[a.index], a, j, loc);
}

SmallVector<Value> DotLoopEmitter::bChunkCoords(int64_t k) {
  Value q = arith::AddIOp::create(b_, loc, kl_.tid(), c32(k * kl_.threads()));
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

SmallVector<Value> DotLoopEmitter::loadRegs(tile::LoadOp ld) {
  CopyFacts facts = copyFacts(ld);
  bool aligned = facts.aligned, maskWhole = facts.maskWhole;
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

void DotLoopEmitter::storeTransposed(ValueRange regs, Value dst) {
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

bool DotLoopEmitter::bindIteration(Value j) {
  vals_.pushScope();
  kl_.bindScalar(op_.getInductionVar(), kl_.inductionAt({lo, step, n, ivTy}, j, loc));
  bindOffsets(j);
  for (Operation &o : op_.getBody()->without_terminator()) {
    if (&o == m_.loadA.getOperation() || &o == m_.loadB.getOperation() ||
        &o == m_.dot.getOperation() || &o == m_.toOperandA.getOperation() ||
        &o == m_.toOperandB.getOperation() || &o == m_.transB.getOperation() ||
        &o == m_.transA.getOperation())
      continue;
    if (!kl_.lowerOp(&o))
      return false;
  }
  return true;
}

bool DotLoopEmitter::loadB(Value j, SmallVector<Value> &vals) {
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
    vals_.popScope();
    if (!ok)
      return false;
  }
  vals.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  return true;
}

Value DotLoopEmitter::addr(int64_t base, Value idx, int64_t ring, int64_t bytes) {
  Value slot = arith::RemUIOp::create(b_, loc, idx, c32(ring));
  return arith::AddIOp::create(
      b_, loc, smemAddr,
      arith::AddIOp::create(b_, loc, c32(base),
                            arith::MulIOp::create(b_, loc, slot, c32(bytes))));
}

Value DotLoopEmitter::aStage(Value j) {
  return bStaged || swap ? addr(0, j, S, aBytes) : addr(0, j, S, stageBytes);
}

Value DotLoopEmitter::bStage(Value j) {
  return bStaged ? addr(S * aBytes, j, 3, bBytes) : addr(aBytes, j, S, stageBytes);
}

Value DotLoopEmitter::rawStage(Value j) {
  return swap ? addr(S * aBytes, j, S, rawBytes) : addr(S * aBytes + 3 * bBytes, j, S - 2, rawBytes);
}

Value DotLoopEmitter::rowMajorRaw(Value r, Value colByte) {
  return arith::AddIOp::create(b_, loc, arith::MulIOp::create(b_, loc, r, c32(rawRow)), colByte);
}

bool DotLoopEmitter::issueIteration(Value j, ArrayRef<Value> bVals) {
  Value cond = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, n);
  scf::IfOp ifOp = kl_.makeIf(cond, false, loc);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointToStart(ifOp.thenBlock());
  bool ok = bindIteration(j);
  ok = ok && issueCopy(m_.loadA, aStage(j), aPlacement());
  if (bStaged || swap)
    ok = ok && issueCopy(m_.loadB, rawStage(j),
                         [this](Value r, Value colByte) { return rowMajorRaw(r, colByte); }, j);
  else if (bViaRegs)
    storeTransposed(bVals, bStage(j));
  else
    ok = ok && issueCopy(m_.loadB, bStage(j), bPlacement());
  vals_.popScope();
  return ok;
}

void DotLoopEmitter::transposeStaged(Value j) {
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

SmallVector<Value> DotLoopEmitter::waitAcc(ValueRange accs, int pending) {
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

bool DotLoopEmitter::emitPrologue() {
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

Value DotLoopEmitter::desc(Value addr, int64_t high) { return smemDescriptor(b_, loc, addr, high); }

std::string DotLoopEmitter::wgmmaText() const {
  std::string shape = "m64n" + std::to_string(BN) + "k" + std::to_string(kPerInst);
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(RB + 2) +
                     ", 0;\nwgmma.mma_async.sync.aligned." + shape + (int8 ? ".s32." : ".f32.") +
                     wgmmaTypeName(m_.dot.getA().getType().getElementType()) + "." +
                     wgmmaTypeName(m_.dot.getB().getType().getElementType()) + " {";
  for (int64_t r = 0; r < RB; ++r)
    text += "$" + std::to_string(r) + (r + 1 < RB ? "," : "");
  // Scale and transpose immediates: 16-bit types read B transposed; tf32 and
  // the 8-bit floats have scales only; integer wgmma has neither.
  text += "}, $" + std::to_string(RB) + ", $" + std::to_string(RB + 1) +
          (half ? std::string(", p, 1, 1, ") + (aMMajor ? "1, " : "0, ") + (kMajorB ? "0;\n}" : "1;\n}")
                : int8 ? ", p;\n}" : ", p, 1, 1;\n}");
  return text;
}

std::string DotLoopEmitter::wgmmaConstraints() const {
  std::string cons;
  for (int64_t r = 0; r < RB; ++r)
    cons += accCons;
  cons += "l,l,r";
  for (int64_t r = 0; r < RB; ++r)
    cons += "," + std::to_string(r);
  return cons;
}

void DotLoopEmitter::emitMmaSyncSteps(SmallVector<Value> &accs, Value i) {
  Type f32 = b_.getF32Type();
  Value lane = kl_.laneId(loc);
  Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid(), c32(5));
  Value rowBase = arith::MulIOp::create(b_, loc, arith::DivUIOp::create(b_, loc, warp, c32(accLay.wn)),
                                        c32(accLay.tm * 16));
  Value colBase = arith::MulIOp::create(b_, loc, arith::RemUIOp::create(b_, loc, warp, c32(accLay.wn)),
                                        c32(accLay.tn * 8));
  // A: lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15.
  Value aRow = arith::AddIOp::create(b_, loc, rowBase, arith::AndIOp::create(b_, loc, lane, c32(15)));
  Value aK = arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(4)), c32(8));
  // B, x4 matrix q = lane / 8: n8 tile q / 2 of the pair, K half q % 2, row
  // lane % 8 of it. The stage's row and column (elements) of this lane's
  // address, before the k-step and pair offsets: an N-major stage's rows are
  // K (read with .trans), a K-major stage's rows are N (read like A).
  Value lane8 = arith::AndIOp::create(b_, loc, lane, c32(7));
  Value kHalf = arith::MulIOp::create(
      b_, loc, arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(3)), c32(1)), c32(8));
  Value nTile = arith::AddIOp::create(
      b_, loc, colBase, arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, lane, c32(4)), c32(8)));
  Value bRow = kMajorB ? Value(arith::AddIOp::create(b_, loc, nTile, lane8))
                       : Value(arith::AddIOp::create(b_, loc, lane8, kHalf));
  Value bCol = kMajorB ? kHalf : nTile;
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
      int64_t kOff = kk * 16, nOff = jp * 8;
      Value row = arith::AddIOp::create(b_, loc, bRow, c32(kMajorB ? nOff : kOff));
      Value colByte = arith::MulIOp::create(
          b_, loc, arith::AddIOp::create(b_, loc, bCol, c32(kMajorB ? kOff : nOff)), c32(eb));
      SmallVector<Value> r = ldmatrix(
          arith::AddIOp::create(b_, loc, sB, swizzled(row, colByte, kMajorB ? BN : BK, WB)), !kMajorB);
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

Value DotLoopEmitter::wgRowBytes() {
  Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid(), c32(5));
  // M-major: T column blocks of 64 rows, each BK rows of 128 bytes.
  return arith::MulIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, warp, c32(2)),
                               c32(aMMajor ? T * BK * WAm() : T * 64 * WA));
}

void DotLoopEmitter::issueWgmmas(Value i, Value rowBytes, SmallVector<Value> &accs) {
  // A is K-major (leading offset unused with swizzling); B is N-major: its
  // W-byte column blocks are BK * W bytes apart.
  // An M-major A is read like an N-major B (transposed by wgmma).
  int64_t highA = aMMajor ? descHigh(BK * WAm(), 8 * WAm(), WAm()) : descHigh(16, 8 * WA, WA);
  int64_t highB = bStageKMajor ? descHigh(16, 8 * WB, WB) : descHigh(BK * WB, 8 * WB, WB);
  std::string mmaText = wgmmaText(), mmaCons = wgmmaConstraints();
  Value sB = bStage(i);
  Value sAw = arith::AddIOp::create(b_, loc, aStage(i), rowBytes);
  asmCall({}, {}, "wgmma.fence.sync.aligned;", "~{memory}");
  for (int64_t kk = 0; kk < BK / kPerInst; ++kk) {
    int64_t kb = kk * 32;
    // B: 16 rows of K further (N-major), or 32 bytes along K (K-major).
    Value bDesc =
        desc(arith::AddIOp::create(b_, loc, sB,
                                   c32(bStageKMajor ? kb / WB * (BN * WB) + kb % WB : kk * 16 * WB)),
             highB);
    for (int64_t t = 0; t < T; ++t) { // the warpgroup's 64-row blocks
      Value aAddr = arith::AddIOp::create(
          b_, loc, sAw,
          c32(aMMajor ? t * BK * WAm() + kk * 16 * WAm() : kb / WA * (BM * WA) + kb % WA + t * 64 * WA));
      wgmmaOnBlock(mmaText, mmaCons, {desc(aAddr, highA), bDesc, c32(1)}, accs, t);
    }
  }
  asmCall({}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
}

scf::ForOp DotLoopEmitter::emitLoop(ValueRange acc0) {
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

bool DotLoopEmitter::emitUnrolledLoop(ValueRange acc0, SmallVector<Value> &accs,
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

void DotLoopEmitter::bindResults(ArrayRef<Value> accs) {
  for (auto [idx, res] : llvm::enumerate(op_.getResults())) {
    if (idx == m_.accIndex) {
      if (accLay != kl_.layoutOf(cast<RankedTensorType>(res.getType())))
        kl_.remark(op_, "the dot's accumulator is not in its assigned layout (a later path was "
                        "taken): uses that need that layout convert through shared memory");
      Lowered l;
      l.kind = Lowered::Dist;
      l.type = cast<RankedTensorType>(res.getType());
      l.layout = accLay;
      l.regs.assign(accs.begin(), accs.end());
      vals_[res] = l;
    }
  }
  for (const Advance &a : advances)
    kl_.bindAdvanced(op_.getResult(a.index), a, n, loc);
}

std::optional<bool> KernelLowering::lowerPipelinedDotLoop(scf::ForOp op) {
  // Remarks only for loops that compute a dot: the ones a user expects fast.
  bool hasDot = llvm::any_of(op.getBody()->getOperations(),
                             [](Operation &o) { return isa<tile::DotOp>(o); });
  auto notPipelined = [&](const std::string &why) -> std::optional<bool> {
    if (hasDot && !stagesDotLoop(op)) // a staged loop has its own remark
      remark(op, "dot loop not pipelined: " + why);
    return std::nullopt;
  };
  if (!target_.hasCpAsync())
    return notPipelined("target " + target_.name() + " has no cp.async (sm_80 or later)");
  if (opts_.numStages < 3)
    return notPipelined("num_stages is " + std::to_string(opts_.numStages) + "; the pipeline needs 3 or more");
  std::string form;
  std::optional<DotLoop> m = matchDotLoop(op, &form);
  if (!m)
    return notPipelined(form + "; the pipelined form is two loads feeding one dot, pure index "
                        "arithmetic and pointer tiles advanced by uniform steps (docs/performance.md)");
  std::optional<WgmmaKind> kind = wgmmaKindOf(m->dot);
  if (!kind)
    return notPipelined("no tensor-core form for these operand and accumulator types");
  markColumnMajorB(axis(), *m, m->dot.getA().getType().getElementTypeBitWidth() / 8);
  // wgmma where the target has it and the tile fits it; else mma.sync for
  // 16-bit operands. num_stages is an upper bound: with fewer stages than
  // asked for when those do not fit in shared memory, the loop still pipelines.
  bool wgmmaTarget = isWgmmaTarget(target_, opts_.numWarps);
  std::string why, wsWhy;
  // tf32 tries C^T = B^T A^T first (no shared-memory transpose of B).
  for (DotPath path : {DotPath::Swapped, DotPath::Wgmma, DotPath::MmaSync}) {
    bool wgmma = path != DotPath::MmaSync;
    if (!dotPathAllowed(path, *kind, wgmmaTarget, m->kMajorB()))
      continue;
    // Warp-specialized first. Its ring takes any count of stages: slots and
    // phases come from the running iteration count by a division by it
    // (masks and shifts for a power of two).
    for (bool ws : {true, false}) {
      if (ws && !(wgmma && opts_.warpSpecialize))
        continue;
      for (int stages = opts_.numStages; stages >= 3; --stages) {
        DotLoopEmitter emitter(*this, b_, opts_, smem_, vals_, op, *m, *kind, stages, wgmma, path == DotPath::Swapped, ws);
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
    why = target_.hasWgmma() ? "wgmma needs 4, 8 or 16 warps, and mma.sync f16/bf16 operands"
                            : "without wgmma only f16/bf16 operands are pipelined (mma.sync)";
  return notPipelined(why);
}

} // namespace tessera::lowering::detail
