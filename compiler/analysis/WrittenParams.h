// Which pointer parameters a kernel may write through (those a store's or an
// atomic's address is computed from) and read through (a load's or an
// atomic's). The autotuner compares the written buffers between candidates
// (and only these: a big read-only input is not copied back to the host for
// every config), and poisons the ones the kernel only writes before checking
// a candidate.
#ifndef TESSERA_ANALYSIS_WRITTENPARAMS_H
#define TESSERA_ANALYSIS_WRITTENPARAMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <vector>

namespace tessera::analysis {

/// One flag per argument of `kernel` (front-end tile IR): true for a pointer
/// argument that a tile.store, tile.atomic_rmw or tile.atomic_cas address may
/// derive from. Conservative: when the address flows through something the
/// walk does not follow, every pointer argument is flagged.
std::vector<bool> writtenPointerArguments(mlir::func::FuncOp kernel);
/// The same for tile.load, tile.atomic_rmw and tile.atomic_cas addresses.
std::vector<bool> readPointerArguments(mlir::func::FuncOp kernel);
/// The same for one address (a pointer or pointer tile in `kernel`'s body):
/// the arguments it may derive from, integer arguments of its offsets included.
std::vector<bool> argumentsOfAddress(mlir::func::FuncOp kernel, mlir::Value address);

} // namespace tessera::analysis

#endif
