// Atomics (tile.atomic_rmw, tile.atomic_cas) with their memory semantics.
//
// LLVM's NVPTX back end drops the ordering and the scope of atomicrmw (LLVM
// 22 emits a relaxed, gpu-scope atom for an acq_rel one), so the lowering
// orders atomics itself:
// - an operation that PTX has as one instruction is inline PTX carrying its
//   .sem and .scope (atom.acq_rel.gpu.global.add.f32);
// - the others (float min and max, 16-bit types) stay LLVM atomics, relaxed,
//   between fences: fence.acq_rel at the scope before a release, after an
//   acquire;
// - a scalar atomic is issued by one thread. A release first waits at a CTA
//   barrier, so that every thread's earlier stores are ordered before it (the
//   unlock of a spin lock); the old value reaches the other threads through
//   shared memory after a second barrier, which also extends an acquire to
//   them (an unused old value: only that barrier, and only for an acquire);
// - an f32 add whose result is unused, on lanes proven contiguous, relaxed or
//   release, on sm_90: one red.v2/v4.f32 for 2 or 4 lanes; 4-lane vectors not
//   proven aligned are realigned with the lane before's (realignedVectorRed).
#include "KernelLowering.h"

namespace tessera::lowering::detail {

namespace {

const char *semName(tile::MemSem s) {
  switch (s) {
  case tile::MemSem::relaxed: return "relaxed";
  case tile::MemSem::acquire: return "acquire";
  case tile::MemSem::release: return "release";
  case tile::MemSem::acq_rel: return "acq_rel";
  }
  return "acq_rel";
}

const char *scopeName(tile::MemScope s) {
  switch (s) {
  case tile::MemScope::cta: return "cta";
  case tile::MemScope::sys: return "sys";
  case tile::MemScope::gpu: return "gpu";
  }
  return "gpu";
}

// LLVM's synchronization scope for a fence of the NVPTX back end.
StringRef syncScopeOf(tile::MemScope s) {
  switch (s) {
  case tile::MemScope::cta: return "block";
  case tile::MemScope::sys: return "";
  case tile::MemScope::gpu: return "device";
  }
  return "device";
}

bool releases(tile::MemSem s) { return s == tile::MemSem::release || s == tile::MemSem::acq_rel; }
bool acquires(tile::MemSem s) { return s == tile::MemSem::acquire || s == tile::MemSem::acq_rel; }

// The PTX operation (after `atom.<sem>.<scope>.global.`) and register class of
// an atomic on `et` that PTX has as one instruction; nothing for the others.
struct NativeAtomic {
  std::string op;
  const char *reg;
};
std::optional<NativeAtomic> nativeAtomic(std::optional<tile::RMWKind> kind, Type et) {
  bool f32 = et.isF32(), f64 = et.isF64(), i32 = et.isInteger(32), i64 = et.isInteger(64);
  if (!f32 && !f64 && !i32 && !i64)
    return std::nullopt;
  std::string bits = (f32 || i32) ? "32" : "64";
  const char *reg = f32 ? "f" : f64 ? "d" : i32 ? "r" : "l";
  if (!kind) // compare-and-swap
    return NativeAtomic{"cas.b" + bits, reg};
  bool fp = f32 || f64;
  switch (*kind) {
  case tile::RMWKind::add: return NativeAtomic{std::string("add.") + (fp ? "f" : "u") + bits, reg};
  case tile::RMWKind::xchg: return NativeAtomic{"exch.b" + bits, reg};
  default: break;
  }
  if (fp) // PTX has no f32/f64 atom.min/max
    return std::nullopt;
  switch (*kind) {
  case tile::RMWKind::and_: return NativeAtomic{"and.b" + bits, reg};
  case tile::RMWKind::or_: return NativeAtomic{"or.b" + bits, reg};
  case tile::RMWKind::xor_: return NativeAtomic{"xor.b" + bits, reg};
  case tile::RMWKind::max: return NativeAtomic{"max.s" + bits, reg};
  case tile::RMWKind::min: return NativeAtomic{"min.s" + bits, reg};
  case tile::RMWKind::umax: return NativeAtomic{"max.u" + bits, reg};
  case tile::RMWKind::umin: return NativeAtomic{"min.u" + bits, reg};
  default: return std::nullopt;
  }
}

LLVM::AtomicBinOp llvmBinOp(tile::RMWKind kind, bool fp) {
  switch (kind) {
  case tile::RMWKind::add: return fp ? LLVM::AtomicBinOp::fadd : LLVM::AtomicBinOp::add;
  case tile::RMWKind::max: return fp ? LLVM::AtomicBinOp::fmax : LLVM::AtomicBinOp::max;
  case tile::RMWKind::min: return fp ? LLVM::AtomicBinOp::fmin : LLVM::AtomicBinOp::min;
  case tile::RMWKind::umax: return LLVM::AtomicBinOp::umax;
  case tile::RMWKind::umin: return LLVM::AtomicBinOp::umin;
  case tile::RMWKind::and_: return LLVM::AtomicBinOp::_and;
  case tile::RMWKind::or_: return LLVM::AtomicBinOp::_or;
  case tile::RMWKind::xor_: return LLVM::AtomicBinOp::_xor;
  case tile::RMWKind::xchg: return LLVM::AtomicBinOp::xchg;
  }
  return LLVM::AtomicBinOp::xchg;
}

} // namespace

// One thread's atomic on one element: inline PTX with its semantics, or an
// LLVM atomic between fences.
Value KernelLowering::emitAtomic(Operation *op, Value ptr, Value val, Value cmp, Location loc) {
  auto rmw = dyn_cast<tile::AtomicRMWOp>(op);
  auto cas = dyn_cast<tile::AtomicCASOp>(op);
  tile::MemSem sem = rmw ? rmw.getSem() : cas.getSem();
  tile::MemScope scope = rmw ? rmw.getScope() : cas.getScope();
  Type et = val.getType();
  std::optional<tile::RMWKind> kind;
  if (rmw)
    kind = rmw.getKind();
  if (auto native = nativeAtomic(kind, et)) {
    std::string text = std::string("atom.") + semName(sem) + "." + scopeName(scope) + ".global." +
                       native->op + " $0, [$1], $2" + (cas ? ", $3;" : ";");
    std::string cons = std::string("=") + native->reg + ",l," + native->reg +
                       (cas ? std::string(",") + native->reg : std::string()) + ",~{memory}";
    SmallVector<Value> operands{ptr, cas ? cmp : val};
    if (cas)
      operands.push_back(val);
    return sideEffectAsm({et}, operands, text, cons, loc).getResult(0);
  }
  StringRef scopeStr = syncScopeOf(scope);
  auto fence = [&]() {
    LLVM::FenceOp::create(b_, loc, LLVM::AtomicOrdering::acq_rel, scopeStr);
  };
  if (releases(sem))
    fence();
  Value old;
  if (cas) {
    auto x = LLVM::AtomicCmpXchgOp::create(b_, loc, ptr, cmp, val, LLVM::AtomicOrdering::monotonic,
                                           LLVM::AtomicOrdering::monotonic, scopeStr);
    old = LLVM::ExtractValueOp::create(b_, loc, x, ArrayRef<int64_t>{0});
  } else {
    old = LLVM::AtomicRMWOp::create(b_, loc, llvmBinOp(*kind, isa<FloatType>(et)), ptr, val,
                                    LLVM::AtomicOrdering::monotonic, scopeStr);
  }
  if (acquires(sem))
    fence();
  return old;
}

// An f32 atomic add whose old values nobody reads, as red.v2/v4.f32 where
// the lanes of a thread's vector are proven contiguous (sm_90). Lanes whose
// vector is partly masked take one atom each; so do misaligned pairs, while
// misaligned quads are realigned with their neighbours (realignedVectorRed).
// False: not this case.
bool KernelLowering::lowerVectorRed(tile::AtomicRMWOp op) {
  auto rt = dyn_cast<RankedTensorType>(op.getResult().getType());
  if (!rt || !op.getResult().use_empty() || op.getKind() != tile::RMWKind::add ||
      !rt.getElementType().isF32() || target_.sm < 90 || acquires(op.getSem()))
    return false;
  Layout lay = layoutOf(rt);
  Type et = rt.getElementType();
  VectorPlan plan = planVector(lay, op.getPtr(), et);
  if (!plan.contiguous || (lay.vec != 2 && lay.vec != 4))
    return false;
  Location loc = op.getLoc();
  std::string text = std::string("red.") + semName(op.getSem()) + "." + scopeName(op.getScope()) +
                     ".global.add.v" + std::to_string(lay.vec) + ".f32 [$0], {";
  std::string cons = "l";
  for (int64_t v = 0; v < lay.vec; ++v) {
    text += (v ? ", $" : "$") + std::to_string(v + 1);
    cons += ",f";
  }
  text += "};";
  cons += ",~{memory}";
  auto vectorRed = [&](Value at, ArrayRef<Value> vals) {
    SmallVector<Value> operands{at};
    operands.append(vals.begin(), vals.end());
    sideEffectAsm({}, operands, text, cons, loc);
  };
  for (int64_t k = 0; k < lay.slots() / lay.vec; ++k) {
    // planVector's contiguity excludes replicated layouts: no primary mask.
    VectorLanes lanes = vectorLanes(op.getPtr(), op.getValue(), op.getMask(), lay, k, Value(), loc);
    // Realigning pays for its seven shuffles a vector only with four lanes
    // (one red.v4 for four atoms); pairs keep the run-time alignment check
    // (flash attention's dQ pairs spilled 12 bytes with it).
    if (!plan.aligned && lay.vec == 4) {
      realignedVectorRed(op, lanes, lay.vec, vectorRed, loc);
      continue;
    }
    guardedVector(lanes.masks, lanes.ptrs[0], lay.vec * 4, plan.aligned, lay.vec,
                  [&]() { vectorRed(lanes.ptrs[0], lanes.vals); },
                  [&](int64_t v) { maskedAtomic(op, lanes.ptrs[v], lanes.vals[v], lanes.masks[v], loc); },
                  loc);
  }
  Lowered l; // nobody reads the old values
  l.kind = Lowered::Dist;
  l.type = rt;
  Value zero = arith::ConstantOp::create(b_, loc, b_.getZeroAttr(et));
  l.regs.assign(lay.slots(), zero);
  vals_[op.getResult()] = l;
  return true;
}

// One thread's atomic on one element where `mask` is on (null: always).
void KernelLowering::maskedAtomic(Operation *op, Value ptr, Value val, Value mask, Location loc) {
  if (!mask) {
    emitAtomic(op, ptr, val, Value(), loc);
    return;
  }
  auto one = makeIf(mask, false, loc);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointToStart(one.thenBlock());
  emitAtomic(op, ptr, val, Value(), loc);
}

// A lane's vector of contiguous f32 adds whose alignment is not proven.
// Aligned at run time, it is one red.v (as when proven). Else it is
// misaligned by `mis` elements, as is the vector of the lane before when that
// one holds the `vec` elements just before in memory (a run of a row:
// RzLinear's hashed tiles, an odd offset): then the last `mis` elements of
// that lane and the first `vec - mis` of this one fill one aligned vector,
// which this lane adds with one red.v. Elements no vector takes (the head of
// a run, whose lane before does not continue it; its tail, whose next lane
// does not) take one atom each. Which lanes continue each other is read from
// the addresses, so any layout and any run length are correct.
void KernelLowering::realignedVectorRed(tile::AtomicRMWOp op, const VectorLanes &l, int64_t vec,
                                        const std::function<void(Value, ArrayRef<Value>)> &vectorRed,
                                        Location loc) {
  Type i32 = b_.getI32Type(), i64 = b_.getI64Type();
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(v));
  };
  auto eq = [&](Value a, Value b) -> Value {
    return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, a, b);
  };
  auto bit = [&](Value bits, int64_t at) -> Value {
    Value one = arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, bits, i32c(at, loc)),
                                      i32c(1, loc));
    return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne, one, i32c(0, loc));
  };
  Value addr = LLVM::PtrToIntOp::create(b_, loc, i64, l.ptrs[0]);
  Value mis = arith::TruncIOp::create(
      b_, loc, i32, arith::AndIOp::create(b_, loc, arith::ShRUIOp::create(b_, loc, addr, c64(2)), c64(vec - 1)));
  Value maskBits = i32c(0, loc);
  for (int64_t v = 0; v < vec; ++v) {
    Value on = l.masks[v] ? Value(arith::ExtUIOp::create(b_, loc, i32, l.masks[v])) : i32c(1, loc);
    maskBits = arith::OrIOp::create(b_, loc, maskBits, arith::ShLIOp::create(b_, loc, on, i32c(v, loc)));
  }
  // All lanes shuffle, before any branch.
  Value prevAddr = shuffle(addr, NVVM::ShflKind::up, 1, loc);
  Value prevBits = shuffle(maskBits, NVVM::ShflKind::up, 1, loc);
  SmallVector<Value> prevVals;
  for (Value v : l.vals)
    prevVals.push_back(shuffle(v, NVVM::ShflKind::up, 1, loc));
  // Lane 0 gets its own address back, which never continues itself.
  Value prevOk = eq(arith::AddIOp::create(b_, loc, prevAddr, c64(4 * vec)), addr);
  Value lane = laneId(loc);
  Value nextSays = shuffle(arith::ExtUIOp::create(b_, loc, i32, prevOk), NVVM::ShflKind::down, 1, loc);
  Value nextOk = arith::AndIOp::create(
      b_, loc, arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne, lane, i32c(31, loc)),
      arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::ne, nextSays, i32c(0, loc)));

  auto split = makeIf(eq(mis, i32c(0, loc)), true, loc);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointToStart(split.thenBlock());
  guardedVector(l.masks, l.ptrs[0], vec * 4, true, vec, [&]() { vectorRed(l.ptrs[0], l.vals); },
                [&](int64_t v) { maskedAtomic(op, l.ptrs[v], l.vals[v], l.masks[v], loc); }, loc);

  b_.setInsertionPointToStart(split.elseBlock());
  {
    auto joined = makeIf(prevOk, false, loc);
    OpBuilder::InsertionGuard inner(b_);
    b_.setInsertionPointToStart(joined.thenBlock());
    // Element j of the aligned vector: the lane before's element vec - mis + j
    // for j < mis, else this lane's j - mis; one select per possible mis.
    SmallVector<Value> vals, masks;
    for (int64_t j = 0; j < vec; ++j) {
      Value val, mask;
      for (int64_t m = 1; m < vec; ++m) {
        Value mv = j < m ? prevVals[size_t(vec - m + j)] : l.vals[size_t(j - m)];
        Value mm = j < m ? bit(prevBits, vec - m + j) : bit(maskBits, j - m);
        if (!val) {
          val = mv, mask = mm;
          continue;
        }
        Value is = eq(mis, i32c(m, loc));
        val = arith::SelectOp::create(b_, loc, is, mv, val);
        mask = arith::SelectOp::create(b_, loc, is, mm, mask);
      }
      vals.push_back(val);
      masks.push_back(mask);
    }
    Value back = arith::SubIOp::create(b_, loc, i32c(0, loc), mis);
    Value at = LLVM::GEPOp::create(b_, loc, l.ptrs[0].getType(), b_.getF32Type(), l.ptrs[0],
                                   ValueRange{back});
    SmallVector<Value> ptrs;
    for (int64_t j = 0; j < vec; ++j)
      ptrs.push_back(LLVM::GEPOp::create(b_, loc, at.getType(), b_.getF32Type(), at,
                                         ArrayRef<LLVM::GEPArg>{int32_t(j)}));
    guardedVector(masks, at, vec * 4, true, vec, [&]() { vectorRed(at, vals); },
                  [&](int64_t j) { maskedAtomic(op, ptrs[j], vals[j], masks[j], loc); }, loc);
  }
  Value yes = arith::ConstantOp::create(b_, loc, b_.getBoolAttr(true));
  Value notPrev = arith::XOrIOp::create(b_, loc, prevOk, yes);
  Value notNext = arith::XOrIOp::create(b_, loc, nextOk, yes);
  for (int64_t j = 0; j < vec; ++j) {
    // Element j is in the run's head (joined with the lane before) when j < vec - mis.
    Value head = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, i32c(j, loc),
                                       arith::SubIOp::create(b_, loc, i32c(vec, loc), mis));
    Value alone = arith::SelectOp::create(b_, loc, head, notPrev, notNext);
    maskedAtomic(op, l.ptrs[j], l.vals[j],
                 l.masks[j] ? Value(arith::AndIOp::create(b_, loc, alone, l.masks[j])) : alone, loc);
  }
}

bool KernelLowering::lowerAtomic(Operation *op) {
  Location loc = op->getLoc();
  auto rmw = dyn_cast<tile::AtomicRMWOp>(op);
  auto cas = dyn_cast<tile::AtomicCASOp>(op);
  if (rmw && lowerVectorRed(rmw))
    return true;
  tile::MemSem sem = rmw ? rmw.getSem() : cas.getSem();
  Value ptrV = op->getOperand(0);
  Value res = op->getResult(0);
  Type et = convertElem(getElementTypeOrSelf(res.getType()));
  auto emit = [&](Value ptr, Value val, Value cmp, Value mask) -> Value {
    if (!mask)
      return emitAtomic(op, ptr, val, cmp, loc);
    auto ifOp = scf::IfOp::create(b_, loc, TypeRange{et}, mask, true, true);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b_, loc, emitAtomic(op, ptr, val, cmp, loc));
    b_.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b_, loc, Value(arith::ConstantOp::create(b_, loc, b_.getZeroAttr(et))));
    return ifOp.getResult(0);
  };
  Value maskV = rmw ? rmw.getMask() : Value();
  Value valV = rmw ? rmw.getValue() : cas.getValue();
  Value cmpV = cas ? cas.getCmp() : Value();
  auto rt = dyn_cast<RankedTensorType>(res.getType());
  // Shared slot through which the one thread that did the atomic tells the others.
  auto broadcastFrom = [&](Value v, Value who, int64_t slot, Value base) {
    auto ifOp = makeIf(who, false, loc);
    {
      OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(ifOp.thenBlock());
      LLVM::StoreOp::create(b_, loc, v, smemPtr(base, i32c(slot, loc), et, loc));
    }
  };
  if (!rt) {
    // A release covers the stores of every thread of the block: they reach
    // the barrier before thread 0 releases.
    if (releases(sem))
      barrier(loc);
    Value first = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, tid_, i32c(0, loc));
    Value m = maskV ? Value(arith::AndIOp::create(b_, loc, first, scalarOf(maskV))) : first;
    Value old = emit(scalarOf(ptrV), scalarOf(valV), cmpV ? scalarOf(cmpV) : Value(), m);
    if (res.use_empty()) {
      // Nothing to broadcast (a spin lock's release): an acquire still
      // reaches the other threads through a barrier; a release or a relaxed
      // atomic needs none after it.
      if (acquires(sem))
        barrier(loc);
      return true;
    }
    SmemTemps temps(smem_);
    Value base = smemBase(temps.take(byteWidth(et)), loc);
    barrier(loc);
    broadcastFrom(old, first, 0, base);
    barrier(loc);
    Lowered l;
    l.kind = Lowered::Scalar;
    l.scalar = LLVM::LoadOp::create(b_, loc, et, smemPtr(base, i32c(0, loc), et, loc));
    vals_[res] = l;
    return true;
  }
  Layout lay = layoutOf(rt);
  Value primary = lay.replicated ? isPrimary(lay, loc) : Value();
  Lowered l;
  l.kind = Lowered::Dist;
  l.type = rt;
  for (int64_t s = 0; s < lay.slots(); ++s) {
    Value m = maskV ? atSlot(maskV, lay, s, loc) : Value();
    if (primary)
      m = m ? Value(arith::AndIOp::create(b_, loc, m, primary)) : primary;
    l.regs.push_back(emit(atSlot(ptrV, lay, s, loc), atSlot(valV, lay, s, loc),
                          cmpV ? atSlot(cmpV, lay, s, loc) : Value(), m));
  }
  vals_[res] = l;
  if (lay.replicated) { // replicas take the primary's old value
    SmemTemps temps(smem_);
    Value base = smemBase(temps.take(lay.total * byteWidth(et)), loc);
    barrier(loc);
    Value flat = flatIndex(coords(lay, 0), lay.shape, loc);
    broadcastFrom(l.regs[0], primary, 0, smemPtr(base, flat, et, loc));
    barrier(loc);
    vals_[res].regs[0] = LLVM::LoadOp::create(b_, loc, et, smemPtr(base, flat, et, loc));
  }
  return true;
}

} // namespace tessera::lowering::detail
