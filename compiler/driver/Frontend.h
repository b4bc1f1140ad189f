// The front end: source -> verified tile IR module held in a caller-owned
// context (the first step of the pipeline in Pipeline.cpp).
#ifndef TESSERA_DRIVER_FRONTEND_H
#define TESSERA_DRIVER_FRONTEND_H

#include "tessera/Compiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace tessera::detail {

/// Loads every dialect tile IR may contain.
void loadTileDialects(mlir::MLIRContext &ctx);

struct FrontendResult {
  bool ok = false;
  std::string diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<KernelSignature> kernels;
  /// The config space of each compiled kernel with an @autotune decorator.
  std::map<std::string, std::shared_ptr<const ConfigSpace>> configSpaces;
  /// (path, text) of the main file and every import, for cache keys.
  std::vector<std::pair<std::string, std::string>> sources;
};

/// `text` null: read `path` from disk.
FrontendResult runFrontend(mlir::MLIRContext &ctx, const std::string &path,
                           const std::string *text, const std::string &kernel,
                           const CompileOptions &options);

} // namespace tessera::detail

#endif
