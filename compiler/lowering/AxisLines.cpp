// Lines of same-shaped tiles along one axis, exchanged through shared
// memory: each thread keeps its own elements in registers, in the blocked
// layout's slots, and a step of a scan or a sorting network publishes them
// to one of two copies and reads other positions of the copy the previous
// step wrote. Scan.cpp and Sort.cpp are built on it.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

KernelLowering::AxisLines KernelLowering::axisLines(RankedTensorType t, int64_t axis, int copies) {
  AxisLines l;
  l.copies = copies;
  l.lay = layoutOf(t);
  l.length = t.getDimSize(axis);
  l.stride = 1;
  for (int64_t d = axis + 1; d < t.getRank(); ++d)
    l.stride *= t.getDimSize(d);
  Location loc = src_.getLoc();
  for (int64_t s = 0; s < l.lay.slots(); ++s) {
    ArrayRef<Value> c = coords(l.lay, s);
    l.flats.push_back(flatIndex(c, l.lay.shape, loc));
    l.along.push_back(c[axis]);
  }
  return l;
}

void KernelLowering::addLineTile(AxisLines &l, SmemTemps &temps, Type et, SmallVector<Value> regs) {
  int64_t bytes = l.lay.total * byteWidth(memType(et, b_.getContext()));
  l.ets.push_back(et);
  for (int k = 0; k < l.copies; ++k)
    l.buf[k].push_back(smemBase(temps.take(bytes), src_.getLoc()));
  l.current.push_back(std::move(regs));
}

void KernelLowering::publishLines(AxisLines &l, int k, Location loc) {
  for (size_t i = 0; i < l.current.size(); ++i)
    for (int64_t s = 0; s < l.lay.slots(); ++s)
      storeSmemElem(l.current[i][s], l.buf[k][i], l.flats[s], loc);
}

SmallVector<Value> KernelLowering::readLines(AxisLines &l, int k, Value flat, Location loc) {
  SmallVector<Value> out;
  for (size_t i = 0; i < l.current.size(); ++i)
    out.push_back(loadSmemElem(l.buf[k][i], flat, l.ets[i], loc));
  return out;
}

} // namespace tessera::lowering::detail
