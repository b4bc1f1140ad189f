// Staged dot loop: a loop whose dots read tiles that the loop loads, with
// more in the body than the one dot of a matmul (FlashAttention's inner loop:
// S = Q K^T, a softmax, O += P V):
//
//   for start_n in range(lo, hi, BLOCK_N):
//       k = load(...)                      # staged: copied ahead by cp.async
//       s = dot(q, trans(k))               # wgmma: Q staged once, K K-major
//       ... softmax of s, in registers ...
//       v = load(...)                      # staged
//       acc = dot(p.to(f16), v, acc)       # wgmma: P from registers, V N-major
//
// Each load that only feeds a dot's B operand (possibly through trans) gets a
// ring of num_stages stage buffers in the swizzled form wgmma reads, and its
// copies for iteration i + S - 1 are issued at the top of iteration i, after
// the barrier that says every warp is done with the slot they overwrite. Their
// addresses come from lowering the load's address arithmetic again with the
// induction variable bound to that iteration (as the pipelined dot loop does).
// A dot's A operand is either invariant in the loop (staged once, before it,
// K-major) or a tile in the wgmma accumulator layout (the registers of the
// previous product, wgmma's register-A form; a tile in another layout is
// converted to it first). Everything else in the body is lowered generically,
// with the dot results bound to the wgmma accumulators.
//
// FlashAttention's backward loops take the same path: one loaded tile may feed
// several dots (dO as B and, through trans, as B^T); a tile loaded contiguous
// along its first axis (Q^T, K^T) is stored transposed, so that each dot reads
// it K-major or N-major as it needs; and pointer tiles advanced by a uniform
// step are bound per iteration rather than carried. The atomic-dQ backward
// adds two things: a B operand computed in the loop (dS^T for dQ^T = K^T dS^T),
// stored N-major from its registers into a buffer of its own just before its
// dot, and atomics whose old values are unused (dQ^T's partial sums), allowed
// when their address derives from no pointer argument a staged load reads.
#include "StagedDotLoop.h"
#include "analysis/WrittenParams.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/ScopeExit.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::lowering::detail {
namespace {

Value stripConverts(Value v) {
  while (auto cv = v.getDefiningOp<tgpu::ConvertLayoutOp>())
    v = cv.getSrc();
  return v;
}

/// The wgmma accumulator layout of an M x N product, when `t` is in it.
bool inWgmmaAccLayout(RankedTensorType t, int64_t numWarps) {
  auto enc = tgpu::mmaEncodingOf(t);
  if (!enc || enc.getTransposed() || t.getRank() != 2)
    return false;
  std::optional<Layout> l = accLayoutFor(t.getShape(), enc);
  return l && *l == wgmmaAccLayout(t.getDimSize(0), t.getDimSize(1), numWarps);
}

/// Whether addresses `a` and `b` may derive from one pointer argument of the
/// kernel (WrittenParams' walk; conservative where it gives up).
bool mayShareBuffer(func::FuncOp kernel, Value a, Value b) {
  std::vector<bool> fromA = analysis::argumentsOfAddress(kernel, a),
                    fromB = analysis::argumentsOfAddress(kernel, b);
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (fromA[i] && fromB[i] &&
        isa<tile::PtrType>(getElementTypeOrSelf(kernel.getArgument(i).getType())))
      return true;
  return false;
}

bool usesValue(Operation *o, Value v) {
  bool used = false;
  o->walk([&](Operation *in) { used = used || llvm::is_contained(in->getOperands(), v); });
  return used;
}

} // namespace

std::optional<StagedLoop> matchStagedLoop(scf::ForOp op, const CompileOptions &opts,
                                          const Target &target, AxisInfoAnalysis &axis) {
  if (!isWgmmaTarget(target, opts.numWarps) || opts.numStages < 2 || matchDotLoop(op))
    return std::nullopt;
  Block *body = op.getBody();
  StagedLoop m;
  // Pointer tiles advanced by a uniform step, each step used only by the yield.
  llvm::SmallDenseSet<unsigned> advancing;
  for (unsigned i = 0; i < op.getNumRegionIterArgs(); ++i) {
    tile::AddPtrOp ap = pointerAdvance(op, i);
    if (!ap || ap->getBlock() != body || !ap->hasOneUse() || !isUniformStep(op, ap.getOffset()))
      continue;
    m.advancing.push_back({i, ap.getOffset()});
    advancing.insert(i);
    m.skipped.insert(ap);
  }
  auto stagedLoad = [&](tile::LoadOp ld) -> std::optional<unsigned> {
    for (auto [i, l] : llvm::enumerate(m.loads))
      if (l.load == ld)
        return unsigned(i);
    auto lt = cast<RankedTensorType>(ld.getType());
    int64_t eb = lt.getElementType().getIntOrFloatBitWidth() / 8, vec = 16 / eb;
    if (!isZeroSplat(ld.getOther()) || ld.getIsVolatile() || lt.getRank() != 2 ||
        lt.getNumElements() % (32 * opts.numWarps * vec))
      return std::nullopt;
    StagedLoad l;
    l.load = ld;
    AxisInfo pa = axis.get(ld.getPtr());
    if (pa.contiguity[1] >= vec)
      l.transposed = false;
    else if (pa.contiguity[0] >= vec)
      l.transposed = true;
    else // copied element by element (StageCopier), in the load's own orientation
      l.gathered = true;
    l.rows = lt.getDimSize(l.transposed ? 1 : 0);
    l.rowElems = lt.getDimSize(l.transposed ? 0 : 1);
    if ((l.rowElems * eb) % 16 || l.rows % 8)
      return std::nullopt;
    m.loads.push_back(l);
    return unsigned(m.loads.size() - 1);
  };
  // Atomics whose old values nobody reads (dQ's partial sums) may update
  // memory that no staged load reads: a pointer argument of their own.
  SmallVector<tile::AtomicRMWOp> atomics;
  for (Operation &o : body->without_terminator()) {
    auto at = dyn_cast<tile::AtomicRMWOp>(o);
    if (at && at.getResult().use_empty()) {
      atomics.push_back(at);
      continue;
    }
    // Only loads may touch memory: a store could alias a tile copied ahead.
    if (!isa<tile::LoadOp>(o) && !isMemoryEffectFree(&o))
      return std::nullopt;
    auto dot = dyn_cast<tile::DotOp>(o);
    if (!dot)
      continue;
    std::optional<WgmmaKind> kind = wgmmaKindOf(dot);
    if (!kind || !kind->half || !inWgmmaAccLayout(dot.getType(), opts.numWarps))
      return std::nullopt;
    StagedDot d;
    d.dot = dot;
    d.M = dot.getType().getDimSize(0);
    d.N = dot.getType().getDimSize(1);
    d.K = dot.getA().getType().getDimSize(1);
    if (d.K % 16 || d.N % 8 || d.N > 256)
      return std::nullopt;
    // B: load -> [convert] -> [trans] -> [convert] -> dot, each op but the
    // load used once.
    SmallVector<Operation *> chain;
    bool trans = false;
    Value v = dot.getB();
    tile::LoadOp ld;
    while (!ld) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body)
        return std::nullopt;
      if (auto l = dyn_cast<tile::LoadOp>(def)) {
        chain.push_back(def);
        ld = l;
        break;
      }
      auto cv = dyn_cast<tgpu::ConvertLayoutOp>(def);
      if (!cv && !trans && !chain.empty() && !isa<tile::TransOp>(def)) {
        // A tile computed in the loop (dS^T): its registers are stored into
        // a buffer of its own, N-major, before the dot.
        d.regsB = v;
        break;
      }
      chain.push_back(def);
      if (!def->hasOneUse())
        return std::nullopt;
      if (cv) {
        v = cv.getSrc();
      } else if (auto tr = dyn_cast<tile::TransOp>(def); tr && !trans) {
        trans = true;
        v = tr.getSrc();
      } else {
        return std::nullopt;
      }
    }
    if (d.regsB) {
      if (d.N * d.dot.getB().getType().getElementType().getIntOrFloatBitWidth() / 8 % 16)
        return std::nullopt;
    } else {
      std::optional<unsigned> li = stagedLoad(ld);
      if (!li)
        return std::nullopt;
      d.load = *li;
      const StagedLoad &l = m.loads[*li];
      // B is K x N: the load itself (K = its first axis) or its transpose.
      d.kMajorB = trans != l.transposed;
      if ((d.kMajorB ? l.rows != d.N || l.rowElems != d.K : l.rows != d.K || l.rowElems != d.N))
        return std::nullopt;
    }
    // A: invariant in the loop, or registers in the accumulator layout.
    Value a = dot.getA();
    if (auto cv = a.getDefiningOp<tgpu::ConvertLayoutOp>()) {
      if (cv->getBlock() == body) {
        if (!cv->hasOneUse())
          return std::nullopt;
        chain.push_back(cv);
      }
    }
    Value aSrc = stripConverts(a);
    // (In another layout, A is converted to it first, through shared memory:
    // the backward's P^T and dS^T, whose column statistics have no register
    // layout of the accumulator yet.)
    if (op.isDefinedOutsideOfLoop(aSrc))
      d.invariantA = aSrc;
    else
      d.regsA = aSrc;
    m.skipped.insert(chain.begin(), chain.end());
    m.skipped.insert(dot);
    m.dots.push_back(d);
  }
  if (m.dots.empty())
    return std::nullopt;
  // Every use of a staged load is on the way to a dot.
  for (StagedLoad &l : m.loads)
    for (Operation *u : l.load->getUsers())
      if (!m.skipped.contains(u))
        return std::nullopt;
  auto kernel = op->getParentOfType<func::FuncOp>();
  for (tile::AtomicRMWOp at : atomics)
    for (StagedLoad &l : m.loads)
      if (mayShareBuffer(kernel, at.getPtr(), l.load.getPtr()))
        return std::nullopt;
  // The staged loads' addresses: pure ops of the body that depend only on the
  // induction variable, advancing pointer tiles and values from outside.
  llvm::SmallPtrSet<Operation *, 32> slice;
  SmallVector<Value> work;
  for (StagedLoad &l : m.loads) {
    work.push_back(l.load.getPtr());
    if (l.load.getMask())
      work.push_back(l.load.getMask());
  }
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == body && arg != op.getInductionVar() &&
          !advancing.contains(arg.getArgNumber() - 1))
        return std::nullopt; // a carried value: not computable ahead
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def || !op->isAncestor(def))
      continue;
    if (def->getBlock() != body || def->getNumRegions() || !isMemoryEffectFree(def) ||
        m.skipped.contains(def))
      return std::nullopt;
    if (slice.insert(def).second)
      work.append(def->operand_begin(), def->operand_end());
  }
  for (Operation &o : body->without_terminator())
    if (slice.contains(&o))
      m.addressOps.push_back(&o);
  return m;
}

std::string StagedDotLoopEmitter::summary() {
  std::string s = "dot loop staged: ";
  for (size_t i = 0; i < m_.dots.size(); ++i) {
    StagedDot &d = m_.dots[i];
    s += (i ? "; " : "") + std::string("wgmma m64n") + std::to_string(d.N) + "k16 (A " +
         (d.invariantA ? "staged once" : "from registers") + ", B " +
         (d.regsB ? "stored from registers" : "read") + " " + (d.kMajorB ? "K-major" : "N-major") + ")";
  }
  int64_t transposed = llvm::count_if(m_.loads, [](const StagedLoad &l) { return l.transposed; });
  int64_t gathered = llvm::count_if(m_.loads, [](const StagedLoad &l) { return l.gathered; });
  // Gathered 1- and 2-byte elements are loaded and stored (StageCopier).
  bool allAsync = llvm::all_of(m_.loads, [](const StagedLoad &l) {
    return !l.gathered || cast<RankedTensorType>(l.load->getResult(0).getType()).getElementTypeBitWidth() == 32;
  });
  bool overlapped = planOverlap().has_value();
  std::string notes;
  if (transposed)
    notes += std::to_string(transposed) + " stored transposed";
  if (gathered)
    notes += (notes.empty() ? "" : ", ") + std::to_string(gathered) +
             " copied element by element: " + StageCopier::kGatheredReason;
  std::string how = !tma.empty() ? "by TMA (thread 0; tensor maps of rank " +
                                       std::to_string(2 + tma[0].map.outer.size()) + ") "
                    : allAsync ? "by cp.async "
                               : "";
  if (tma.empty() && !tmaWhyNot.empty())
    notes += (notes.empty() ? "" : ", ") + std::string("not by TMA: ") + tmaWhyNot;
  return s + "; " + std::to_string(m_.loads.size()) + " loaded tiles" +
         (notes.empty() ? "" : " (" + notes + ")") +
         " copied " + how + std::to_string(overlapped ? S - 2 : S - 1) + " iterations ahead (" +
         std::to_string(S) + " stages)" +
         (overlapped ? "; the second product overlaps the next iteration's softmax" : "") +
         (pingPong() ? "; two warpgroups take turns on the tensor cores (stages tracked by mbarriers)" : "");
}

Value StagedDotLoopEmitter::slot(size_t ring, Value j) {
  Value k = arith::RemUIOp::create(b_, loc, j, c32(S));
  return add(base, add(c32(rings[ring].offset), arith::MulIOp::create(b_, loc, k, c32(rings[ring].bytes))));
}

void StagedDotLoopEmitter::stageInvariant(size_t i) {
  StagedDot &d = m_.dots[i];
  const Staged &a = aStaged[i];
  Layout l = kl_.layoutOfValue(d.invariantA);
  SmallVector<Value> regs = kl_.materializeIn(d.invariantA, l, loc);
  StageCopier copier(kl_, b_, loc, d.dot.getA().getType().getElementType());
  auto ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  int64_t eb = d.dot.getA().getType().getElementType().getIntOrFloatBitWidth() / 8;
  for (int64_t s = 0; s < l.slots(); ++s) {
    ArrayRef<Value> c = kl_.coords(l, s);
    Value off = copier.swizzled(c[0], arith::MulIOp::create(b_, loc, c[1], c32(eb)), d.M, a.width);
    Value at = add(add(base, c32(a.offset)), off);
    LLVM::StoreOp::create(b_, loc, regs[s], LLVM::IntToPtrOp::create(b_, loc, ptr3, at), eb);
  }
}

void StagedDotLoopEmitter::stageRegistersB(size_t i) {
  StagedDot &d = m_.dots[i];
  const Staged &bs = bStaged[i];
  Type elemTy = d.dot.getB().getType().getElementType();
  int64_t eb = elemTy.getIntOrFloatBitWidth() / 8;
  Layout l = kl_.layoutOfValue(d.regsB);
  SmallVector<Value> regs = kl_.materializeIn(d.regsB, l, loc);
  StageCopier copier(kl_, b_, loc, elemTy);
  auto ptr3 = LLVM::LLVMPointerType::get(b_.getContext(), 3);
  Value at0 = add(base, c32(bs.offset));
  // An mma layout's slot pairs are adjacent columns: one 4-byte store each.
  int64_t step = l.mma && l.vec == 2 && eb == 2 ? 2 : 1;
  for (int64_t s = 0; s < l.slots(); s += step) {
    ArrayRef<Value> c = kl_.coords(l, s);
    Value off = copier.swizzled(c[0], arith::MulIOp::create(b_, loc, c[1], c32(eb)), d.K, bs.width);
    Value v = step == 2 ? kl_.packHalves(regs[s], regs[s + 1], loc) : regs[s];
    LLVM::StoreOp::create(b_, loc, v, LLVM::IntToPtrOp::create(b_, loc, ptr3, add(at0, off)), eb * step);
  }
  // Visible to the async proxy (wgmma), from every warp: each warpgroup
  // reads rows the others wrote. The buffer is written again only after the
  // next iteration's first barrier, when every wgmma reading it has waited.
  asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
  kl_.barrier(loc);
}

bool StagedDotLoopEmitter::issueIteration(Value j, Value fullBar) {
  Value cond = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::slt, j, trips.n);
  scf::IfOp ifOp = kl_.makeIf(cond, false, loc);
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointToStart(ifOp.thenBlock());
  // Ping-pong: the slot's previous iteration released by every warp first
  // (at once for a slot's first use), then this thread's copies complete
  // one arrival on its `full` barrier.
  if (fullBar && !tma.empty()) { // thread 0 alone: TMA (StagedDotLoopTma.cpp)
    inIf(eq(kl_.tid(), 0), [&] {
      kl_.mbarrierWait(mbar(1, slotIndex(j)), parity(j, 1), loc);
      issueTmaBoxes(j, fullBar);
    });
    return true;
  }
  if (fullBar)
    kl_.mbarrierWait(mbar(1, slotIndex(j)), parity(j, 1), loc);
  // Ping-pong issues them in the middle of the body: the iteration's own
  // bindings of what is rebound here come back afterwards.
  SmallVector<std::pair<Value, Lowered>> saved;
  auto save = [&](Value v) { saved.push_back({v, vals_[v]}); };
  if (fullBar) {
    save(op_.getInductionVar());
    for (const auto &a : advances)
      save(op_.getRegionIterArgs()[a.index]);
    for (Operation *o : m_.addressOps)
      for (Value r : o->getResults())
        save(r);
  }
  llvm::scope_exit restore([&] {
    for (auto &[v, l] : saved)
      vals_[v] = l;
  });
  vals_.pushScope();
  kl_.bindScalar(op_.getInductionVar(), kl_.inductionAt(trips, j, loc));
  bindAdvances(op_.getRegionIterArgs(), j);
  bool ok = true;
  for (Operation *o : m_.addressOps)
    ok = ok && kl_.lowerOp(o);
  for (size_t i = 0; ok && i < m_.loads.size(); ++i) {
    const Ring &r = rings[i];
    StagedLoad &l = m_.loads[i];
    StageCopier copier(kl_, b_, loc, cast<RankedTensorType>(l.load.getType()).getElementType());
    copier.keepChunkLoopsRolled();
    ok = copier.issueCopy(l.load, slot(i, j), copier.swizzledIn(r.rows, r.width), Value(), 0,
                          l.transposed);
  }
  vals_.popScope();
  if (ok && fullBar)
    asmCall({}, {fullBar}, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];", "r,~{memory}");
  return ok;
}

Value StagedDotLoopEmitter::desc(Value addr, int64_t high) {
  return smemDescriptor(b_, loc, addr, high);
}

SmallVector<Value> StagedDotLoopEmitter::packedA(size_t i) {
  StagedDot &d = m_.dots[i];
  SmallVector<Value> aPacked;
  if (!d.regsA)
    return aPacked;
  // A from registers: the product's 16-bit registers, packed in pairs; the
  // k16 step kk of row block t is wgmma's four A registers (mma.sync's A
  // fragment: the two n8 tiles of those columns).
  SmallVector<Value> regs = kl_.materializeIn(d.regsA, wgmmaAccLayout(d.M, d.K, opts_.numWarps), loc);
  for (size_t k = 0; k + 1 < regs.size(); k += 2)
    aPacked.push_back(kl_.packHalves(regs[k], regs[k + 1], loc));
  return aPacked;
}

SmallVector<Value> StagedDotLoopEmitter::issueDot(size_t i, Value iter, SmallVector<Value> accs,
                                                  ArrayRef<Value> aPacked, bool zeroAcc) {
  StagedDot &d = m_.dots[i];
  Type ea = d.dot.getA().getType().getElementType();
  Layout accLay = wgmmaAccLayout(d.M, d.N, opts_.numWarps);
  const int64_t T = accLay.tm, RB = d.N / 2;
  const int64_t WB = d.regsB ? bStaged[i].width : rings[d.load].width, WA = aStaged[i].width;
  // K-major operands: column blocks of W bytes per row, the leading offset
  // unused. N-major B: column blocks K * W bytes apart (its rows are K).
  int64_t highA = d.invariantA ? descHigh(16, 8 * WA, WA) : 0;
  int64_t highB = d.kMajorB ? descHigh(16, 8 * WB, WB) : descHigh(d.K * WB, 8 * WB, WB);
  Value sB = d.regsB ? add(base, c32(bStaged[i].offset)) : slot(d.load, iter);
  Value sA;
  if (d.invariantA) { // the warpgroup's T row blocks of 64
    Value warp = arith::ShRUIOp::create(b_, loc, kl_.tid(), c32(5));
    Value wg = arith::ShRUIOp::create(b_, loc, warp, c32(2));
    sA = add(add(base, c32(aStaged[i].offset)), arith::MulIOp::create(b_, loc, wg, c32(T * 64 * WA)));
  }
  std::string ty = wgmmaTypeName(ea);
  int64_t nIn = d.regsA ? 6 : 3; // A (4 registers or a descriptor), B's descriptor, the flag
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(RB + nIn - 1) +
                     ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(d.N) + "k16.f32." + ty +
                     "." + ty + " {";
  std::string cons;
  for (int64_t k = 0; k < RB; ++k) {
    text += "$" + std::to_string(k) + (k + 1 < RB ? "," : "}, ");
    cons += "=f,";
  }
  if (d.regsA)
    text += "{$" + std::to_string(RB) + ",$" + std::to_string(RB + 1) + ",$" + std::to_string(RB + 2) +
            ",$" + std::to_string(RB + 3) + "}, $" + std::to_string(RB + 4) + ", p, 1, 1, ";
  else
    text += "$" + std::to_string(RB) + ", $" + std::to_string(RB + 1) + ", p, 1, 1, 0, ";
  text += std::string(d.kMajorB ? "0" : "1") + ";\n}";
  cons += d.regsA ? "r,r,r,r,l,r" : "l,l,r";
  for (int64_t k = 0; k < RB; ++k)
    cons += "," + std::to_string(k);
  cons += ",~{memory}";

  asmCall({}, {}, "wgmma.fence.sync.aligned;", "~{memory}");
  for (int64_t kk = 0; kk < d.K / 16; ++kk) {
    int64_t kb = kk * 32; // bytes of K
    Value bAddr = add(sB, c32(d.kMajorB ? kb / WB * (d.N * WB) + kb % WB : kk * 16 * WB));
    Value bDesc = desc(bAddr, highB);
    for (int64_t t = 0; t < T; ++t) {
      SmallVector<Value> operands;
      if (d.regsA) {
        int64_t p0 = t * (d.K / 4) + kk * 4;
        operands.append(aPacked.begin() + p0, aPacked.begin() + p0 + 4);
      } else {
        operands.push_back(desc(add(sA, c32(kb / WA * (d.M * WA) + kb % WA + t * 64 * WA)), highA));
      }
      operands.push_back(bDesc);
      operands.push_back(c32(zeroAcc && kk == 0 ? 0 : 1));
      operands.append(accs.begin() + t * RB, accs.begin() + (t + 1) * RB);
      auto mma = asmCall(SmallVector<Type>(RB, b_.getF32Type()), operands, text, cons);
      for (int64_t k = 0; k < RB; ++k)
        accs[t * RB + k] = LLVM::ExtractValueOp::create(b_, loc, mma.getResult(0), ArrayRef<int64_t>{k});
    }
  }
  asmCall({}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
  return accs;
}

SmallVector<Value> StagedDotLoopEmitter::waitGroup(ArrayRef<Value> accs, int64_t pending) {
  // The accumulators pass through the wait, so that no use of them moves
  // above it.
  const int64_t R = accs.size();
  std::string wcons;
  for (int64_t k = 0; k < R; ++k)
    wcons += "=f,";
  for (int64_t k = 0; k < R; ++k)
    wcons += std::to_string(k) + ",";
  auto w = asmCall(SmallVector<Type>(R, b_.getF32Type()), accs,
                   "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";", wcons + "~{memory}");
  SmallVector<Value> out;
  for (int64_t k = 0; k < R; ++k)
    out.push_back(LLVM::ExtractValueOp::create(b_, loc, w.getResult(0), ArrayRef<int64_t>{k}));
  return out;
}

void StagedDotLoopEmitter::bindProduct(size_t i, ArrayRef<Value> regs) {
  StagedDot &d = m_.dots[i];
  Lowered l;
  l.kind = Lowered::Dist;
  l.type = d.dot.getType();
  l.layout = wgmmaAccLayout(d.M, d.N, opts_.numWarps);
  l.regs.assign(regs.begin(), regs.end());
  vals_[d.dot.getResult()] = l;
}

bool StagedDotLoopEmitter::emitDot(size_t i, Value iter) {
  StagedDot &d = m_.dots[i];
  if (d.regsB)
    stageRegistersB(i);
  Layout accLay = wgmmaAccLayout(d.M, d.N, opts_.numWarps);
  SmallVector<Value> accs = kl_.materializeIn(d.dot.getAcc(), accLay, loc);
  bindProduct(i, waitGroup(issueDot(i, iter, accs, packedA(i), isZeroSplat(d.dot.getAcc())), 0));
  return true;
}

std::optional<StagedDotLoopEmitter::Overlap> StagedDotLoopEmitter::planOverlap() const {
  if (S < 3 || m_.dots.size() != 2)
    return std::nullopt;
  StagedDot &first = m_.dots[0], &second = m_.dots[1];
  if (!first.invariantA || first.regsB || !second.regsA || second.regsB ||
      !first.dot->isBeforeInBlock(second.dot))
    return std::nullopt;
  // While the softmax runs, a thread holds S, the accumulator and P at once.
  // Beyond 128 registers of them the overlap alone costs more than it hides
  // (head dim 128 in 128 x 128 blocks: 160, 1-4% slower on an H200); at head
  // dim 64 (128 or fewer) it was 1-3% faster (bench/NOTES.md, sessions 17
  // and 28). With two warpgroups taking turns (pingPong) it is what lets one
  // warpgroup's products run under the other's softmax: 11-13% faster at 160.
  int64_t live = wgmmaAccLayout(first.M, first.N, opts_.numWarps).slots() +
                 wgmmaAccLayout(second.M, second.N, opts_.numWarps).slots() +
                 wgmmaAccLayout(second.M, second.K, opts_.numWarps).slots() / 2;
  if (live > (twoWarpgroups() ? 160 : 128))
    return std::nullopt;
  scf::ForOp loop = op_; // a handle: its accessors are not const
  Block *body = loop.getBody();
  if (llvm::any_of(*body, [](Operation &o) { return isa<tile::AtomicRMWOp>(o); }))
    return std::nullopt;
  // The second product goes only to the next iteration, as its accumulator.
  Value r = second.dot.getResult();
  if (!r.hasOneUse() || !isa<scf::YieldOp>(r.use_begin()->getOwner()))
    return std::nullopt;
  Overlap ov;
  ov.accArg = r.use_begin()->getOperandNumber();
  Value acc = loop.getRegionIterArgs()[ov.accArg];
  // That accumulator is complete only after the first product is issued.
  for (Operation &o : *body) {
    if (&o == first.dot.getOperation())
      break;
    if (usesValue(&o, acc))
      return std::nullopt;
  }
  return ov;
}

void StagedDotLoopEmitter::placeBuffers() {
  int64_t at = 0;
  for (Ring &r : rings) {
    r.offset = at;
    at += S * r.bytes;
  }
  for (SmallVector<Staged> *list : {&aStaged, &bStaged})
    for (Staged &a : *list)
      if (a.bytes) {
        a.offset = at;
        at += a.bytes;
      }
  barsAt = at;
}

bool StagedDotLoopEmitter::issueAhead(int64_t ahead, bool pp) {
  // One commit group per iteration, even an empty one, so that wait_group
  // counts iterations (ping-pong: the stages' `full` mbarriers instead).
  for (int64_t p = 0; p < ahead; ++p) {
    if (!issueIteration(c32(p), pp ? mbar(0, c32(p % S)) : Value()))
      return false;
    if (!pp)
      asmCall({}, {}, "cp.async.commit_group;", "~{memory}");
  }
  if (pp)
    startPingPong();
  return true;
}

bool StagedDotLoopEmitter::emit() {
  // An invariant A that the previous loop of this block staged in the same
  // form (FlashAttention's Q, for its second forward loop) is still in shared
  // memory if no bytes of it were handed out since; then, if this loop's
  // buffer puts it at the same place, it is not stored again, and its
  // registers need not live through the previous loop.
  SmallVector<std::optional<SharedMemoryAllocator::KeptTile>> prior;
  for (size_t i = 0; i < m_.dots.size(); ++i)
    prior.push_back(m_.dots[i].invariantA
                        ? smem_.kept(m_.dots[i].invariantA.getAsOpaquePointer(),
                                     op_->getBlock(), stagedForm(i))
                        : std::nullopt);
  // A temporary, free again after the loop (for the next one, as in a causal
  // attention's two loops); written after a barrier, when every warp is done
  // with what used it before.
  int64_t off = smem_.allocateTemp(bytes(), 1024);
  kl_.barrier(loc);
  placeBuffers();
  base = LLVM::PtrToIntOp::create(b_, loc, i32, kl_.smemBase(off, loc));
  trips = kl_.loopTrips(op_, loc);
  std::optional<Overlap> ov = planOverlap();
  const bool pp = pingPong();
  if (pp && !initPingPong())
    return false;
  // Copies run `ahead` iterations ahead. Overlapped, one less: iteration j's
  // copies go to the slot of j - 2, as j - 1's second product reads V's slot
  // of j - 1 until iteration j waits for it.
  const int64_t ahead = ov ? S - 2 : S - 1;

  for (size_t i = 0; i < m_.dots.size(); ++i)
    if (m_.dots[i].invariantA &&
        !(prior[i] && prior[i]->offset == off + aStaged[i].offset &&
          prior[i]->bytes == aStaged[i].bytes))
      stageInvariant(i);
  if (!issueAhead(ahead, pp))
    return false;

  // The loop, carrying the source loop's values in their layouts; overlapped,
  // the accumulator before the second product is added (that product is
  // issued in the next iteration) and the second product's A registers (P).
  SmallVector<std::optional<Layout>> layouts = kl_.carriedLayouts(op_);
  auto layoutPtr = [&](size_t k) -> const Layout * { return layouts[k] ? &*layouts[k] : nullptr; };
  SmallVector<Value> inits;
  size_t accPos = 0; // overlapped: where the accumulator's registers start in `inits`
  for (auto [k, v] : llvm::enumerate(op_.getInitArgs()))
    if (!isAdvancing(k)) { // bound per iteration, not carried
      if (ov && k == ov->accArg)
        accPos = inits.size();
      kl_.flatten(v, inits, loc, layoutPtr(k));
    }
  int64_t nP = 0;
  Layout secondLay;
  if (ov) {
    StagedDot &second = m_.dots[1];
    secondLay = wgmmaAccLayout(second.M, second.N, opts_.numWarps);
    nP = wgmmaAccLayout(second.M, second.K, opts_.numWarps).slots() / 2;
    inits.append(nP, c32(0));
  }
  auto loop = scf::ForOp::create(b_, loc, c32(0), trips.n, c32(1), inits);
  // Overlapped: the second product of iteration j - 1 (its accumulator and
  // P in `carried`), issued on V's slot of j - 1; `carried` passes through
  // when j is 0 (an empty commit group keeps the count of groups).
  auto secondProduct = [&](Value j, ValueRange carried, bool wait) {
    SmallVector<Value> acc = llvm::to_vector(carried.slice(accPos, secondLay.slots()));
    SmallVector<Value> p = llvm::to_vector(carried.take_back(nP));
    Value has = arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::sgt, j, c32(0));
    auto ifOp = scf::IfOp::create(b_, loc, SmallVector<Type>(acc.size(), b_.getF32Type()), has, true, true);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    SmallVector<Value> r = issueDot(1, arith::SubIOp::create(b_, loc, j, c32(1)), acc, p, false);
    scf::YieldOp::create(b_, loc, wait ? waitGroup(r, 0) : r);
    b_.setInsertionPointToStart(ifOp.elseBlock());
    if (!wait)
      asmCall({}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
    scf::YieldOp::create(b_, loc, acc);
    return SmallVector<Value>(ifOp.getResults().begin(), ifOp.getResults().end());
  };
  {
    OpBuilder::InsertionGuard g(b_);
    kl_.enterLoopBody(loop);
    Value it = loop.getInductionVar();
    // Stage `it` has landed for this thread; after the barrier, for every
    // thread, and every warp is done with the slot that the copies of
    // iteration it + ahead overwrite (iteration it - 1's, or it - 2's when
    // overlapped: their wgmmas were waited for).
    if (pp) {
      // Every copy of stage `it` has landed (the copies of the next stages
      // are issued after this warpgroup's products, below).
      waitStageFull(it);
    } else {
      asmCall({}, {}, "cp.async.wait_group " + std::to_string(ahead - 1) + ";", "~{memory}");
      asmCall({}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
      kl_.barrier(loc);
      if (!issueIteration(add(it, c32(ahead))))
        return false;
      asmCall({}, {}, "cp.async.commit_group;", "~{memory}");
    }
    kl_.pushScope();
    kl_.bindScalar(op_.getInductionVar(), kl_.inductionAt(trips, it, loc));
    size_t pos = 0;
    ValueRange args = loop.getRegionIterArgs();
    for (auto [k, a] : llvm::enumerate(op_.getRegionIterArgs()))
      if (!isAdvancing(k))
        kl_.bindFlat(a, args, pos, layoutPtr(k));
    bindAdvances(op_.getRegionIterArgs(), it);
    // Overlapped: the accumulator in flight (the second product of it - 1)
    // until something reads it; the values carried to the next iteration.
    std::optional<SmallVector<Value>> inFlight;
    SmallVector<Value> nextAcc, nextP;
    auto landAcc = [&] {
      SmallVector<Value> w = waitGroup(*inFlight, 0);
      size_t p0 = 0;
      kl_.bindFlat(op_.getRegionIterArgs()[ov->accArg], w, p0, layoutPtr(ov->accArg));
      inFlight.reset();
      if (pp)
        releaseStage(it);
    };
    Block &src = *op_.getBody();
    for (Operation &o : src.without_terminator()) {
      bool ok = true;
      if (inFlight && usesValue(&o, op_.getRegionIterArgs()[ov->accArg]))
        landAcc();
      auto dot = dyn_cast<tile::DotOp>(o);
      if (dot && ov && dot == m_.dots[0].dot) {
        // FA3's order: S of this iteration, then P V of the previous one,
        // whose tensor-core work overlaps this iteration's softmax.
        StagedDot &first = m_.dots[0];
        Layout sLay = wgmmaAccLayout(first.M, first.N, opts_.numWarps);
        SmallVector<Value> acc0 = kl_.materializeIn(first.dot.getAcc(), sLay, loc);
        if (pp)
          asmCall({}, {ownTurn}, "bar.sync $0, 256;", "r,~{memory}");
        SmallVector<Value> s = issueDot(0, it, acc0, {}, isZeroSplat(first.dot.getAcc()));
        inFlight = secondProduct(it, args, /*wait=*/false);
        if (pp) {
          asmCall({}, {otherTurn}, "bar.arrive $0, 256;", "r,~{memory}");
          Value next = add(it, c32(ahead));
          ok = issueIteration(next, mbar(0, slotIndex(next)));
        }
        bindProduct(0, waitGroup(s, 1));
      } else if (dot && ov && dot == m_.dots[1].dot) {
        if (inFlight)
          landAcc();
        nextAcc = kl_.materializeIn(dot.getAcc(), secondLay, loc);
        nextP = packedA(1);
      } else if (dot && m_.skipped.contains(&o)) {
        for (size_t i = 0; i < m_.dots.size(); ++i)
          if (m_.dots[i].dot == dot)
            ok = emitDot(i, it);
      } else if (!m_.skipped.contains(&o)) {
        ok = kl_.lowerOp(&o);
      }
      if (!ok) {
        kl_.popScope();
        return false;
      }
    }
    SmallVector<Value> yields;
    for (auto [k, v] : llvm::enumerate(src.getTerminator()->getOperands())) {
      if (isAdvancing(k))
        continue;
      if (ov && k == ov->accArg)
        yields.append(nextAcc);
      else
        kl_.flatten(v, yields, loc, layoutPtr(k));
    }
    yields.append(nextP);
    scf::YieldOp::create(b_, loc, yields);
    kl_.popScope();
  }
  size_t pos = 0;
  ValueRange results = loop.getResults();
  SmallVector<Value> lastAcc; // overlapped: the last iteration's second product
  if (ov)
    lastAcc = secondProduct(trips.n, results, /*wait=*/true);
  if (pp) {
    finishPingPong();
  } else {
    asmCall({}, {}, "cp.async.wait_group 0;", "~{memory}");
  }
  smem_.releaseTemp(off, bytes());
  for (size_t i = 0; i < m_.dots.size(); ++i)
    if (m_.dots[i].invariantA)
      smem_.keep({m_.dots[i].invariantA.getAsOpaquePointer(), op_->getBlock(), stagedForm(i),
                  off + aStaged[i].offset, aStaged[i].bytes});
  for (auto [k, r] : llvm::enumerate(op_.getResults())) {
    if (isAdvancing(k))
      continue;
    if (ov && k == ov->accArg) {
      size_t p0 = 0;
      kl_.bindFlat(r, lastAcc, p0, layoutPtr(k));
      pos += lastAcc.size();
    } else {
      kl_.bindFlat(r, results, pos, layoutPtr(k));
    }
  }
  bindAdvances(op_.getResults(), trips.n);
  return true;
}

bool KernelLowering::stagesDotLoop(scf::ForOp op) {
  return matchStagedLoop(op, opts_, target_, axis_).has_value();
}

std::optional<bool> KernelLowering::lowerStagedDotLoop(scf::ForOp op) {
  std::optional<StagedLoop> m = matchStagedLoop(op, opts_, target_, axis_);
  if (!m)
    return std::nullopt;
  int64_t need = 0;
  for (int64_t stages = std::min(opts_.numStages, 4); stages >= 2; --stages) {
    StagedDotLoopEmitter emitter(*this, b_, smem_, vals_, opts_, op, *m, stages);
    need = emitter.bytes();
    if (!smem_.fitsTemp(need, 1024))
      continue;
    if (!emitter.planAdvances()) {
      remark(op, "dot loop not staged: a carried pointer tile does not start from index arithmetic");
      return std::nullopt;
    }
    emitter.planTma();
    remark(op, emitter.summary());
    return emitter.emit();
  }
  remark(op, "dot loop not staged: 2 stages need " + std::to_string(need) +
                 " bytes of shared memory, more than is left under the limit of " +
                 std::to_string(smem_.limit()));
  return std::nullopt;
}

} // namespace tessera::lowering::detail
