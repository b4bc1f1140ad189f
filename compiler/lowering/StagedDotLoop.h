// The staged dot loop (StagedDotLoop.cpp): the parts of a matched loop and
// the emitter of its stages, shared with its ping-pong pieces
// (StagedDotLoopPingPong.cpp).
#ifndef TESSERA_LOWERING_STAGEDDOTLOOP_H
#define TESSERA_LOWERING_STAGEDDOTLOOP_H

#include "DotLoopEmitter.h" // descHigh, smemDescriptor
#include "KernelLowering.h"
#include "StageCopier.h"

#include <functional>
#include <optional>
#include <string>

namespace tessera::lowering::detail {

/// A tile loaded in the loop that only dots read (as B, possibly through
/// trans): copied ahead into a ring of stages. Its stage holds rows of the
/// tile's non-contiguous axis, each row the contiguous one; a tile loaded
/// contiguous along its first axis (`transposed`, e.g. FlashAttention
/// backward's Q^T) is stored transposed.
struct StagedLoad {
  tile::LoadOp load;
  bool transposed = false;
  bool gathered = false; // contiguous along neither axis: an address per element
  int64_t rows = 0, rowElems = 0; // the stage's shape
};

/// A dot of the loop computed by wgmma.
struct StagedDot {
  tile::DotOp dot;
  unsigned load = 0;    // its B operand's StagedLoad
  bool kMajorB = false; // B's stage rows are N (K contiguous), else K
  Value invariantA;     // A defined outside the loop (staged once), else null
  Value regsA;          // A from registers: the tile before its conversion
  Value regsB;          // B computed in the loop: stored N-major before the dot
  int64_t M = 0, N = 0, K = 0;
};

/// The parts of a loop that the staged lowering needs.
struct StagedLoop {
  SmallVector<StagedLoad> loads;
  SmallVector<StagedDot> dots;
  // Ops of the body that the lowering does not lower: the staged loads, the
  // trans / convert_layout ops between them (and the A operands) and the
  // dots, and the steps of the advancing pointer tiles.
  llvm::SmallPtrSet<Operation *, 16> skipped;
  // Body ops that the staged loads' addresses and masks depend on, in order.
  SmallVector<Operation *> addressOps;
  // Iter-arg index -> the uniform offset tile a pointer tile advances by: not
  // carried, but bound to its value in each iteration.
  SmallVector<std::pair<unsigned, Value>> advancing;
};

/// The staged form of `op`, or nothing.
std::optional<StagedLoop> matchStagedLoop(scf::ForOp op, const CompileOptions &opts,
                                          const Target &target, AxisInfoAnalysis &axis);

/// Emits the staged loop (see StagedDotLoop.cpp's file comment).
class StagedDotLoopEmitter {
public:
  StagedDotLoopEmitter(KernelLowering &kl, OpBuilder &b, SharedMemoryAllocator &smem,
                       LoweredValues &vals, const CompileOptions &opts, scf::ForOp op,
                       StagedLoop &m, int64_t stages)
      : kl_(kl), b_(b), smem_(smem), vals_(vals), opts_(opts), op_(op), m_(m), loc(op.getLoc()),
        i32(b.getI32Type()), S(stages) {
    for (StagedLoad &l : m_.loads) {
      Ring r;
      auto lt = cast<RankedTensorType>(l.load.getType());
      r.eb = lt.getElementType().getIntOrFloatBitWidth() / 8;
      r.rows = l.rows;
      r.width = std::min<int64_t>(128, l.rowElems * r.eb);
      r.bytes = roundUp(lt.getNumElements() * r.eb, 1024);
      rings.push_back(r);
    }
    for (StagedDot &d : m_.dots) {
      Staged a, bs;
      int64_t eb = d.dot.getA().getType().getElementType().getIntOrFloatBitWidth() / 8;
      if (d.invariantA) {
        a.width = std::min<int64_t>(128, d.K * eb);
        a.bytes = roundUp(d.M * d.K * eb, 1024);
      }
      if (d.regsB) { // K rows of N, as a loaded N-major B's stage
        bs.width = std::min<int64_t>(128, d.N * eb);
        bs.bytes = roundUp(d.K * d.N * eb, 1024);
      }
      aStaged.push_back(a);
      bStaged.push_back(bs);
    }
  }

  /// Shared memory for the rings and the staged A operands.
  int64_t bytes() const {
    int64_t total = 0;
    for (const Ring &r : rings)
      total += S * r.bytes;
    for (const Staged &a : aStaged)
      total += a.bytes;
    for (const Staged &bs : bStaged)
      total += bs.bytes;
    return total + (pingPong() ? 16 * S : 0); // a full and an empty mbarrier a stage
  }

  /// Two consumer warpgroups take turns on the tensor cores (FA3's ping-pong):
  /// each issues S_j and P V of j - 1 only after the other has issued its
  /// pair, so one warpgroup's softmax runs under the other's products. The
  /// stages are then tracked by mbarriers (a `full` one completed by every
  /// thread's cp.async, an `empty` one by every warp once its products read
  /// the stage) instead of a block barrier an iteration, which would keep the
  /// warpgroups in step. Needs the overlapped order.
  bool pingPong() const {
    return twoWarpgroups() && planOverlap().has_value();
  }
  // Two consumer warpgroups of 64 rows each (8 warps, 128-row blocks).
  bool twoWarpgroups() const {
    return opts_.numWarps == 8 && !m_.dots.empty() && m_.dots[0].M == 128;
  }

  bool emit();
  std::string summary();

  /// Ping-pong on sm_90a: when a tensor map loads every staged tile
  /// (analysis/TensorMapAnalysis.h, with outer dimensions), thread 0 issues
  /// each stage's boxes, and the consumers issue no copies at all
  /// (StagedDotLoopTma.cpp). Decides `tma`, or says why not in tmaWhyNot.
  void planTma();
  std::string tmaWhyNot;

  /// FlashAttention's forward loop (S = Q K^T, a softmax, O += P V) with its
  /// products overlapped, FA3's way: iteration j issues S_j, then P V of
  /// iteration j - 1, and computes the softmax of S_j while that second
  /// product runs; the accumulator is waited for where the body first reads
  /// it (its rescaling). Needs 3 stages (the copies run one iteration less
  /// ahead) and registers to spare.
  struct Overlap {
    unsigned accArg = 0; // the iter arg that the second product accumulates
  };
  std::optional<Overlap> planOverlap() const;

private:
  struct Ring {
    int64_t eb = 2, rows = 0, width = 0, bytes = 0;
    int64_t offset = 0; // from the buffer's start
  };
  struct Staged {
    int64_t width = 0, bytes = 0, offset = 0;
  };
  static int64_t roundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
  Value c32(int64_t v) { return kl_.i32c(v, loc); }
  LLVM::InlineAsmOp asmCall(TypeRange results, ValueRange operands, StringRef text,
                            StringRef constraints) {
    return kl_.sideEffectAsm(results, operands, text, constraints, loc);
  }
  Value add(Value a, Value b) { return arith::AddIOp::create(b_, loc, a, b); }

  void stageInvariant(size_t i);
  // What dot i's staged A bytes depend on besides the value: its shape, the
  // swizzle's row width and the element size.
  int64_t stagedForm(size_t i) const {
    const StagedDot &d = m_.dots[i];
    int64_t eb = getElementTypeOrSelf(d.invariantA.getType()).getIntOrFloatBitWidth() / 8;
    return ((d.M * 65536 + d.K) * 1024 + aStaged[i].width) * 16 + eb;
  }
  // Stores dot i's B (computed in the loop) into its buffer for the wgmma.
  void stageRegistersB(size_t i);
  // Lowers the staged loads' address arithmetic for iteration j (i32) and
  // issues their copies into their slots, when j < n.
  bool issueIteration(Value j, Value fullBar = Value());
  // TMA: each staged load's map and (once added) its parameter; empty when
  // the copies are cp.async.
  struct TmaLoad {
    analysis::TensorMapOperand map;
    Value param;
  };
  SmallVector<TmaLoad, 2> tma;
  bool addTensorMaps();
  // Thread 0: expects iteration j's bytes on `fullBar` and issues its boxes.
  void issueTmaBoxes(Value j, Value fullBar);
  // Ping-pong: stage `slot`'s full (0) or empty (1) mbarrier.
  Value mbar(int which, Value slotIndex) { return stageMbarrier(b_, loc, base, barsAt, which, S, slotIndex); }
  Value slotIndex(Value j) { return stageSlot(b_, loc, j, S); }
  Value parity(Value j, int64_t bias) { return stageParity(b_, loc, j, S, bias); }
  int64_t barsAt = 0;
  // The rings, then the staged operands, then (ping-pong) the mbarriers, at
  // their offsets in the loop's buffer.
  void placeBuffers();
  // Iterations 0 .. ahead-1 in flight before the loop.
  bool issueAhead(int64_t ahead, bool pp);
  // This thread's warpgroup (0 or 1) and the named barriers it waits on
  // (2 + warpgroup) and arrives on (the other's) around its products.
  Value wg, ownTurn, otherTurn;
  // Ping-pong's set-up (the mbarriers, after the buffer's barrier), its
  // start (Q visible to every wgmma; warpgroup 0 goes first), the release
  // of iteration it - 1's stage once its P V has landed, and the end
  // (warpgroup 0's last turn; the mbarriers invalidated).
  bool initPingPong(); // false: a tensor map's parameter could not be added
  // Every copy of iteration `it`'s stage has landed, visible to wgmma.
  void waitStageFull(Value it);
  void startPingPong();
  void releaseStage(Value it);
  void finishPingPong();
  // Runs `body` in an scf.if on `cond` (at the current point).
  void inIf(Value cond, const std::function<void()> &body) {
    scf::IfOp ifOp = kl_.makeIf(cond, false, loc);
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }
  Value eq(Value a, int64_t v) { return arith::CmpIOp::create(b_, loc, arith::CmpIPredicate::eq, a, c32(v)); }
  Value slot(size_t ring, Value j);
  // The wgmmas of dot i on iteration `iter`'s stage; binds its result.
  bool emitDot(size_t i, Value iter);
  // Dot i's A registers (regsA), packed in pairs as wgmma reads them.
  SmallVector<Value> packedA(size_t i);
  // Issues and commits dot i's wgmmas on `iter`'s stage, accumulating into
  // `accs`; returns the accumulators, in flight until a wait.
  SmallVector<Value> issueDot(size_t i, Value iter, SmallVector<Value> accs, ArrayRef<Value> aPacked,
                              bool zeroAcc);
  // wgmma.wait_group `pending` with `accs` passed through it.
  SmallVector<Value> waitGroup(ArrayRef<Value> accs, int64_t pending);
  void bindProduct(size_t i, ArrayRef<Value> regs);
  Value desc(Value addr, int64_t high);

  KernelLowering &kl_;
  OpBuilder &b_;
  SharedMemoryAllocator &smem_;
  LoweredValues &vals_;
  const CompileOptions &opts_;
  scf::ForOp op_;
  StagedLoop &m_;
  const Location loc;
  const Type i32;
  const int64_t S; // stages of every ring
  SmallVector<Ring> rings;
  SmallVector<Staged> aStaged, bStaged;
  Value base;          // i32 shared address of the buffers
  KernelLowering::LoopTrips trips; // the source loop's bounds and trip count
  SmallVector<KernelLowering::AdvancingTile> advances;
  bool isAdvancing(unsigned k) const {
    return llvm::any_of(advances, [&](const auto &a) { return a.index == k; });
  }
  // Binds the advancing pointer tiles (iter args, or results) at step j.
  void bindAdvances(ValueRange to, Value j) {
    for (const auto &a : advances)
      kl_.bindAdvanced(to[a.index], a, j, loc);
  }
public:
  // The advancing tiles' starts; false (nothing emitted that matters) when
  // one does not start from index arithmetic.
  bool planAdvances() {
    for (auto [k, st] : m_.advancing) {
      std::optional<KernelLowering::AdvancingTile> a = kl_.advancingTile(op_, k, st, loc);
      if (!a)
        return false;
      advances.push_back(*a);
    }
    return true;
  }
};

} // namespace tessera::lowering::detail

#endif
