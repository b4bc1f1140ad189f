// StageCopier: copies an operand tile from global memory into a shared-memory
// stage buffer with cp.async, in the swizzled form that wgmma and ldmatrix
// read. Shared by the pipelined dot loop (DotLoopEmitter) and the staged dot
// loop (StagedDotLoop.cpp), whose stage rings hold the same layout.
#ifndef TESSERA_LOWERING_STAGECOPIER_H
#define TESSERA_LOWERING_STAGECOPIER_H

#include "KernelLowering.h"

#include <functional>

namespace tessera::lowering::detail {

class StageCopier {
public:
  /// Copies of tiles with `ea` elements, emitted with `kl`'s builder at `loc`.
  StageCopier(KernelLowering &kl, OpBuilder &b, Location loc, Type ea);

  /// The loops of chunks that issueCopy emits (gathered or masked element by
  /// element) stay loops: LLVM is told not to unroll them.
  void keepChunkLoopsRolled() { rolled_ = true; }

  /// Why a tile is copied element by element when nothing but its strides
  /// is unknown, and how a user supplies the fact (remarks).
  static constexpr const char *kGatheredReason =
      "rows not provably contiguous (a unit inner stride: pass 1 at launch, which "
      "specialization makes a constant, or --assume NAME=1)";

  /// What axis info proves about an operand's 16-byte chunks, which decides
  /// how issueCopy copies them (and whether warp specialization may).
  struct CopyFacts {
    bool aligned;   // every chunk starts 16-byte aligned
    bool maskWhole; // every chunk is all in or all out of the mask
    bool fourByte;  // 4-byte elements at 4-byte aligned addresses: when not
                    // aligned and whole, copied as 8- or 4-byte cp.async
    bool gathered;  // the chunk's elements are not provably contiguous (a
                    // stride unknown at compile time): an address each
    // No synchronous element-wise path: every copy is a cp.async.
    bool async() const { return (aligned && maskWhole && !gathered) || fourByte; }
  };
  /// `transposed`: the tile is contiguous along its first axis, and its
  /// stage holds it transposed (rows along the second axis).
  CopyFacts copyFacts(tile::LoadOp ld, bool transposed = false);
  /// Rows of unknown alignment that 16-byte copies can still move: each row
  /// of the (untransposed) tile is a whole number of contiguous runs of
  /// runLength(ld) elements (16-byte multiples), every row starts each run at
  /// the same address modulo 16 (analysis::rowsShareAlignment), and the mask,
  /// if any, is the same along each row. Not for rows proven aligned, which
  /// the plain copy moves. The runs per row, or 0. See copyShiftedRows.
  int64_t shiftedRuns(tile::LoadOp ld);
  int64_t runLength(tile::LoadOp ld);
  /// Copies such a tile run by run from the 16-byte boundary at or below each
  /// run's start: len * eb / 16 + 1 chunks a run, the last only when the run
  /// is misaligned (it then ends inside that chunk). Run q of row r lands at
  /// byte r * rowPitch + q * (len * eb + 16) of `dst`, its data starting
  /// `shift` bytes on (its address modulo 16, the same in every row), which
  /// one thread per run hands to publish(q, shift) (i32 values); masked-off
  /// rows are zero-filled. Each run has its own group of threads, so that a
  /// thread evaluates one run's address (ROAST's hash) per copy.
  using ShiftSink = std::function<void(Value, Value)>;
  void copyShiftedRows(tile::LoadOp ld, Value dst, int64_t rowPitch, const ShiftSink &publish,
                       Value producerTid = Value(), int64_t producers = 0);

  /// The threads' 16-byte chunks of a loaded tile, in the stage's rows.
  Layout copyLayout(tile::LoadOp ld, bool transposed = false);

  /// Where a copied chunk goes: byte offset from (row, byte in row).
  using Placement = std::function<Value(Value, Value)>;
  /// Byte offset of element (r, c) in a stage buffer of R rows whose rows are
  /// W-byte swizzled: row r, byte b of the row lands in column block b / W
  /// (each block holds every row, W bytes per row), and within the 8-row
  /// swizzle atom its 16-byte unit is XORed with the row's low bits.
  Value swizzled(Value r, Value colByte, int64_t R, int64_t W);
  /// The placement into a stage buffer of R rows, W-byte swizzled.
  Placement swizzledIn(int64_t R, int64_t W);

  /// Copies one operand tile (under the current binding of the loop body) to
  /// shared memory at `dst` + place(row, byte in row). With `producerTid`,
  /// only the `producers` threads of a producer warpgroup copy, that one
  /// being the thread's index among them. `transposed`: as in copyFacts.
  bool issueCopy(tile::LoadOp ld, Value dst, const Placement &place, Value producerTid = Value(),
                 int64_t producers = 0, bool transposed = false);

private:
  /// Copies one chunk of a gathered tile (CopyFacts::gathered), chunk
  /// coordinates `c` in the stage's rows, to shared address `dst`: an
  /// address per element, 4-byte cp.async for 4-byte elements, else a load
  /// and a shared store.
  void copyGathered(tile::LoadOp ld, Value dst, ArrayRef<Value> c, bool maskWhole, bool transposed);
  /// Copies one chunk of 4-byte elements (CopyFacts::fourByte) that may be
  /// misaligned or partly masked, chunk coordinates `c`, to `dst`.
  void copyFourByte(tile::LoadOp ld, Value dst, ArrayRef<Value> c, bool aligned, bool maskWhole,
                    bool transposed);
  /// A contiguous chunk's first element address, and its mask: one value
  /// when whole (maskWhole), else one per element; none without a mask.
  std::pair<Value, SmallVector<Value>> chunkAddress(tile::LoadOp ld, ArrayRef<Value> c,
                                                    bool maskWhole, bool transposed);
  /// (row, element in row) of the stage -> the loaded tile's coordinates.
  static SmallVector<Value> tileCoords(Value r, Value c, bool transposed) {
    return transposed ? SmallVector<Value>{c, r} : SmallVector<Value>{r, c};
  }
  Value c32(int64_t v) { return kl_.i32c(v, loc_); }
  void asmCall(TypeRange results, ValueRange operands, StringRef text, StringRef constraints) {
    kl_.sideEffectAsm(results, operands, text, constraints, loc_);
  }

  KernelLowering &kl_;
  OpBuilder &b_;
  Location loc_;
  Type ea_, i32;
  int64_t eb_, vecElems_;
  LLVM::LLVMPointerType ptr3_;
  bool rolled_ = false;
};

} // namespace tessera::lowering::detail

#endif
