// The compile options as module attributes, as Triton keeps num-warps and the
// target on its modules: the driver (or tessera-set-options) writes them once,
// and every pass reads them from the module it runs on.
#ifndef TESSERA_ANALYSIS_MODULEOPTIONS_H
#define TESSERA_ANALYSIS_MODULEOPTIONS_H

#include "tessera/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace tessera::analysis {

/// Writes tessera.target (resolved), tessera.num_warps, tessera.num_stages,
/// tessera.warp_specialize, tessera.tma and tessera.persistent_launch on `module`.
void setModuleOptions(mlir::ModuleOp module, const CompileOptions &options);

/// The code-generation options recorded on `module` (target resolved; no
/// constexprs or facts, which are already in the IR). Missing attributes take
/// CompileOptions' defaults; a malformed one is an error (`error` set).
std::optional<CompileOptions> moduleOptions(mlir::ModuleOp module, std::string &error);

} // namespace tessera::analysis

#endif
