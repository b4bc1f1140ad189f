// TMA copies of a ping-pong staged dot loop (FlashAttention's forward): when
// a tensor map loads each staged tile, the consumers issue no copies. Thread
// 0, in its warpgroup's turn, waits until the stage is free (`empty`),
// expects its bytes on `full` (initialized to one arrival), and issues one
// box per 128-byte column block of K's and V's tiles. The maps follow
// `K + z * stride_z + h * stride_h + n * stride_n + d` as four dimensions
// (analysis/TensorMapAnalysis.h's outer dimensions). Before, every thread
// computed its chunks' addresses and issued cp.async copies: about a hundred
// instructions an iteration each (bench/NOTES.md, session 29). See
// docs/performance.md; lit lowering/staged_dot_loop_tma.tile.
#include "StagedDotLoop.h"
#include "TmaBoxes.h"

#include <numeric>

namespace tessera::lowering::detail {

namespace {
/// The largest power of two known to divide f's value (AxisInfo's facts
/// about the kernel's integer arguments).
int64_t divisibilityOf(const LinearForm &f, AxisInfoAnalysis &axis) {
  int64_t d = f.c ? std::abs(f.c) : AxisInfoAnalysis::kMaxDivisibility;
  for (auto [v, k] : f.terms) {
    AxisInfo a = axis.get(v);
    int64_t dv = a.divisibility.empty() ? 1 : a.divisibility[0];
    d = std::gcd(d, std::abs(k) * dv);
  }
  return d & -d;
}
} // namespace

void StagedDotLoopEmitter::planTma() {
  if (!opts_.tma || !pingPong())
    return;
  SmallVector<TmaLoad, 2> maps;
  for (StagedLoad &l : m_.loads) {
    std::string why;
    auto no = [&](const std::string &reason) { tmaWhyNot = reason; };
    auto lt = cast<RankedTensorType>(l.load.getType());
    int64_t eb = lt.getElementType().getIntOrFloatBitWidth() / 8;
    StageCopier copier(kl_, b_, loc, lt.getElementType());
    if (l.transposed || l.gathered || !copier.copyFacts(l.load).aligned)
      return no("rows not provably 16-byte aligned and contiguous");
    const Ring &r = rings[maps.size()];
    if (l.rows > 256)
      return no("more than 256 rows a tile");
    if (r.width != 32 && r.width != 64 && r.width != 128)
      return no("rows of " + std::to_string(r.width) + " bytes, no TMA swizzle");
    std::optional<TensorMapOperand> m = analyzeTensorMapOperand(
        l.load, op_, kl_.source().getBody().front(), why, TensorMapQuery{false, true});
    if (!m)
      return no(why);
    // TMA takes strides in multiples of 16 bytes.
    bool strided16 = divisibilityOf(m->rowStride, kl_.axis()) * eb % 16 == 0;
    for (const TensorMapOperand::OuterDim &o : m->outer)
      strided16 = strided16 && divisibilityOf(o.stride, kl_.axis()) * eb % 16 == 0;
    if (!strided16)
      return no("a stride not provably a multiple of 16 bytes");
    maps.push_back({*m, Value()});
  }
  tma = std::move(maps);
}

bool StagedDotLoopEmitter::addTensorMaps() {
  for (auto [i, t] : llvm::enumerate(tma)) {
    const Ring &r = rings[i];
    Type elem = cast<RankedTensorType>(m_.loads[i].load.getType()).getElementType();
    t.param = kl_.addTensorMapParam(tensorMapSpecOf(t.map, elem, r.width / r.eb, r.rows, r.width), loc);
    if (!t.param)
      return kl_.fail(op_, "could not add a tensor-map parameter");
  }
  return true;
}

void StagedDotLoopEmitter::issueTmaBoxes(Value j, Value fullBar) {
  int64_t bytes = 0;
  for (auto [i, l] : llvm::enumerate(m_.loads))
    bytes += l.rows * l.rowElems * rings[i].eb;
  asmCall({}, {fullBar, c32(bytes)}, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
          "r,r,~{memory}");
  for (auto [i, t] : llvm::enumerate(tma)) {
    const Ring &r = rings[i];
    const TensorMapOperand &m = t.map;
    auto coordinate = [&](const LinearForm &origin, int64_t step) {
      return add(materializeForm(kl_, b_, loc, origin), arith::MulIOp::create(b_, loc, j, c32(step)));
    };
    Value x = coordinate(m.col0, m.colStep), y = coordinate(m.row0, m.rowStep);
    SmallVector<Value> outer;
    for (const TensorMapOperand::OuterDim &o : m.outer)
      outer.push_back(materializeForm(kl_, b_, loc, o.coord));
    Value stage = slot(i, j);
    for (int64_t blk = 0; blk < m_.loads[i].rowElems * r.eb / r.width; ++blk) {
      SmallVector<Value> coords{add(x, c32(blk * r.width / r.eb)), y};
      coords.append(outer);
      issueTensorBox(kl_, loc, add(stage, c32(blk * r.rows * r.width)), t.param, coords, fullBar);
    }
  }
}

} // namespace tessera::lowering::detail
