// tile.scan: an inclusive scan along one axis, Hillis-Steele over AxisLines.
// At distance d = 1, 2, 4, ... each thread reads the element d before each
// of its own (after, in reverse) from the previous level's shared copy and
// combines, the earlier element on the left. log2(n) levels, one barrier
// each, for any axis, any layout and any associative combiner (the one
// reduce uses).
#include "KernelLowering.h"

namespace tessera::lowering::detail {

bool KernelLowering::lowerScan(tile::ScanOp op) {
  Location loc = op.getLoc();
  auto srcs = op.getSrcs();
  int64_t axis = op.getAxis();
  bool reverse = op.getReverse();
  AxisLines l = axisLines(cast<RankedTensorType>(srcs[0].getType()), axis, 2);
  SmemTemps temps(smem_);
  int64_t R = l.length;
  for (Value src : srcs) {
    SmallVector<Value> regs;
    for (int64_t s = 0; s < l.lay.slots(); ++s)
      regs.push_back(atSlot(src, l.lay, s, loc));
    addLineTile(l, temps, convertElem(cast<RankedTensorType>(src.getType()).getElementType()), regs);
  }
  barrier(loc); // readers of these buffers (a previous loop iteration) are done
  publishLines(l, 0, loc);
  barrier(loc);
  int k = 0;
  for (int64_t d = 1; d < R; d *= 2, k ^= 1) {
    for (int64_t s = 0; s < l.lay.slots(); ++s) {
      Value has = reverse ? arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, l.along[s],
                                                  i32c(R - d, loc))
                          : arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sge, l.along[s],
                                                  i32c(d, loc));
      Value step = i32c(reverse ? d * l.stride : -d * l.stride, loc);
      Value partner = arith::SelectOp::create(
          b_, loc, has, arith::AddIOp::create(b_, loc, l.flats[s], step), l.flats[s]);
      SmallVector<Value> other = readLines(l, k, partner, loc), mine;
      for (auto &regs : l.current)
        mine.push_back(regs[s]);
      SmallVector<Value> both = combine(op.getCombine(), other, mine);
      for (size_t i = 0; i < mine.size(); ++i)
        l.current[i][s] = arith::SelectOp::create(b_, loc, has, both[i], mine[i]);
    }
    if (2 * d < R) { // the last level's results stay in registers
      publishLines(l, k ^ 1, loc);
      barrier(loc);
    }
  }
  for (size_t i = 0; i < srcs.size(); ++i)
    bindDist(op.getResult(unsigned(i)), l.current[i]);
  return true;
}

} // namespace tessera::lowering::detail
