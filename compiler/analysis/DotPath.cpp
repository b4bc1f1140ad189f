// The dot-path rules (DotPath.h): the pipelineable loop form and the tile
// shapes each tensor-core path accepts.
#include "analysis/DotPath.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::analysis {

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


bool isUniformStep(scf::ForOp op, Value step) {
  if (auto sp = step.getDefiningOp<tile::SplatOp>())
    return op.isDefinedOutsideOfLoop(sp.getSrc());
  DenseElementsAttr dense;
  return matchPattern(step, m_Constant(&dense)) && dense.isSplat();
}

tile::AddPtrOp pointerAdvance(scf::ForOp op, unsigned i) {
  Value arg = op.getRegionIterArgs()[i];
  auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
  auto ap = yield.getOperand(i).getDefiningOp<tile::AddPtrOp>();
  return ap && ap.getPtr() == arg && isa<RankedTensorType>(arg.getType()) ? ap : tile::AddPtrOp();
}

bool advancesUniformly(scf::ForOp op, unsigned i) {
  tile::AddPtrOp ap = pointerAdvance(op, i);
  return ap && isUniformStep(op, ap.getOffset());
}

// "file:line:col" of `loc`, or empty.
static std::string where(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return fl.getFilename().str() + ":" + std::to_string(fl.getLine()) + ":" +
           std::to_string(fl.getColumn());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string w = where(l); !w.empty())
        return w;
  if (auto named = dyn_cast<NameLoc>(loc))
    return where(named.getChildLoc());
  if (auto cs = dyn_cast<CallSiteLoc>(loc))
    return where(cs.getCallee());
  return "";
}

std::optional<DotLoop> matchDotLoop(scf::ForOp op, std::string *why) {
  auto no = [&](const std::string &what, Operation *at) -> std::optional<DotLoop> {
    if (why) {
      std::string w = at ? where(at->getLoc()) : "";
      *why = what + (w.empty() ? "" : " (" + w + ")");
    }
    return std::nullopt;
  };
  Block &body = *op.getBody();
  DotLoop m;
  int loads = 0;
  for (Operation &o : body.without_terminator()) {
    if (auto d = dyn_cast<tile::DotOp>(&o)) {
      if (m.dot)
        return no("the body computes more than one dot", &o);
      m.dot = d;
      continue;
    }
    if (isa<tile::LoadOp>(&o)) {
      ++loads;
      continue;
    }
    // Everything else is recomputed for future iterations: it must be pure.
    if (o.getNumRegions())
      return no("the body has control flow or a reduction ('" + o.getName().getStringRef().str() + "')", &o);
    if (!isMemoryEffectFree(&o))
      return no("the body writes memory ('" + o.getName().getStringRef().str() + "')", &o);
  }
  if (!m.dot)
    return no("the body computes no dot", nullptr);
  if (loads != 2)
    return no("the body loads " + std::to_string(loads) + " tiles, not the dot's two operands", m.dot);
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
    return no("an operand of the dot is not a tile loaded in the loop", m.dot);
  // Either operand may be a transposed load (A.T @ B, A @ B^T).
  auto transposedLoad = [&](Value &src, tile::TransOp &trans, const char *name) {
    auto tr = src.getDefiningOp<tile::TransOp>();
    if (!tr)
      return true;
    if (tr->getBlock() != &body || !tr->hasOneUse() || tr.getOrder() != ArrayRef<int32_t>{1, 0}) {
      no(std::string(name) + " is a transpose used by more than the dot", tr);
      return false;
    }
    trans = tr;
    src = tr.getSrc();
    return true;
  };
  if (!transposedLoad(aSrc, m.transA, "A") || !transposedLoad(bSrc, m.transB, "B"))
    return std::nullopt;
  m.loadA = aSrc.getDefiningOp<tile::LoadOp>();
  m.loadB = bSrc.getDefiningOp<tile::LoadOp>();
  for (auto [ld, name] : {std::pair(m.loadA, "A"), std::pair(m.loadB, "B")}) {
    if (!ld || ld->getBlock() != &body)
      return no(std::string("operand ") + name + " of the dot is not loaded in the loop", m.dot);
    if (!ld->hasOneUse())
      return no(std::string("the load of operand ") + name + " has other users than the dot", ld);
    if (ld.getIsVolatile() || !isZeroSplat(ld.getOther()))
      return no(std::string("the load of operand ") + name + " is volatile or fills with a nonzero `other`", ld);
  }
  auto accArg = dyn_cast<BlockArgument>(m.dot.getAcc());
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  if (!accArg || accArg.getOwner() != &body || accArg.getArgNumber() == 0 || !accArg.hasOneUse() ||
      !m.dot->hasOneUse())
    return no("the accumulator is not a loop-carried value that only the dot reads and "
              "updates", m.dot);
  m.accIndex = accArg.getArgNumber() - 1;
  if (yield.getOperand(m.accIndex) != m.dot.getResult())
    return no("the accumulator is not a loop-carried value that only the dot reads and updates", m.dot);
  for (unsigned i = 0; i < op.getNumRegionIterArgs(); ++i) {
    if (i == m.accIndex)
      continue;
    tile::AddPtrOp ap = pointerAdvance(op, i);
    Operation *def = yield.getOperand(i).getDefiningOp();
    if (!ap)
      return no("the loop carries a value other than the accumulator and pointer tiles "
                "advanced by a step", def ? def : op.getOperation());
    Value off = ap.getOffset();
    if (!isUniformStep(op, off))
      return no("a pointer tile advances by a step that is not the same for every element", ap);
    m.advancing.push_back({i, off});
  }
  return m;
}

void markColumnMajorB(AxisInfoAnalysis &axis, DotLoop &m, int64_t eb) {
  m.bColumnMajor = m.bGathered = false;
  if (m.transB || rowsContiguous(axis, m.loadB, eb))
    return;
  AxisInfo pb = axis.get(m.loadB.getPtr());
  if (pb.rank() != 2)
    return;
  m.bColumnMajor = pb.contiguity[0] >= 16 / eb;
  m.bGathered = !m.bColumnMajor;
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
