// The passes of the pipeline, declared in Passes.td. compiler/driver runs
// them in order; tessera-opt registers them for lit tests.
#ifndef TESSERA_PASSES_H
#define TESSERA_PASSES_H

#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>
#include <vector>

namespace tessera {

#define GEN_PASS_DECL
#include "Passes.h.inc"

/// tessera-lower-to-nvvm whose remarks are appended to `remarks` as
/// "file:line:col: remark: ..." lines (what CompileResult::remarks holds)
/// instead of being emitted as MLIR remarks.
std::unique_ptr<mlir::Pass> createTesseraLowerToNVVMWithRemarks(std::vector<std::string> *remarks);

/// "file:line:col: " for a source location, else "": how the driver and the
/// lowering's remarks name .tile positions (as the front end's diagnostics do).
inline std::string sourcePrefix(mlir::Location loc) {
  if (auto fl = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return fl.getFilename().str() + ":" + std::to_string(fl.getLine()) + ":" +
           std::to_string(fl.getColumn()) + ": ";
  return "";
}

#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

} // namespace tessera

#endif
