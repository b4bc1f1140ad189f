// Reduction of an N-D tile along its last axis, from the blocked layout:
// each thread combines its own elements of a row, lanes that share the row
// combine with warp shuffles, and only per-warp partials (a few bytes per
// row) go through shared memory, where the owners of the result's blocked
// layout read them. The generic N-D reduction instead stages the whole
// source in shared memory and walks the axis element by element.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

// The redux.sync kind of a one-result i32 combine that is a single add, min,
// max, and, or or xor of its two arguments (sm_80 and later), or nothing.
static std::optional<NVVM::ReduxKind> reduxKindOf(tile::ReduceOp op) {
  if (op.getSrcs().size() != 1)
    return std::nullopt;
  Block &body = op.getCombine().front();
  if (!cast<RankedTensorType>(op.getSrcs()[0].getType()).getElementType().isInteger(32) ||
      body.getOperations().size() != 2)
    return std::nullopt;
  Operation &o = body.front();
  auto ret = dyn_cast<tile::ReduceReturnOp>(body.back());
  if (!ret || ret.getResults().size() != 1 || ret.getResults()[0] != o.getResult(0) ||
      o.getNumOperands() != 2 ||
      !((o.getOperand(0) == body.getArgument(0) && o.getOperand(1) == body.getArgument(1)) ||
        (o.getOperand(0) == body.getArgument(1) && o.getOperand(1) == body.getArgument(0))))
    return std::nullopt;
  using K = NVVM::ReduxKind;
  if (isa<arith::AddIOp>(o)) return K::ADD;
  if (isa<arith::MaxSIOp>(o)) return K::MAX;
  if (isa<arith::MinSIOp>(o)) return K::MIN;
  if (isa<arith::MaxUIOp>(o)) return K::UMAX;
  if (isa<arith::MinUIOp>(o)) return K::UMIN;
  if (isa<arith::AndIOp>(o)) return K::AND;
  if (isa<arith::OrIOp>(o)) return K::OR;
  if (isa<arith::XOrIOp>(o)) return K::XOR;
  return std::nullopt;
}

// Whether `v`, or an elementwise function of it, is expanded (to be broadcast).
static bool feedsExpandDims(Value v, int depth) {
  if (depth > 8)
    return false;
  for (Operation *u : v.getUsers()) {
    if (isa<tile::ExpandDimsOp>(u))
      return true;
    if (isElementwise(u) && feedsExpandDims(u->getResult(0), depth + 1))
      return true;
  }
  return false;
}

std::optional<bool> KernelLowering::lowerLastAxisReduce(tile::ReduceOp op) {
  auto srcs = op.getSrcs();
  auto st = cast<RankedTensorType>(srcs[0].getType());
  int64_t rank = st.getRank();
  if (rank < 2 || op.getAxis() != rank - 1)
    return std::nullopt;
  Layout lay = blockedLayout(st.getShape()); // the source's blocked layout
  int64_t C = st.getShape().back(), T = threads_;
  if (lay.replicated || C % lay.vec)
    return std::nullopt;
  SmallVector<Type> ets;
  for (Value s : srcs) {
    Type et = convertElem(cast<RankedTensorType>(s.getType()).getElementType());
    if (!et.isIntOrFloat() || et.isInteger(1))
      return std::nullopt;
    ets.push_back(et);
  }
  Location loc = op.getLoc();
  size_t n = srcs.size();
  // Element (k * T + t) * vec + v of the row-major tile: a chunk k covers
  // T * vec elements. Rows no wider than a chunk: each chunk holds whole rows,
  // C / vec consecutive threads per row. Wider rows: C / (T * vec) chunks per
  // row, every thread in it.
  int64_t chunkElems = T * lay.vec;
  bool narrow = C <= chunkElems;
  int64_t span = narrow ? C / lay.vec : T;               // threads sharing a row
  int64_t chunksPerRow = narrow ? 1 : C / chunkElems;
  int64_t rowsPerChunk = narrow ? chunkElems / C : 1;
  int64_t groups = lay.chunks / chunksPerRow;           // rows this thread touches
  int64_t rows = st.getNumElements() / C;
  // 1. Registers: the thread's elements of each of its rows.
  SmallVector<SmallVector<Value>> part(groups);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = g * chunksPerRow; k < (g + 1) * chunksPerRow; ++k)
      for (int64_t v = 0; v < lay.vec; ++v) {
        SmallVector<Value> x;
        for (Value s : srcs)
          x.push_back(atSlot(s, lay, k * lay.vec + v, loc));
        part[g] = part[g].empty() ? x : combine(op.getCombine(), part[g], x);
      }
  // 2. Lanes of the same row (consecutive threads, a power of two of them):
  //    one redux.sync when a whole warp shares the row and the combine is an
  //    integer add, min, max or bitwise op, else butterfly shuffles.
  int64_t lanes = std::min<int64_t>(span, 32);
  std::optional<NVVM::ReduxKind> redux = lanes == 32 ? reduxKindOf(op) : std::nullopt;
  if (redux) {
    for (auto &p : part)
      p[0] = NVVM::ReduxOp::create(b_, loc, p[0].getType(), p[0], *redux, i32c(-1, loc));
  } else {
    for (int64_t off = 1; off < lanes; off *= 2)
      for (auto &p : part) {
        SmallVector<Value> other;
        for (Value x : p)
          other.push_back(shuffleXor(x, int(off), loc));
        p = combine(op.getCombine(), p, other);
      }
  }
  // 3. Per-warp partials through shared memory: [row][warp of the row].
  int64_t warpsPerRow = span / lanes;
  SmallVector<Value> bases;
  SmemTemps temps(smem_);
  for (Type et : ets) {
    int64_t bytes = rows * warpsPerRow * byteWidth(et);
    int64_t at = smem_.takeScratch(bytes, 16);
    bases.push_back(smemBase(at >= 0 ? at : temps.take(bytes), loc));
  }
  Value tid = tid_;
  Value leader = arith::CmpIOp::create(
      b_, loc, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b_, loc, tid, i32c(lanes - 1, loc)), i32c(0, loc));
  // The thread's row in group g, and its warp's place among the row's warps.
  Value rowInChunk = arith::DivUIOp::create(b_, loc, tid, i32c(span, loc));
  Value warpOfRow = arith::RemUIOp::create(
      b_, loc, arith::ShRUIOp::create(b_, loc, tid, i32c(5, loc)), i32c(warpsPerRow, loc));
  barrier(loc); // earlier readers of the buffer (a previous loop iteration) are done
  {
    scf::IfOp w = makeIf(leader, false, loc);
    OpBuilder::InsertionGuard ig(b_);
    b_.setInsertionPointToStart(w.thenBlock());
    for (int64_t g = 0; g < groups; ++g) {
      Value row = arith::AddIOp::create(b_, loc, i32c(g * rowsPerChunk, loc), rowInChunk);
      Value idx = arith::AddIOp::create(
          b_, loc, arith::MulIOp::create(b_, loc, row, i32c(warpsPerRow, loc)), warpOfRow);
      for (size_t i = 0; i < n; ++i)
        LLVM::StoreOp::create(b_, loc, part[g][i], smemPtr(bases[i], idx, ets[i], loc));
    }
  }
  barrier(loc);
  // Row `row`'s value: its warps' partials, combined.
  auto rowValue = [&](Value row) {
    Value first = arith::MulIOp::create(b_, loc, row, i32c(warpsPerRow, loc));
    SmallVector<Value> acc;
    for (int64_t w = 0; w < warpsPerRow; ++w) {
      Value idx = arith::AddIOp::create(b_, loc, first, i32c(w, loc));
      SmallVector<Value> x;
      for (size_t i = 0; i < n; ++i)
        x.push_back(LLVM::LoadOp::create(b_, loc, ets[i], smemPtr(bases[i], idx, ets[i], loc)));
      acc = acc.empty() ? x : combine(op.getCombine(), acc, x);
    }
    return acc;
  };
  // 4. The result's owners (its blocked layout) combine the row's partials.
  auto rt = cast<RankedTensorType>(op.getResult(0).getType());
  Layout out = layoutOf(rt);
  SmallVector<SmallVector<Value>> results(n);
  for (int64_t s = 0; s < out.slots(); ++s) {
    SmallVector<Value> acc = rowValue(flatIndex(coords(out, s), out.shape, loc));
    for (size_t i = 0; i < n; ++i)
      results[i].push_back(acc[i]);
  }
  for (size_t i = 0; i < n; ++i)
    bindDist(op.getResult(i), results[i]);
  // 5. (When the result, or a function of it, is expanded to be broadcast
  //    back.) The row's value in every slot of the source's layout (a slice of it,
  //    as Triton's slice layouts): remembered at the slot's coordinates, so
  //    that the result broadcast back over the rows (x / max(x, 1)[:, None])
  //    is read from registers, not through shared memory (elem, servable).
  if (!llvm::any_of(op.getResults(), [](Value r) { return feedsExpandDims(r, 0); }))
    return true;
  for (int64_t g = 0; g < groups; ++g) {
    SmallVector<Value> acc = rowValue(
        arith::AddIOp::create(b_, loc, i32c(g * rowsPerChunk, loc), rowInChunk));
    for (int64_t k = g * chunksPerRow; k < (g + 1) * chunksPerRow; ++k)
      for (int64_t v = 0; v < lay.vec; ++v) {
        ArrayRef<Value> c = coords(lay, k * lay.vec + v);
        for (size_t i = 0; i < n; ++i) {
          LoweredValues::MemoKey key{op.getResult(i).getAsOpaquePointer(), {}};
          for (Value x : c.drop_back())
            key.second.push_back(x.getAsOpaquePointer());
          vals_.remember(key, acc[i]);
        }
      }
  }
  for (size_t i = 0; i < n; ++i)
    sliceParent_[op.getResult(i)] = lay;
  return true;
}

// A reduction along the rows of a wgmma-layout tile into its row vector
// (tgpu.slice): each thread combines its own elements of each of its rows,
// then the four lanes of its quad (xor 1, 2), which hold the rest of them.
// The warps split rows only, so nothing goes through shared memory, and
// every lane of the quad ends with the row's value, as the rows layout holds it.
bool KernelLowering::lowerRowsReduce(tile::ReduceOp op) {
  Location loc = op.getLoc();
  auto srcs = op.getSrcs();
  Layout src = layoutOfValue(srcs[0]);
  Layout out = layoutOf(cast<RankedTensorType>(op.getResult(0).getType()));
  if (!src.mma || src.transposed || src.wn != 1 || !out.rows || op.getAxis() != 1 ||
      src.tm != out.tm || src.wm != out.wm)
    return fail(op, "internal: a row reduction into registers needs its source in the wgmma layout");
  size_t n = srcs.size();
  SmallVector<SmallVector<Value>> results(n);
  for (int64_t i = 0; i < src.tm; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value> acc;
      for (int64_t j = 0; j < src.tn; ++j)
        for (int64_t q = 2 * h; q < 2 * h + 2; ++q) {
          SmallVector<Value> x;
          for (Value s : srcs)
            x.push_back(atSlot(s, src, (i * src.tn + j) * 4 + q, loc));
          acc = acc.empty() ? x : combine(op.getCombine(), acc, x);
        }
      for (int off = 1; off <= 2; off *= 2) {
        SmallVector<Value> other;
        for (Value x : acc)
          other.push_back(shuffleXor(x, off, loc));
        acc = combine(op.getCombine(), acc, other);
      }
      for (size_t k = 0; k < n; ++k)
        results[k].push_back(acc[k]);
    }
  for (size_t k = 0; k < n; ++k)
    bindDist(op.getResult(k), results[k]);
  return true;
}

} // namespace tessera::lowering::detail
