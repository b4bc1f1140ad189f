// DotLoopEmitter: emits the software pipeline of one matched dot loop
// (PipelinedDotLoop.cpp): the stage buffers and copies, the wgmma / mma.sync
// loop in which every warp copies and multiplies, and the pieces defined in
// TransposedTf32Dot.cpp (tf32 as C^T = B^T A^T) and WarpSpecializedDotLoop.cpp
// (a producer warpgroup and mbarrier stages; persistent tile loops).
#ifndef TESSERA_LOWERING_DOTLOOPEMITTER_H
#define TESSERA_LOWERING_DOTLOOPEMITTER_H

#include "KernelLowering.h"
#include "StageCopier.h"
#include "analysis/ComputedOriginMap.h"
#include "analysis/TensorMapAnalysis.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace tessera::lowering::detail {

/// Mode field of a wgmma shared-memory descriptor for a swizzle width in bytes.
inline int64_t swizzleMode(int64_t bytes) { return bytes == 128 ? 1 : bytes == 64 ? 2 : 3; }

/// Descriptor constant parts: leading/stride byte offsets and swizzle mode.
inline int64_t descHigh(int64_t lbo, int64_t sbo, int64_t W) {
  return ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | swizzleMode(W) << 62;
}

/// A wgmma shared-memory descriptor: the address field of `addr` (an i32
/// shared-memory address) joined to the constant `high` part (descHigh).
inline Value smemDescriptor(OpBuilder &b, Location loc, Value addr, int64_t high) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value field = arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, addr, arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, 4))),
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, 0x3FFF)));
  return arith::OrIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, field),
                              arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(high)));
}

/// Running iteration j's slot in a ring of S stages.
inline Value stageSlot(OpBuilder &b, Location loc, Value j, int64_t S) {
  return arith::RemUIOp::create(b, loc, j, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(S))));
}

/// The shared address (i32) of a ring's mbarrier `which` (0 full, 1 empty)
/// of stage `slot`: S of each kind, 8 bytes apart, from `offset` bytes past
/// `base`.
inline Value stageMbarrier(OpBuilder &b, Location loc, Value base, int64_t offset, int which, int64_t S,
                           Value slot) {
  auto c = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(v))); };
  return arith::AddIOp::create(
      b, loc, base,
      arith::AddIOp::create(b, loc, c(offset + which * 8 * S), arith::MulIOp::create(b, loc, slot, c(8))));
}

/// The parity of running iteration j's use of its slot in a ring of S
/// stages, for an mbarrier wait; bias 1 takes the phase before the first as
/// complete, so a producer's first wait on `empty` passes at once.
inline Value stageParity(OpBuilder &b, Location loc, Value j, int64_t S, int64_t bias) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, v)); };
  return arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, arith::DivUIOp::create(b, loc, j, c(S)), c(bias)), c(1));
}

/// Emits the software pipeline for one matched loop: construct it for a stage
/// count and path, ask applies(), then emit().
class DotLoopEmitter {
public:
  /// `b`, `opts`, `smem` and `vals` are the kernel's builder, options, shared
  /// memory and lowered values (KernelLowering's), handed over explicitly.
  DotLoopEmitter(KernelLowering &kl, OpBuilder &b, const CompileOptions &opts,
                 SharedMemoryAllocator &smem, LoweredValues &vals, scf::ForOp op, DotLoop &m,
                 WgmmaKind kind, int stages, bool wgmma, bool swapAB = false,
                 bool warpSpecialized = false)
      : kl_(kl), opts_(opts), smem_(smem), vals_(vals), b_(b), op_(op), m_(m), loc(op.getLoc()),
        ctx(b.getContext()),
        i32(b_.getI32Type()), i64(b_.getI64Type()), ptr3(LLVM::LLVMPointerType::get(ctx, 3)),
        ea(kl.convertElem(m.dot.getA().getType().getElementType())), copier_(kl, b, op.getLoc(), ea),
        accTy(m.dot.getAcc().getType().getElementType()), half(kind.half), tf32(kind.tf32),
        int8(kind.int8), swap(swapAB), ws(warpSpecialized), kMajorB(m.kMajorB()), bViaRegs(!half && !swap && !kMajorB), bStageKMajor(bViaRegs || kMajorB), BM(m.dot.getA().getType().getDimSize(0)),
        BK(m.dot.getA().getType().getDimSize(1)), BN(m.dot.getB().getType().getDimSize(1)),
        eb(ea.getIntOrFloatBitWidth() / 8), vecElems(16 / eb), kPerInst(32 / eb),
        warpgroups(opts.numWarps / 4), S(stages), WA(std::min<int64_t>(128, BK * eb)),
        WB(bStageKMajor ? WA : std::min<int64_t>(128, BN * eb)), aBytes(BM * BK * eb),
        bBytes(BK * BN * eb), stageBytes(aBytes + bBytes),
        bulkOrigin(shiftedBulkOrigin()), bBulk(bulkOrigin.has_value()),
        bRuns(shiftsRows(swap, BM) || bBulk ? copier_.shiftedRuns(m.loadB) : 0),
        bRunLen(bRuns ? copier_.runLength(m.loadB) : 0),
        rawRow(bBulk ? bRunLen * eb : swap ? swapRawRow(BN * eb, bRuns) : BN * eb + 16),
        rawBytes(bBulk ? (bRuns * bulkBytes() + 127) / 128 * 128 : BK * rawRow),
        stagedBytes(S * aBytes + 3 * bBytes + (S - 2) * rawBytes),
        bStaged(bViaRegs && S >= 4 && smem.used() + 1024 + stagedBytes <= smem.limit()),
        totalBytes(bStaged ? stagedBytes : swap ? S * (aBytes + rawBytes) : ringBytes(swap, BM, BN, BK, eb, S)),
        bLay(copyLayout(m.loadB)),
        bRegs(bLay.chunks), nChunks(BN / vecElems), vt(VectorType::get({vecElems}, ea)),
        useWgmma(wgmma || swap),
        accLay(swap    ? swappedAccLayout(BM, BN, opts.numWarps)
               : wgmma ? wgmmaAccLayout(BM, BN, opts.numWarps)
                       : mmaLayoutFor(BM, BN, opts.numWarps).value_or(Layout())),
        T(accLay.tm), R(accLay.slots()), RB(swap ? BM / 2 : BN / 2),
        accCons(int8 ? "=r," : "=f,") {
    // A contiguous along M only (A.T @ B with A stored K x M): 16-bit wgmma
    // reads it M-major (its transpose bit), so its copies stay 16-byte ones.
    if (half && useWgmma && !swap && BM % 64 == 0) {
      AxisInfo pa = kl.axis().get(m.loadA.getPtr());
      aMMajor = pa.contiguity[1 - aMAxis()] < vecElems && pa.contiguity[aMAxis()] >= vecElems;
    }
  }

  /// Whether the tile sizes, operand contiguity, pointer tiles and shared
  /// memory allow the pipeline; false leaves the loop to the generic lowering
  /// and has emitted nothing.
  bool applies();

  // Warp specialization's own conditions (after the pipeline's).
  bool wsApplies(const std::function<bool(std::string)> &no);
  // Shared memory: the stages, then (warp-specialized) 2 * S mbarriers.
  int64_t allocBytes() const { return shiftWordsAt() + (S * bRuns * 4 + 15) / 16 * 16; }

  /// Why applies() said no.
  std::string whyNot;
  /// Why each gathered operand is copied element by element (remarks).
  SmallVector<std::string> gatheredWhy;
  const Layout &accLayout() const { return accLay; }
  Value tripCount() const { return n; }

  /// One line on what was emitted, for remarks.
  std::string summary() const;

  /// Lowers the loop (after applies()); false on an error in its body.
  // The stages (and mbarriers) in shared memory, 1024-byte aligned for the
  // swizzle atoms.
  void allocate();

  bool emit();

private:
  /// Each advancing pointer tile: its base tile and initial element offset.
  using Advance = KernelLowering::AdvancingTile;

  KernelLowering &kl_;
  const CompileOptions &opts_;
  SharedMemoryAllocator &smem_;
  LoweredValues &vals_;
  OpBuilder &b_;
  scf::ForOp op_;
  DotLoop &m_;
  const Location loc;
  MLIRContext *const ctx;
  const Type i32, i64;
  const LLVM::LLVMPointerType ptr3;
  const Type ea;    // operand element type as stored (i8 for 8-bit floats)
  // The cp.async copies into the swizzled stages (StageCopier.h).
  StageCopier copier_;
  const Type accTy; // accumulator element type
  const bool half, tf32, int8;
  // tf32 as C^T = B^T A^T: B^T is wgmma's A operand, loaded into registers
  // from a padded row-major copy of B (any layout will do for registers), and
  // A's K-major stage is wgmma's B operand. Nothing is transposed in shared
  // memory; the accumulator is the transposed mma layout.
  const bool swap;
  // Warp-specialized: a producer warpgroup added to the block issues every
  // copy and signals a `full` mbarrier per stage through cp.async's own
  // arrive; the num_warps consumer warps wait on it, run the wgmmas and
  // arrive on the stage's `empty` mbarrier once those completed. No CTA
  // barrier, and the consumers' instruction stream holds no copies.
  const bool ws;
  static constexpr int64_t P = 128; // producer threads
public:
  // The inner loop of a persistent loop (lowerPersistentDotLoop): its
  // operands are lowered per tile, after applies().
  bool persistent = false;

private:
  // Registers per thread with two consumer warpgroups (setmaxnreg): the
  // producers keep each chunk's hoisted address, 128 x 104 + 256 x 200 <= 64K.
  static constexpr int64_t kProducerRegs = 104, kConsumerRegs = 200;
  // B copied into a K-major stage from a transposed, column-major or gathered
  // tile (DotLoop::transB, bColumnMajor, bGathered).
  const bool kMajorB;
  // A's stage holds rows of K, M contiguous (A stored M-major; 16-bit wgmma
  // with its transpose-A bit), else rows of M, K contiguous.
  bool aMMajor = false;
  // The loaded A tile's M axis (its second when loaded transposed).
  size_t aMAxis() const { return m_.transA ? 1 : 0; }
  // An M-major A stage's swizzle width (every 64-row block is one 128-byte
  // column block: BM is a multiple of 64).
  int64_t WAm() const { return std::min<int64_t>(128, BM * eb); }
  const bool bViaRegs;
  // B's stage holds rows of N (K contiguous): transposed through registers,
  // or copied so. Otherwise rows of K, N contiguous (16-bit wgmma transposes).
  const bool bStageKMajor;
  const int64_t BM, BK, BN;
  const int64_t eb; // operand element bytes
  const int64_t vecElems;
  const int64_t kPerInst; // every wgmma consumes 32 bytes of K
  // Each warpgroup owns BM / (numWarps / 4) rows, in blocks of 64 (one wgmma
  // row block each).
  const int64_t warpgroups;
  const int64_t S; // stages
  // Swizzle widths: A's rows are K; B's rows are N (16-bit) or, stored
  // transposed, K as well.
  const int64_t WA, WB;
  const int64_t aBytes, bBytes, stageBytes;
  // tf32 C^T path, warp-specialized with TMA, B rows of unknown but shared
  // alignment whose runs are adjacent rows of one block (RzLinear's hashed W
  // with BN a multiple of its hash tile's width: each run is BK rows of a
  // contiguous block): each run of every stage is one 1-D bulk copy
  // (cp.async.bulk) from the 16-byte boundary at or below its start, and
  // the B^T fragments are read at the run's shift as below. One copy reads
  // the block's lines once (65 128-byte lines for 32 x 64 f32), where a copy
  // per row reads 3 lines a 256-byte row (96): as a TMA box a row, 20%
  // slower (512 x 20480^2, H200). The stage is run-major: run q at
  // q * bulkBytes(), its rows rawRow (the run's bytes) apart.
  // B's rows as analyzeComputedOrigin sees them (its pointer argument is
  // the base of the shifts), when bBulk applies.
  const std::optional<analysis::ComputedOriginOperand> bulkOrigin;
  const bool bBulk;
  std::optional<analysis::ComputedOriginOperand> shiftedBulkOrigin();
  // One run's bulk copy: its BK rows and one 16-byte chunk for the shift.
  int64_t bulkBytes() const { return BK * bRunLen * eb + 16; }
  // tf32 C^T path, B rows of unknown but shared alignment (ROAST's hashed
  // blocks in RzLinear's mapping), each row bRuns contiguous runs of bRunLen
  // elements (bRuns = 0: B is copied otherwise): each run copied from the
  // 16-byte boundary below its start, one chunk more than the run
  // (StageCopier::shiftedRuns), and the B^T fragments read at the run's
  // shift, 4 bytes at a time. The producers publish each stage's shifts in
  // shared words (the consumers would otherwise evaluate every run's
  // offset, ROAST's hash, each iteration).
  const int64_t bRuns, bRunLen;
  const int64_t rawRow, rawBytes;
  // The stages' shift words follow the stages and mbarriers: bRuns i32 a stage.
  int64_t shiftWordsAt() const { return totalBytes + (ws ? 16 * S : 0); }
  Value shiftWord(Value slot, Value run);
  // Stores one run's shift for running iteration gj's stage (one thread per
  // run); warp-specialized, it then arrives on the stage's `full` barrier
  // (release: the consumers' wait acquires).
  void publishShift(Value gj, Value run, Value shift);
  // Whether B rows of unknown alignment take the shifted copies: in the C^T
  // path, for tiles of at most 64 rows of A (small batches, where the copies
  // bound the loop: RzLinear's 32 x 20480^2 at 32 x 256, 361 us against 429
  // with 4-byte copies, H200). At 256 rows the 4-byte copies were faster
  // (512 x 8192^2 at 256 x 128: 222 us against 238; bench/NOTES.md).
  static bool shiftsRows(bool swap, int64_t BM) { return swap && BM <= 64; }
  // The padded raw row of the C^T path: 32 bytes past the row (8-byte
  // fragment loads free of bank conflicts), or 16 bytes a shifted run when
  // that is more, rounded up to the same residue modulo 128.
  static int64_t swapRawRow(int64_t rowBytes, int64_t runs) {
    int64_t r = rowBytes + std::max<int64_t>(32, 16 * runs);
    return r + ((rowBytes + 32 - r) % 128 + 128) % 128;
  }
  // B staged (tf32/s8 with num_stages >= 4): B is copied by cp.async, like A,
  // into a row-major staging ring (rows padded by 16 bytes so the transposing
  // reads are conflict free), and transposed shared-to-shared into a ring of
  // three K-major buffers one iteration before its wgmmas. Global latency then
  // never sits between a load and a store. With 3 stages, or when that does
  // not fit, B goes through registers within the iteration.
  const int64_t stagedBytes;
  const bool bStaged;
  const int64_t totalBytes;
  // B via registers: the thread's chunks of the BK x BN tile, loaded as
  // 16-byte vectors when in bounds and aligned, else element by element.
  const Layout bLay;
  // One 16-byte vector per chunk (i8 lanes would each take a register).
  const int64_t bRegs;
  const int64_t nChunks; // 16-byte chunks in a row of B
  const VectorType vt;
  // wgmma (sm_90a), or mma.sync m16n8k16 with ldmatrix fragments (sm_80 and
  // later, 16-bit operands) reading the same swizzled stages.
  const bool useWgmma;
  const Layout accLay;
  const int64_t T;  // the warpgroup's 64-row blocks
  const int64_t R;  // all T blocks: T * BN / 2 registers per thread
  const int64_t RB; // one block's: BN / 2 (R / T)
  const std::string accCons;

  // TMA (warp-specialized, sm_90a): the tensor map that loads each operand,
  // when the analysis allows, and (set by emit) its parameter's address.
  struct TmaOperand {
    TensorMapOperand map;
    Value param;         // i64 generic address of the tensor map
    int64_t rows, width; // the stage: rows of `width` swizzled bytes per column block
    int64_t blocks;      // column blocks, one box each
    // A computed origin (analysis/ComputedOriginMap.h): every box's origin is
    // the pointer at its first element, evaluated each iteration, and a box
    // holds one aligned group of this many rows. 0: an affine map, one box
    // per column block at origins moving by a constant step.
    int64_t groupRows = 0;
    // bBulk: B's runs by 1-D bulk copies, no tensor map.
    bool bulk = false;
  };
  std::optional<TmaOperand> tmaA, tmaB;
  std::string tmaWhyNot; // why an operand is not loaded by TMA (remarks)
  // A multicast across the cluster (planTma): A's load promises the same
  // tile in every program of the cluster (tile.load's multicast), so each of
  // the cluster's `multicastA` CTAs copies BM / multicastA of its rows into
  // every CTA's stage; a CTA's `empty` barrier then also counts the other
  // CTAs' consumers, which must all be done with a stage before any CTA
  // refills it. 0: A copied by each CTA alone.
  int64_t multicastA = 0;
  // With multicastA, set by wsSetup before the roles split: this CTA's
  // %cluster_ctarank and the other CTAs' ranks.
  Value clusterRank;
  SmallVector<Value> peerRanks;
  // The `empty` arrival of the other CTAs of the cluster for running
  // iteration g's stage, when iteration g + S (its refill) exists: every
  // arrival then lands before its CTA's producer can finish.
  void releaseRemote(Value g);
  bool anyTma() const { return tmaA || tmaB; }
  // Decides tmaA / tmaB (in wsApplies).
  void planTma();
  std::optional<TmaOperand> tmaFor(tile::LoadOp ld, int64_t rows, int64_t width);
  // tmaFor's unmasked operand with aligned rows whose origin the affine
  // analysis cannot follow: boxes at origins computed each iteration, when
  // analyzeComputedOrigin allows (else `why`).
  std::optional<TmaOperand> computedOriginFor(tile::LoadOp ld, int64_t rows, int64_t width,
                                              int64_t cols, std::string &why);
  // bBulk: for each run of iteration j's B (bound), the global address its
  // bulk copy starts at, after storing the run's shift for running
  // iteration gj's stage; the consumers read it once `full` completes,
  // which the producer's expect_tx arrival (release) orders.
  SmallVector<Value> publishShiftedBulk(Value gj);
  // An i32 value of a linear form over lowered scalars.
  Value materialize(const LinearForm &f);
  // Thread 0 of the producers: expect the stage's TMA bytes on `full`, then
  // issue the boxes of iteration j into the stage of running iteration gj.
  // False on an error lowering the loop body (a computed origin binds it).
  bool issueTma(Value j, Value gj, Value fullBar);
  // One box of `t` at coordinates (x, y) into shared address `dst`, and into
  // the same address of the cluster's CTAs in `multicastMask`.
  void issueBox(const TmaOperand &t, Value dst, Value x, Value y, Value fullBar, int64_t multicastMask = 0);
  // The boxes of a computed-origin operand `ld` of the bound iteration.
  void issueComputedOriginBoxes(const TmaOperand &t, tile::LoadOp ld, Value stage, Value fullBar);

  // Set by emit() before the copies and the loop use them.
  Value ptid;     // warp-specialized producer code: the thread's index in the producer warpgroup
  Value smemAddr; // i32 shared-memory address of the pipeline's buffers
  Value lo, step; // the source loop's lower bound and step
  Type ivTy;      // its induction variable type
  Value n;        // its trip count (i32)
  SmallVector<Advance> advances;

  // KernelLowering::sideEffectAsm at the loop's location.
  LLVM::InlineAsmOp asmCall(TypeRange results, ValueRange operands, StringRef text,
                            StringRef constraints) {
    return kl_.sideEffectAsm(results, operands, text, constraints, loc);
  }
  // Constants and conversions for the i32 address and index arithmetic.
  Value c32(int64_t v) { return kl_.i32c(v, loc); }
  Value c64(int64_t v) { return arith::ConstantOp::create(b_, loc, b_.getI64IntegerAttr(v)); }
  Value toI32(Value v);

  // Binds every advancing pointer tile to its value in iteration j.
  void bindOffsets(Value j /*i32*/);

  using CopyFacts = StageCopier::CopyFacts;
  using Placement = StageCopier::Placement;
  // A column-major or gathered B is copied transposed: its stage rows run along N.
  // A's stage rows run along the loaded tile's second axis: K-major rows (M)
  // of a transposed A, or M-major rows (K) of an A loaded as it is.
  bool copiedTransposed(tile::LoadOp ld) const {
    return ld == m_.loadB ? m_.bCopiedTransposed() : aMMajor != bool(m_.transA);
  }
  // An operand copied element by element (StageCopier::CopyFacts::gathered).
  bool gathered(tile::LoadOp ld) { return copyFacts(ld).gathered; }
  Layout copyLayout(tile::LoadOp ld) { return copier_.copyLayout(ld, copiedTransposed(ld)); }
  CopyFacts copyFacts(tile::LoadOp ld) { return copier_.copyFacts(ld, copiedTransposed(ld)); }
  Value swizzled(Value r, Value colByte, int64_t R, int64_t W) {
    return copier_.swizzled(r, colByte, R, W);
  }
  Placement swizzledIn(int64_t R, int64_t W) { return copier_.swizzledIn(R, W); }
  // Where a copied chunk of A goes in its stage (K-major or M-major rows).
  Placement aPlacement() { return aMMajor ? swizzledIn(BK, WAm()) : swizzledIn(BM, WA); }
  // Where a copied chunk of B goes in its stage (N-major or K-major rows).
  Placement bPlacement() { return swizzledIn(kMajorB ? BN : BK, WB); }
  // Copies one operand tile of iteration j to shared memory at `dst` +
  // place(row, byte in row); in warp-specialized code, by the producers.
  // `gj`: the running iteration whose stage `dst` is (a shifted B needs it).
  bool issueCopy(tile::LoadOp ld, Value dst, const Placement &place, Value gj = Value()) {
    if (ld == m_.loadB && bRuns) { // into the raw stage's padded rows
      copier_.copyShiftedRows(ld, dst, rawRow, [&](Value run, Value shift) { publishShift(gj, run, shift); },
                              ptid, P);
      return true;
    }
    return copier_.issueCopy(ld, dst, place, ptid, P, copiedTransposed(ld));
  }
  // Shifted B (bRuns): the thread's byte offset of its B^T fragments in each of its
  // T column blocks of running iteration gi's raw stage (run, place in the
  // run and the run's published shift); empty otherwise.
  SmallVector<Value> bShiftedFragOffsets(Value gi);

  // Chunk k of this thread: groups of 16 consecutive chunks run down K, so a
  // warp covers 16 K rows x 2 chunks along N. Its transposed stores then land
  // in 32 distinct banks (two N rows of different swizzle phase, 16 K words
  // each), and each K row still reads 32 contiguous bytes (one sector).
  SmallVector<Value> bChunkCoords(int64_t k);
  // Loads the thread's chunks of `ld` (B, in bChunkCoords order) into
  // registers under the current binding of the loop body.
  SmallVector<Value> loadRegs(tile::LoadOp ld);
  // Stores B's registers transposed: element (k, n) goes to row n, byte k*eb
  // of the K-major, W-swizzled stage buffer of BN rows.
  void storeTransposed(ValueRange regs, Value dst);

  // Lowers the loop body's index arithmetic for iteration j (i32) in a new
  // scope (the caller pops it): iv = lo + j * step, pointer tiles j steps on.
  bool bindIteration(Value j);
  // B via registers: iteration j's B tile loaded into registers (poison when
  // j >= n). Issued early in the iteration so that the latency overlaps the
  // barrier and the wgmma issue before the transposed stores need the data.
  bool loadB(Value j, SmallVector<Value> &vals);
  // Shared-memory addresses (i32) of iteration j's A stage, of the K-major
  // or N-major B buffer its wgmmas read, and (B staged) of its staging slot.
  Value addr(int64_t base, Value idx, int64_t ring, int64_t bytes);
  Value aStage(Value j);
  Value bStage(Value j);
  Value rawStage(Value j);
  // B staged: byte offset of (row, byte in row) in a padded row-major staging slot.
  Value rowMajorRaw(Value r, Value colByte);
  // Issues iteration j's copies when j < n. B via registers: stores `bVals`
  // (from loadB) transposed; B staged: copies B to its staging slot.
  bool issueIteration(Value j, ArrayRef<Value> bVals);
  // B staged: iteration j's staging slot -> its K-major buffer, when j < n.
  // Reads 16-byte chunks in the store-friendly chunk order (bChunkCoords).
  void transposeStaged(Value j);

  // Closes one iteration's cp.async group, the unit that wait_group counts.
  void commitCopies() { asmCall({}, {}, "cp.async.commit_group;", "~{memory}"); }

  // Passes the accumulators through `wgmma.wait_group N`, so that no use of
  // them can move above the wait.
  SmallVector<Value> waitAcc(ValueRange accs, int pending);

  // Prologue: iterations 0 .. S-3 in flight.
  bool emitPrologue();

  // A wgmma shared-memory descriptor: the address field of `addr` (i32)
  // joined to the constant `high` part (descHigh).
  Value desc(Value addr, int64_t high);
  // Inline asm of one wgmma on a 64-row block: RB accumulators, the A and B
  // descriptors, and a flag that turns on accumulation (scale-d).
  std::string wgmmaText() const;
  // Constraints of wgmmaText: RB accumulator outputs, the descriptors and the
  // flag, and RB inputs tied to the outputs.
  std::string wgmmaConstraints() const;

  // The pipelined loop over i in [0, n), carrying the accumulators: waits for
  // stage i, runs its wgmmas, then issues iteration i + S - 2. Null on an error.
  /// mma.sync steps over stage `i`: per k16 step, A fragments of the warp's
  /// tm row tiles by ldmatrix.x4 and B fragments of pairs of its n8 tiles by
  /// ldmatrix.x4.trans, from the swizzled stages the wgmma path also uses.
  void emitMmaSyncSteps(SmallVector<Value> &accs, Value i);

  // One wgmma (inline asm `text`) on 64-row block t: `operands` then the
  // block's RB accumulators, which it replaces.
  void wgmmaOnBlock(const std::string &text, const std::string &cons, ArrayRef<Value> operands,
                    SmallVector<Value> &accs, int64_t t) {
    SmallVector<Value> all(operands.begin(), operands.end());
    all.append(accs.begin() + t * RB, accs.begin() + (t + 1) * RB);
    auto mma = asmCall(SmallVector<Type>(RB, accTy), all, text, cons + ",~{memory}");
    for (int64_t r = 0; r < RB; ++r)
      accs[t * RB + r] = LLVM::ExtractValueOp::create(b_, loc, mma.getResult(0), ArrayRef<int64_t>{r});
  }
  // The byte offset of the warpgroup's rows in an A stage.
  Value wgRowBytes();
  // The warpgroup's wgmmas on stage i, as one committed group.
  void issueWgmmas(Value i, Value rowBytes, SmallVector<Value> &accs);

  scf::ForOp emitLoop(ValueRange acc0);

  // One iteration of the C^T = B^T A^T loop on stage i: B^T fragments into
  // registers, the wgmmas, then iteration i + S - 2's copies. `fragOff` is the
  // thread's byte offset in a B copy (see emitSwapLoop).
  bool emitSwapIteration(Value i, Value fragOff, SmallVector<Value> &accs);
  // The B^T fragments of stage i and the warpgroup's wgmmas on it, as one
  // committed group.
  // `shifted`: bShiftedFragOffsets(the iteration's index).
  void issueSwapWgmmas(Value i, Value fragOff, ArrayRef<Value> shifted, SmallVector<Value> &accs);
  // The thread's first B^T fragment column (its N index in a B row).
  Value swapFragColumn();

  // The C^T = B^T A^T loop. wgmma reads its register operands asynchronously,
  // and one group stays in flight across iterations: the body is unrolled by
  // two so that consecutive iterations load their fragments into different
  // registers (a loop body redefining them while the previous group still
  // reads them would make ptxas serialize the wgmmas). An odd last iteration
  // follows the loop.
  // The thread's byte offset of its B^T fragments in a B copy.
  Value swapFragOffset();
  bool emitSwapLoop(ValueRange acc0, SmallVector<Value> &accs);
  // for i in [0, n): iteration(i), unrolled by two, the odd last one after.
  bool emitUnrolledLoop(ValueRange acc0, SmallVector<Value> &accs,
                        const std::function<bool(Value, SmallVector<Value> &)> &iteration);

  // mbarrier `which` (0 full, 1 empty) of stage slot `slot` (i32).
  Value mbar(int which, Value slot) { return stageMbarrier(b_, loc, smemAddr, totalBytes, which, S, slot); }
  Value slotOf(Value j) { return stageSlot(b_, loc, j, S); }
  Value parityOf(Value j, int64_t bias) { return stageParity(b_, loc, j, S, bias); }

  // The warp-specialized loop: barriers set up by thread 0 before the
  // block-wide barrier, then the producer warpgroup (threads past the
  // num_warps warps) copies every iteration and exits, while the consumers
  // run the wgmmas. Registers move from producers to consumers with
  // setmaxnreg when two consumer warpgroups need them.
  bool emitWarpSpecialized(ValueRange acc0, SmallVector<Value> &accs);

public:
  // ---- the pieces the persistent tile loop (KernelLowering::lowerPersistentDotLoop)
  // drives itself, in the order emit() uses them ----
  // Operands copied by cp.async (their threads arrive on `full`).
  bool anyCpAsync() const { return !tmaA || !tmaB; }
  // Adds the kernel parameters of the planned tensor maps.
  bool addTensorMaps();
  // Trip count (the step of an scf.for is positive).
  void emitTripCount();
  // Each advancing pointer tile: its base tile and initial element offset.
  bool emitAdvances();
  // Warp-specialized pieces, also used by the persistent loop
  // (PersistentDotLoop): ring slots and phases follow a running iteration
  // count `base + j` across the tiles a block computes.
  bool moveRegs() const { return opts_.numWarps == 8; }
  Value isProducer();
  // Thread 0 initializes the stages' mbarriers before a block-wide barrier.
  // The block gains the producer warps; with setmaxnreg the kernel needs a
  // register cap at entry (65536 / 384 threads, rounded down to 8).
  void wsSetup();
  void producerRegs();
  // Past this point only the consumer warps run: barriers name them alone.
  void consumerRegs();
  // The producer's copies of iterations 0 .. n-1 (after emitTripCount and
  // emitAdvances), each into the stage of running iteration base + j once
  // the consumers released it.
  bool wsProducer(Value base);
  // The consumers' wgmmas over iterations 0 .. n-1 (running base + i); all
  // complete on return. releaseLast: also release the last iteration's stage
  // (the producer reuses it for the next tile).
  bool wsConsumer(ValueRange acc0, SmallVector<Value> &accs, Value base, bool releaseLast);

  // Results: the accumulator in its mma layout; pointer tiles advanced n steps.
  void bindResults(ArrayRef<Value> accs);
};

} // namespace tessera::lowering::detail

#endif
