// TMA copies of a warp-specialized dot loop (DotLoopEmitter's tma pieces):
// one producer thread expects a stage's bytes on its `full` mbarrier and
// issues one cp.async.bulk.tensor box per swizzle column block; the copy
// engine writes the boxes in the same swizzled form that the cp.async path
// produces (TMA's 32/64/128-byte swizzles are the XOR of address bits 4-6
// with bits 7-9, as `swizzled` computes), and zero-fills what lies past the
// extents the mask gave. See docs/performance.md section 4.
#include "DotLoopEmitter.h"

#include "tessera/TensorMapSpec.h"

namespace tessera::lowering::detail {

namespace {
// CUtensorMapDataType values (cuda.h); the map only needs the element size
// right, and tf32 operands are copied as the f32 bits they are.
constexpr int kTmaUint8 = 0, kTmaFloat16 = 6, kTmaFloat32 = 7, kTmaBfloat16 = 9;
} // namespace

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
  if (!copyFacts(ld).aligned)
    return no("rows not provably 16-byte aligned");
  std::string why;
  std::optional<TensorMapOperand> m =
      analyzeTensorMapOperand(ld, op_, kl_.source().getBody().front(), why, copiedTransposed(ld));
  if (!m)
    return no(why);
  if (rows > 256 || width / eb > 256)
    return no("a box is larger than 256 rows or columns");
  int64_t cols = cast<RankedTensorType>(ld.getType()).getDimSize(copiedTransposed(ld) ? 0 : 1);
  return TmaOperand{*m, Value(), rows, width, cols * eb / width};
}

void DotLoopEmitter::planTma() {
  if (!opts_.tma || !ws || !useWgmma)
    return;
  tmaA = aMMajor ? tmaFor(m_.loadA, BK, WAm()) : tmaFor(m_.loadA, BM, WA);
  if (!swap)
    tmaB = tmaFor(m_.loadB, kMajorB ? BN : BK, WB);
  else if (tmaWhyNot.empty())
    tmaWhyNot = "B: copied row-major with padded rows for its B^T fragments";
}

bool DotLoopEmitter::addTensorMaps() {
  auto form = [](const LinearForm &f) {
    TensorMapSpec::Form o;
    o.c = f.c;
    for (auto [v, k] : f.terms)
      o.terms.push_back({int(cast<BlockArgument>(v).getArgNumber()), k});
    return o;
  };
  for (std::optional<TmaOperand> *t : {&tmaA, &tmaB}) {
    if (!*t)
      continue;
    TensorMapSpec s;
    s.pointerArg = int((*t)->map.pointerArg);
    s.elementBytes = int(eb);
    s.dataType = eb == 1 ? kTmaUint8 : ea.isBF16() ? kTmaBfloat16 : ea.isF16() ? kTmaFloat16 : kTmaFloat32;
    s.cols = form((*t)->map.cols);
    s.rows = form((*t)->map.rows);
    s.rowStride = form((*t)->map.rowStride);
    s.boxCols = int((*t)->width / eb);
    s.boxRows = int((*t)->rows);
    s.swizzleBytes = int((*t)->width);
    (*t)->param = kl_.addTensorMapParam(s, loc);
    if (!(*t)->param)
      return kl_.fail(op_, "could not add a tensor-map parameter");
  }
  return true;
}

Value DotLoopEmitter::materialize(const LinearForm &f) {
  Value v = c32(f.c);
  for (auto [x, k] : f.terms)
    v = arith::AddIOp::create(b_, loc, v, arith::MulIOp::create(b_, loc, toI32(kl_.scalarOf(x)), c32(k)));
  return v;
}

void DotLoopEmitter::issueTma(Value j, Value gj, Value fullBar) {
  int64_t bytes = (tmaA ? aBytes : 0) + (tmaB ? bBytes : 0);
  asmCall({}, {fullBar, c32(bytes)}, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
          "r,r,~{memory}");
  auto issue = [&](const TmaOperand &t, Value stage) {
    Value x = arith::AddIOp::create(b_, loc, materialize(t.map.col0),
                                    arith::MulIOp::create(b_, loc, j, c32(t.map.colStep)));
    Value y = arith::AddIOp::create(b_, loc, materialize(t.map.row0),
                                    arith::MulIOp::create(b_, loc, j, c32(t.map.rowStep)));
    for (int64_t blk = 0; blk < t.blocks; ++blk)
      asmCall({},
              {arith::AddIOp::create(b_, loc, stage, c32(blk * t.rows * t.width)), t.param,
               arith::AddIOp::create(b_, loc, x, c32(blk * t.width / eb)), y, fullBar},
              "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
              "[$0], [$1, {$2, $3}], [$4];",
              "r,l,r,r,r,~{memory}");
  };
  if (tmaA)
    issue(*tmaA, aStage(gj));
  if (tmaB)
    issue(*tmaB, bStage(gj));
}

} // namespace tessera::lowering::detail
