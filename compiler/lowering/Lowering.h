// Lowering of tile IR to per-thread scalar code (arith/math/scf on scalars,
// plus the llvm and nvvm dialects) that the PTX emitter turns into a kernel.
#ifndef TESSERA_LOWERING_LOWERING_H
#define TESSERA_LOWERING_LOWERING_H

#include "tilegpu/TileGPUDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <vector>

namespace tessera::lowering {

struct LoweringOptions {
  int numWarps = 4;
  /// Target whose instructions may be used ("" = sm_80 baseline).
  std::string arch;
  /// Pipeline depth for loops feeding `dot` (1 = no pipelining).
  int numStages = 4;
  /// Warp-specialize pipelined dot loops where possible (sm_90a).
  bool warpSpecialize = true;
  /// Load operand tiles of warp-specialized dot loops with TMA tensor maps
  /// where the analysis allows (sm_90a); else cp.async.
  bool tma = true;
  /// When set, receives one "file:line:col: remark: ..." line per loop that
  /// feeds a `dot`: how it was pipelined, or why not.
  std::vector<std::string> *remarks = nullptr;
  /// When set, receives the module after layout assignment (tgpu encodings).
  std::string *layoutIR = nullptr;
};

/// Rewrites every `tile.kernel` function of `module` in place. Each becomes a
/// `func.func` with the `tessera.kernel` attribute, `tessera.num_warps` and
/// `tessera.shared_bytes` (dynamic shared memory to pass at launch).
/// Returns false and sets `error` when a kernel uses something the back end
/// cannot lower yet.
bool lowerTileToNVVM(mlir::ModuleOp module, const LoweringOptions &options, std::string &error);

/// Decides, for the dots of one kernel, the accumulator layout that their
/// lowering produces with these options (DotLayoutPlan.cpp).
class DotLayoutPlanner {
public:
  DotLayoutPlanner(mlir::Operation *kernel, const LoweringOptions &options);
  ~DotLayoutPlanner();
  /// Null: FMA in the blocked layout.
  tgpu::MmaEncodingAttr choose(tile::DotOp dot);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tessera::lowering

#endif
