// Lowering of tile IR to per-thread scalar code (arith/math/scf on scalars,
// plus the llvm and nvvm dialects) that the PTX emitter turns into a kernel:
// the pass tessera-lower-to-nvvm (compiler/Passes.td), and the dot layout
// planner that tessera-assign-layouts shares with it.
#ifndef TESSERA_LOWERING_LOWERING_H
#define TESSERA_LOWERING_LOWERING_H

#include "tessera/CompileOptions.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <vector>

namespace tessera::lowering {

/// Decides, for the dots of one kernel, the accumulator layout that their
/// lowering produces with these options (DotLayoutPlan.cpp).
class DotLayoutPlanner {
public:
  DotLayoutPlanner(mlir::Operation *kernel, const CompileOptions &options);
  ~DotLayoutPlanner();
  /// Null: FMA in the blocked layout.
  tgpu::MmaEncodingAttr choose(tile::DotOp dot);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tessera::lowering

#endif
