// tile.sort: a bitonic sorting network along one axis. Each element carries
// its original position, and the network orders (key, position) pairs,
// which are all distinct: ties keep their order and the result is the
// interpreter's, bit for bit. At each of the log2(n) * (log2(n) + 1) / 2
// steps a thread takes the partner of each of its elements (position
// j ^ distance) and keeps the smaller or the larger of the two. Partners in
// the same thread are registers, in the same warp a shuffle; only the
// distances that cross warps go through shared memory (AxisLines) with
// barriers: 5 of 55 steps for 1024 elements over 4 warps.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

// Whether key a sorts before key b in ascending order: NaN above everything.
Value KernelLowering::keyLess(Value a, Value b, bool uns, Location loc) {
  if (isa<FloatType>(a.getType())) {
    Value lt = arith::CmpFOp::create(b_, loc, arith::CmpFPredicate::OLT, a, b);
    Value aNum = arith::CmpFOp::create(b_, loc, arith::CmpFPredicate::ORD, a, a);
    Value bNaN = arith::CmpFOp::create(b_, loc, arith::CmpFPredicate::UNO, b, b);
    return arith::OrIOp::create(b_, loc, lt, arith::AndIOp::create(b_, loc, aNum, bNaN));
  }
  return arith::CmpIOp::create(b_, loc, uns ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt,
                               a, b);
}

bool KernelLowering::lowerSort(tile::SortOp op) {
  Location loc = op.getLoc();
  auto st = cast<RankedTensorType>(op.getSrc().getType());
  AxisLines l = axisLines(st, op.getAxis(), 1);
  SmemTemps temps(smem_);
  int64_t R = l.length;
  bool descending = op.getDescending(), uns = op.getUnsignedKeys();
  SmallVector<Value> keys;
  for (int64_t s = 0; s < l.lay.slots(); ++s)
    keys.push_back(atSlot(op.getSrc(), l.lay, s, loc));
  addLineTile(l, temps, convertElem(st.getElementType()), keys);
  addLineTile(l, temps, b_.getI32Type(), SmallVector<Value>(l.along.begin(), l.along.end()));
  // (key, position) a before (key, position) b in the requested order.
  auto before = [&](Value ka, Value pa, Value kb, Value pb) -> Value {
    Value first = descending ? keyLess(kb, ka, uns, loc) : keyLess(ka, kb, uns, loc);
    Value second = descending ? keyLess(ka, kb, uns, loc) : keyLess(kb, ka, uns, loc);
    Value tie = arith::AndIOp::create(
        b_, loc, arith::XOrIOp::create(b_, loc, first, arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true))),
        arith::XOrIOp::create(b_, loc, second, arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true))));
    Value earlier = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, pa, pb);
    return arith::OrIOp::create(b_, loc, first, arith::AndIOp::create(b_, loc, tie, earlier));
  };
  // Where the partner at flat ^ D lives. In the blocked layout flat index =
  // tid * vec + v + k * threads * vec: D below vec flips lane v of the same
  // vector, D from vec to 32 * vec a lane of the same warp (a shuffle), D from
  // threads * vec up the chunk k of the same thread; only the distances in
  // between cross warps, through shared memory and barriers.
  bool blocked = !l.lay.mma && !l.lay.replicated;
  int64_t V = l.lay.vec, T = threads_;
  int64_t steps = 0, sharedSteps = 0;
  for (int64_t size = 2; size <= R; size *= 2)
    for (int64_t dist = size / 2; dist >= 1; dist /= 2) {
      int64_t D = dist * l.stride;
      SmallVector<SmallVector<Value>> prev = l.current;
      SmallVector<SmallVector<Value>> other(2);
      bool viaShared = !blocked || (D >= 32 * V && D < T * V);
      if (viaShared) {
        barrier(loc); // earlier readers of the copy are done
        publishLines(l, 0, loc);
        barrier(loc);
        ++sharedSteps;
      }
      ++steps;
      for (int64_t s = 0; s < l.lay.slots(); ++s) {
        if (viaShared) {
          Value partner = arith::XOrIOp::create(b_, loc, l.flats[s], i32c(D, loc));
          SmallVector<Value> o = readLines(l, 0, partner, loc);
          other[0].push_back(o[0]);
          other[1].push_back(o[1]);
        } else if (D < V || D >= T * V) {
          int64_t ps = D < V ? (s ^ D) : (s ^ ((D / (T * V)) * V));
          other[0].push_back(prev[0][ps]);
          other[1].push_back(prev[1][ps]);
        } else {
          int lanes = int(D / V);
          other[0].push_back(shuffleXor(prev[0][s], lanes, loc));
          other[1].push_back(shuffleXor(prev[1][s], lanes, loc));
        }
      }
      for (int64_t s = 0; s < l.lay.slots(); ++s) {
        Value j = l.along[s];
        Value mk = prev[0][s], mp = prev[1][s];
        Value zero = i32c(0, loc);
        // The lower position of a pair keeps the first of the two when the
        // block of `size` runs in the requested order (even blocks), the
        // upper one the second; odd blocks the other way round.
        Value lower = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq,
                                            arith::AndIOp::create(b_, loc, j, i32c(dist, loc)), zero);
        Value forward = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq,
                                              arith::AndIOp::create(b_, loc, j, i32c(size, loc)), zero);
        Value wantFirst = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, lower, forward);
        Value mineFirst = before(mk, mp, other[0][s], other[1][s]);
        Value keep = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, wantFirst, mineFirst);
        l.current[0][s] = arith::SelectOp::create(b_, loc, keep, mk, other[0][s]);
        l.current[1][s] = arith::SelectOp::create(b_, loc, keep, mp, other[1][s]);
      }
    }
  remark(op, "sort: " + std::to_string(steps) + " steps, " + std::to_string(sharedSteps) +
                 " through shared memory");
  bindDist(op.getSorted(), l.current[0]);
  bindDist(op.getIndices(), l.current[1]);
  return true;
}

} // namespace tessera::lowering::detail
