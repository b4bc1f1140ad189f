// TMA copies of a warp-specialized dot loop (DotLoopEmitter's tma pieces):
// one producer thread expects a stage's bytes on its `full` mbarrier and
// issues one cp.async.bulk.tensor box per swizzle column block; the copy
// engine writes the boxes in the same swizzled form that the cp.async path
// produces (TMA's 32/64/128-byte swizzles are the XOR of address bits 4-6
// with bits 7-9, as `swizzled` computes), and zero-fills what lies past the
// extents the mask gave. An operand whose origin is computed each iteration
// (ROAST's hashed blocks) gets a box per aligned row group and column block,
// placed at the pointer's value (analysis/ComputedOriginMap.h). B runs of
// unknown alignment whose rows are adjacent (RzLinear's hashed W in the tf32
// C^T loop) go as one 1-D bulk copy each, no tensor map, their shifts
// published before the expect_tx arrival. See docs/performance.md section 4.
#include "DotLoopEmitter.h"
#include "TmaBoxes.h"

#include "analysis/ComputedOriginMap.h"

#include "tessera/TensorMapSpec.h"

namespace tessera::lowering::detail {

std::optional<DotLoopEmitter::TmaOperand> DotLoopEmitter::tmaFor(tile::LoadOp ld, int64_t rows,
                                                                 int64_t width) {
  auto no = [&](std::string why) -> std::optional<TmaOperand> {
    if (tmaWhyNot.empty())
      tmaWhyNot = std::string(ld == m_.loadA ? "A" : "B") + ": " + why;
    return std::nullopt;
  };
  // The map's base address and row pitch must be 16-byte aligned: what
  // 16-byte aligned chunks at every row start imply.
  if (copyFacts(ld).gathered)
    return no("rows not provably contiguous");
  int64_t cols = cast<RankedTensorType>(ld.getType()).getDimSize(copiedTransposed(ld) ? 0 : 1);
  // A box must start 16-byte aligned in global memory: at a misaligned
  // start the copy engine faults (illegal instruction, H200), so RzLinear's
  // hashed rows cannot be boxes. An affine map when the analysis follows
  // the origin; else boxes at origins computed each iteration.
  if (!copyFacts(ld).aligned)
    return no("rows not provably 16-byte aligned");
  std::string why, whyComputed;
  std::optional<TensorMapOperand> m =
      analyzeTensorMapOperand(ld, op_, kl_.source().getBody().front(), why,
                              TensorMapQuery{copiedTransposed(ld)});
  if (!m) {
    // Boxes copy whole rows: only an unmasked load may have a computed origin.
    if (ld.getMask())
      return no(why);
    if (std::optional<TmaOperand> t = computedOriginFor(ld, rows, width, cols, whyComputed))
      return t;
    return no(why + "; no computed origin: " + whyComputed);
  }
  if (rows > 256 || width / eb > 256)
    return no("a box is larger than 256 rows or columns");
  return TmaOperand{*m, Value(), rows, width, cols * eb / width};
}

std::optional<DotLoopEmitter::TmaOperand>
DotLoopEmitter::computedOriginFor(tile::LoadOp ld, int64_t rows, int64_t width, int64_t cols,
                                  std::string &why) {
  if (copiedTransposed(ld)) {
    why = "the tile is copied transposed";
    return std::nullopt;
  }
  int64_t boxCols = width / eb;
  std::optional<ComputedOriginOperand> c = analyzeComputedOrigin(
      ld, eb, boxCols, std::min<int64_t>(rows, 256), kl_.source().getBody().front(), kl_.axis(), why);
  if (!c)
    return std::nullopt;
  // Each box starts a swizzle atom (8 rows of `width` bytes, 1024-aligned);
  // the groups divide the rows (analyzeComputedOrigin).
  if ((c->groupRows * width) % 1024) {
    why = "row groups of " + std::to_string(c->groupRows) + " do not fill whole swizzle atoms";
    return std::nullopt;
  }
  // Rows `stride` apart and `stride + boxCols - 1` wide overlap, so a box
  // may start at any column below the stride; the rows reach every offset
  // below 2^31 (others stop the kernel with a device-side assert). The map reads nothing but
  // the boxes, which hold the tile's own elements.
  TensorMapOperand m;
  m.pointerArg = c->pointerArg;
  m.rowStride = LinearForm::constant(c->rowStride);
  m.cols = LinearForm::constant(c->rowStride + boxCols - 1);
  m.rows = LinearForm::constant(((int64_t(1) << 31) - 1) / c->rowStride + 256);
  return TmaOperand{m, Value(), rows, width, cols * eb / width, c->groupRows};
}

std::optional<analysis::ComputedOriginOperand> DotLoopEmitter::shiftedBulkOrigin() {
  tile::LoadOp ld = m_.loadB;
  if (!swap || !ws || !opts_.tma || ld.getMask())
    return std::nullopt;
  int64_t runs = copier_.shiftedRuns(ld), len = runs ? copier_.runLength(ld) : 0;
  if (!runs)
    return std::nullopt;
  // A run's BK rows must be adjacent: one group, rows a run's length apart.
  std::string why;
  std::optional<analysis::ComputedOriginOperand> c = analysis::analyzeComputedOrigin(
      ld, eb, len, std::min<int64_t>(BK, 256), kl_.source().getBody().front(), kl_.axis(), why);
  if (!c || c->groupRows != BK || c->rowStride != len)
    return std::nullopt;
  return c;
}

SmallVector<Value> DotLoopEmitter::publishShiftedBulk(Value gj) {
  Block &entry = kl_.source().getBody().front();
  Value base = LLVM::PtrToIntOp::create(b_, loc, i64, kl_.scalarOf(entry.getArgument(bulkOrigin->pointerArg)));
  SmallVector<Value> src;
  for (int64_t q = 0; q < bRuns; ++q) {
    Value a = LLVM::PtrToIntOp::create(b_, loc, i64,
                                       kl_.elem(m_.loadB.getPtr(), {c32(0), c32(q * bRunLen)}, loc));
    // The run starts `s` bytes past a 16-byte boundary; the copy starts at
    // that boundary and ends in the chunk that holds the run's last element:
    // it reads only chunks that hold elements of the block. An aligned run
    // starts one chunk earlier (shift 16: elements of Mem before the block),
    // so that no chunk past the block is read, which might lie past Mem's
    // end; a run at the base argument itself keeps shift 0.
    Value s = arith::AndIOp::create(b_, loc, a, c64(15));
    Value early = arith::AndIOp::create(
        b_, loc, arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, s, c64(0)),
        arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::uge, arith::SubIOp::create(b_, loc, a, base),
                              c64(16)));
    Value shift = arith::SelectOp::create(b_, loc, early, c64(16), s);
    LLVM::StoreOp::create(b_, loc, arith::TruncIOp::create(b_, loc, i32, shift),
                          LLVM::IntToPtrOp::create(b_, loc, ptr3, shiftWord(slotOf(gj), c32(q))), 4);
    src.push_back(arith::SubIOp::create(b_, loc, a, shift));
  }
  return src;
}

void DotLoopEmitter::planTma() {
  if (!opts_.tma || !ws || !useWgmma)
    return;
  tmaA = aMMajor ? tmaFor(m_.loadA, BK, WAm()) : tmaFor(m_.loadA, BM, WA);
  // Multicast needs A's box in whole swizzle atoms (8 rows of the stage's
  // width) per CTA, at origins the affine map follows.
  int64_t C = opts_.clusterSize;
  if (C > 1 && tmaA && m_.loadA.getMulticast() && !aMMajor && !persistent && !tmaA->groupRows &&
      BM % C == 0 && (BM / C) % 8 == 0 && (BM / C) * tmaA->width % 1024 == 0) {
    multicastA = C;
    tmaA->rows = BM / C;
  }
  if (!swap)
    tmaB = tmaFor(m_.loadB, kMajorB ? BN : BK, WB);
  else if (bBulk)
    tmaB = TmaOperand{TensorMapOperand{}, Value(), 0, 0, 0, 0, /*bulk=*/true};
  else if (tmaWhyNot.empty())
    tmaWhyNot = "B: copied row-major with padded rows for its B^T fragments";
}

bool DotLoopEmitter::addTensorMaps() {
  for (std::optional<TmaOperand> *t : {&tmaA, &tmaB}) {
    if (!*t || (*t)->bulk)
      continue;
    TensorMapSpec s = tensorMapSpecOf((*t)->map, ea, (*t)->width / eb,
                                      (*t)->groupRows ? (*t)->groupRows : (*t)->rows, (*t)->width);
    (*t)->param = kl_.addTensorMapParam(s, loc);
    if (!(*t)->param)
      return kl_.fail(op_, "could not add a tensor-map parameter");
  }
  return true;
}

Value DotLoopEmitter::materialize(const LinearForm &f) { return materializeForm(kl_, b_, loc, f); }

void DotLoopEmitter::releaseRemote(Value g) {
  Value refilled = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt,
                                         arith::AddIOp::create(b_, loc, g, c32(S)), n);
  scf::IfOp when = kl_.makeIf(refilled, false, loc);
  OpBuilder::InsertionGuard ig(b_);
  b_.setInsertionPointToStart(when.thenBlock());
  Value bar = mbar(1, slotOf(g));
  for (Value peer : peerRanks)
    asmCall({}, {bar, peer},
            "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, $0, $1;\n"
            "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
            "r,r,~{memory}");
}

bool DotLoopEmitter::issueTma(Value j, Value gj, Value fullBar) {
  // Computed origins and bulk copies read the pointer tiles of iteration j.
  bool bind = (tmaA && tmaA->groupRows) || (tmaB && (tmaB->groupRows || tmaB->bulk));
  if (bind && !bindIteration(j)) {
    vals_.popScope();
    return false;
  }
  // Bulk copies store their shifts before the arrival that publishes them.
  SmallVector<Value> bulkSrc = tmaB && tmaB->bulk ? publishShiftedBulk(gj) : SmallVector<Value>();
  int64_t bytes = (tmaA ? aBytes : 0) + (tmaB ? (tmaB->bulk ? bRuns * bulkBytes() : bBytes) : 0);
  asmCall({}, {fullBar, c32(bytes)}, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
          "r,r,~{memory}");
  auto issue = [&](const TmaOperand &t, tile::LoadOp ld, Value stage) {
    if (t.bulk) {
      for (int64_t q = 0; q < bRuns; ++q)
        asmCall({}, {arith::AddIOp::create(b_, loc, stage, c32(q * bulkBytes())), bulkSrc[q],
                     c32(bulkBytes()), fullBar},
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
                "r,l,r,r,~{memory}");
      return;
    }
    if (t.groupRows) {
      issueComputedOriginBoxes(t, ld, stage, fullBar);
      return;
    }
    Value x = arith::AddIOp::create(b_, loc, materialize(t.map.col0),
                                    arith::MulIOp::create(b_, loc, j, c32(t.map.colStep)));
    Value y = arith::AddIOp::create(b_, loc, materialize(t.map.row0),
                                    arith::MulIOp::create(b_, loc, j, c32(t.map.rowStep)));
    int64_t blockRows = t.rows, mask = 0;
    if (ld == m_.loadA && multicastA) {
      // This CTA's slice of A's rows (the box), into the same place of every
      // CTA's stage, whose column blocks keep all BM rows.
      Value slice = arith::MulIOp::create(b_, loc, clusterRank, c32(t.rows));
      y = arith::AddIOp::create(b_, loc, y, slice);
      stage = arith::AddIOp::create(b_, loc, stage, arith::MulIOp::create(b_, loc, slice, c32(t.width)));
      blockRows = BM;
      mask = (int64_t(1) << multicastA) - 1;
    }
    for (int64_t blk = 0; blk < t.blocks; ++blk)
      issueBox(t, arith::AddIOp::create(b_, loc, stage, c32(blk * blockRows * t.width)),
               arith::AddIOp::create(b_, loc, x, c32(blk * t.width / eb)), y, fullBar, mask);
  };
  if (tmaA)
    issue(*tmaA, m_.loadA, aStage(gj));
  if (tmaB)
    issue(*tmaB, m_.loadB, tmaB->bulk ? rawStage(gj) : bStage(gj));
  if (bind)
    vals_.popScope();
  return true;
}

void DotLoopEmitter::issueBox(const TmaOperand &t, Value dst, Value x, Value y, Value fullBar,
                              int64_t multicastMask) {
  issueTensorBox(kl_, loc, dst, t.param, {x, y}, fullBar, multicastMask);
}

void DotLoopEmitter::issueComputedOriginBoxes(const TmaOperand &t, tile::LoadOp ld, Value stage,
                                              Value fullBar) {
  Block &entry = kl_.source().getBody().front();
  Value base = LLVM::PtrToIntOp::create(b_, loc, i64, kl_.scalarOf(entry.getArgument(t.map.pointerArg)));
  int64_t stride = t.map.rowStride.c, boxCols = t.width / eb;
  for (int64_t q = 0; q < t.rows / t.groupRows; ++q)
    for (int64_t blk = 0; blk < t.blocks; ++blk) {
      Value p = kl_.elem(ld.getPtr(), {c32(q * t.groupRows), c32(blk * boxCols)}, loc);
      Value off = arith::DivSIOp::create(
          b_, loc, arith::SubIOp::create(b_, loc, LLVM::PtrToIntOp::create(b_, loc, i64, p), base), c64(eb));
      // An offset outside [0, 2^31) has no coordinates in the map: stop the
      // kernel rather than read zeros where the program reads memory. By a
      // trap, not a device-side assert: its call would make ptxas serialize
      // every wgmma of the kernel (C7510; ROAST's dX 22% slower, H200).
      Value outside = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::uge, off, c64(int64_t(1) << 31));
      kl_.trapIf(outside, ld.getLoc());
      Value off32 = arith::TruncIOp::create(b_, loc, i32, off);
      issueBox(t,
               arith::AddIOp::create(b_, loc, stage,
                                     c32(blk * t.rows * t.width + q * t.groupRows * t.width)),
               arith::RemUIOp::create(b_, loc, off32, c32(stride)),
               arith::DivUIOp::create(b_, loc, off32, c32(stride)), fullBar);
    }
}

} // namespace tessera::lowering::detail
