// The dot-path rules (DotPath.h): the pipelineable loop form and the tile
// shapes each tensor-core path accepts.
#include "analysis/DotPath.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::analysis {

namespace {
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

} // namespace

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
  // Each operand: the tile before its conversion to the dot-operand layout
  // (when layouts are assigned); null when it is converted otherwise.
  auto beforeConversion = [&](Value v, tgpu::ConvertLayoutOp &cvt) -> Value {
    cvt = v.getDefiningOp<tgpu::ConvertLayoutOp>();
    if (!cvt)
      return v;
    if (!isa_and_present<tgpu::DotOperandEncodingAttr>(cvt.getType().getEncoding()) ||
        cvt->getBlock() != &body || !cvt->hasOneUse())
      return Value();
    return cvt.getSrc();
  };
  Value aSrc = beforeConversion(m.dot.getA(), m.toOperandA);
  Value bSrc = beforeConversion(m.dot.getB(), m.toOperandB);
  if (!aSrc || !bSrc)
    return std::nullopt;
  m.loadA = aSrc.getDefiningOp<tile::LoadOp>();
  // B may be a transposed load (A @ B^T).
  if (auto tr = bSrc.getDefiningOp<tile::TransOp>()) {
    if (tr->getBlock() != &body || !tr->hasOneUse() || tr.getOrder() != ArrayRef<int32_t>{1, 0})
      return std::nullopt;
    m.transB = tr;
    bSrc = tr.getSrc();
  }
  m.loadB = bSrc.getDefiningOp<tile::LoadOp>();
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

std::string dotTileWhyNot(DotPath path, bool half, int64_t BM, int64_t BN, int64_t BK, int64_t eb,
                          int64_t numWarps, bool kMajorB) {
  std::string tile = std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK);
  bool swap = path == DotPath::Swapped, useWgmma = path != DotPath::MmaSync;
  bool bViaRegs = !half && !swap && !kMajorB;
  int64_t warpgroups = numWarps / 4, threads = 32 * numWarps, vecElems = 16 / eb,
          kPerInst = 32 / eb;
  // wgmma: 64-row blocks per warpgroup, N up to 256. mma.sync: 16-bit
  // operands, an mma layout over the warps, pairs of n8 tiles (ldmatrix.x4).
  if (useWgmma && !warpgroups)
    return "wgmma needs whole warpgroups (4, 8 or 16 warps)";
  if (swap && (BN % (64 * warpgroups) || BM > 256 || BM % 8))
    return "B^T A^T wgmma needs BN a multiple of 16 * num_warps and BM <= 256; the tile is " + tile;
  if (useWgmma && !swap && (BM % (64 * warpgroups) || BN > 256))
    return "wgmma needs BM a multiple of 16 * num_warps and BN <= 256; the tile is " + tile;
  if (!useWgmma && !half)
    return "without wgmma only f16/bf16 operands are pipelined (mma.sync)";
  std::optional<Layout> mma = mmaLayoutFor(BM, BN, numWarps);
  if (!useWgmma && (!mma || mma->tn % 2))
    return "no mma.sync warp grid with an even number of n8 tiles per warp for " + tile;
  if (BK % kPerInst || (bViaRegs && BK % 16) || BN % 16 || (!kMajorB && BN * eb < 32) ||
      (BM * BK / vecElems) % threads || (BK * BN / vecElems) % threads)
    return "the " + tile + " tile does not split into 16-byte copies over the block's threads";
  return "";
}

} // namespace tessera::analysis
