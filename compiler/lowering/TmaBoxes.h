// TMA boxes: what a loop that copies its operands with cp.async.bulk.tensor
// needs around a tensor map the analysis found (analysis/TensorMapAnalysis.h):
// the map's spec for the runtime, its coordinates as values, and one box
// copy. Shared by the warp-specialized dot loop (TmaCopies.cpp) and the
// ping-pong staged dot loop (StagedDotLoopTma.cpp).
#ifndef TESSERA_LOWERING_TMABOXES_H
#define TESSERA_LOWERING_TMABOXES_H

#include "KernelLowering.h"
#include "analysis/TensorMapAnalysis.h"

#include "tessera/TensorMapSpec.h"

namespace tessera::lowering::detail {

/// The spec of map `m` over tiles of `elem`, copied in boxes of boxRows rows
/// of boxCols elements, swizzled by `swizzleBytes`.
TensorMapSpec tensorMapSpecOf(const TensorMapOperand &m, Type elem, int64_t boxCols, int64_t boxRows,
                              int64_t swizzleBytes);

/// An i32 value of a linear form over lowered scalars.
Value materializeForm(KernelLowering &kl, OpBuilder &b, Location loc, const LinearForm &f);

/// One box of the map at generic address `map`, at `coords` (columns, rows,
/// then the outer dimensions), into shared address `dst`, its bytes
/// completing on mbarrier `bar`. A nonzero `multicastMask` copies it into
/// every CTA of the cluster whose rank's bit is set, at the same addresses.
void issueTensorBox(KernelLowering &kl, Location loc, Value dst, Value map, ArrayRef<Value> coords,
                    Value bar, int64_t multicastMask = 0);

} // namespace tessera::lowering::detail

#endif
