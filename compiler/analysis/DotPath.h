// The dot-path rules: which tensor-core form (wgmma of C^T = B^T A^T for
// tf32, wgmma, mma.sync) a dot and the loop around it can take on a target,
// from the tile shapes, the operand types, the warps and shared memory. The
// layout planner (DotLayoutPlan.h) decides with them ahead of the lowering,
// and the lowering (lowering/PipelinedDotLoop.cpp) follows the same rules.
#ifndef TESSERA_ANALYSIS_DOTPATH_H
#define TESSERA_ANALYSIS_DOTPATH_H

#include "analysis/AxisInfo.h"
#include "analysis/Layout.h"
#include "tessera/CompileOptions.h"
#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>
#include <string>

namespace tessera::analysis {
using namespace mlir;

/// The parts of a loop that the pipeline needs.
struct DotLoop {
  tile::DotOp dot;
  tile::LoadOp loadA, loadB;
  // The conversions of the loaded tiles to the dot-operand layouts (null when
  // layouts were not assigned): the pipeline's copies are those conversions.
  tgpu::ConvertLayoutOp toOperandA, toOperandB;
  // B given transposed: `dot(a, trans(load(...)))` with the loaded tile
  // BN x BK, contiguous along K (A @ B^T, as in Q K^T). It is copied as it is
  // into a K-major stage, which wgmma reads for every operand type.
  tile::TransOp transB;
  // A given transposed: `dot(trans(load(...)), b)` with the loaded tile
  // BK x BM (A.T @ B written as Triton users write it). Copied into A's
  // stage like a load of the BM x BK tile with the other axis contiguous.
  tile::TransOp transA;
  // B given column-major: a BK x BN tile contiguous along K and not along N
  // (`x @ w` with w stored N x K, K-contiguous, as a linear layer keeps its
  // weight). Copied, like a transposed B, into a K-major stage: the native
  // form of 8-bit and tf32 wgmma, with no transpose anywhere. Set by
  // markColumnMajorB, which needs the axis info.
  bool bColumnMajor = false;
  // B contiguous along neither axis (strides not known at compile time, or a
  // gather): copied element by element, into a K-major stage like a
  // column-major B, which every wgmma type reads as it is. Set by
  // markColumnMajorB.
  bool bGathered = false;
  // B's stage holds rows of N, K contiguous.
  bool kMajorB() const { return transB || bColumnMajor || bGathered; }
  // B is copied transposed into its K-major stage (not a transposed tile).
  bool bCopiedTransposed() const { return bColumnMajor || bGathered; }
  unsigned accIndex = 0; // iter-arg index of the accumulator
  // Iter-arg index -> the uniform offset tile a pointer tile advances by.
  SmallVector<std::pair<unsigned, Value>> advancing;
};

/// Whether `v` is absent or a splat of +0 (a load's `other` that cp.async's
/// zero fill reproduces; an accumulator that starts at zero).
bool isZeroSplat(Value v);

/// Whether `step`, the offset a loop adds to a carried pointer tile each
/// iteration, is the same for every element and iteration: a splat of a
/// loop-invariant scalar, or a splat constant.
bool isUniformStep(scf::ForOp op, Value step);

/// The addptr by which `op` advances its iter_arg `i`, a pointer tile
/// (`p += step`), or null when the loop yields something else for it.
tile::AddPtrOp pointerAdvance(scf::ForOp op, unsigned i);

/// Whether `op` advances its iter_arg `i`, a pointer tile, by a uniform step
/// (pointerAdvance and isUniformStep): a tile that the loop need not carry.
bool advancesUniformly(scf::ForOp op, unsigned i);

/// The pipelineable form of `op`, or nothing (PipelinedDotLoop.cpp); then,
/// with `why`, what in the body breaks the form, and where ("file:line:col").
std::optional<DotLoop> matchDotLoop(scf::ForOp op, std::string *why = nullptr);

/// The wgmma flavour of a dot. 16-bit operands read B N-major (wgmma
/// transposes it); tf32 and s8 wgmma read both operands K-major only, so B
/// goes through registers and is stored transposed ("B via registers").
struct WgmmaKind {
  bool half = false, tf32 = false, int8 = false;
  // e4m3 / e5m2 operands (either mix) into f32: K-major only, like s8.
  bool fp8 = false;
};

/// wgmma's name for an operand element type: f16, bf16, tf32, s8, e4m3, e5m2.
inline std::string wgmmaTypeName(Type t) {
  return t.isBF16() ? "bf16" : t.isF16() ? "f16" : t.isF32() ? "tf32" : t.isInteger(8) ? "s8"
         : isa<Float8E4M3FNType>(t) ? "e4m3" : "e5m2";
}

/// The tensor-core forms of a pipelined dot loop, in order of preference.
enum class DotPath { Swapped, Wgmma, MmaSync };

/// Whether `path` can compute a dot of this kind on this target at all.
inline bool dotPathAllowed(DotPath path, const WgmmaKind &kind, bool wgmmaTarget,
                           bool kMajorB = false) {
  bool wgmma = path != DotPath::MmaSync;
  // A K-major B (given transposed) is wgmma's native form for every type, and
  // mma.sync's for 16-bit ones (ldmatrix without .trans).
  if (kMajorB)
    return (path == DotPath::Wgmma && wgmmaTarget) || (path == DotPath::MmaSync && kind.half);
  return !(wgmma && !wgmmaTarget) && !(!wgmma && !kind.half) &&
         !(path == DotPath::Swapped && !kind.tf32);
}

/// Whether wgmma may be used: sm_90a, and whole warpgroups of 1, 2 or 4.
inline bool isWgmmaTarget(const Target &target, int numWarps) {
  return target.hasWgmma() && (numWarps == 4 || numWarps == 8 || numWarps == 16);
}

/// Whether the rows of an operand tile are provably contiguous for 16-byte
/// copies of `eb`-byte elements.
inline bool rowsContiguous(AxisInfoAnalysis &axis, tile::LoadOp ld, int64_t eb) {
  return axis.get(ld.getPtr()).contiguity.back() >= 16 / eb;
}

/// Sets m.bColumnMajor when B's tile is contiguous along K (16-byte chunks of
/// `eb`-byte elements) and its rows along N are not, and m.bGathered when it
/// is contiguous along neither.
void markColumnMajorB(AxisInfoAnalysis &axis, DotLoop &m, int64_t eb);

/// Bytes of a ring of `stages` stages without B staging: one swizzled A and
/// B tile per stage, or for tf32 C^T B row-major with 32-byte row padding.
inline int64_t ringBytes(bool swap, int64_t BM, int64_t BN, int64_t BK, int64_t eb,
                         int64_t stages) {
  return stages * (BM * BK * eb + (swap ? BK * (BN * eb + 32) : BK * BN * eb));
}

/// Why a BM x BN x BK tile (operands of `eb` bytes) cannot take `path` with
/// `numWarps` warps, from its shape alone; empty when it can.
std::string dotTileWhyNot(DotPath path, bool half, int64_t BM, int64_t BN, int64_t BK, int64_t eb,
                          int64_t numWarps, bool kMajorB = false);

/// The dot's wgmma flavour, or nothing when wgmma cannot compute it.
inline std::optional<WgmmaKind> wgmmaKindOf(tile::DotOp dot) {
  Type ea = dot.getA().getType().getElementType(), ec = dot.getAcc().getType().getElementType();
  Type eb = dot.getB().getType().getElementType();
  WgmmaKind kind;
  kind.fp8 = tile::isFloat8Type(ea) && tile::isFloat8Type(eb) && ec.isF32();
  if (eb != ea && !kind.fp8)
    return std::nullopt;
  kind.half = (ea.isBF16() || ea.isF16()) && ec.isF32();
  kind.tf32 = ea.isF32() && ec.isF32() && dot.getInputPrecision() == tile::InputPrecision::tf32;
  kind.int8 = ea.isInteger(8) && ec.isInteger(32);
  if (!kind.half && !kind.tf32 && !kind.int8 && !kind.fp8)
    return std::nullopt;
  return kind;
}


} // namespace tessera::analysis

#endif
