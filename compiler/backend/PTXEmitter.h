// PTX emission from an MLIR module of per-thread scalar code (see
// tessera/CodeGen.h for the input contract). These entry points take the
// ModuleOp the compiler already holds; tessera/CodeGen.h wraps them for text.
#ifndef TESSERA_BACKEND_PTXEMITTER_H
#define TESSERA_BACKEND_PTXEMITTER_H

#include "tessera/CodeGen.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir {
class DialectRegistry;
}

namespace tessera {
namespace detail {

/// Dialects and translation interfaces the back end needs; add them to the
/// registry of any context whose modules will reach emitLLVMIR/emitPTX (they
/// are also loaded on demand, which is enough when no other thread uses the
/// context).
void registerBackendDialects(mlir::DialectRegistry &registry);

/// "file:line:col: " for a location that has one, else "".
std::string formatLocation(mlir::Location loc);

/// Lowers `module` to LLVM IR text (libdevice linked, optimized). `module` is
/// not modified: the lowering works on a clone. False + `error` on failure.
bool emitLLVMIR(mlir::ModuleOp module, const TargetOptions &options, std::string &out,
                std::string &error);
/// emitLLVMIR followed by NVPTX code generation; `out` is PTX text.
bool emitPTX(mlir::ModuleOp module, const TargetOptions &options, std::string &out,
             std::string &error);

} // namespace detail
} // namespace tessera

#endif
