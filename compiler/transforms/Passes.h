// Tile-IR passes that make GPU layouts explicit (the `tgpu` dialect's
// encodings and tgpu.convert_layout), run by the lowering before it emits
// per-thread code, and registered in tessera-opt for lit tests.
#ifndef TESSERA_TRANSFORMS_PASSES_H
#define TESSERA_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace tessera::transforms {

/// What layout assignment needs to know about the target.
struct LayoutTarget {
  std::string arch; // "" = the sm_80 baseline
  int numWarps = 4;
  int numStages = 4;
};

/// tessera-assign-layouts: each tensor-core dot gets the mma accumulator
/// layout its lowering will produce (version 3 = wgmma, transposed for tf32
/// computed as C^T = B^T A^T, version 2 = mma.sync), its operands the
/// dot-operand layouts; conversions from and to the blocked layout surround it.
std::unique_ptr<mlir::Pass> createAssignLayoutsPass(const LayoutTarget &target = {});

/// tessera-remove-layout-conversions: folds conversion chains, rematerializes
/// splats in the target layout, keeps loop-carried accumulators in their mma
/// layout, sinks conversions out of the mma layout through elementwise ops,
/// and lets stores take any layout.
std::unique_ptr<mlir::Pass> createRemoveLayoutConversionsPass();

/// Both, in order, on `module`; false (with the diagnostic emitted) on failure.
bool assignGPULayouts(mlir::ModuleOp module, const LayoutTarget &target);

void registerLayoutPasses();

} // namespace tessera::transforms

#endif
