// What each loop of a kernel carries from one iteration to the next, and
// about how many registers a thread needs for it in its GPU layout: the
// values live across the loop, named as in the source (pointer tiles advanced
// by a uniform step are recomputed each iteration, not carried). `tessera
// compile --emit=resources` prints it for a kernel that spills.
#ifndef TESSERA_ANALYSIS_LOOPCARRIED_H
#define TESSERA_ANALYSIS_LOOPCARRIED_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace tessera::analysis {

/// The attribute the front end puts on scf.for/scf.while: the names of the
/// carried variables, in iter_arg order ("" where there is no name).
inline constexpr const char *kCarriedNamesAttr = "tile.carried";

/// One line per loop of `fn` (layout IR: tensor-core results carry their
/// encodings) that carries a tile: "FILE:LINE:COL: loop carries, per thread
/// of NUM_WARPS warps: acc f32[128, 128] 64 registers, ... (~N in all)".
std::vector<std::string> loopCarriedReport(mlir::func::FuncOp fn, int64_t numWarps);

} // namespace tessera::analysis

#endif
