// StageCopier: cp.async copies of operand tiles into swizzled stage buffers
// (StageCopier.h).
#include "StageCopier.h"

#include "analysis/RowAlignment.h"

namespace tessera::lowering::detail {

StageCopier::StageCopier(KernelLowering &kl, OpBuilder &b, Location loc, Type ea)
    : kl_(kl), b_(b), loc_(loc), ea_(ea), i32(b.getI32Type()), eb_(ea.getIntOrFloatBitWidth() / 8), vecElems_(16 / eb_),
      ptr3_(LLVM::LLVMPointerType::get(b.getContext(), 3)) {}

StageCopier::CopyFacts StageCopier::copyFacts(tile::LoadOp ld, bool transposed) {
  AxisInfo pa = kl_.axis().get(ld.getPtr());
  size_t axis = transposed ? 0 : pa.rank() - 1; // the contiguous one
  CopyFacts f;
  f.aligned = pa.divisibility[axis] >= 16;
  f.maskWhole = !ld.getMask() || kl_.axis().get(ld.getMask()).constancy[axis] >= vecElems_;
  f.fourByte = eb_ == 4 && pa.divisibility[axis] >= 4;
  f.gathered = pa.contiguity[axis] < vecElems_;
  return f;
}

int64_t StageCopier::runLength(tile::LoadOp ld) {
  auto rt = cast<RankedTensorType>(ld.getType());
  return std::min(kl_.axis().get(ld.getPtr()).contiguity[1], rt.getDimSize(1));
}

int64_t StageCopier::shiftedRuns(tile::LoadOp ld) {
  auto rt = dyn_cast<RankedTensorType>(ld.getType());
  if (!rt || rt.getRank() != 2)
    return 0;
  int64_t cols = rt.getDimSize(1), len = runLength(ld);
  AxisInfo pa = kl_.axis().get(ld.getPtr());
  if (pa.divisibility[1] >= 16 || (len * eb_) % 16 || cols % len)
    return 0;
  if (ld.getMask() && kl_.axis().get(ld.getMask()).constancy[1] < cols)
    return 0;
  return analysis::rowsShareAlignment(ld.getPtr(), eb_, 16, kl_.axis()) ? cols / len : 0;
}

void StageCopier::copyShiftedRows(tile::LoadOp ld, Value dst, int64_t rowPitch,
                                  const ShiftSink &publish, Value producerTid, int64_t producers) {
  auto rt = cast<RankedTensorType>(ld.getType());
  int64_t len = runLength(ld), runs = rt.getDimSize(1) / len, perRun = len * eb_ / 16 + 1,
          total = rt.getDimSize(0) * perRun;
  Value t = producerTid ? producerTid : kl_.tid();
  int64_t threads = producerTid ? producers : kl_.threads();
  // Runs go to groups of at least a warp (a run's threads evaluate its
  // address, ROAST's hash, once a copy); more runs than groups take turns.
  int64_t group = std::max<int64_t>(32, threads / runs), perPass = threads / group;
  Value q0 = arith::DivUIOp::create(b_, loc_, t, c32(group));
  Value local = arith::RemUIOp::create(b_, loc_, t, c32(group));
  Type i64 = b_.getI64Type();
  auto c64 = [&](int64_t v) { return arith::ConstantOp::create(b_, loc_, b_.getI64IntegerAttr(v)); };
  for (int64_t pass = 0; pass * perPass < runs; ++pass) {
    Value q = arith::AddIOp::create(b_, loc_, q0, c32(pass * perPass));
    auto loop = scf::ForOp::create(b_, loc_, c32(0), c32((total + group - 1) / group), c32(1));
    OpBuilder::InsertionGuard g(b_);
    kl_.enterLoopBody(loop);
    kl_.values().pushScope();
    Value flat = arith::AddIOp::create(
        b_, loc_, local, arith::MulIOp::create(b_, loc_, loop.getInductionVar(), c32(group)));
    // A last trip past the run's chunks copies its last chunk again (the
    // same bytes to the same place): no branch, so that what the address
    // computes from the run alone (ROAST's hash, a remainder by a run-time
    // value) is executed on every trip and hoisted out of the loop.
    Value chunk = total % group ? Value(arith::MinUIOp::create(b_, loc_, flat, c32(total - 1))) : flat;
    Value r = arith::DivUIOp::create(b_, loc_, chunk, c32(perRun));
    Value c = arith::RemUIOp::create(b_, loc_, chunk, c32(perRun));
    Value p = kl_.elem(ld.getPtr(), {r, arith::MulIOp::create(b_, loc_, q, c32(len))}, loc_);
    Value a = LLVM::PtrToIntOp::create(b_, loc_, i64, p);
    Value shift = arith::AndIOp::create(b_, loc_, a, c64(15));
    Value src = arith::AddIOp::create(
        b_, loc_, arith::SubIOp::create(b_, loc_, a, shift),
        arith::ShLIOp::create(b_, loc_, arith::ExtUIOp::create(b_, loc_, i64, c), c64(4)));
    // The extra last chunk holds data only when the run is misaligned.
    Value needed = arith::OrIOp::create(
        b_, loc_, arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::ult, c, c32(perRun - 1)),
        arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::ne, shift, c64(0)));
    Value d = arith::AddIOp::create(
        b_, loc_, dst,
        arith::AddIOp::create(
            b_, loc_, arith::MulIOp::create(b_, loc_, r, c32(rowPitch)),
            arith::AddIOp::create(b_, loc_, arith::MulIOp::create(b_, loc_, q, c32(len * eb_ + 16)),
                                  arith::ShLIOp::create(b_, loc_, c, c32(4)))));
    if (ld.getMask())
      needed = arith::AndIOp::create(b_, loc_, needed, kl_.elem(ld.getMask(), {r, c32(0)}, loc_));
    Value size = arith::SelectOp::create(b_, loc_, needed, c32(16), c32(0));
    {
      OpBuilder::InsertionGuard g1(b_);
      // A last pass may leave groups idle (runs % perPass).
      if (runs % perPass) {
        scf::IfOp copy =
            kl_.makeIf(arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::ult, q, c32(runs)), false, loc_);
        b_.setInsertionPointToStart(copy.thenBlock());
      }
      asmCall({}, {d, LLVM::IntToPtrOp::create(b_, loc_, p.getType(), src), size},
              "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r,~{memory}");
      // The run's first chunk (row 0): its thread publishes the shift.
      scf::IfOp first = kl_.makeIf(
          arith::CmpIOp::create(b_, loc_, arith::CmpIPredicate::eq, flat, c32(0)), false, loc_);
      b_.setInsertionPointToStart(first.thenBlock());
      publish(q, arith::TruncIOp::create(b_, loc_, i32, shift));
    }
    kl_.values().popScope();
    scf::YieldOp::create(b_, loc_);
  }
}

Layout StageCopier::copyLayout(tile::LoadOp ld, bool transposed) {
  auto rt = cast<RankedTensorType>(ld.getType());
  Layout cl;
  cl.shape = {rt.getDimSize(transposed ? 1 : 0), rt.getDimSize(transposed ? 0 : 1)};
  cl.total = cl.shape[0] * cl.shape[1];
  cl.vec = vecElems_;
  cl.chunks = cl.total / (kl_.threads() * vecElems_);
  return cl;
}

Value StageCopier::swizzled(Value r, Value colByte, int64_t R, int64_t W) {
  Value blk = arith::DivUIOp::create(b_, loc_, colByte, c32(W));
  Value inRow = arith::RemUIOp::create(b_, loc_, colByte, c32(W));
  Value o = arith::AddIOp::create(b_, loc_, arith::MulIOp::create(b_, loc_, r, c32(W)), inRow);
  Value sw = arith::ShLIOp::create(
      b_, loc_,
      arith::AndIOp::create(b_, loc_, arith::ShRUIOp::create(b_, loc_, o, c32(7)), c32(W / 16 - 1)),
      c32(4));
  return arith::AddIOp::create(b_, loc_, arith::MulIOp::create(b_, loc_, blk, c32(R * W)),
                               arith::XOrIOp::create(b_, loc_, o, sw));
}

StageCopier::Placement StageCopier::swizzledIn(int64_t R, int64_t W) {
  return [this, R, W](Value r, Value colByte) { return swizzled(r, colByte, R, W); };
}

void StageCopier::copyGathered(tile::LoadOp ld, Value dst, ArrayRef<Value> c, bool maskWhole,
                               bool transposed) {
  Value m0;
  for (int64_t v = 0; v < vecElems_; ++v) {
    Value cv = v ? Value(arith::AddIOp::create(b_, loc_, c[1], c32(v))) : c[1];
    SmallVector<Value> at = tileCoords(c[0], cv, transposed);
    Value p = kl_.elem(ld.getPtr(), at, loc_);
    Value mask;
    if (ld.getMask())
      mask = maskWhole && m0 ? m0 : kl_.elem(ld.getMask(), at, loc_);
    m0 = mask;
    Value d = arith::AddIOp::create(b_, loc_, dst, c32(v * eb_));
    if (eb_ == 4) {
      // Asynchronous like every other copy; masked off, nothing is read and
      // the word is zero-filled.
      Value size = mask ? Value(arith::SelectOp::create(b_, loc_, mask, c32(4), c32(0))) : c32(4);
      asmCall({}, {d, p, size}, "cp.async.ca.shared.global [$0], [$1], 4, $2;", "r,l,r,~{memory}");
      continue;
    }
    // 1- and 2-byte elements have no cp.async: loaded and stored (made
    // visible by the fence and barrier before use).
    Value val = kl_.maskedLoad(ea_, p, mask, Value(), false, loc_);
    LLVM::StoreOp::create(b_, loc_, val, LLVM::IntToPtrOp::create(b_, loc_, ptr3_, d), eb_);
  }
}

std::pair<Value, SmallVector<Value>> StageCopier::chunkAddress(tile::LoadOp ld, ArrayRef<Value> c,
                                                              bool maskWhole, bool transposed) {
  Value p0 = kl_.elem(ld.getPtr(), tileCoords(c[0], c[1], transposed), loc_);
  SmallVector<Value> mk;
  for (int64_t v = 0; ld.getMask() && v < (maskWhole ? 1 : vecElems_); ++v) {
    Value cv = v ? Value(arith::AddIOp::create(b_, loc_, c[1], c32(v))) : c[1];
    mk.push_back(kl_.elem(ld.getMask(), tileCoords(c[0], cv, transposed), loc_));
  }
  return {p0, mk};
}

void StageCopier::copyFourByte(tile::LoadOp ld, Value dst, ArrayRef<Value> c, bool aligned,
                               bool maskWhole, bool transposed) {
  // A chunk that may be misaligned (ROAST's hashed offsets, odd leading
  // dimensions) or partly masked is copied as one 16-byte cp.async when
  // aligned and whole at run time, else as two 8-byte ones at an 8-byte
  // boundary (when the chunk has one mask), else as four 4-byte ones, each
  // zero-filled when masked off. Every copy stays asynchronous: no
  // element-wise path.
  auto [p0, mk] = chunkAddress(ld, c, maskWhole, transposed);
  SmallVector<Value> sizes;
  for (int64_t v = 0; v < vecElems_; ++v) {
    Value m = mk.empty() ? Value() : mk[maskWhole ? 0 : v];
    sizes.push_back(m ? Value(arith::SelectOp::create(b_, loc_, m, c32(4), c32(0))) : c32(4));
  }
  Value wide = kl_.vectorGuard(mk, p0, 16, aligned, loc_);
  if (!wide)
    wide = arith::ConstantOp::create(b_, loc_, b_.getBoolAttr(true));
  SmallVector<Value> operands{dst, p0, arith::ExtUIOp::create(b_, loc_, i32, wide)};
  operands.append(sizes.begin(), sizes.end());
  // The whole chunk in one copy under predicate p; else, under `guard`, four
  // 4-byte copies of sizes $3..$6.
  const std::string wholeCopy = "@p cp.async.cg.shared.global [$0], [$1], 16;\n";
  auto fourCopies = [](const std::string &guard) {
    std::string text;
    for (int k = 0; k < 4; ++k) {
      std::string at = k ? "+" + std::to_string(4 * k) : "";
      text += guard + " cp.async.ca.shared.global [$0" + at + "], [$1" + at + "], 4, $" +
              std::to_string(3 + k) + ";\n";
    }
    return text;
  };
  if (aligned || !maskWhole) {
    asmCall({}, operands,
            "{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\n" + wholeCopy + fourCopies("@!p") + "}",
            "r,l,r,r,r,r,r,~{memory}");
    return;
  }
  // One mask for the chunk and a run-time alignment: a chunk at an 8-byte
  // boundary (half of RzLinear's misaligned rows) goes as two 8-byte copies.
  Value addr = LLVM::PtrToIntOp::create(b_, loc_, b_.getI64Type(), p0);
  Value at8 = arith::CmpIOp::create(
      b_, loc_, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b_, loc_, addr, arith::ConstantOp::create(b_, loc_, b_.getI64IntegerAttr(7))),
      arith::ConstantOp::create(b_, loc_, b_.getI64IntegerAttr(0)));
  operands.push_back(arith::ExtUIOp::create(b_, loc_, i32, at8));
  operands.push_back(mk.empty() ? c32(8) : Value(arith::SelectOp::create(b_, loc_, mk[0], c32(8), c32(0))));
  asmCall({}, operands,
          "{\n.reg .pred p, e, np, q, r;\nsetp.ne.b32 p, $2, 0;\nsetp.ne.b32 e, $7, 0;\n"
          "not.pred np, p;\nand.pred q, e, np;\nnot.pred e, e;\nand.pred r, e, np;\n" +
              wholeCopy +
              "@q cp.async.ca.shared.global [$0], [$1], 8, $8;\n"
              "@q cp.async.ca.shared.global [$0+8], [$1+8], 8, $8;\n" +
              fourCopies("@r") + "}",
          "r,l,r,r,r,r,r,r,r,~{memory}");
}

bool StageCopier::issueCopy(tile::LoadOp ld, Value dst, const Placement &place, Value producerTid,
                            int64_t producers, bool transposed) {
  Layout cl = copyLayout(ld, transposed);
  if (producerTid) // the producer warpgroup's chunks
    cl.chunks = cl.total / (producers * vecElems_);
  auto [aligned, maskWhole, fourByte, gathered] = copyFacts(ld, transposed);
  // Gathered chunks (an address per element), and 4-byte chunks masked
  // element by element (a mask each), are copied a chunk per iteration of a
  // loop: unrolled here, every chunk's addresses and masks were live at once
  // (their invariant parts hoisted out of the dot loop), and Inf-CL's LSE
  // kernel spilled without argument facts.
  if (gathered || (fourByte && !maskWhole)) {
    Value t = producerTid ? producerTid : kl_.tid();
    int64_t threads = producerTid ? producers : kl_.threads();
    auto loop = scf::ForOp::create(b_, loc_, c32(0), c32(cl.chunks), c32(1));
    if (rolled_) {
      // Kept a loop: unrolled (LLVM unrolls a few trips), the chunks of a
      // staged loop's several tiles were live at once (flash attention's
      // backward spilled without facts). A pipelined loop's single pair of
      // copies is faster unrolled (bf16 A.T @ B: 0.61 ms against 0.84).
      MLIRContext *ctx = b_.getContext();
      auto noUnroll = LLVM::LoopUnrollAttr::get(ctx, b_.getBoolAttr(true), {}, {}, {}, {}, {}, {});
      loop->setAttr("llvm.loop_annotation",
                    LLVM::LoopAnnotationAttr::get(ctx, {}, {}, {}, noUnroll, {}, {}, {}, {}, {}, {},
                                                  {}, {}, {}, {}, {}));
    }
    OpBuilder::InsertionGuard g(b_);
    kl_.enterLoopBody(loop);
    kl_.values().pushScope(); // no memo of the body's values outlives it
    Value flat = arith::MulIOp::create(
        b_, loc_,
        arith::AddIOp::create(b_, loc_, t,
                              arith::MulIOp::create(b_, loc_, loop.getInductionVar(), c32(threads))),
        c32(vecElems_));
    SmallVector<Value> c{arith::DivUIOp::create(b_, loc_, flat, c32(cl.shape[1])),
                         arith::RemUIOp::create(b_, loc_, flat, c32(cl.shape[1]))};
    Value phys = place(c[0], arith::MulIOp::create(b_, loc_, c[1], c32(eb_)));
    Value at = arith::AddIOp::create(b_, loc_, dst, phys);
    if (gathered)
      copyGathered(ld, at, c, maskWhole, transposed);
    else
      copyFourByte(ld, at, c, aligned, maskWhole, transposed);
    kl_.values().popScope();
    scf::YieldOp::create(b_, loc_);
    return true;
  }
  SmallVector<Value> fast, dsts, ptrs;
  SmallVector<SmallVector<Value>> masks;
  // Chunk k of the producer's is flat index producerTid * vec + k * producers * vec.
  Value pbase = producerTid ? Value(arith::MulIOp::create(b_, loc_, producerTid, c32(vecElems_))) : Value();
  for (int64_t k = 0; k < cl.chunks; ++k) {
    int64_t s0 = k * vecElems_;
    SmallVector<Value> c;
    if (producerTid)
      c = kl_.unflattenFrom(pbase, producers * vecElems_, k * producers * vecElems_, cl.shape);
    else
      c = llvm::to_vector(kl_.coords(cl, s0));
    // Byte offset of the chunk in the stage buffer.
    Value phys = place(c[0], arith::MulIOp::create(b_, loc_, c[1], c32(eb_)));
    dsts.push_back(arith::AddIOp::create(b_, loc_, dst, phys));
    if (gathered) {
      copyGathered(ld, dsts.back(), c, maskWhole, transposed);
      continue;
    }
    if (!(aligned && maskWhole) && fourByte) {
      copyFourByte(ld, dsts.back(), c, aligned, maskWhole, transposed);
      continue;
    }
    // The chunk's elements are contiguous (checked above): one address, and
    // the lanes' coordinates computed here rather than kept from the entry.
    auto [p0, mk] = chunkAddress(ld, c, maskWhole, transposed);
    if (aligned && maskWhole) {
      // Every chunk is all in or all out: a masked-off chunk copies 0 source
      // bytes and is zero-filled, so there is no slow path to test for.
      Value bytes =
          mk.empty() ? c32(16) : Value(arith::SelectOp::create(b_, loc_, mk[0], c32(16), c32(0)));
      asmCall({}, {dsts.back(), p0, bytes}, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
              "r,l,r,~{memory}");
      continue;
    }
    Value ok = kl_.vectorGuard(mk, p0, 16, aligned, loc_);
    if (!ok)
      ok = arith::ConstantOp::create(b_, loc_, b_.getBoolAttr(true));
    fast.push_back(ok);
    ptrs.push_back(p0);
    masks.push_back(mk);
    asmCall({}, {dsts.back(), p0, arith::ExtUIOp::create(b_, loc_, i32, ok)},
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
    Value notF = arith::XOrIOp::create(b_, loc_, f,
                                       arith::ConstantOp::create(b_, loc_, b_.getBoolAttr(true)));
    anySlow = anySlow ? Value(arith::OrIOp::create(b_, loc_, anySlow, notF)) : notF;
  }
  auto slowIf = kl_.makeIf(anySlow, false, loc_);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointToStart(slowIf.thenBlock());
  for (size_t k = 0; k < fast.size(); ++k) {
    Value notF = arith::XOrIOp::create(b_, loc_, fast[k],
                                       arith::ConstantOp::create(b_, loc_, b_.getBoolAttr(true)));
    auto chunkIf = kl_.makeIf(notF, false, loc_);
    OpBuilder::InsertionGuard g2(b_);
    b_.setInsertionPointToStart(chunkIf.thenBlock());
    for (int64_t v = 0; v < vecElems_; ++v) {
      Value mask = masks[k].empty() ? Value() : masks[k][maskWhole ? 0 : v];
      Value p = LLVM::GEPOp::create(b_, loc_, ptrs[k].getType(), ea_, ptrs[k],
                                    ArrayRef<LLVM::GEPArg>{int32_t(v)});
      Value val = kl_.maskedLoad(ea_, p, mask, Value(), false, loc_);
      Value addr = arith::AddIOp::create(b_, loc_, dsts[k], c32(v * eb_));
      LLVM::StoreOp::create(b_, loc_, val, LLVM::IntToPtrOp::create(b_, loc_, ptr3_, addr), eb_);
    }
  }
  return true;
}

} // namespace tessera::lowering::detail
