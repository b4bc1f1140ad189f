// Which operand tiles of a pipelined dot loop a TMA tensor map can load
// (cp.async.bulk.tensor on sm_90a), and the map's shape as linear forms over
// the kernel's integer arguments, for the runtime to encode at launch.
//
// An operand qualifies when its pointer tile is
//     splat(P) + stride * (row0 + i) + (col0 + j)       (P a pointer argument)
// advancing by a constant number of rows or columns per iteration, and its
// mask is a conjunction of one `index < bound` per dimension (and, as a
// block pointer's load checks, `index >= 0` terms at the tensor's first
// element, which TMA also fills with zeros). The mask's bound, moved into the pointer's coordinates, is the map's extent: TMA fills
// what lies past it with zeros, which is what `other=0` asks for. The extent
// must not depend on the program id or the iteration: every such term has to
// cancel (in matmul.tile `rk < K - k0` against the pointer's k0 leaves K).
//
// With `outerDims` (TensorMapQuery), a pointer may also be offset by a
// scalar fixed over the loop, `P + z * stride_z + h * stride_h` (the batch
// and head of FlashAttention's K and V): each product of a coordinate and a
// stride over the arguments becomes a dimension of its own past the rows,
// and a dimension no mask term bounds gets an unbounded extent (the program
// reads every element of it that the tile covers). Coordinates are i32, so
// each value they are built from must fit 32 bits. A coordinate along such
// a dimension must not be negative (TMA would read zeros where the program
// reads memory): the analysis proves it from program ids, constants, sums,
// products, quotients and remainders, taking the integer arguments it meets
// as not negative, and lists those for the runtime to check at launch.
#ifndef TESSERA_ANALYSIS_TENSORMAPANALYSIS_H
#define TESSERA_ANALYSIS_TENSORMAPANALYSIS_H

#include "tile/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>
#include <string>

namespace tessera::analysis {
using namespace mlir;

/// c + sum(coef * value) over scalar integer SSA values.
struct LinearForm {
  int64_t c = 0;
  SmallVector<std::pair<Value, int64_t>> terms; // each value once, coef != 0

  static LinearForm constant(int64_t v) {
    LinearForm f;
    f.c = v;
    return f;
  }
  static LinearForm leaf(Value v) {
    LinearForm f;
    f.terms.push_back({v, 1});
    return f;
  }
  void add(const LinearForm &o, int64_t k = 1);
  void scale(int64_t k);
  int64_t coef(Value v) const;
  bool isConstant() const { return terms.empty(); }
  bool operator==(const LinearForm &o) const;
};

/// The form of an integer scalar through constants, addi, subi, muli by a
/// constant and integer casts; anything else is a leaf.
LinearForm linearFormOf(Value scalar);

/// A TMA load of one operand tile (rows x cols, cols contiguous).
struct TensorMapOperand {
  unsigned pointerArg = 0; // kernel argument holding the base address
  // Over kernel arguments (their BlockArguments): the row stride in elements,
  // and the extents in columns and rows.
  LinearForm rowStride, cols, rows;
  // The tile's first column and row in iteration 0, over scalars defined
  // outside the loop, and how far they move per iteration.
  LinearForm col0, row0;
  int64_t colStep = 0, rowStep = 0;
  /// A dimension past the rows: its stride in elements (over the kernel's
  /// arguments) and the tile's coordinate along it, fixed over the loop
  /// (over scalars defined outside it); its extent is kUnboundedExtent.
  struct OuterDim {
    LinearForm stride, coord;
  };
  SmallVector<OuterDim> outer;
  /// The integer arguments (their BlockArguments' numbers) that the
  /// coordinates along unbounded dimensions are not negative only if they
  /// are not: the runtime checks them at launch.
  SmallVector<unsigned> nonNegativeArgs;
};

/// The extent of a dimension that nothing bounds: a TMA coordinate's reach.
constexpr int64_t kUnboundedExtent = (int64_t(1) << 31) - 1;

/// What a caller of analyzeTensorMapOperand accepts beyond a 2-D map whose
/// mask bounds both dimensions.
struct TensorMapQuery {
  /// The tile is contiguous along its first axis, and the map's rows are the
  /// tile's columns.
  bool transposed = false;
  /// Outer dimensions for a scalar offset, and unbounded extents along
  /// unmasked dimensions (see the file comment).
  bool outerDims = false;
};

/// The tensor map that loads `ld` in `loop` (whose iteration j has the
/// induction variable lo + j * step and pointer tiles advanced j times), or
/// nothing with the reason in `whyNot`. `kernel` is the tile-IR kernel whose
/// arguments the extents may use.
std::optional<TensorMapOperand> analyzeTensorMapOperand(tile::LoadOp ld, scf::ForOp loop,
                                                        Block &kernelEntry, std::string &whyNot,
                                                        TensorMapQuery query = {});

} // namespace tessera::analysis

#endif
