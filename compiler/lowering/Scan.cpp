// tile.scan: an inclusive scan along one axis, Hillis-Steele through shared
// memory. Each thread keeps its own elements in registers; at distance d =
// 1, 2, 4, ... it reads the element d before each of its own (after, in
// reverse) from the shared copy of the previous level and combines, the
// earlier element on the left. log2(n) levels, one barrier each, for any
// axis, any layout and any associative combiner (the one reduce uses).
#include "KernelLowering.h"

namespace tessera::lowering::detail {

bool KernelLowering::lowerScan(tile::ScanOp op) {
  Location loc = op.getLoc();
  auto srcs = op.getSrcs();
  auto st = cast<RankedTensorType>(srcs[0].getType());
  int64_t axis = op.getAxis(), R = st.getDimSize(axis);
  bool reverse = op.getReverse();
  int64_t stride = 1; // between neighbours along the axis, row-major
  for (int64_t d = axis + 1; d < st.getRank(); ++d)
    stride *= st.getDimSize(d);
  Layout lay = layoutOf(st);
  size_t n = srcs.size();
  SmallVector<Type> ets, mts;
  SmallVector<SmallVector<Value>> current(n);
  for (size_t i = 0; i < n; ++i) {
    ets.push_back(convertElem(cast<RankedTensorType>(srcs[i].getType()).getElementType()));
    mts.push_back(memType(ets[i], b_.getContext()));
    for (int64_t s = 0; s < lay.slots(); ++s)
      current[i].push_back(atSlot(srcs[i], lay, s, loc));
  }
  SmallVector<Value> flats, along;
  for (int64_t s = 0; s < lay.slots(); ++s) {
    ArrayRef<Value> c = coords(lay, s);
    flats.push_back(flatIndex(c, lay.shape, loc));
    along.push_back(c[axis]);
  }
  // Two copies of every source: one level reads one and writes the other.
  SmallVector<Value> buf[2];
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < n; ++i)
      buf[k].push_back(smemBase(smem_.allocate(st.getNumElements() * byteWidth(mts[i]), 16), loc));
  auto write = [&](int k) {
    for (size_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < lay.slots(); ++s) {
        Value v = current[i][s];
        if (mts[i] != ets[i])
          v = arith::ExtUIOp::create(b_, loc, mts[i], v);
        LLVM::StoreOp::create(b_, loc, v, smemPtr(buf[k][i], flats[s], mts[i], loc));
      }
  };
  barrier(loc); // readers of these buffers (a previous loop iteration) are done
  write(0);
  barrier(loc);
  int k = 0;
  for (int64_t d = 1; d < R; d *= 2, k ^= 1) {
    for (int64_t s = 0; s < lay.slots(); ++s) {
      Value has = reverse ? arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, along[s],
                                                  i32c(R - d, loc))
                          : arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sge, along[s],
                                                  i32c(d, loc));
      Value step = i32c(reverse ? d * stride : -d * stride, loc);
      Value partner = arith::SelectOp::create(
          b_, loc, has, arith::AddIOp::create(b_, loc, flats[s], step), flats[s]);
      SmallVector<Value> other, mine;
      for (size_t i = 0; i < n; ++i) {
        Value v = LLVM::LoadOp::create(b_, loc, mts[i], smemPtr(buf[k][i], partner, mts[i], loc));
        if (mts[i] != ets[i])
          v = arith::TruncIOp::create(b_, loc, ets[i], v);
        other.push_back(v);
        mine.push_back(current[i][s]);
      }
      SmallVector<Value> both = combine(op.getCombine(), other, mine);
      for (size_t i = 0; i < n; ++i)
        current[i][s] = arith::SelectOp::create(b_, loc, has, both[i], mine[i]);
    }
    if (2 * d < R) { // the last level's results stay in registers
      write(k ^ 1);
      barrier(loc);
    }
  }
  for (size_t i = 0; i < n; ++i)
    bindDist(op.getResult(unsigned(i)), current[i]);
  return true;
}

} // namespace tessera::lowering::detail
