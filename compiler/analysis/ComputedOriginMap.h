// Whether a TMA box can load an operand tile whose origin is computed anew
// each iteration (ROAST's hashed W blocks: `Mem + loc + row * HN + col` with
// loc a hash of the block's index), where an affine tensor map cannot
// follow it. The producer evaluates the pointer at each box's first element
// and splits its offset from the base argument into (offset % stride,
// offset / stride): coordinates in a 2-D map over the base whose rows are
// `stride` elements apart and `stride + box width - 1` wide. Such rows
// overlap (the driver and the copy engine accept that, H200), so a run of
// box-width elements starting at any 16-byte aligned address is one row of
// the map. The copy engine faults on a box whose start is not 16-byte
// aligned: the caller checks that every row is (RzLinear's hashed rows are
// not, and keep their cp.async copies).
#ifndef TESSERA_ANALYSIS_COMPUTEDORIGINMAP_H
#define TESSERA_ANALYSIS_COMPUTEDORIGINMAP_H

#include "analysis/AxisInfo.h"
#include "tile/TileDialect.h"

#include <optional>
#include <string>

namespace tessera::analysis {

struct ComputedOriginOperand {
  unsigned pointerArg = 0; // the kernel argument every element is addressed from
  int64_t rowStride = 0;   // elements between consecutive rows inside a group
  int64_t groupRows = 0;   // rows per aligned group (one box's rows)
};

/// How `ld` (a 2-D tile, rows x cols, unmasked) splits into boxes of
/// `boxCols` contiguous columns and aligned groups of at most `maxRows`
/// rows, within each of which row r + 1 lies a constant stride after row r;
/// or nothing, with the reason in `whyNot`. The stride must be a positive
/// compile-time constant whose bytes are a multiple of 16 (a map's row
/// pitch). Offsets from the base must be non-negative and below 2^31 at run
/// time; the lowering checks this (a device-side assert, never a silent
/// wrong read).
std::optional<ComputedOriginOperand> analyzeComputedOrigin(tile::LoadOp ld, int64_t eb, int64_t boxCols,
                                                           int64_t maxRows, mlir::Block &kernelEntry,
                                                           const AxisInfoAnalysis &axis,
                                                           std::string &whyNot);

} // namespace tessera::analysis

#endif
